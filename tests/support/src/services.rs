//! The real servers some tests talk to, on loopback: Redis
//! ([`redis_url`]) and an S3 API server, moto's server mode
//! ([`s3_endpoint`]).
//!
//! `scripts/test` starts one of each for the whole run and exports
//! `LPK_TEST_REDIS=redis://127.0.0.1:PORT` and
//! `LPK_TEST_S3=http://127.0.0.1:PORT`; these functions then return those.
//! A test binary run on its own (`cargo test -p ...`) starts its own
//! instead, once per process, on a free loopback port, and waits (a
//! bounded time) until it answers. Statics never drop, so each server runs
//! under a small shell watchdog that stops it once the test process is
//! gone (within a second), and the watchdog goes when the server does.
//!
//! Anything wrong here is a broken test environment, so these helpers
//! panic with what to install or where the server's log is.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The access key, secret and region the S3 test server is used with
/// (moto accepts any credentials; these are what its docs use).
const S3_KEY: &str = "testing";
const S3_REGION: &str = "us-east-1";

/// How long a server may take to answer after it was started: Redis starts
/// in milliseconds, moto imports a good part of Python's ecosystem first.
const REDIS_START: Duration = Duration::from_secs(15);
const S3_START: Duration = Duration::from_secs(60);

/// The timeout of each read and write of the raw protocol helpers.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// The URL of the test Redis, `redis://127.0.0.1:PORT`: `LPK_TEST_REDIS`
/// when set, or else a `redis-server` this process started (without
/// persistence) on the first call.
pub fn redis_url() -> String {
    static REDIS: OnceLock<Result<String, String>> = OnceLock::new();
    service_url("LPK_TEST_REDIS", "redis://", &REDIS, || {
        start(
            "redis-server",
            "redis-server not found: install it (scripts/test does; Debian: apt-get install redis-server)",
            |port| {
                strings(&[
                    "--port",
                    &port.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    // Tests that run workers each take a database of
                    // their own (workers serve every run of theirs).
                    "--databases",
                    "32",
                ])
            },
            |addr| redis_ping(addr).is_ok_and(|reply| reply == "+PONG"),
            REDIS_START,
        )
    })
}

/// Sends `PING` to the Redis at `addr` and returns its reply line (`+PONG`
/// from a healthy server), with every read and write bounded.
pub fn redis_ping(addr: SocketAddr) -> std::io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    stream.write_all(b"PING\r\n")?;
    let mut reply = Vec::new();
    let mut byte = [0u8; 1];
    // A reply line is short; the bound only stops a server that never
    // ends its line.
    while reply.len() < 256 {
        if stream.read(&mut byte)? == 0 || byte[0] == b'\n' {
            break;
        }
        reply.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&reply).trim_end().to_string())
}

/// The loopback address of a `redis://` or `http://` URL of these helpers.
pub fn socket_addr(url: &str) -> SocketAddr {
    let rest = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .trim_end_matches('/');
    rest.parse()
        .unwrap_or_else(|e| panic!("`{url}` is not a URL of the form scheme://IP:PORT: {e}"))
}

/// The test S3 server: its endpoint, the options and environment a store
/// needs to reach it, and fresh buckets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3 {
    endpoint: String,
}

/// The test S3 server: `LPK_TEST_S3` when set, or else a `moto_server` this
/// process started on the first call.
pub fn s3_endpoint() -> S3 {
    static MOTO: OnceLock<Result<String, String>> = OnceLock::new();
    let endpoint = service_url("LPK_TEST_S3", "http://", &MOTO, || {
        start(
            "moto_server",
            "moto_server not found: install it with python3 -m pip install 'moto[server]' (scripts/test does)",
            |port| strings(&["-H", "127.0.0.1", "-p", &port.to_string()]),
            |addr| http(addr, "GET", "/").is_ok_and(|status| status == 200),
            S3_START,
        )
    });
    S3 { endpoint }
}

impl S3 {
    /// The endpoint, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The options an `object_store` S3 store needs to reach this server
    /// (`aws_endpoint`, credentials, region, `aws_allow_http`), as
    /// `ObjectStoreTiles::open_with` takes them.
    pub fn options(&self) -> Vec<(String, String)> {
        self.env()
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect()
    }

    /// The same settings as environment variables (`AWS_ENDPOINT`, ...),
    /// for a child process such as a worker.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID".to_string(), S3_KEY.to_string()),
            ("AWS_ALLOW_HTTP".to_string(), "true".to_string()),
            ("AWS_ENDPOINT".to_string(), self.endpoint.clone()),
            ("AWS_REGION".to_string(), S3_REGION.to_string()),
            ("AWS_SECRET_ACCESS_KEY".to_string(), S3_KEY.to_string()),
        ]
    }

    /// Creates a bucket (S3's API as `object_store` speaks it cannot;
    /// moto takes an unsigned `PUT /BUCKET`). Creating one that exists is
    /// fine.
    pub fn create_bucket(&self, bucket: &str) {
        let addr = socket_addr(&self.endpoint);
        match http(addr, "PUT", &format!("/{bucket}")) {
            Ok(200) => {}
            Ok(status) => panic!(
                "creating bucket `{bucket}` at {}: HTTP status {status}",
                self.endpoint
            ),
            Err(e) => panic!("creating bucket `{bucket}` at {}: {e}", self.endpoint),
        }
    }

    /// A new, empty bucket with a name no other test (of this or another
    /// process sharing the server) uses, `lpk-TAG-PID-N`; `tag` is cut to
    /// keep the name within S3's 63 characters.
    pub fn fresh_bucket(&self, tag: &str) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tag: String = tag
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .take(30)
            .collect();
        let bucket = format!("lpk-{tag}-{}-{n}", std::process::id());
        self.create_bucket(&bucket);
        bucket
    }

    /// The store URL `s3://BUCKET/PREFIX` (`s3://BUCKET` for an empty
    /// prefix).
    pub fn url(&self, bucket: &str, prefix: &str) -> String {
        if prefix.is_empty() {
            format!("s3://{bucket}")
        } else {
            format!("s3://{bucket}/{prefix}")
        }
    }
}

/// The value of a service variable, after checking that it names a
/// loopback address: tests never talk to another machine.
fn from_env(var: &str, scheme: &str) -> Option<String> {
    let value = std::env::var(var).ok().filter(|v| !v.is_empty())?;
    let addr = value
        .strip_prefix(scheme)
        .map(socket_addr)
        .unwrap_or_else(|| panic!("{var}={value}: expected {scheme}127.0.0.1:PORT"));
    assert!(
        addr.ip().is_loopback(),
        "{var}={value}: tests only talk to loopback addresses"
    );
    Some(value.trim_end_matches('/').to_string())
}

/// The URL `SCHEME127.0.0.1:PORT` of a test server: `var` when set, or
/// else that of the server `launch` starts (once per process, remembered
/// in `started`) and returns the port of.
fn service_url(
    var: &str,
    scheme: &str,
    started: &OnceLock<Result<String, String>>,
    launch: impl FnOnce() -> Result<u16, String>,
) -> String {
    if let Some(url) = from_env(var, scheme) {
        return url;
    }
    started
        .get_or_init(|| Ok(format!("{scheme}127.0.0.1:{}", launch()?)))
        .clone()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A server's arguments, owned.
fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// Whether `program` is a file in a directory of `PATH`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The watchdogs of the servers this process started; kept so their
/// handles live as long as the process (nothing reads them).
static WATCHDOGS: Mutex<Vec<Child>> = Mutex::new(Vec::new());

/// Starts `program` with `args(port)` on a free loopback port under a
/// watchdog, and waits up to `within` until `ready` says it answers.
/// Returns the port, or why it could not.
fn start(
    program: &str,
    missing: &str,
    args: impl Fn(u16) -> Vec<String>,
    ready: impl Fn(SocketAddr) -> bool,
    within: Duration,
) -> Result<u16, String> {
    if !on_path(program) {
        return Err(missing.to_string());
    }
    // The port is free when asked; another process could take it before
    // the server binds it, so a server that exits at once is tried again
    // on another port, a few times.
    let mut last = String::new();
    for _ in 0..3 {
        let port = free_port().map_err(|e| format!("no free loopback port: {e}"))?;
        let log = log_path(program, port);
        let mut child = watchdog(program, &args(port), &log)
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + within;
        loop {
            if ready(addr) {
                WATCHDOGS
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(child);
                return Ok(port);
            }
            if let Ok(Some(status)) = child.try_wait() {
                last = format!(
                    "{program} on port {port} exited ({status}) before answering; its log, {}:\n{}",
                    log.display(),
                    log_tail(&log)
                );
                break;
            }
            if Instant::now() >= deadline {
                // The watchdog stops the server once its own `sh` goes.
                let _ = child.kill();
                return Err(format!(
                    "{program} on port {port} did not answer within {within:?}; its log, {}:\n{}",
                    log.display(),
                    log_tail(&log)
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Err(last)
}

/// Runs `program args` in the background of a shell that waits for it,
/// beside a loop that stops it when this process is gone; the shell exits
/// when the program does. Output goes to `log`.
fn watchdog(program: &str, args: &[String], log: &PathBuf) -> std::io::Result<Child> {
    let script = r#"parent=$1; log=$2; shift 2
"$@" >"$log" 2>&1 </dev/null &
p=$!
(while kill -0 "$parent" 2>/dev/null && kill -0 "$p" 2>/dev/null; do sleep 1; done
 kill "$p" 2>/dev/null) &
wait "$p""#;
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("lpk-test-service")
        .arg(std::process::id().to_string())
        .arg(log)
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
}

/// A loopback port nothing listens on at the moment of asking.
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn log_path(program: &str, port: u16) -> PathBuf {
    std::env::temp_dir().join(format!(
        "lpk-test-{program}-{}-{port}.log",
        std::process::id()
    ))
}

/// The last lines of a log, for a panic message.
fn log_tail(log: &PathBuf) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Sends a bodiless HTTP/1.1 request and returns the response's status
/// code, with every read and write bounded.
fn http(addr: SocketAddr, method: &str, path: &str) -> std::io::Result<u16> {
    let mut stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head)?;
    // "HTTP/1.1 200"
    let status = std::str::from_utf8(&head[9..12])
        .ok()
        .and_then(|s| s.parse().ok());
    // Drain the rest so the server is not cut off mid-answer.
    let _ = std::io::copy(&mut stream.take(1 << 20), &mut std::io::sink());
    status.ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not an HTTP response: {:?}", String::from_utf8_lossy(&head)),
        )
    })
}
