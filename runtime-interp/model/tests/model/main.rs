//! The model crate's integration tests, without the compiler: artifacts
//! checked in under `tests/fixtures/` (written once by `lpkc compile`; see
//! the README there) are loaded with `artifact::decode`, which validates
//! them, and
//!
//! - `loading`: what loads, and corrupted or inconsistent artifacts refused
//!   with the right error;
//! - `plans`: for several parameter values, the DAG built from the plans
//!   equals the brute-force expansion (`dag::expand`, the oracle), and the
//!   `query::Engine` answers `writer`, `readers`, `children` and `parents`
//!   as the expansion does.

mod loading;
mod plans;

use lpk_model::artifact::{self, Loaded};
use std::path::PathBuf;

/// Every fixture: file name, program name, parameter names, the major
/// format version it was written in. The version 1 fixtures were written
/// before zero matrices (format 2) and are kept as written: they show that
/// version 1 still loads.
const FIXTURES: &[(&str, &str, &[&str], u16)] = &[
    ("cholesky.lpka", "cholesky", &["N"], 1),
    ("gemm_tree.lpka", "gemm_tree", &["M", "N", "K"], 1),
    ("gemm_tree_zero.lpka", "gemm_tree_zero", &["M", "N", "K"], 2),
    ("trsolve.lpka", "trsolve", &["N", "R"], 1),
    ("trtri.lpka.json", "trtri", &["N"], 1),
    ("tsqr.lpka", "tsqr", &["N"], 1),
];

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The bytes of a fixture.
fn bytes(name: &str) -> Vec<u8> {
    let path = fixture_path(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A fixture, decoded and validated.
fn load(name: &str) -> Loaded {
    artifact::decode(&bytes(name)).unwrap_or_else(|e| {
        panic!(
            "{name}: {e} ({}); regenerate the fixtures as tests/fixtures/README.md says",
            e.code()
        )
    })
}
