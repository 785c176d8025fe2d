//! Running the real `lpkc` binary (which only this test binary can do: it
//! needs `CARGO_BIN_EXE_lpkc`) from the workspace root.

use std::process::Command;

/// Runs lpkc in the workspace root with `args` and returns (exit code,
/// stdout, stderr).
pub fn lpkc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lpkc"))
        .current_dir(test_support::workspace_root())
        .args(args)
        .output()
        .expect("lpkc runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
