//! The end-to-end tests of `lpkc`, in one binary (one link instead of one
//! per file; `cargo test -p lpkc --test cli NAME` runs a subset, and
//! `cargo test -p lpkc --test cli ui::resolve::E0101_did_you_mean` one UI
//! file).
//!
//! - `ui`: one test per file of `tests/ui/`, snapshotted;
//! - `commands`: the command-line contract of `docs/cli.md`;
//! - `json_errors`: every command's failures as the diagnostics object;
//! - `fmt`: `fmt --check`'s diff, several files, the examples formatted;
//! - `artifact_inputs`: artifacts given to `check`, `lint`, `fmt`, `compile`;
//! - `artifact`, `interop`: the program artifact, and the independent
//!   Python loader against `lpkc query`;
//! - `outputs`: where `lint`'s report and `compile`'s artifact go;
//! - `numerics`: `lpkc run --verify` with the standard kernels;
//! - `solve`: `gesv` and `posv` against NumPy's `solve`;
//! - `run`: the rest of `lpkc run`'s contract (bindings, outputs, timings);
//! - `stats`, `dot`, `repl_tty`: the explore commands;
//! - `simulate`: `lpkc simulate` and `lpkc calibrate`;
//! - `rendering`: diagnostics as text: rustc's closing count, and output
//!   bounded on generated inputs;
//! - `wording`: counts, headers, `--help` defaults and error texts;
//! - `binary`: running the real binary;
//! - `lsp`: `lpkc lsp` driven over stdio as an editor drives it;
//! - `bounds`: bounded work and memory on adversarial parameters;
//! - `fuzz_smoke`: the fuzz targets on their seeds, regressions and fresh
//!   mutations, for a bounded time;
//! - `distributed`: `submit`, `worker`, `status`, `collect`, `run --redis`
//!   through a real Redis and S3 server, with workers killed and crashing.
//!
//! Every snapshot file lives under `tests/snapshots/` of the workspace
//! (see `lpk_test_support::snapshot_settings`).

mod artifact;
mod artifact_inputs;
mod binary;
mod bounds;
mod commands;
mod distributed;
mod dot;
mod fmt;
mod fuzz_smoke;
mod hostile;
mod interop;
mod json_errors;
mod layout;
mod lsp;
mod numerics;
mod outputs;
mod redis_auth;
mod rendering;
mod repl_tty;
mod rules;
mod run;
mod simulate;
mod solve;
mod stats;
mod ui;
mod wording;

use lpk_compiler::diag::SourceMap;
use lpk_compiler::pipeline::{compile_source, LintGate};
use lpk_model::program::Program;
use std::path::Path;

/// The string `field` of each object of the JSON array `items` (as the
/// codes of `--format json`'s diagnostics); panics if `items` is not an
/// array.
fn strings_of<'a>(items: &'a serde_json::Value, field: &str) -> Vec<&'a str> {
    items
        .as_array()
        .unwrap_or_else(|| panic!("an array of objects with `{field}`, found {items}"))
        .iter()
        .filter_map(|item| item[field].as_str())
        .collect()
}

/// Compiles a file (absolute, or relative to the workspace root), with the
/// source named `path` as given; panics with the diagnostics when it does
/// not compile.
fn compile(path: &Path) -> Program {
    let text = std::fs::read_to_string(lpk_test_support::workspace_root().join(path))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let name = path.display().to_string();
    let mut sources = SourceMap::new();
    match compile_source(&mut sources, &name, &text, None, LintGate::Off) {
        Ok(compiled) => compiled.program,
        Err(e) => panic!("{name} has errors: {e:?}"),
    }
}
