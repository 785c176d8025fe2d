#![allow(clippy::print_stdout)] // A benchmark reports on stdout.
//! End-to-end throughput of `lpkc query`: 20,000 `children` queries on
//! Cholesky N = 256 in one invocation, fed on stdin, answered as JSON
//! through the real output path (parsing, the plan engine, the answer
//! writer, the buffered stdout), read back from a pipe.
//!
//! Two query sets: tasks spread evenly over the whole instance (mostly
//! syrk, a few children each: the cost per query), and chol/trsm tasks
//! only (hundreds of children each: the cost per child written). The
//! start-up (compiling the program) is measured with no query and
//! subtracted. Run with `cargo bench -p lpkc --bench query`.

use lpk_compiler::diag::SourceMap;
use lpk_compiler::pipeline::{compile_source, LintGate};
use std::io::{Read, Write};
use std::ops::ControlFlow;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const QUERIES: usize = 20_000;
const N: i64 = 256;
const RUNS: usize = 3;

/// The `children TASK` lines of every `step`-th task accepted by `keep`.
fn queries(keep: &dyn Fn(&str) -> bool) -> String {
    let root = lpk_test_support::workspace_root();
    let path = root.join("examples/cholesky.lpk");
    let text = std::fs::read_to_string(&path).expect("the example exists");
    let mut sources = SourceMap::new();
    let Ok(compiled) = compile_source(&mut sources, "cholesky.lpk", &text, None, LintGate::Off)
    else {
        panic!("cholesky compiles")
    };
    let program = compiled.program;
    let inst = program.bind(&[("N".to_string(), N)]).expect("binds");
    let mut names = Vec::new();
    inst.for_each_task(&mut |t| {
        let name = program.task_name(t).to_string();
        if keep(&name) {
            names.push(name);
        }
        ControlFlow::Continue(())
    })
    .expect("walks");
    let step = (names.len() / QUERIES).max(1);
    let mut out = String::new();
    for name in names.iter().step_by(step).take(QUERIES) {
        out.push_str("children ");
        out.push_str(name);
        out.push('\n');
    }
    out
}

/// Runs `lpkc query` on `input`; returns the wall time and the number of
/// tasks in the answers.
fn run(input: &str) -> (Duration, usize) {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lpkc"))
        .current_dir(lpk_test_support::workspace_root())
        .args([
            "query",
            "examples/cholesky.lpk",
            "-p",
            &format!("N={N}"),
            "--format",
            "json",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("lpkc runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_string();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let mut out = Vec::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_end(&mut out)
        .expect("reads");
    let status = child.wait().expect("waits");
    let elapsed = start.elapsed();
    let _ = writer.join();
    assert!(status.success(), "lpkc query failed");
    let text = String::from_utf8_lossy(&out);
    (elapsed, text.matches("{\"kernel\"").count())
}

fn best(input: &str) -> (Duration, usize) {
    (0..RUNS)
        .map(|_| run(input))
        .min_by_key(|(d, _)| *d)
        .expect("runs")
}

fn main() {
    let (startup, _) = best("");
    println!(
        "lpkc query examples/cholesky.lpk -p N={N} --format json, {QUERIES} children queries on stdin (best of {RUNS}); start-up {:.1} ms subtracted",
        startup.as_secs_f64() * 1e3
    );
    let spread = queries(&|_| true);
    let wide = queries(&|name| name.starts_with("chol@") || name.starts_with("trsm@"));
    for (label, input) in [("every task", &spread), ("chol and trsm", &wide)] {
        let queries = input.lines().count();
        let (t, children) = best(input);
        let work = t.saturating_sub(startup).as_secs_f64() * 1e6;
        println!(
            "  {label:<14} {queries} queries, {children} children: {:.2} us/query, {:.3} us/child",
            work / queries as f64,
            work / children.max(1) as f64
        );
    }
}
