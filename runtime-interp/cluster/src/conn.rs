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

/// The environment variable that gives the Redis user name when the URL
/// has none (an ACL user; without one, Redis's `default` user).
pub(crate) const USERNAME_ENV: &str = "LPK_REDIS_USERNAME";
/// The environment variable that gives the Redis password when the URL
/// has none: a secret belongs in the environment, not on a command line
/// that `ps` shows.
pub const PASSWORD_ENV: &str = "LPK_REDIS_PASSWORD";
/// The environment variable naming a file whose first line is the Redis
/// password (when neither the URL nor [`PASSWORD_ENV`] gives one).
pub(crate) const PASSWORD_FILE_ENV: &str = "LPK_REDIS_PASSWORD_FILE";

/// The environment variable naming a PEM file of the certificate
/// authority that signed a TLS Redis server's certificate (`rediss://`),
/// when it is not among the system's trusted roots.
pub(crate) const CA_FILE_ENV: &str = "LPK_REDIS_CA_FILE";

/// `url` without its password, and the password it carried (decoded):
/// what a command gives a worker process it starts, the URL on its
/// command line and the password in its environment ([`PASSWORD_ENV`]),
/// so that `ps` never shows it.
pub fn split_password(url: &str) -> (String, Option<String>) {
    use redis::IntoConnectionInfo;
    let password = url
        .into_connection_info()
        .ok()
        .and_then(|info| info.redis.password);
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_string(), password);
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let bare = match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some(("", _)) => format!("{scheme}://{host}{path}"),
            Some((user, _)) => format!("{scheme}://{user}@{host}{path}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    };
    (bare, password)
}

/// The connection settings of `url`, with the user name and password
/// from the environment where the URL has none.
fn connection_info(url: &str) -> Result<redis::ConnectionInfo, ClusterError> {
    use redis::IntoConnectionInfo;
    let mut info = url
        .into_connection_info()
        .map_err(|source| ClusterError::BadUrl {
            url: redacted(url),
            source,
        })?;
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    if info.redis.username.is_none() {
        info.redis.username = env(USERNAME_ENV);
    }
    if info.redis.password.is_none() {
        info.redis.password = env(PASSWORD_ENV);
    }
    if info.redis.password.is_none() {
        if let Some(path) = env(PASSWORD_FILE_ENV) {
            info.redis.password = Some(password_from_file(&path)?);
        }
    }
    Ok(info)
}

/// The first line of the file at `path` (at most 4 KiB are read).
fn password_from_file(path: &str) -> Result<String, ClusterError> {
    use std::io::Read;
    let refused = |why: String| ClusterError::Refused(format!("{PASSWORD_FILE_ENV}={path}: {why}"));
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(|e| refused(e.to_string()))?
        .take(4096)
        .read_to_string(&mut text)
        .map_err(|e| refused(e.to_string()))?;
    let line = text.lines().next().unwrap_or("").trim_end_matches('\r');
    if line.is_empty() {
        return Err(refused(
            "the file is empty; its first line is the password".into(),
        ));
    }
    Ok(line.to_string())
}

/// The client of `url`: plain TCP, or TLS (`rediss://`) trusting the
/// system's roots or the authority of [`CA_FILE_ENV`].
fn client(url: &str) -> Result<redis::Client, ClusterError> {
    let info = connection_info(url)?;
    let bad = |source| ClusterError::BadUrl {
        url: redacted(url),
        source,
    };
    let tls = matches!(info.addr, redis::ConnectionAddr::TcpTls { .. });
    match std::env::var(CA_FILE_ENV).ok().filter(|v| !v.is_empty()) {
        Some(path) if tls => {
            use std::io::Read;
            let mut pem = Vec::new();
            std::fs::File::open(&path)
                .and_then(|f| f.take(1 << 20).read_to_end(&mut pem))
                .map_err(|e| ClusterError::Refused(format!("{CA_FILE_ENV}={path}: {e}")))?;
            let certs = redis::TlsCertificates {
                client_tls: None,
                root_cert: Some(pem),
            };
            redis::Client::build_with_tls(info, certs).map_err(bad)
        }
        _ => redis::Client::open(info).map_err(bad),
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
        let client = client(url)?;
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
        // A server that accepts connections but never answers gives only
        // the socket's "Resource temporarily unavailable": say what it means.
        let what = if source.is_timeout() {
            format!(
                "{what}: no answer in time (the server took the connection but did not \
                 reply: is it a Redis server, and is it running?)"
            )
        } else if source.to_string().contains("invalid peer certificate") {
            format!(
                "{what} (the TLS server's certificate is not trusted: set {CA_FILE_ENV} to the \
                 PEM file of the authority that signed it)"
            )
        } else {
            what.to_string()
        };
        ClusterError::Redis {
            url: self.url.clone(),
            what,
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

    /// Runs `call` on the connection (opened first if there is none); a
    /// failure forgets a broken connection ([`Self::after`]) and says
    /// `what` failed.
    fn with_connection<T>(
        &mut self,
        what: &str,
        call: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, ClusterError> {
        let con = self.connection(what)?;
        call(con).map_err(|e| {
            self.after(&e);
            self.error(what, e)
        })
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
        let packed = pipe.get_packed_pipeline();
        self.with_connection(what, |con| {
            redis::ConnectionLike::req_packed_commands(con, &packed, 0, pipe.len())
        })
    }

    /// Runs one command.
    pub fn query<T: FromRedisValue>(&mut self, cmd: &Cmd, what: &str) -> Result<T, ClusterError> {
        self.with_connection(what, |con| cmd.query(con))
    }

    /// One round of `SCAN` from `cursor` over the keys that match
    /// `pattern`, a thousand keys at a time: the next cursor (`0` once the
    /// scan is complete) and the keys found. SCAN, not KEYS: KEYS blocks
    /// the server for every other run while it walks the whole key space.
    pub(crate) fn scan(
        &mut self,
        cursor: &str,
        pattern: &str,
        what: &str,
    ) -> Result<(String, Vec<String>), ClusterError> {
        self.query(
            redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(1000),
            what,
        )
    }

    /// Runs a pipeline (one round trip).
    pub fn pipe<T: FromRedisValue>(
        &mut self,
        pipe: &Pipeline,
        what: &str,
    ) -> Result<T, ClusterError> {
        self.with_connection(what, |con| pipe.query(con))
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

    #[test]
    fn a_password_moves_from_the_url_to_the_environment() {
        use super::split_password;
        assert_eq!(
            split_password("redis://:hunter%402@10.0.0.1:6379/3"),
            (
                "redis://10.0.0.1:6379/3".to_string(),
                Some("hunter@2".to_string())
            )
        );
        assert_eq!(
            split_password("redis://alice:pw@host/1"),
            ("redis://alice@host/1".to_string(), Some("pw".to_string()))
        );
        assert_eq!(
            split_password("redis://host:6379"),
            ("redis://host:6379".to_string(), None)
        );
    }
}
