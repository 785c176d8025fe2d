//! Plans against the brute-force oracle: for every example and many
//! parameter values, the DAG built from the plans equals the DAG of the
//! sequential expansion (same tasks in the same order, same edges), the
//! expansion sees no violation, and `writer`/`readers` agree with it.

use crate::compile_example as compile;
use crate::instance;
use lpk_model::dag::{expand, from_plans, ExpandError};
use lpk_model::program::{Instance, Program};
use lpk_model::query::Engine;
use lpk_model::task::{Task, TileRef};
use std::collections::BTreeMap;
use std::ops::RangeInclusive;

/// Tasks an example instance may have.
const MAX_TASKS: usize = 2_000_000;

/// What [`compare`] found for one instance.
pub(crate) enum Outcome {
    /// Compared, with this many tasks.
    Compared(usize),
    /// Excluded by a `require`.
    Excluded,
    /// More tasks than allowed to expand.
    TooLarge,
}

/// Compares one instance of `program` with the expansion (at most
/// `max_tasks` tasks): the plan DAG has the same tasks and edges, the
/// expansion sees no violation, and `writer`, `readers` and `parents` agree
/// with it. The one comparison behind this file's examples and
/// `generated`'s random programs; a difference is an error naming it.
pub(crate) fn compare(
    program: &Program,
    params: &[(&str, i64)],
    max_tasks: usize,
) -> Result<Outcome, String> {
    let inst = match crate::bind(program, params) {
        Ok(Some(i)) => i,
        Ok(None) => return Ok(Outcome::Excluded),
        Err(e) => return Err(format!("bind: {e}")),
    };
    let (oracle, violations) = match expand(&inst, max_tasks) {
        Ok(r) => r,
        Err(ExpandError::TooLarge(_)) => return Ok(Outcome::TooLarge),
        Err(e) => return Err(format!("expand: {e}")),
    };
    let described: Vec<String> = violations.iter().map(|v| v.describe(&inst)).collect();
    if !described.is_empty() {
        return Err(format!(
            "violations: {:?}",
            &described[..described.len().min(5)]
        ));
    }
    let planned = from_plans(&inst, max_tasks).map_err(|e| format!("plans run: {e}"))?;
    if planned.tasks != oracle.tasks {
        return Err(format!(
            "tasks differ: planned {} vs oracle {}",
            planned.tasks.len(),
            oracle.tasks.len()
        ));
    }
    if let Some((missing, extra)) = oracle.edge_difference(&planned, program, 5) {
        return Err(format!(
            "edges differ\nmissing: {missing:?}\nextra: {extra:?}"
        ));
    }
    // writer / readers of every tile touched, from the expansion.
    let mut writers: BTreeMap<TileRef, Vec<usize>> = BTreeMap::new();
    let mut readers: BTreeMap<TileRef, Vec<usize>> = BTreeMap::new();
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
    let names = |tasks: &[Task]| -> Vec<String> {
        tasks
            .iter()
            .map(|t| program.task_name(t).to_string())
            .collect()
    };
    for (what, tiles) in [("writer", &writers), ("readers", &readers)] {
        for (tile, ids) in tiles {
            let got = if what == "writer" {
                engine.writer(tile)
            } else {
                engine.readers(tile)
            };
            let at = format!("{what} of {}", program.tile_name(tile));
            let got = got.map_err(|e| format!("{at}: {e}"))?;
            let want: Vec<_> = ids.iter().map(|&i| oracle.tasks[i].clone()).collect();
            if got != want {
                return Err(format!(
                    "{at}: plans {:?}, oracle {:?}",
                    names(&got),
                    names(&want)
                ));
            }
        }
    }
    // A tile read and never written (an input's, or a zero matrix's zero
    // tile) has no writer.
    for tile in readers.keys().filter(|t| !writers.contains_key(*t)) {
        let got = engine
            .writer(tile)
            .map_err(|e| format!("writer of {}: {e}", program.tile_name(tile)))?;
        if !got.is_empty() {
            return Err(format!(
                "writer of {}, which no task writes: plans {:?}",
                program.tile_name(tile),
                names(&got)
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

/// Checks one instance of an example: it compares, and has tasks.
fn check_instance(program: &Program, params: &[(&str, i64)]) {
    let at = format!("{} {params:?}", program.name);
    match compare(program, params, MAX_TASKS) {
        Ok(Outcome::Compared(tasks)) => assert!(tasks > 0, "{at}: no tasks"),
        Ok(Outcome::Excluded) => {}
        Ok(Outcome::TooLarge) => panic!("{at}: more than {MAX_TASKS} tasks"),
        Err(e) => panic!("{at}: {e}"),
    }
}

fn single(path: &str, param: &str, range: RangeInclusive<i64>) {
    let program = compile(path);
    for n in range {
        check_instance(&program, &[(param, n)]);
    }
}

/// One test per row: the example at every `N` of the range.
macro_rules! single_tests {
    ($($name:ident: $path:literal, $range:expr;)*) => {
        $(
            #[test]
            fn $name() {
                single($path, "N", $range);
            }
        )*
    };
}

single_tests! {
    cholesky: "examples/cholesky.lpk", 1..=14;
    tsqr: "examples/tsqr.lpk", 1..=40;
    lu: "examples/lu.lpk", 1..=12;
    trtri: "examples/trtri.lpk", 1..=12;
}

#[test]
fn trsolve() {
    let program = compile("examples/trsolve.lpk");
    for n in 1..=8 {
        for r in 1..=5 {
            check_instance(&program, &[("N", n), ("R", r)]);
        }
    }
}

#[test]
fn getrf() {
    single("examples/getrf.lpk", "N", 1..=10);
}

#[test]
fn solves() {
    for path in ["examples/gesv.lpk", "examples/posv.lpk"] {
        let program = compile(path);
        for n in 1..=6 {
            for m in 1..=3 {
                check_instance(&program, &[("N", n), ("M", m)]);
            }
        }
    }
}

/// Checks every instance of a GEMM-shaped example for `M`, `N` and `K` in
/// the ranges, and hands each to `more` with its values.
fn check_mnk(
    path: &str,
    ms: RangeInclusive<i64>,
    ns: RangeInclusive<i64>,
    ks: RangeInclusive<i64>,
    mut more: impl FnMut(&Instance<'_>, i64, i64, i64),
) {
    let program = compile(path);
    for m in ms {
        for n in ns.clone() {
            for k in ks.clone() {
                let params = [("M", m), ("N", n), ("K", k)];
                check_instance(&program, &params);
                more(&instance(&program, &params), m, n, k);
            }
        }
    }
}

#[test]
fn gemm_tree() {
    check_mnk(
        "examples/gemm_tree.lpk",
        1..=3,
        1..=2,
        1..=20,
        |_, _, _, _| {},
    );
}

/// The GEMM tree padded with a zero matrix: the DAG and the queries agree
/// with the expansion for K = 1..17 (the expansion sees no violation: the
/// padded reads are zero tiles), and the counts are those of its header.
#[test]
fn gemm_tree_zero() {
    check_mnk(
        "examples/gemm_tree_zero.lpk",
        1..=2,
        1..=2,
        1..=17,
        |inst, m, n, k| {
            let depth = (k as u64).next_power_of_two().trailing_zeros() as i64;
            let adds: i64 = (0..depth).map(|l| (k + (2 << l) - 1) / (2 << l)).sum();
            let s = lpk_compiler::explore::stats::stats(inst, 1_000_000).expect("stats");
            assert_eq!(s.tasks as i64, m * n * (k + adds + 1), "K={k}");
            assert_eq!(s.critical_path as i64, depth + 2, "K={k}");
            let walk = lpk_model::dag::walk(inst).expect("walks");
            assert_eq!(walk.reached, s.tasks, "K={k}");
        },
    );
}

#[test]
fn gemm() {
    check_mnk("examples/gemm.lpk", 1..=3, 1..=3, 1..=12, gemm_counts);
}

/// GEMM's counts: `M * N * K` tasks, and a chain of `K` per tile.
fn gemm_counts(inst: &Instance<'_>, m: i64, n: i64, k: i64) {
    let s = lpk_compiler::explore::stats::stats(inst, 1_000_000).expect("stats");
    assert_eq!(s.tasks as i64, m * n * k, "M*N*K tasks");
    assert_eq!(s.critical_path as i64, k, "a chain of K per tile");
}

#[test]
fn caqr() {
    let program = compile("examples/caqr.lpk");
    for m in 1..=9 {
        for n in 1..=m {
            check_instance(&program, &[("M", m), ("N", n)]);
        }
    }
}

/// The band reduction: plans equal the expansion for N = 1 ..= 12, and
/// the task counts are the header's closed forms.
#[test]
fn bdfac() {
    let program = compile("examples/bdfac.lpk");
    for n in 1..=12i64 {
        check_instance(&program, &[("N", n)]);
        let inst = instance(&program, &[("N", n)]);
        let s = lpk_compiler::explore::stats::stats(&inst, 1_000_000).expect("stats");
        assert_eq!(s.tasks as i64, n * (n + 1) * (4 * n - 1) / 6, "N={n}");
        let count = |k: &str| s.kernels.get(k).map_or(0, |k| k.tasks as i64);
        assert_eq!(count("qr_factor"), n, "N={n}");
        assert_eq!(count("qr_pair"), n * (n - 1) / 2, "N={n}");
        assert_eq!(count("qr_apply"), n * (n - 1) / 2, "N={n}");
        assert_eq!(
            count("qr_apply_pair"),
            (n - 1) * n * (2 * n - 1) / 6,
            "N={n}"
        );
        assert_eq!(count("lq_factor"), n - 1, "N={n}");
        assert_eq!(count("lq_pair"), (n - 1) * (n - 2) / 2, "N={n}");
        assert_eq!(count("lq_apply"), n * (n - 1) / 2, "N={n}");
        assert_eq!(count("lq_apply_pair"), (n - 2) * (n - 1) * n / 3, "N={n}");
    }
}

#[test]
fn walking_the_dag_reaches_every_task_once() {
    for (path, param, max) in [
        ("examples/cholesky.lpk", "N", 12),
        ("examples/tsqr.lpk", "N", 33),
        ("examples/lu.lpk", "N", 10),
    ] {
        let program = compile(path);
        for n in 1..=max {
            let inst = instance(&program, &[(param, n)]);
            let stats = lpk_model::dag::walk(&inst).expect("walks");
            let (dag, _) = expand(&inst, 1_000_000).expect("expands");
            assert_eq!(stats.reached as usize, dag.tasks.len(), "{path} {n}");
            assert_eq!(stats.edges as usize, dag.edges.len(), "{path} {n}");
            let seq = lpk_model::dag::walk_sequential(&inst).expect("walks in order");
            assert_eq!(seq.tasks as usize, dag.tasks.len(), "{path} {n}");
            assert_eq!(seq.edges as usize, dag.edges.len(), "{path} {n}");
            assert_eq!(seq.roots, stats.roots, "{path} {n}");
        }
    }
}

#[test]
fn cholesky_counts_match_closed_forms() {
    let program = compile("examples/cholesky.lpk");
    for n in 1..=24i64 {
        let inst = instance(&program, &[("N", n)]);
        let s = lpk_compiler::explore::stats::stats(&inst, 1_000_000).expect("stats");
        assert_eq!(s.tasks as i64, n * (n + 1) * (n + 2) / 6, "N={n}");
        assert_eq!(s.critical_path as i64, 3 * n - 2, "N={n}");
        let count = |k: &str| s.kernels.get(k).map_or(0, |k| k.tasks as i64);
        assert_eq!(count("chol"), n);
        assert_eq!(count("trsm"), n * (n - 1) / 2);
        assert_eq!(count("syrk"), (n - 1) * n * (n + 1) / 6);
    }
}

/// The readable plans of every example, snapshotted so that a change of
/// plan is reviewed.
#[test]
fn plans_of_the_examples() {
    let mut settings = lpk_test_support::snapshot_settings("plans");
    settings.set_omit_expression(true);
    let _guard = settings.bind_to_scope();
    for name in [
        "cholesky",
        "tsqr",
        "gemm_tree",
        "gemm_tree_zero",
        "gemm",
        "lu",
        "caqr",
        "bdfac",
        "trsolve",
        "trtri",
    ] {
        let program = compile(&format!("examples/{name}.lpk"));
        insta::assert_snapshot!(
            name,
            lpk_compiler::explore::plans_text::plans_text(&program)
        );
    }
}

/// Plans that enumerate only where the answer really is a range: the
/// reads of Cholesky's and LU's panel tiles, and nothing in TSQR.
#[test]
fn examples_enumerate_only_genuinely_free_variables() {
    use lpk_compiler::explore::plans_text::enumerates;
    let tsqr = compile("examples/tsqr.lpk");
    for plans in &tsqr.plans {
        for ap in plans.writes.iter().chain(&plans.reads) {
            assert!(!enumerates(&ap.inverse), "tsqr enumerates");
        }
    }
    let chol = compile("examples/cholesky.lpk");
    for (st, plans) in chol.statements.iter().zip(&chol.plans) {
        // Every write's inverse is closed form (single assignment).
        for ap in &plans.writes {
            assert!(
                !enumerates(&ap.inverse),
                "cholesky write at line {}",
                st.line
            );
        }
    }
}

/// Programs that once exposed solver bugs, checked like the examples.
#[test]
fn regressions() {
    let program = compile("tests/regress/pow_of_floor_div_index.lpk");
    for n in 1..=7 {
        check_instance(&program, &[("N", n)]);
    }
}

#[test]
fn the_sequential_walk_catches_a_missing_edge() {
    let mut parts = compile("examples/cholesky.lpk").into_parts();
    // Forget that the diagonal `chol` feeds anything: the children plans now
    // miss edges the parents plans still count (a valid program all the
    // same: validation checks ranges, not the plans' meaning).
    parts.plans[0].writes[0].partners.clear();
    let program =
        lpk_model::program::Program::validate(parts, &Default::default()).expect("still valid");
    let inst = instance(&program, &[("N", 4)]);
    let err = lpk_model::dag::walk_sequential(&inst).expect_err("must notice");
    assert!(err.to_string().contains("the children plans gave"), "{err}");
}
