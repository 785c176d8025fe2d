//! Generated programs against the brute-force oracle.
//!
//! A proptest strategy draws a list of choices; a deterministic generator
//! turns it into a *valid* `.lpk` program (small choices give simple
//! programs, so shrinking the list shrinks the program), which is rendered
//! to text, compiled, and, for every parameter value tested, compared with
//! the sequential expansion exactly as `oracle.rs` does: same tasks, same
//! edges, no violation, and the same `writer`/`readers`/`parents` answers.
//!
//! The generator, what it covers and why its programs are valid: see
//! `test_support::gen`.
use compiler::diag::SourceMap;
use compiler::pipeline::{compile_source, CompileError, LintGate};
use model::dag::{expand, from_plans, ExpandError};
use model::program::Program;
use model::query::Engine;
use model::task::Tile;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use test_support::gen::generate;

// ---------------------------------------------------------------------------
// The oracle comparison (as in oracle.rs, returning errors instead of
// panicking).

/// What one instance gave.
enum Outcome {
    /// Compared, with this many tasks.
    Compared(usize),
    /// Excluded by a `require`, or too large to expand.
    Skipped,
}

const MAX_TASKS: usize = 20_000;

/// Checks one instance: the plan DAG equals the expansion, and the tile
/// queries agree with it.
fn check_instance(program: &Program, params: &[(&str, i64)]) -> Result<Outcome, String> {
    let given: Vec<(String, i64)> = params.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    let inst = match program.bind(&given) {
        Ok(i) => i,
        Err(model::program::BindError::Require { .. }) => return Ok(Outcome::Skipped),
        Err(e) => return Err(format!("bind: {e}")),
    };
    let (oracle, violations) = match expand(&inst, MAX_TASKS) {
        Ok(r) => r,
        Err(ExpandError::TooLarge(_)) => return Ok(Outcome::Skipped),
        Err(e) => return Err(format!("expand: {e}")),
    };
    let described: Vec<String> = violations.iter().map(|v| v.describe(&inst)).collect();
    if !described.is_empty() {
        return Err(format!(
            "violations (a generator bug): {:?}",
            &described[..described.len().min(5)]
        ));
    }
    let planned = from_plans(&inst, MAX_TASKS).map_err(|e| format!("plans run: {e}"))?;
    if planned.tasks != oracle.tasks {
        return Err(format!(
            "tasks differ: planned {} vs oracle {}",
            planned.tasks.len(),
            oracle.tasks.len()
        ));
    }
    let show = |e: &model::dag::Edge| {
        format!(
            "{} -> {} via {}",
            program.task_name(&oracle.tasks[e.from]),
            program.task_name(&oracle.tasks[e.to]),
            program.tile_name(&e.tile)
        )
    };
    if planned.edges != oracle.edges {
        let missing: Vec<_> = oracle
            .edges
            .iter()
            .filter(|e| !planned.edges.contains(e))
            .take(5)
            .map(show)
            .collect();
        let extra: Vec<_> = planned
            .edges
            .iter()
            .filter(|e| !oracle.edges.contains(e))
            .take(5)
            .map(show)
            .collect();
        return Err(format!(
            "edges differ\nmissing: {missing:?}\nextra: {extra:?}"
        ));
    }
    // writer / readers of every tile touched, from the expansion.
    let mut writers: BTreeMap<Tile, Vec<usize>> = BTreeMap::new();
    let mut readers: BTreeMap<Tile, Vec<usize>> = BTreeMap::new();
    let mut engine = Engine::new(&inst);
    for (id, t) in oracle.tasks.iter().enumerate() {
        for tile in engine.writes(t).map_err(|e| format!("writes: {e}"))? {
            writers.entry(tile).or_default().push(id);
        }
        for tile in engine.reads(t).map_err(|e| format!("reads: {e}"))? {
            let r = readers.entry(tile).or_default();
            if !r.contains(&id) {
                r.push(id);
            }
        }
    }
    for (tile, ids) in &writers {
        let got = engine
            .writer(tile)
            .map_err(|e| format!("writer of {}: {e}", program.tile_name(tile)))?;
        let want: Vec<_> = ids.iter().map(|&i| oracle.tasks[i].clone()).collect();
        if got != want {
            return Err(format!(
                "writer of {}: plans {:?}, oracle {:?}",
                program.tile_name(tile),
                got.iter()
                    .map(|t| program.task_name(t).to_string())
                    .collect::<Vec<_>>(),
                want.iter()
                    .map(|t| program.task_name(t).to_string())
                    .collect::<Vec<_>>()
            ));
        }
    }
    for (tile, ids) in &readers {
        let got = engine
            .readers(tile)
            .map_err(|e| format!("readers of {}: {e}", program.tile_name(tile)))?;
        let want: Vec<_> = ids.iter().map(|&i| oracle.tasks[i].clone()).collect();
        if got != want {
            return Err(format!(
                "readers of {}: plans {:?}, oracle {:?}",
                program.tile_name(tile),
                got.iter()
                    .map(|t| program.task_name(t).to_string())
                    .collect::<Vec<_>>(),
                want.iter()
                    .map(|t| program.task_name(t).to_string())
                    .collect::<Vec<_>>()
            ));
        }
    }
    // parents of every task agree with the edges into it.
    let mut into: Vec<Vec<usize>> = vec![Vec::new(); oracle.tasks.len()];
    for (k, e) in oracle.edges.iter().enumerate() {
        into[e.to].push(k);
    }
    for (id, t) in oracle.tasks.iter().enumerate() {
        let mut want: Vec<_> = into[id]
            .iter()
            .map(|&k| {
                let e = &oracle.edges[k];
                (oracle.tasks[e.from].clone(), e.tile.clone())
            })
            .collect();
        want.sort_by(|a, b| {
            program
                .sequential_cmp(&a.0, &b.0)
                .then_with(|| a.1.cmp(&b.1))
        });
        let got = engine
            .parents(t)
            .map_err(|e| format!("parents of {}: {e}", program.task_name(t)))?;
        if got != want {
            return Err(format!(
                "parents of {}: plans {:?}, oracle {:?}",
                program.task_name(t),
                got.iter()
                    .map(|(t, x)| format!("{} via {}", program.task_name(t), program.tile_name(x)))
                    .collect::<Vec<_>>(),
                want.iter()
                    .map(|(t, x)| format!("{} via {}", program.task_name(t), program.tile_name(x)))
                    .collect::<Vec<_>>()
            ));
        }
    }
    Ok(Outcome::Compared(oracle.tasks.len()))
}

/// Compiles a program text; errors are reported with the text.
fn compile_text(text: &str) -> Result<Program, String> {
    let mut sources = SourceMap::new();
    match compile_source(&mut sources, "generated.lpk", text, None, LintGate::Off) {
        Ok(compiled) => Ok(compiled.program),
        Err(CompileError::Diagnostics(diagnostics)) => Err(format!(
            "generated program does not compile (a generator bug):\n{text}\n{diagnostics:#?}"
        )),
        Err(e) => Err(format!("{e}\n{text}")),
    }
}

// ---------------------------------------------------------------------------
// The properties.

#[derive(Default)]
struct Tally {
    programs: AtomicUsize,
    instances: AtomicUsize,
    skipped: AtomicUsize,
    tasks: AtomicUsize,
    edges_nonempty: AtomicUsize,
}

/// Compiles a program and compares every instance; an error carries the
/// program text and the parameter values.
fn check_program(text: &str, two_params: bool, tally: &Tally) -> Result<(), String> {
    let program = compile_text(text)?;
    let mut max_tasks = 0;
    for n in 1..=6 {
        let ms: Vec<i64> = if two_params {
            (1..=4).collect()
        } else {
            vec![0]
        };
        for &m in &ms {
            let params: Vec<(&str, i64)> = if two_params {
                vec![("N", n), ("M", m)]
            } else {
                vec![("N", n)]
            };
            match check_instance(&program, &params) {
                Ok(Outcome::Compared(t)) => {
                    tally.instances.fetch_add(1, Ordering::Relaxed);
                    tally.tasks.fetch_add(t, Ordering::Relaxed);
                    max_tasks = max_tasks.max(t);
                }
                Ok(Outcome::Skipped) => {
                    tally.skipped.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => return Err(format!("{text}\nparameters {params:?}: {e}")),
            }
        }
    }
    if max_tasks > 0 {
        tally.edges_nonempty.fetch_add(1, Ordering::Relaxed);
    }
    tally.programs.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

fn run_property(cases: u32, two_params: bool) {
    let start = Instant::now();
    let tally = Tally::default();
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2000,
        ..Config::default()
    };
    // A fixed seed: CI runs exactly the cases verified here. (A run with
    // a random seed once spent over ten minutes in this test; that case was
    // not captured, so the seed is pinned until it is found.)
    let seed = if two_params { [7u8; 32] } else { [3u8; 32] };
    let rng = proptest::test_runner::TestRng::from_seed(
        proptest::test_runner::RngAlgorithm::ChaCha,
        &seed,
    );
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = proptest::collection::vec(any::<u32>(), 16..600);
    let result = runner.run(&strategy, |data| {
        let text = generate(data, two_params);
        if let Ok(dir) = std::env::var("LPK_GEN_DUMP") {
            let _ = std::fs::write(format!("{dir}/current-{two_params}.lpk"), &text);
        }
        check_program(&text, two_params, &tally).map_err(TestCaseError::fail)
    });
    eprintln!(
        "generated ({}): {} programs, {} instances compared ({} tasks), {} skipped, in {:.1?}",
        if two_params { "N, M" } else { "N" },
        tally.programs.load(Ordering::Relaxed),
        tally.instances.load(Ordering::Relaxed),
        tally.tasks.load(Ordering::Relaxed),
        tally.skipped.load(Ordering::Relaxed),
        start.elapsed()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn generated_programs_one_parameter() {
    run_property(1600, false);
}

#[test]
fn generated_programs_two_parameters() {
    run_property(400, true);
}
