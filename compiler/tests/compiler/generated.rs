//! Generated programs against the brute-force oracle.
//!
//! A proptest strategy draws a list of choices; a deterministic generator
//! turns it into a *valid* `.lpk` program (small choices give simple
//! programs, so shrinking the list shrinks the program), which is rendered
//! to text, compiled, and, for every parameter value tested, compared with
//! the sequential expansion by `oracle::compare`: same tasks, same
//! edges, no violation, and the same `writer`/`readers`/`parents` answers.
//!
//! The generator, what it covers and why its programs are valid: see
//! `lpk_test_support::gen`.
use crate::compile_generated;
use crate::oracle::{compare, Outcome};
use lpk_test_support::gen::generate;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Tasks a generated instance may have; a larger one is skipped.
const MAX_TASKS: usize = 20_000;

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
    let program = compile_generated(text)?;
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
            match compare(&program, &params, MAX_TASKS) {
                Ok(Outcome::Compared(t)) => {
                    tally.instances.fetch_add(1, Ordering::Relaxed);
                    tally.tasks.fetch_add(t, Ordering::Relaxed);
                    max_tasks = max_tasks.max(t);
                }
                Ok(Outcome::Excluded | Outcome::TooLarge) => {
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
