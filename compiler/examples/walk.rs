//! Walks a program's whole DAG from its roots through `children` with
//! in-degree counting, and prints the time, the counts and the peak
//! resident memory — for showing that memory does not grow with the DAG.
//!
//! `cargo run --release -p lpk-compiler --example walk -- examples/cholesky.lpk N=1024`

use compiler::diag::SourceMap;
use compiler::driver::{check_source, compile_program, select_program};
use std::time::Instant;

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: walk FILE NAME=INT ...");
        std::process::exit(2);
    };
    let params: Vec<(String, i64)> = args[1..]
        .iter()
        .filter_map(|a| {
            let (n, v) = a.split_once('=')?;
            Some((n.to_string(), v.parse().ok()?))
        })
        .collect();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("cannot read {path}: {e}");
        std::process::exit(2)
    });
    let mut sources = SourceMap::new();
    let checked = check_source(&mut sources, path, &text);
    if checked.has_errors() {
        sources.emit_stderr(&checked.diagnostics, false);
        std::process::exit(1);
    }
    let Ok(program) = select_program(&checked.module, None) else {
        eprintln!("choose a file with one program");
        std::process::exit(2)
    };
    let compiled = compile_program(&checked.module, program, &sources);
    let inst = compiled.bind(&params).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let before = peak_rss_kib().unwrap_or(0);
    let start = Instant::now();
    match runtime_interp::dag::walk(&inst) {
        Ok(s) => {
            let secs = start.elapsed().as_secs_f64();
            eprintln!(
                "{} {:?}: {} tasks reached from {} roots, {} edges, at most {} waiting; {:.2} s ({:.0} ns/task); peak RSS {} MiB (before the walk {} MiB)",
                compiled.name,
                params,
                s.reached,
                s.roots,
                s.edges,
                s.max_waiting,
                secs,
                secs * 1e9 / s.reached.max(1) as f64,
                peak_rss_kib().unwrap_or(0) / 1024,
                before / 1024
            );
        }
        Err(e) => {
            eprintln!("walk failed: {e}");
            std::process::exit(1);
        }
    }
}
