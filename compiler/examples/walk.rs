//! Walks the whole DAG of an instance and prints what it saw and how long
//! it took; run under `/usr/bin/time -v` to see the resident memory.
//!
//! `cargo run --release -p lpk-compiler --example walk -- examples/cholesky.lpk N=1024 [sequential|counters]`
#![allow(clippy::print_stdout)]

use lpk_compiler::diag::SourceMap;
use lpk_compiler::pipeline::{compile_source, LintGate};
use std::time::Instant;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, binding, rest @ ..] = args.as_slice() else {
        return Err("usage: walk FILE NAME=INT [sequential|counters]".into());
    };
    let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
    let mut sources = SourceMap::new();
    let program = match compile_source(&mut sources, file, &text, None, LintGate::Off) {
        Ok(compiled) => compiled.program,
        Err(e) => return Err(format!("{file}: {e}")),
    };
    let (name, value) = binding.split_once('=').ok_or("expected NAME=INT")?;
    let value: i64 = value.parse().map_err(|_| "expected NAME=INT")?;
    let inst = program
        .bind(&[(name.to_string(), value)])
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    match rest.first().map(String::as_str).unwrap_or("sequential") {
        "sequential" => {
            let s = lpk_model::dag::walk_sequential(&inst).map_err(|e| e.to_string())?;
            let t = start.elapsed().as_secs_f64();
            println!(
                "sequential walk: {} tasks, {} edges, {} roots in {t:.3} s ({:.0} ns/task)",
                s.tasks,
                s.edges,
                s.roots,
                t * 1e9 / s.tasks as f64
            );
        }
        "counters" => {
            let s = lpk_model::dag::walk(&inst).map_err(|e| e.to_string())?;
            let t = start.elapsed().as_secs_f64();
            println!(
                "counter walk: {} tasks, {} edges, {} roots, at most {} waiting, in {t:.3} s",
                s.reached, s.edges, s.roots, s.max_waiting
            );
        }
        other => return Err(format!("unknown walk `{other}`")),
    }
    Ok(())
}
