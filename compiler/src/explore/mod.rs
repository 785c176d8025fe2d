//! The tools for exploring a compiled program, on the program model alone
//! (they use nothing else of the compiler): the query language, the REPL
//! session, statistics, Graphviz DOT, the DAG's JSON and readable plans.

pub mod dagfmt;
pub mod dot;
pub mod limit;
pub mod plans_text;
pub mod query;
pub mod repl;
pub mod stats;

/// Compiles `examples/NAME.lpk` for the unit tests of these modules.
#[cfg(test)]
fn example_program(name: &str) -> lpk_model::program::Program {
    use crate::pipeline::{compile_source, LintGate};
    let path = format!("{}/../examples/{name}.lpk", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("example exists");
    let mut sources = crate::diag::SourceMap::new();
    match compile_source(&mut sources, &path, &text, None, LintGate::Off) {
        Ok(c) => c.program,
        Err(_) => panic!("{name} compiles"),
    }
}
