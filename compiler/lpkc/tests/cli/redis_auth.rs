//! Distributed runs against a real `redis-server` that requires a
//! password and serves lpk through an ACL user with only the commands
//! docs/distributed.md lists (the test reads that line): the credentials
//! from the environment or the URL, and the password nowhere else — not
//! on any process's command line while the run goes on, not in the
//! output, the errors, Redis's values, the store or the trace.

use crate::binary::ok;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ADMIN_PASSWORD: &str = "admin-Pw-7d1e0c";
const LPK_PASSWORD: &str = "lpk-Pw-41b9a7";
const TLS_PASSWORD: &str = "lpk-tls-Pw-9c02f5";

/// A `redis-server` of this test's own, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The ACL line of docs/distributed.md, with `password` filled in.
fn documented_acl(password: &str) -> String {
    let doc =
        std::fs::read_to_string(lpk_test_support::workspace_root().join("docs/distributed.md"))
            .expect("docs/distributed.md");
    let line = doc
        .lines()
        .find(|l| l.starts_with("user lpk on >PASSWORD"))
        .expect("docs/distributed.md documents the ACL user");
    line.replace(">PASSWORD", &format!(">{password}"))
}

fn start_server(dir: &Path) -> Server {
    start_server_with(dir, "", LPK_PASSWORD)
}

/// A server as [`start_server`], with `extra` configuration lines; with
/// TLS lines, `port` is the TLS port (the plain one is off).
fn start_server_with(dir: &Path, extra: &str, password: &str) -> Server {
    let port = lpk_test_support::services::free_port().expect("a free port");
    let conf = dir.join("redis.conf");
    let mut f = std::fs::File::create(&conf).expect("write redis.conf");
    let listen = if extra.is_empty() {
        format!("port {port}")
    } else {
        format!("port 0\ntls-port {port}\n{extra}")
    };
    writeln!(
        f,
        "{listen}\nbind 127.0.0.1\nsave \"\"\nappendonly no\nrequirepass {ADMIN_PASSWORD}\n{}",
        documented_acl(password)
    )
    .expect("write redis.conf");
    drop(f);
    let child = Command::new("redis-server")
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start redis-server");
    let server = Server { child, port };
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(15);
    // A TLS port answers no plain PING: wait until it accepts.
    while if extra.is_empty() {
        lpk_test_support::services::redis_ping(addr).is_err()
    } else {
        std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err()
    } {
        assert!(Instant::now() < deadline, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// A certificate authority and a server certificate for 127.0.0.1, made
/// with `openssl`: (CA certificate, server certificate, server key).
fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let p = |n: &str| dir.join(n);
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run openssl");
        ok(&out, &format!("openssl {args:?}"));
    };
    std::fs::write(p("san.ext"), "subjectAltName=IP:127.0.0.1\n").expect("write san.ext");
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=lpk test CA",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ]);
    (p("ca.crt"), p("server.crt"), p("server.key"))
}

/// Every process's command line, joined.
fn command_lines() -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(bytes) = std::fs::read(entry.path().join("cmdline")) {
            all.push_str(&String::from_utf8_lossy(&bytes).replace('\0', " "));
            all.push('\n');
        }
    }
    all
}

/// Runs `lpkc` with `env`, watching every command line on the machine
/// while it runs; returns (exit code, stdout + stderr, whether
/// [`LPK_PASSWORD`] was seen on a command line).
fn run_watching(args: &[&str], env: &[(&str, &str)]) -> (i32, String, bool) {
    run_watching_for(LPK_PASSWORD, args, env)
}

/// [`run_watching`] for the secret `secret` (tests run at once: each
/// watches for its own).
fn run_watching_for(secret: &str, args: &[&str], env: &[(&str, &str)]) -> (i32, String, bool) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lpkc"))
        .current_dir(lpk_test_support::workspace_root())
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run lpkc");
    let mut seen = false;
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().ok().flatten().is_none() {
        // The test's own command line never holds it; the workers' might.
        seen |= command_lines().contains(secret);
        assert!(Instant::now() < deadline, "lpkc {args:?} did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("lpkc's output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text, seen)
}

/// The embedded run of examples/cholesky.lpk with `args` into
/// `dir/embedded`, what the distributed runs must equal bit for bit.
fn embedded_run(dir: &Path, args: &[&str]) -> String {
    let embedded = dir.join("embedded").display().to_string();
    let (code, text, _) = run_watching(
        &[
            &["run", "examples/cholesky.lpk", "--output-dir", &embedded][..],
            args,
        ]
        .concat(),
        &[],
    );
    assert_eq!(code, 0, "{text}");
    embedded
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn an_acl_user_runs_with_credentials_that_appear_nowhere() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let server = start_server(tmp.path());
    let url = format!("redis://127.0.0.1:{}", server.port);
    let store = tmp.path().join("store").display().to_string();
    let args = ["--block", "32", "--input", "A=spd:128", "--no-progress"];
    let embedded = embedded_run(tmp.path(), &args);

    // From the environment, and from the URL: both run, and the password
    // is never on a command line (the local workers get it in their
    // environment) nor in anything printed.
    let with_password = format!("redis://lpk:{LPK_PASSWORD}@127.0.0.1:{}", server.port);
    let env_creds = [
        ("LPK_REDIS_USERNAME", "lpk"),
        ("LPK_REDIS_PASSWORD", LPK_PASSWORD),
    ];
    for (k, (redis, env)) in [
        (url.as_str(), &env_creds[..]),
        (with_password.as_str(), &[][..]),
    ]
    .into_iter()
    .enumerate()
    {
        let out_dir = tmp.path().join(format!("dist{k}")).display().to_string();
        let run_args = [
            &["run", "examples/cholesky.lpk", "--output-dir", &out_dir][..],
            &args,
            &["--redis", redis, "--store", &store, "--workers", "2"],
        ]
        .concat();
        let (code, text, seen) = run_watching(&run_args, env);
        assert_eq!(code, 0, "{text}");
        assert!(!text.contains(LPK_PASSWORD), "{text}");
        // Only the URL form puts it on lpkc's own command line (the user's
        // choice); its workers never have it there.
        if k == 0 {
            assert!(!seen, "the password was on a command line");
        }
        assert_eq!(
            std::fs::read(Path::new(&embedded).join("L.npy")).expect("embedded L"),
            std::fs::read(Path::new(&out_dir).join("L.npy")).expect("distributed L"),
            "bit for bit"
        );
    }

    // Nothing stored holds it: Redis's values, the store's files.
    let admin = format!("redis://:{ADMIN_PASSWORD}@127.0.0.1:{}", server.port);
    let mut r = lpk_cluster::conn::Redis::open(&admin).expect("connect as admin");
    let keys: Vec<String> = r
        .query(lpk_cluster::redis::cmd("KEYS").arg("*"), "KEYS")
        .expect("KEYS");
    for key in &keys {
        let dump: Option<Vec<u8>> = r
            .query(lpk_cluster::redis::cmd("DUMP").arg(key), "DUMP")
            .expect("DUMP");
        let dump = String::from_utf8_lossy(&dump.unwrap_or_default()).into_owned();
        assert!(!dump.contains(LPK_PASSWORD), "{key} holds the password");
    }
    for f in files_under(Path::new(&store)) {
        let bytes = std::fs::read(&f).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(LPK_PASSWORD),
            "{} holds the password",
            f.display()
        );
    }

    // A wrong password fails clearly, without echoing it.
    let wrong = format!("redis://lpk:not-{LPK_PASSWORD}@127.0.0.1:{}", server.port);
    let (code, text, _) = run_watching(&["status", "r-1", "--redis", &wrong], &[]);
    assert_ne!(code, 0, "{text}");
    assert!(!text.contains(LPK_PASSWORD), "{text}");
    assert!(text.contains("redis://lpk:***@127.0.0.1"), "{text}");
    let (code, text, _) = run_watching(
        &["status", "r-1", "--redis", &url],
        &[
            ("LPK_REDIS_USERNAME", "lpk"),
            ("LPK_REDIS_PASSWORD", "wrong"),
        ],
    );
    assert_ne!(code, 0, "{text}");
    assert!(
        text.to_lowercase().contains("wrongpass") || text.contains("auth"),
        "{text}"
    );

    // The password from a file named by the environment.
    let file = tmp.path().join("redis-password");
    std::fs::write(&file, format!("{LPK_PASSWORD}\n")).expect("write the password file");
    let file = file.display().to_string();
    let (code, text, _) = run_watching(
        &["status", "no-such-run", "--redis", &url],
        &[
            ("LPK_REDIS_USERNAME", "lpk"),
            ("LPK_REDIS_PASSWORD_FILE", &file),
        ],
    );
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("no run `no-such-run`"), "{text}");
}

/// `rediss://`: a run through a TLS Redis whose certificate a CA of the
/// test's own signed (`LPK_REDIS_CA_FILE`), with the ACL user's
/// credentials from the environment, bit for bit the embedded run; without
/// the CA, a clear refusal.
#[test]
fn a_run_goes_through_redis_over_tls() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let (ca, cert, key) = certificates(tmp.path());
    let server = start_server_with(
        tmp.path(),
        &format!(
            "tls-cert-file {}\ntls-key-file {}\ntls-ca-cert-file {}\ntls-auth-clients no",
            cert.display(),
            key.display(),
            ca.display()
        ),
        TLS_PASSWORD,
    );
    let url = format!("rediss://127.0.0.1:{}", server.port);
    let store = tmp.path().join("store").display().to_string();
    let args = ["--block", "32", "--input", "A=spd:128", "--no-progress"];
    let embedded = embedded_run(tmp.path(), &args);
    let out_dir = tmp.path().join("tls").display().to_string();
    let ca = ca.display().to_string();
    let env = [
        ("LPK_REDIS_USERNAME", "lpk"),
        ("LPK_REDIS_PASSWORD", TLS_PASSWORD),
        ("LPK_REDIS_CA_FILE", ca.as_str()),
    ];
    let run_args = [
        &["run", "examples/cholesky.lpk", "--output-dir", &out_dir][..],
        &args,
        &["--redis", &url, "--store", &store, "--workers", "2"],
    ]
    .concat();
    let (code, text, seen) = run_watching_for(TLS_PASSWORD, &run_args, &env);
    assert_eq!(code, 0, "{text}");
    assert!(!seen && !text.contains(TLS_PASSWORD), "{text}");
    assert_eq!(
        std::fs::read(Path::new(&embedded).join("L.npy")).expect("embedded L"),
        std::fs::read(Path::new(&out_dir).join("L.npy")).expect("distributed L"),
        "bit for bit"
    );
    // Without the CA the server's certificate is not trusted.
    let (code, text, _) = run_watching(
        &["status", "r-1", "--redis", &url],
        &[
            ("LPK_REDIS_USERNAME", "lpk"),
            ("LPK_REDIS_PASSWORD", LPK_PASSWORD),
        ],
    );
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("rediss://127.0.0.1"), "{text}");
    assert!(text.contains("set LPK_REDIS_CA_FILE"), "{text}");
    assert!(!text.contains("panicked"), "{text}");
}
