//! The plans of the fixtures against the brute-force expansion: for each
//! instance, the DAG built from the plans (`dag::from_plans`) has the same
//! tasks in the same order and the same edges as `dag::expand`, the
//! expansion sees no violation, and the query engine's `writer`, `readers`,
//! `children` and `parents` of every tile and task agree with it. The two
//! walks of the whole DAG count the same tasks and edges.

use crate::load;
use lpk_model::dag::{expand, from_plans, Dag};
use lpk_model::program::{BindError, Instance, Program};
use lpk_model::query::Engine;
use lpk_model::task::{Task, TileRef};
use std::collections::BTreeMap;

const MAX_TASKS: usize = 200_000;

/// Binds `params`; `None` when a `require` excludes them.
fn bind<'p>(program: &'p Program, params: &[(&str, i64)]) -> Option<Instance<'p>> {
    let given: Vec<(String, i64)> = params.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    match program.bind(&given) {
        Ok(inst) => Some(inst),
        Err(BindError::Require { .. }) => None,
        Err(e) => panic!("{} {params:?}: {e}", program.name),
    }
}

/// The (task, tile) pairs of `edges`, ordered as the engine answers.
fn sorted(program: &Program, dag: &Dag, mut pairs: Vec<(usize, TileRef)>) -> Vec<(Task, TileRef)> {
    pairs.sort_by(|a, b| {
        program
            .sequential_cmp(&dag.tasks[a.0], &dag.tasks[b.0])
            .then_with(|| a.1.cmp(&b.1))
    });
    pairs
        .into_iter()
        .map(|(i, tile)| (dag.tasks[i].clone(), tile))
        .collect()
}

/// The other end and the tile of each edge into (`into`) or out of task
/// `id` of `dag`.
fn edge_ends(dag: &Dag, id: usize, into: bool) -> Vec<(usize, TileRef)> {
    let ends = |e: &lpk_model::dag::Edge| if into { (e.to, e.from) } else { (e.from, e.to) };
    dag.edges
        .iter()
        .filter(|e| ends(e).0 == id)
        .map(|e| (ends(e).1, e.tile.clone()))
        .collect()
}

/// Checks one instance; returns how many tasks it has.
fn check_instance(program: &Program, params: &[(&str, i64)]) -> usize {
    let Some(inst) = bind(program, params) else {
        return 0;
    };
    let at = format!("{} {params:?}", program.name);
    let (oracle, violations) = expand(&inst, MAX_TASKS).expect("expands");
    let described: Vec<String> = violations.iter().map(|v| v.describe(&inst)).collect();
    assert!(described.is_empty(), "{at}: {described:?}");
    assert!(!oracle.tasks.is_empty(), "{at}: no tasks");
    let planned = from_plans(&inst, MAX_TASKS).expect("plans run");
    assert_eq!(planned.tasks, oracle.tasks, "{at}: tasks");
    assert_eq!(planned.edges, oracle.edges, "{at}: edges");

    let mut engine = Engine::new(&inst);
    let mut writers: BTreeMap<TileRef, Vec<usize>> = BTreeMap::new();
    let mut readers: BTreeMap<TileRef, Vec<usize>> = BTreeMap::new();
    for (id, t) in oracle.tasks.iter().enumerate() {
        for tile in engine.writes(t).expect("writes") {
            writers.entry(tile).or_default().push(id);
        }
        for tile in engine.reads(t).expect("reads") {
            let r = readers.entry(tile).or_default();
            if !r.contains(&id) {
                r.push(id);
            }
        }
    }
    for (what, tiles) in [("writer", &writers), ("readers", &readers)] {
        for (tile, ids) in tiles {
            let want: Vec<Task> = ids.iter().map(|&i| oracle.tasks[i].clone()).collect();
            let got = if what == "writer" {
                engine.writer(tile)
            } else {
                engine.readers(tile)
            };
            let name = program.tile_name(tile);
            assert_eq!(got.expect(what), want, "{at}: {what} of {name}");
        }
    }
    for (id, t) in oracle.tasks.iter().enumerate() {
        let name = program.task_name(t).to_string();
        let into = edge_ends(&oracle, id, true);
        assert_eq!(
            engine.parents(t).expect("parents"),
            sorted(program, &oracle, into),
            "{at}: parents of {name}"
        );
        let out = edge_ends(&oracle, id, false);
        let mut children = engine.children(t).expect("children");
        children.sort_by(|a, b| {
            program
                .sequential_cmp(&a.0, &b.0)
                .then_with(|| a.1.cmp(&b.1))
        });
        assert_eq!(
            children,
            sorted(program, &oracle, out),
            "{at}: children of {name}"
        );
    }

    let walk = lpk_model::dag::walk(&inst).expect("walks");
    assert_eq!(walk.reached as usize, oracle.tasks.len(), "{at}: walk");
    assert_eq!(walk.edges as usize, oracle.edges.len(), "{at}: walk");
    let seq = lpk_model::dag::walk_sequential(&inst).expect("walks in order");
    assert_eq!(
        seq.tasks as usize,
        oracle.tasks.len(),
        "{at}: sequential walk"
    );
    assert_eq!(
        seq.edges as usize,
        oracle.edges.len(),
        "{at}: sequential walk"
    );
    assert_eq!(seq.roots, walk.roots, "{at}: roots");
    oracle.tasks.len()
}

#[test]
fn cholesky_plans_match_the_expansion() {
    let loaded = load("cholesky.lpka");
    for n in 1..=8 {
        let tasks = check_instance(&loaded.artifact.program, &[("N", n)]);
        assert_eq!(tasks as i64, n * (n + 1) * (n + 2) / 6, "N={n}");
    }
}

#[test]
fn trsolve_plans_match_the_expansion() {
    let loaded = load("trsolve.lpka");
    for n in 1..=5 {
        for r in 1..=3 {
            check_instance(&loaded.artifact.program, &[("N", n), ("R", r)]);
        }
    }
}

#[test]
fn gemm_tree_plans_match_the_expansion() {
    let loaded = load("gemm_tree.lpka");
    for k in 1..=9 {
        check_instance(&loaded.artifact.program, &[("M", 2), ("N", 1), ("K", k)]);
    }
}

/// The padded tree reads tiles of the zero matrix `P` that no task
/// writes: no violation, no edge, and `writer` answers none. The same
/// program without the flag reads unwritten tiles.
#[test]
fn gemm_tree_zero_plans_match_the_expansion() {
    let loaded = load("gemm_tree_zero.lpka");
    let program = &loaded.artifact.program;
    let p = lpk_model::MatrixId::from_index(
        program
            .matrices
            .iter()
            .position(|m| m.zero)
            .expect("a zero matrix"),
    )
    .expect("fits");
    let mut plain = program.clone().into_parts();
    for m in &mut plain.matrices {
        m.zero = false;
    }
    let plain = Program::validate(plain, &Default::default()).expect("valid");
    for k in 1..=17 {
        let params = [("M", 2), ("N", 1), ("K", k)];
        check_instance(program, &params);
        let inst = bind(program, &params).expect("binds");
        let mut engine = Engine::new(&inst);
        let mut zero_reads = 0;
        for t in inst.tasks().expect("walks") {
            for tile in engine.reads(&t).expect("reads") {
                if tile.matrix == p && engine.writer(&tile).expect("writer").is_empty() {
                    zero_reads += 1;
                }
            }
        }
        // One zero right child per tree node whose right child is past K:
        // none when K is a power of two.
        assert_eq!(zero_reads == 0, k & (k - 1) == 0, "K={k}: {zero_reads}");
        let inst = bind(&plain, &params).expect("binds");
        let (_, violations) = expand(&inst, MAX_TASKS).expect("expands");
        assert_eq!(
            violations
                .iter()
                .filter(|v| matches!(v, lpk_model::dag::Violation::ReadUnwritten { .. }))
                .count(),
            zero_reads,
            "K={k}"
        );
    }
}

/// One test per row: the artifact's plans at every `N` of the range.
macro_rules! each_n_tests {
    ($($name:ident: $file:literal, $range:expr;)*) => {
        $(
            #[test]
            fn $name() {
                let loaded = load($file);
                for n in $range {
                    check_instance(&loaded.artifact.program, &[("N", n)]);
                }
            }
        )*
    };
}

each_n_tests! {
    tsqr_plans_match_the_expansion: "tsqr.lpka", 1..=17;
    trtri_plans_from_the_json_twin_match_the_expansion: "trtri.lpka.json", 1..=6;
}

#[test]
fn a_require_refuses_the_instance() {
    let loaded = load("cholesky.lpka");
    let p = &loaded.artifact.program;
    match p.bind(&[("N".to_string(), 0)]) {
        Err(BindError::Require { index, text }) => {
            assert_eq!(index, 1);
            assert_eq!(text, "N >= 1");
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("N = 0 must be refused"),
    }
    assert!(matches!(
        p.bind(&[("M".to_string(), 3)]),
        Err(BindError::Unknown { .. })
    ));
    assert!(matches!(p.bind(&[]), Err(BindError::Missing(name)) if name == "N"));
}

#[test]
fn a_plan_that_forgets_a_reader_loses_edges_the_expansion_has() {
    let mut parts = load("cholesky.lpka").artifact.program.into_parts();
    // The diagonal `chol` no longer feeds anything: the children plans miss
    // edges that the expansion (and the parents plans) still have.
    parts.plans[0].writes[0].partners.clear();
    let program = Program::validate(parts, &Default::default()).expect("still valid");
    let inst = bind(&program, &[("N", 4)]).expect("binds");
    let (oracle, _) = expand(&inst, MAX_TASKS).expect("expands");
    let planned = from_plans(&inst, MAX_TASKS).expect("plans run");
    assert_eq!(planned.tasks, oracle.tasks);
    assert!(
        planned.edges.len() < oracle.edges.len(),
        "{} planned edges, {} expanded",
        planned.edges.len(),
        oracle.edges.len()
    );
    let err = lpk_model::dag::walk_sequential(&inst).expect_err("must notice");
    assert!(err.to_string().contains("the children plans gave"), "{err}");
}
