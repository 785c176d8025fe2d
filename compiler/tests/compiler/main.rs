//! The compiler's integration tests, in one binary (one link instead of
//! one per file; `cargo test -p lpk-compiler --test compiler NAME` runs a
//! subset).
//!
//! - `resolve`, `types`, `plans`, `lint`: one `check(src, expect)` helper
//!   per phase boundary, with inline expectations;
//! - `oracle`: plans against the brute-force expansion for the examples;
//!   `generated`: the same for random valid programs, through the same
//!   `oracle::compare`;
//! - `exec`: the executor against a sequential run;
//! - `lint_honesty`: lint against the expansion (slow in debug builds; run
//!   it with `cargo test --release -p lpk-compiler --test compiler
//!   lint_honesty`).

mod exec;
mod generated;
mod lint;
mod lint_honesty;
mod oracle;
mod plans;
mod proof_share;
mod resolve;
mod types;

use lpk_compiler::diag::SourceMap;
use lpk_compiler::pipeline::{compile_source, CompileError, Compiled, LintGate};
use lpk_model::program::{BindError, Instance, Program};

/// Compiles a source text (the only program in it) as file `test.lpk`,
/// panicking with the diagnostics when it does not compile.
fn compile_text(text: &str) -> (SourceMap, Compiled) {
    let mut sources = SourceMap::new();
    match compile_source(&mut sources, "test.lpk", text, None, LintGate::Off) {
        Ok(compiled) => (sources, compiled),
        Err(e) => panic!("does not compile: {e:?}\n{text}"),
    }
}

/// Compiles a file given relative to the workspace root, such as
/// `examples/cholesky.lpk`.
fn compile_example(path: &str) -> Program {
    let text = lpk_test_support::read(path);
    let mut sources = SourceMap::new();
    match compile_source(&mut sources, path, &text, None, LintGate::Off) {
        Ok(compiled) => compiled.program,
        Err(e) => panic!("{path}: {e:?}"),
    }
}

/// Compiles a generated program text (as file `generated.lpk`); the error
/// carries the text and, when it does not compile, its diagnostics.
fn compile_generated(text: &str) -> Result<Program, String> {
    let mut sources = SourceMap::new();
    match compile_source(&mut sources, "generated.lpk", text, None, LintGate::Off) {
        Ok(compiled) => Ok(compiled.program),
        Err(CompileError::Diagnostics(diagnostics)) => Err(format!(
            "generated program does not compile (a generator bug):\n{text}\n{diagnostics:#?}"
        )),
        Err(e) => Err(format!("{e}\n{text}")),
    }
}

/// Binds named parameter values: `Ok(None)` when a `require` excludes
/// them.
fn bind<'p>(
    program: &'p Program,
    params: &[(&str, i64)],
) -> Result<Option<Instance<'p>>, BindError> {
    let given: Vec<(String, i64)> = params.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    match program.bind(&given) {
        Ok(inst) => Ok(Some(inst)),
        Err(BindError::Require { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The instance of named parameter values, which must bind.
#[track_caller]
fn instance<'p>(program: &'p Program, params: &[(&str, i64)]) -> Instance<'p> {
    match bind(program, params) {
        Ok(Some(inst)) => inst,
        Ok(None) => panic!("{params:?}: excluded by a require"),
        Err(e) => panic!("{params:?}: {e}"),
    }
}
