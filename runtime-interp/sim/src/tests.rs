//! Honesty checks of the simulator on the model's artifact fixtures (the
//! examples compiled by `lpkc compile`), without the compiler.

use crate::cost::{CostModel, StoreCost};
use crate::engine::{simulate, Config, Failures, Policy, Report, Workers};
use model::program::{Instance, Program};
use std::path::PathBuf;

fn program(name: &str) -> Program {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../model/tests/fixtures")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    model::artifact::decode(&bytes)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .artifact
        .program
}

/// Parameter values by name.
type Params = Vec<(&'static str, i64)>;

/// (fixture, parameter sets)
fn cases() -> Vec<(&'static str, Vec<Params>)> {
    vec![
        (
            "cholesky.lpka",
            vec![vec![("N", 1)], vec![("N", 5)], vec![("N", 9)]],
        ),
        (
            "gemm_tree.lpka",
            vec![
                vec![("M", 2), ("N", 1), ("K", 7)],
                vec![("M", 1), ("N", 3), ("K", 17)],
            ],
        ),
        (
            "gemm_tree_zero.lpka",
            vec![vec![("M", 2), ("N", 2), ("K", 6)]],
        ),
        ("tsqr.lpka", vec![vec![("N", 1)], vec![("N", 13)]]),
        ("trsolve.lpka", vec![vec![("N", 6), ("R", 2)]]),
    ]
}

fn bind<'p>(p: &'p Program, params: &[(&str, i64)]) -> Instance<'p> {
    let given: Vec<(String, i64)> = params.iter().map(|&(n, v)| (n.to_string(), v)).collect();
    p.bind(&given)
        .unwrap_or_else(|e| panic!("{}: {e:?}", p.name))
}

fn with_store() -> CostModel {
    CostModel {
        task_overhead_s: 1e-4,
        store: StoreCost {
            latency_s: 2e-3,
            bandwidth_bytes_per_s: 1e8,
        },
        ..CostModel::default()
    }
}

fn run(inst: &Instance<'_>, cfg: &Config) -> Report {
    simulate(inst, cfg).unwrap_or_else(|e| panic!("{} {:?}: {e}", inst.program.name, inst.params))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

#[test]
fn one_worker_without_store_costs_takes_the_sum_of_the_costs() {
    for (file, sets) in cases() {
        let p = program(file);
        for params in sets {
            let inst = bind(&p, &params);
            for policy in Policy::ALL {
                let mut cfg = Config::new(64, Workers::Fixed(1));
                cfg.policy = policy;
                let r = run(&inst, &cfg);
                assert!(
                    close(r.makespan_s, r.work_s),
                    "{file} {params:?} {policy:?}: makespan {} work {}",
                    r.makespan_s,
                    r.work_s
                );
                assert!(r.work_s > 0.0);
                assert_eq!(r.peak_workers, 1);
            }
        }
    }
}

#[test]
fn makespan_is_never_below_the_bounds_and_every_task_runs_once() {
    for (file, sets) in cases() {
        let p = program(file);
        for params in sets {
            let inst = bind(&p, &params);
            let counted = inst
                .count_tasks(model::task::COUNT_BUDGET)
                .expect("counts")
                .total();
            let walked = model::dag::walk(&inst).expect("walks");
            for policy in Policy::ALL {
                for w in [1usize, 2, 3, 7] {
                    let mut cfg = Config::new(32, Workers::Fixed(w));
                    cfg.policy = policy;
                    cfg.costs = with_store();
                    cfg.cache_tiles = 4;
                    let r = run(&inst, &cfg);
                    let what = format!("{file} {params:?} {policy:?} W={w}");
                    assert_eq!(r.tasks, counted, "{what}");
                    assert_eq!(r.executions, counted, "{what}");
                    assert_eq!(r.edges, walked.edges, "{what}");
                    assert!(r.makespan_s >= r.critical_path_s * (1.0 - 1e-12), "{what}");
                    assert!(
                        r.makespan_s >= r.work_s / w as f64 * (1.0 - 1e-12),
                        "{what}"
                    );
                    assert!(r.remote_read_bytes <= r.read_bytes, "{what}");
                    assert!(r.busy_seconds <= r.worker_seconds * (1.0 + 1e-12), "{what}");
                    assert!(r.peak_busy <= w, "{what}");
                }
            }
        }
    }
}

/// The critical path the simulator finds in its forward walk equals the
/// longest path of the expanded DAG (the brute-force oracle).
#[test]
fn critical_path_matches_the_expanded_dag() {
    for (file, sets) in cases() {
        let p = program(file);
        for params in sets {
            let inst = bind(&p, &params);
            let cfg = Config::new(48, Workers::Fixed(2));
            let r = run(&inst, &cfg);
            let costs = crate::cost::statement_costs(&inst, &cfg.costs, 48);
            let dag = model::dag::from_plans(&inst, 1 << 20).expect("expands");
            let cost = |i: usize| costs[dag.tasks[i].stmt.index()].seconds;
            // Tasks are in sequential order, a topological order.
            let mut finish: Vec<f64> = (0..dag.tasks.len()).map(cost).collect();
            let mut parents: Vec<Vec<usize>> = vec![Vec::new(); dag.tasks.len()];
            for e in &dag.edges {
                parents[e.to].push(e.from);
            }
            for i in 0..dag.tasks.len() {
                let start = parents[i].iter().map(|&j| finish[j]).fold(0.0, f64::max);
                finish[i] = start + cost(i);
            }
            let cp = finish.iter().cloned().fold(0.0, f64::max);
            assert!(
                close(r.critical_path_s, cp),
                "{file} {params:?}: {} vs {cp}",
                r.critical_path_s
            );
        }
    }
}

#[test]
fn failures_rerun_tasks_and_keep_the_bounds() {
    let p = program("cholesky.lpka");
    let inst = bind(&p, &[("N", 6)]);
    for policy in Policy::ALL {
        let mut cfg = Config::new(64, Workers::Fixed(3));
        cfg.policy = policy;
        cfg.costs = with_store();
        cfg.failures = Some(Failures {
            rate: 0.2,
            lease_s: 0.05,
        });
        cfg.startup = vec![0.01, 0.02];
        let r = run(&inst, &cfg);
        assert!(r.failures > 0, "{policy:?}");
        assert_eq!(r.executions, r.tasks + r.failures, "{policy:?}");
        assert_eq!(r.workers_started, 3 + r.failures, "{policy:?}");
        assert!(r.makespan_s >= r.critical_path_s);
        assert!(r.makespan_s >= r.work_s / 3.0);
    }
}

#[test]
fn autoscaling_stays_within_its_maximum() {
    let p = program("gemm_tree.lpka");
    let inst = bind(&p, &[("M", 3), ("N", 3), ("K", 9)]);
    for policy in Policy::ALL {
        let mut cfg = Config::new(
            64,
            Workers::Autoscale {
                sf: 0.5,
                max: 6,
                idle: 0.001,
            },
        );
        cfg.policy = policy;
        cfg.costs = with_store();
        let r = run(&inst, &cfg);
        assert!(
            r.peak_workers <= 6 && r.peak_workers >= 1,
            "{policy:?} {}",
            r.peak_workers
        );
        assert!(r.makespan_s >= r.work_s / 6.0);
        assert_eq!(r.executions, r.tasks);
    }
}

/// With every start-up taking `d`, requesting the workers `d` ahead saves
/// exactly `d` of makespan and costs nothing in worker-seconds.
#[test]
fn requesting_ahead_by_the_startup_bound_hides_the_delay() {
    let p = program("cholesky.lpka");
    let inst = bind(&p, &[("N", 5)]);
    let d = 0.25;
    let mut cfg = Config::new(64, Workers::Fixed(3));
    cfg.costs = with_store();
    cfg.startup = vec![d];
    let late = run(&inst, &cfg);
    cfg.ahead = Some(d);
    let early = run(&inst, &cfg);
    assert!(
        close(late.makespan_s - d, early.makespan_s),
        "{} {}",
        late.makespan_s,
        early.makespan_s
    );
    assert!(close(late.worker_seconds, early.worker_seconds));
    // Workers requested ahead that start sooner than the bound wait for
    // the submission: nothing runs before 0.
    cfg.startup = vec![0.01, 0.3];
    cfg.ahead = Some(0.3);
    let r = run(&inst, &cfg);
    assert!(
        r.makespan_s >= r.critical_path_s,
        "{} {}",
        r.makespan_s,
        r.critical_path_s
    );
}

#[test]
fn a_remote_read_costs_latency_and_bandwidth() {
    // One worker, no cache: every read of tsqr(N=1)'s single task is
    // remote; the makespan is the compute plus 1 read and 3 writes.
    let p = program("tsqr.lpka");
    let inst = bind(&p, &[("N", 1)]);
    let mut cfg = Config::new(100, Workers::Fixed(1));
    cfg.costs = with_store();
    cfg.cache_tiles = 0;
    let r = run(&inst, &cfg);
    assert_eq!(r.read_bytes, 80_000);
    assert_eq!(r.remote_read_bytes, 80_000);
    let t = |b: f64| 2e-3 + b / 1e8;
    let expect = r.work_s + t(80_000.0) + r.written_bytes as f64 / 1e8 + 3.0 * 2e-3;
    assert!(close(r.makespan_s, expect), "{} vs {expect}", r.makespan_s);
    let _ = t;
}

/// With more roots than workers, every policy keeps every worker busy at
/// the start (a placement that piles the roots on one worker would not).
#[test]
fn every_policy_uses_every_worker_on_a_wide_dag() {
    let p = program("gemm_tree.lpka");
    let inst = bind(&p, &[("M", 2), ("N", 2), ("K", 8)]);
    for policy in Policy::ALL {
        for workers in [
            Workers::Fixed(4),
            Workers::Autoscale {
                sf: 1.0,
                max: 4,
                idle: 1.0,
            },
        ] {
            let mut cfg = Config::new(64, workers);
            cfg.policy = policy;
            cfg.costs = with_store();
            let r = run(&inst, &cfg);
            assert_eq!(r.peak_busy, 4, "{policy:?} {workers:?}");
            // 32 equal gemm roots on 4 workers: no worse than twice the
            // work per worker plus the critical path.
            assert!(
                r.busy_seconds / r.makespan_s > 2.0,
                "{policy:?} {workers:?}: busy {} makespan {}",
                r.busy_seconds,
                r.makespan_s
            );
        }
    }
}

/// With `input_cut`, every read of an input tile costs the cut, cached or
/// not: one worker, no other cost, the makespan is the compute plus one
/// cut per (task, distinct input tile) of the expanded DAG.
#[test]
fn every_read_of_an_input_tile_pays_the_cut() {
    for (file, sets) in cases() {
        let p = program(file);
        for params in sets {
            let inst = bind(&p, &params);
            let (dag, _) = model::dag::expand(&inst, 1_000_000).expect("expands");
            let engine = model::query::Engine::new(&inst);
            let mut cuts = 0u64;
            for t in &dag.tasks {
                let reads = engine.reads(t).expect("reads");
                for (i, r) in reads.iter().enumerate() {
                    let input = p.matrices[r.matrix.index()].role == model::program::Role::Input;
                    if input && !reads[..i].contains(r) {
                        cuts += 1;
                    }
                }
            }
            let mut cfg = Config::new(64, Workers::Fixed(1));
            cfg.costs.input_cut = Some(StoreCost {
                latency_s: 1e-3,
                bandwidth_bytes_per_s: 0.0,
            });
            let r = run(&inst, &cfg);
            let expect = r.work_s + cuts as f64 * 1e-3;
            assert!(
                close(r.makespan_s, expect),
                "{file} {params:?}: makespan {} expected {expect} ({cuts} cuts)",
                r.makespan_s
            );
        }
    }
}

/// With a fresh-memory cost, the tasks together pay exactly the peak of
/// live tile bytes at that rate (each byte of the peak first touched once),
/// whatever the workers and the policy; the peak holds every output tile
/// and never exceeds the bytes written.
#[test]
fn fresh_memory_is_paid_once_up_to_the_peak() {
    for (file, sets) in cases() {
        let p = program(file);
        for params in sets {
            let inst = bind(&p, &params);
            let outputs: u64 = {
                let (dag, _) = model::dag::expand(&inst, 1_000_000).expect("expands");
                let engine = model::query::Engine::new(&inst);
                let mut tiles = std::collections::BTreeSet::new();
                for t in &dag.tasks {
                    for w in engine.writes(t).expect("writes") {
                        if p.matrices[w.matrix.index()].role == model::program::Role::Output {
                            tiles.insert(format!("{w:?}"));
                        }
                    }
                }
                tiles.len() as u64
            };
            for workers in [1, 3] {
                for policy in Policy::ALL {
                    let mut cfg = Config::new(64, Workers::Fixed(workers));
                    cfg.policy = policy;
                    let plain = run(&inst, &cfg);
                    assert_eq!(plain.peak_live_bytes, None);
                    cfg.costs.fresh_memory_bytes_per_s = Some(1e6);
                    let r = run(&inst, &cfg);
                    let peak = r
                        .peak_live_bytes
                        .expect("a peak with the fresh-memory cost");
                    let paid = r.busy_seconds - plain.busy_seconds;
                    assert!(
                        close(paid, peak as f64 / 1e6),
                        "{file} {params:?} {workers} {policy:?}: paid {paid} for a peak of {peak} bytes"
                    );
                    assert!(
                        peak <= r.written_bytes,
                        "{file}: peak {peak} > written {}",
                        r.written_bytes
                    );
                    // Every output tile is B x B = 64 x 64 f64 or smaller
                    // (shape models); at least one byte each.
                    assert!(
                        peak >= outputs,
                        "{file}: peak {peak} below {outputs} output tiles"
                    );
                    if workers == 1 {
                        assert!(close(r.makespan_s, r.work_s + peak as f64 / 1e6));
                        if file.starts_with("gemm_tree") {
                            // Its partial sums die as the tree adds them.
                            assert!(peak < r.written_bytes, "{file}: nothing was freed");
                        }
                    }
                }
            }
        }
    }
}
