//! Running the real `lpkc` binary (which only this test binary can do: it
//! needs `CARGO_BIN_EXE_lpkc`) from the workspace root.

use std::ffi::OsStr;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// Runs lpkc in the workspace root with `args` and returns (exit code,
/// stdout, stderr).
pub fn lpkc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lpkc"))
        .current_dir(lpk_test_support::workspace_root())
        .args(args)
        .output()
        .expect("lpkc runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The directory `lpk-NAME-PID` of the system's temporary directory,
/// created if it is not there: NAME must not be another test's, since the
/// tests of this binary run at once in one process.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lpk-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// Writes `text` to the file NAME of [`scratch_dir`]`(dir)`; returns that
/// directory and the file's path as lpkc takes it.
pub fn scratch_file(dir: &str, name: &str, text: &str) -> (PathBuf, String) {
    let dir = scratch_dir(dir);
    let file = dir.join(name);
    std::fs::write(&file, text).expect("write a scratch file");
    (dir, file.display().to_string())
}

/// The stdout of a command that must have succeeded; otherwise panics
/// naming it (`what`) with its exit status, stdout and stderr.
pub fn ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `program` in the workspace root with `args`, writes `stdin` to it
/// and returns (exit code, stdout, stderr).
pub fn run<S: AsRef<OsStr>>(
    program: &str,
    args: &[S],
    stdin: impl AsRef<[u8]>,
) -> (i32, String, String) {
    let mut child = Command::new(program)
        .current_dir(lpk_test_support::workspace_root())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program} (this test needs it installed): {e}"));
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(stdin.as_ref())
        .expect("stdin written");
    let out = child.wait_with_output().expect("finishes");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`lpkc`] with `stdin` written to it.
pub fn lpkc_with_stdin<S: AsRef<OsStr>>(
    args: &[S],
    stdin: impl AsRef<[u8]>,
) -> (i32, String, String) {
    run(env!("CARGO_BIN_EXE_lpkc"), args, stdin)
}
