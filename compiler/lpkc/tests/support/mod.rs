//! What the end-to-end tests share: running the real `lpkc` binary from
//! the workspace root.
#![allow(dead_code)] // each test crate uses its own subset

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (where `examples/` lives).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs lpkc in the workspace root with `args` and returns (exit code,
/// stdout, stderr).
pub fn lpkc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lpkc"))
        .current_dir(root())
        .args(args)
        .output()
        .expect("lpkc runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
