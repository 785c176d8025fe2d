//! A Redis connection that says which server and which step failed,
//! reconnects after the server went away, and runs the protocol's scripts
//! (loading them again after a Redis restart).

use crate::error::ClusterError;
use redis::{Cmd, FromRedisValue, Pipeline};
use std::time::Duration;

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one reply may take (longer than any `BLOCK` the workers use).
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// `url` as messages show it: a password in it (`redis://:PASS@HOST`,
/// `redis://USER:PASS@HOST`) replaced by `***`, so that no error, log line
/// or report carries a secret.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{path}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// One connection to one Redis server.
pub struct Redis {
    /// The URL as messages show it ([`redacted`]); the client holds the
    /// real one.
    url: String,
    client: redis::Client,
    con: Option<redis::Connection>,
}

impl Redis {
    /// Opens a connection to `url` (`redis://HOST:PORT[/DB]`).
    pub fn open(url: &str) -> Result<Redis, ClusterError> {
        let client = redis::Client::open(url).map_err(|source| ClusterError::BadUrl {
            url: redacted(url),
            source,
        })?;
        let mut r = Redis {
            url: redacted(url),
            client,
            con: None,
        };
        r.connection("connecting")?;
        Ok(r)
    }

    /// The server's URL, for messages (its password, if any, redacted).
    pub fn url(&self) -> &str {
        &self.url
    }

    fn error(&self, what: &str, source: redis::RedisError) -> ClusterError {
        ClusterError::Redis {
            url: self.url.clone(),
            what: what.to_string(),
            source,
        }
    }

    fn connection(&mut self, what: &str) -> Result<&mut redis::Connection, ClusterError> {
        let con = match self.con.take() {
            Some(con) => con,
            None => {
                let con = self
                    .client
                    .get_connection_with_timeout(CONNECT_TIMEOUT)
                    .map_err(|e| self.error(what, e))?;
                con.set_read_timeout(Some(REPLY_TIMEOUT))
                    .and_then(|()| con.set_write_timeout(Some(REPLY_TIMEOUT)))
                    .map_err(|e| self.error(what, e))?;
                con
            }
        };
        Ok(self.con.insert(con))
    }

    /// Forgets a connection that failed, so the next call reconnects.
    fn after(&mut self, e: &redis::RedisError) {
        if e.is_io_error()
            || e.is_connection_dropped()
            || e.is_timeout()
            || e.is_unrecoverable_error()
        {
            self.con = None;
        }
    }

    /// Runs a pipeline (one round trip) and returns every reply as it
    /// came, a command's error (`Value::ServerError`) among them: the
    /// caller tells the commands apart. Only a failed connection is an
    /// error here.
    pub fn pipe_raw(
        &mut self,
        pipe: &Pipeline,
        what: &str,
    ) -> Result<Vec<redis::Value>, ClusterError> {
        let con = self.connection(what)?;
        let packed = pipe.get_packed_pipeline();
        match redis::ConnectionLike::req_packed_commands(con, &packed, 0, pipe.len()) {
            Ok(v) => Ok(v),
            Err(e) => {
                self.after(&e);
                Err(self.error(what, e))
            }
        }
    }

    /// Runs one command.
    pub fn query<T: FromRedisValue>(&mut self, cmd: &Cmd, what: &str) -> Result<T, ClusterError> {
        let con = self.connection(what)?;
        match cmd.query(con) {
            Ok(v) => Ok(v),
            Err(e) => {
                self.after(&e);
                Err(self.error(what, e))
            }
        }
    }

    /// Runs a pipeline (one round trip).
    pub fn pipe<T: FromRedisValue>(
        &mut self,
        pipe: &Pipeline,
        what: &str,
    ) -> Result<T, ClusterError> {
        let con = self.connection(what)?;
        match pipe.query(con) {
            Ok(v) => Ok(v),
            Err(e) => {
                self.after(&e);
                Err(self.error(what, e))
            }
        }
    }

    /// Runs a script once (loading it if the server does not have it).
    pub fn script<T: FromRedisValue>(
        &mut self,
        script: &Script,
        args: &[&str],
        what: &str,
    ) -> Result<T, ClusterError> {
        let mut pipe = redis::pipe();
        script.add_to(&mut pipe, args);
        let mut out: Vec<T> = self.scripts(&pipe, &[script], what)?;
        out.pop()
            .ok_or_else(|| ClusterError::Refused(format!("{what}: Redis returned nothing")))
    }

    /// Runs a pipeline of script calls; if the server does not know a
    /// script (it restarted), loads `scripts` and runs the pipeline again.
    /// Callers only pipeline idempotent scripts, so running twice is safe.
    pub fn scripts<T: FromRedisValue>(
        &mut self,
        pipe: &Pipeline,
        scripts: &[&Script],
        what: &str,
    ) -> Result<T, ClusterError> {
        let con = self.connection(what)?;
        match pipe.query(con) {
            Ok(v) => return Ok(v),
            Err(e) if e.kind() == redis::ErrorKind::NoScriptError => {}
            Err(e) => {
                self.after(&e);
                return Err(self.error(what, e));
            }
        }
        for s in scripts {
            let _: String = self.query(
                redis::cmd("SCRIPT").arg("LOAD").arg(s.source),
                "loading a script",
            )?;
        }
        self.pipe(pipe, what)
    }
}

/// A protocol script: its source and SHA-1.
pub struct Script {
    /// The Lua source.
    pub source: &'static str,
    hash: String,
}

impl Script {
    /// A script from its source.
    pub fn new(source: &'static str) -> Script {
        Script {
            source,
            hash: redis::Script::new(source).get_hash().to_string(),
        }
    }

    /// Adds one call (`EVALSHA`, no keys) to a pipeline.
    pub fn add_to(&self, pipe: &mut Pipeline, args: &[&str]) {
        let cmd = pipe.cmd("EVALSHA").arg(&self.hash).arg(0);
        for a in args {
            cmd.arg(*a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::redacted;

    #[test]
    fn passwords_never_show_in_a_url() {
        for (url, shown) in [
            (
                "redis://:hunter2@10.0.0.1:6379/3",
                "redis://:***@10.0.0.1:6379/3",
            ),
            ("redis://alice:hunter2@host", "redis://alice:***@host"),
            ("redis://alice:p@ss@host/0", "redis://alice:***@host/0"),
            ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
            ("not a url", "not a url"),
        ] {
            assert_eq!(redacted(url), shown);
            assert!(!redacted(url).contains("hunter2"));
        }
    }
}
