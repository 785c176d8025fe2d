//! What the test binaries of several lpk packages share: where the
//! workspace, its examples and the snapshot root are, [`gen`], the
//! generator of random valid `.lpk` programs, and [`services`], the real
//! Redis and S3 servers on loopback that the distributed tests use.
//!
//! This crate depends on no lpk crate, so every package can take it as a
//! dev-dependency without a cycle (a helper that compiles goes through
//! `lpk_compiler::pipeline::compile_source` in the test binary itself).
#![warn(missing_docs)]

pub mod gen;
pub mod services;
pub mod tiles;

use std::path::{Path, PathBuf};

/// The workspace root: where `examples/`, `tests/ui/` and `docs/` live.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("the support crate lives in tests/support/ of the workspace")
        .to_path_buf()
}

/// The root of every insta snapshot file: `tests/snapshots/`, one folder
/// per suite below it (`ui`, `plans`, `dot`, `stats`).
pub fn snapshot_root() -> PathBuf {
    workspace_root().join("tests/snapshots")
}

/// insta settings that keep the snapshots of `suite` in
/// `tests/snapshots/SUITE/`, each file named by the snapshot alone (not by
/// the test binary's module path, which moves when tests are regrouped).
/// Bind them with `let _guard = snapshot_settings("ui").bind_to_scope();`.
///
/// A mismatch fails the test; outside CI insta also writes a `.snap.new`
/// beside the file for `cargo insta review`, and with `CI=true` it writes
/// nothing.
pub fn snapshot_settings(suite: &str) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshot_root().join(suite));
    settings.set_prepend_module_to_snapshot(false);
    settings
}

/// Every `examples/*.lpk`, sorted by path.
pub fn examples() -> Vec<PathBuf> {
    let dir = workspace_root().join("examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "lpk"))
        .collect();
    files.sort();
    files
}

/// The text of a file given relative to the workspace root, such as
/// `examples/cholesky.lpk`.
pub fn read(path: &str) -> String {
    let full = workspace_root().join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// Every `.lpk` file under `dir` (relative to the workspace root),
/// recursively, as paths relative to the root with `/` separators, sorted.
pub fn lpk_files_under(dir: &str) -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for p in entries.flatten().map(|e| e.path()) {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "lpk") {
                out.push(p);
            }
        }
    }
    let root = workspace_root();
    let mut files = Vec::new();
    walk(&root.join(dir), &mut files);
    let mut rel: Vec<String> = files
        .iter()
        .filter_map(|f| f.strip_prefix(&root).ok())
        .map(|f| f.to_string_lossy().replace('\\', "/"))
        .collect();
    rel.sort();
    rel
}

/// The number in the environment variable `var` (a count of generated
/// cases, say), or `default` when it is unset or not a number.
pub fn env_number(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The seed in the environment variable `var`, hexadecimal (`0x9e37_79b9`)
/// or decimal, or `default` when it is unset or not a number.
pub fn env_seed(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16).ok(),
            None => v.parse().ok(),
        })
        .unwrap_or(default)
}
