//! Honesty checks of the simulator on the model's artifact fixtures (the
//! examples compiled by `lpkc compile`), without the compiler.

use crate::cost::{CostModel, StoreCost};
use crate::engine::{
    simulate, AutoLease, Config, Failures, Lease, Policy, Report, Speculation, Stragglers, Workers,
};
use lpk_model::program::{Instance, Program};
use std::path::PathBuf;

fn program(name: &str) -> Program {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../model/tests/fixtures")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    lpk_model::artifact::decode(&bytes)
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

/// Calls `f` with every case: the fixture, the parameters and the bound
/// instance.
fn for_each_case(mut f: impl FnMut(&str, &Params, &Instance<'_>)) {
    for (file, sets) in cases() {
        let p = program(file);
        for params in sets {
            f(file, &params, &bind(&p, &params));
        }
    }
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

/// Stragglers at `rate`, each `slow` times slower.
fn stragglers(rate: f64, slow: f64) -> Option<Stragglers> {
    Some(Stragglers { rate, slow })
}

/// Failures at `rate`, a crashed task re-queued after `lease`.
fn failures(rate: f64, lease: Lease) -> Option<Failures> {
    Some(Failures { rate, lease })
}

/// A configuration of `workers` for tiles of order `block`, scheduled by
/// `policy`.
fn config(block: u64, workers: Workers, policy: Policy) -> Config {
    let mut cfg = Config::new(block, workers);
    cfg.policy = policy;
    cfg
}

/// [`config`] with the store costs of [`with_store`].
fn stored(block: u64, workers: Workers, policy: Policy) -> Config {
    let mut cfg = config(block, workers, policy);
    cfg.costs = with_store();
    cfg
}

fn run(inst: &Instance<'_>, cfg: &Config) -> Report {
    simulate(inst, cfg).unwrap_or_else(|e| panic!("{} {:?}: {e}", inst.program.name, inst.params))
}

/// Checks that a run on `w` fixed workers is no shorter than its critical
/// path or its work spread over the workers, kept the workers busy no
/// longer than they lived, and never had more than `w` of them busy.
fn assert_within_bounds(r: &Report, w: usize, what: &str) {
    assert!(r.makespan_s >= r.critical_path_s * (1.0 - 1e-12), "{what}");
    assert!(
        r.makespan_s >= r.work_s / w as f64 * (1.0 - 1e-12),
        "{what}"
    );
    assert!(r.busy_seconds <= r.worker_seconds * (1.0 + 1e-12), "{what}");
    assert!(r.peak_busy <= w, "{what}");
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

/// Asserts that `got` is [`close`] to `want`, naming `what` and both.
#[track_caller]
fn assert_close(got: f64, want: f64, what: impl std::fmt::Display) {
    assert!(close(got, want), "{what}: {got} vs {want}");
}

#[test]
fn one_worker_without_store_costs_takes_the_sum_of_the_costs() {
    for_each_case(|file, params, inst| {
        for policy in Policy::ALL {
            let cfg = config(64, Workers::Fixed(1), policy);
            let r = run(inst, &cfg);
            let what = format_args!("{file} {params:?} {policy:?}: makespan vs work");
            assert_close(r.makespan_s, r.work_s, what);
            assert!(r.work_s > 0.0);
            assert_eq!(r.peak_workers, 1);
        }
    });
}

#[test]
fn makespan_is_never_below_the_bounds_and_every_task_runs_once() {
    for_each_case(|file, params, inst| {
        let counted = inst
            .count_tasks(lpk_model::task::COUNT_BUDGET)
            .expect("counts")
            .total();
        let walked = lpk_model::dag::walk(inst).expect("walks");
        for policy in Policy::ALL {
            for w in [1usize, 2, 3, 7] {
                let mut cfg = stored(32, Workers::Fixed(w), policy);
                cfg.cache_tiles = 4;
                let r = run(inst, &cfg);
                let what = format!("{file} {params:?} {policy:?} W={w}");
                assert_eq!(r.tasks, counted, "{what}");
                assert_eq!(r.executions, counted, "{what}");
                assert_eq!(r.edges, walked.edges, "{what}");
                assert_within_bounds(&r, w, &what);
                assert!(r.remote_read_bytes <= r.read_bytes, "{what}");
            }
        }
    });
}

/// The critical path the simulator finds in its forward walk equals the
/// longest path of the expanded DAG (the brute-force oracle).
#[test]
fn critical_path_matches_the_expanded_dag() {
    for_each_case(|file, params, inst| {
        let cfg = Config::new(48, Workers::Fixed(2));
        let r = run(inst, &cfg);
        let costs = crate::cost::statement_costs(inst, &cfg.costs, &cfg.kernels, 48);
        let dag = lpk_model::dag::from_plans(inst, 1 << 20).expect("expands");
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
        let what = format_args!("{file} {params:?}: critical path");
        assert_close(r.critical_path_s, cp, what);
    });
}

#[test]
fn failures_rerun_tasks_and_keep_the_bounds() {
    let p = program("cholesky.lpka");
    let inst = bind(&p, &[("N", 6)]);
    for policy in Policy::ALL {
        let mut cfg = stored(64, Workers::Fixed(3), policy);
        cfg.failures = failures(0.2, Lease::Fixed(0.05));
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
        let cfg = stored(
            64,
            Workers::Autoscale {
                sf: 0.5,
                max: 6,
                idle: 0.001,
            },
            policy,
        );
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
    let mut cfg = stored(64, Workers::Fixed(3), Policy::Fifo);
    cfg.startup = vec![d];
    let late = run(&inst, &cfg);
    cfg.ahead = Some(d);
    let early = run(&inst, &cfg);
    assert_close(late.makespan_s - d, early.makespan_s, "makespan");
    assert_close(late.worker_seconds, early.worker_seconds, "worker-seconds");
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
    let mut cfg = stored(100, Workers::Fixed(1), Policy::Fifo);
    cfg.cache_tiles = 0;
    let r = run(&inst, &cfg);
    assert_eq!(r.read_bytes, 80_000);
    assert_eq!(r.remote_read_bytes, 80_000);
    let t = |b: f64| 2e-3 + b / 1e8;
    let expect = r.work_s + t(80_000.0) + r.written_bytes as f64 / 1e8 + 3.0 * 2e-3;
    assert_close(r.makespan_s, expect, "makespan");
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
            let cfg = stored(64, workers, policy);
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

/// The fields a run's outcome is judged by, for equality checks.
fn outcome(r: &Report) -> (u64, u64, u64, u64, u64, u64, [u64; 4]) {
    (
        r.tasks,
        r.edges,
        r.executions,
        r.failures,
        r.remote_read_bytes,
        r.workers_started,
        [
            r.makespan_s.to_bits(),
            r.worker_seconds.to_bits(),
            r.busy_seconds.to_bits(),
            r.critical_path_s.to_bits(),
        ],
    )
}

/// A straggler rate of 0 changes nothing (no random draw either, so the
/// failures drawn are the same); nor does speculation when every execution
/// of a kernel takes the same time (a free store): no execution passes the
/// threshold, which is that time. (Not `locality`: METIS draws from a
/// random state shared by the threads of the test harness, so two runs of
/// it in one test process may partition differently.)
#[test]
fn without_stragglers_the_flags_change_nothing() {
    for_each_case(|file, params, inst| {
        for policy in [Policy::Fifo, Policy::CriticalPath, Policy::Heft] {
            let what = format!("{file} {params:?} {policy:?}");
            // A store and failures: stragglers at rate 0.
            let mut cfg = stored(32, Workers::Fixed(3), policy);
            cfg.cache_tiles = 4;
            cfg.failures = failures(0.1, Lease::Fixed(0.5));
            let base = run(inst, &cfg);
            cfg.stragglers = stragglers(0.0, 10.0);
            let zero = run(inst, &cfg);
            assert_eq!(outcome(&base), outcome(&zero), "{what}");
            assert_eq!(zero.stragglers, 0, "{what}");
            // A free store: speculation from the first sample on.
            let mut cfg = config(32, Workers::Fixed(3), policy);
            let base = run(inst, &cfg);
            cfg.stragglers = stragglers(0.0, 10.0);
            cfg.speculation = Some(Speculation {
                q: 0.5,
                c: 0.5,
                min: 1,
            });
            let spec = run(inst, &cfg);
            assert_eq!(outcome(&base), outcome(&spec), "{what}");
            assert_eq!(spec.backups, 0, "{what}");
        }
    });
}

/// Stragglers, aggressive speculation, failures and an automatic lease
/// together: every task still completes exactly once (each edge followed
/// once, every execution a completion, a crash or a cancelled copy), and
/// the makespan never beats the lower bounds.
#[test]
fn with_backups_every_task_completes_exactly_once() {
    let mut backups = 0;
    let mut won = 0;
    let mut reruns = 0;
    for_each_case(|file, params, inst| {
        let walked = lpk_model::dag::walk(inst).expect("walks");
        for policy in Policy::ALL {
            for w in [2usize, 3, 7] {
                let what = format!("{file} {params:?} {policy:?} W={w}");
                let mut cfg = stored(32, Workers::Fixed(w), policy);
                cfg.cache_tiles = 4;
                cfg.stragglers = stragglers(0.2, 10.0);
                cfg.speculation = Some(Speculation {
                    q: 0.5,
                    c: 0.5,
                    min: 2,
                });
                cfg.failures = failures(
                    0.05,
                    Lease::Auto(AutoLease {
                        q: 0.5,
                        c: 0.5,
                        factor: 1.0,
                        min: 2,
                        fallback_s: 0.01,
                    }),
                );
                let r = run(inst, &cfg);
                assert_eq!(r.edges, walked.edges, "{what}");
                assert_eq!(r.executions, r.tasks + r.failures + r.cancelled, "{what}");
                let observed: usize = r.kernels.iter().map(|k| k.samples.len()).sum();
                assert_eq!(observed as u64, r.tasks + r.cancelled, "{what}");
                assert!(r.backups_won <= r.backups, "{what}");
                assert!(r.lease_reruns_won <= r.lease_reruns, "{what}");
                assert!(r.cancelled <= r.backups + r.lease_reruns, "{what}");
                assert_within_bounds(&r, w, &what);
                backups += r.backups;
                won += r.backups_won;
                reruns += r.lease_reruns;
            }
        }
    });
    // The checks above were exercised.
    assert!(
        backups > 0 && won > 0 && reruns > 0,
        "{backups} {won} {reruns}"
    );
}

/// `P(Binomial(n, q) < k)` summed term by term.
fn binomial_below(n: usize, q: f64, k: usize) -> f64 {
    let mut sum = 0.0;
    let mut choose = 1.0f64; // C(n, j)
    for j in 0..k {
        sum += choose * q.powi(j as i32) * (1.0 - q).powi((n - j) as i32);
        choose = choose * (n - j) as f64 / (j + 1) as f64;
    }
    sum
}

/// The binomial bound computed directly: the k-th smallest of the samples
/// for the smallest k with `P(Binomial(n, q) < k) >= c`.
fn direct_bound(samples: &[f64], q: f64, c: f64) -> Option<f64> {
    let n = samples.len();
    let k = (1..=n).find(|&k| binomial_below(n, q, k) >= c - 1e-12)?;
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    Some(s[k - 1])
}

/// The thresholds and leases reported are the binomial bounds of the
/// first `threshold_from` / `lease_from` observed durations of the kernel.
#[test]
fn thresholds_are_the_binomial_bound_of_the_observed_durations() {
    let p = program("cholesky.lpka");
    let inst = bind(&p, &[("N", 9)]);
    let mut cfg = stored(64, Workers::Fixed(4), Policy::Fifo);
    cfg.stragglers = stragglers(0.1, 5.0);
    let spec = Speculation {
        q: 0.8,
        c: 0.9,
        min: 10,
    };
    let lease = AutoLease {
        q: 0.9,
        c: 0.9,
        factor: 1.5,
        min: 10,
        fallback_s: 1.0,
    };
    cfg.speculation = Some(spec);
    cfg.failures = failures(0.02, Lease::Auto(lease));
    let r = run(&inst, &cfg);
    let mut checked = 0;
    for k in &r.kernels {
        if let Some(t) = k.threshold_s {
            assert!(k.threshold_from >= spec.min, "{}", k.kernel);
            let direct = direct_bound(&k.samples[..k.threshold_from], spec.q, spec.c);
            assert_eq!(direct, Some(t), "{}", k.kernel);
            checked += 1;
        } else {
            assert!(
                direct_bound(&k.samples, spec.q, spec.c).is_none() || k.samples.len() < spec.min,
                "{}: no threshold from {} samples",
                k.kernel,
                k.samples.len()
            );
        }
        if let Some(l) = k.lease_s {
            let direct = direct_bound(&k.samples[..k.lease_from], lease.q, lease.c);
            assert_eq!(direct.map(|d| d * lease.factor), Some(l), "{}", k.kernel);
            checked += 1;
        }
        // The bounds are recomputed whenever the samples grow by an
        // eighth: the last update used most of them.
        if k.threshold_s.is_some() {
            assert!(
                k.threshold_from * 9 / 8 + 1 >= k.samples.len(),
                "{}",
                k.kernel
            );
        }
    }
    assert!(checked >= 4, "{checked}");
    assert!(r.backups > 0, "{}", r.backups);
}

/// Speculation takes back much of what stragglers cost, and backups are
/// in the worker-seconds.
#[test]
fn speculation_shortens_a_run_with_stragglers() {
    let p = program("cholesky.lpka");
    let inst = bind(&p, &[("N", 9)]);
    let mut cfg = stored(64, Workers::Fixed(4), Policy::Fifo);
    let clean = run(&inst, &cfg);
    cfg.stragglers = stragglers(0.05, 20.0);
    let slow = run(&inst, &cfg);
    cfg.speculation = Some(Speculation::DEFAULT);
    let spec = run(&inst, &cfg);
    assert!(slow.stragglers > 0);
    assert!(slow.makespan_s > clean.makespan_s);
    assert!(
        spec.makespan_s < slow.makespan_s,
        "speculation {} stragglers {}",
        spec.makespan_s,
        slow.makespan_s
    );
    assert!(spec.backups > 0 && spec.backups_won > 0);
    assert!(spec.makespan_s >= spec.critical_path_s);
}

/// A crashed task waits for its lease: an automatic lease (a few times a
/// task's duration) re-queues it far sooner than a long fixed one. A fixed
/// lease shorter than the tasks re-runs healthy executions too.
#[test]
fn an_automatic_lease_requeues_crashed_tasks_sooner() {
    let p = program("cholesky.lpka");
    let inst = bind(&p, &[("N", 9)]);
    let mut cfg = stored(64, Workers::Fixed(4), Policy::Fifo);
    cfg.failures = failures(0.05, Lease::Fixed(10.0));
    let long = run(&inst, &cfg);
    // 22 samples suffice for the 0.9 quantile at 0.9.
    cfg.failures = failures(
        0.05,
        Lease::Auto(AutoLease {
            q: 0.9,
            c: 0.9,
            fallback_s: 10.0,
            ..AutoLease::DEFAULT
        }),
    );
    let auto = run(&inst, &cfg);
    assert!(long.failures > 0 && auto.failures > 0);
    assert!(
        auto.makespan_s < long.makespan_s,
        "auto {} fixed {}",
        auto.makespan_s,
        long.makespan_s
    );
    assert_eq!(long.lease_reruns, 0);
    // A lease far below a task's time: healthy executions get copies.
    cfg.failures = failures(0.0, Lease::Fixed(1e-6));
    let short = run(&inst, &cfg);
    assert!(short.lease_reruns > 0);
    assert_eq!(short.executions, short.tasks + short.cancelled);
}

#[test]
fn bad_straggler_speculation_and_lease_settings_are_refused() {
    let p = program("tsqr.lpka");
    let inst = bind(&p, &[("N", 3)]);
    let base = Config::new(64, Workers::Fixed(2));
    let mut bad: Vec<Config> = Vec::new();
    for (rate, slow) in [(-0.1, 2.0), (1.5, 2.0), (0.1, 0.5), (0.1, f64::NAN)] {
        let mut c = base.clone();
        c.stragglers = Some(Stragglers { rate, slow });
        bad.push(c);
    }
    for (q, c) in [(0.0, 0.9), (1.0, 0.9), (0.9, 1.0), (f64::NAN, 0.5)] {
        let mut cfg = base.clone();
        cfg.speculation = Some(Speculation { q, c, min: 5 });
        bad.push(cfg);
    }
    for a in [
        AutoLease {
            factor: 0.5,
            ..AutoLease::DEFAULT
        },
        AutoLease {
            q: 1.0,
            ..AutoLease::DEFAULT
        },
        AutoLease {
            fallback_s: 0.0,
            ..AutoLease::DEFAULT
        },
    ] {
        let mut c = base.clone();
        c.failures = failures(0.1, Lease::Auto(a));
        bad.push(c);
    }
    for cfg in bad {
        match simulate(&inst, &cfg) {
            Err(crate::SimError::Config(m)) => assert!(!m.is_empty()),
            other => panic!("{:?}: {:?}", cfg.stragglers, other.map(|r| r.makespan_s)),
        }
    }
}

/// With `input_cut`, every read of an input tile costs the cut, cached or
/// not: one worker, no other cost, the makespan is the compute plus one
/// cut per (task, distinct input tile) of the expanded DAG.
#[test]
fn every_read_of_an_input_tile_pays_the_cut() {
    for_each_case(|file, params, inst| {
        let (dag, _) = lpk_model::dag::expand(inst, 1_000_000).expect("expands");
        let engine = lpk_model::query::Engine::new(inst);
        let mut cuts = 0u64;
        for t in &dag.tasks {
            let reads = engine.reads(t).expect("reads");
            for (i, r) in reads.iter().enumerate() {
                let input =
                    inst.program.matrices[r.matrix.index()].role == lpk_model::program::Role::Input;
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
        let r = run(inst, &cfg);
        let expect = r.work_s + cuts as f64 * 1e-3;
        let what = format_args!("{file} {params:?}: makespan with {cuts} cuts");
        assert_close(r.makespan_s, expect, what);
    });
}

/// With a fresh-memory cost, the tasks together pay exactly the peak of
/// live tile bytes at that rate (each byte of the peak first touched once),
/// whatever the workers and the policy; the peak is above 0 exactly when
/// some written tile has a reader, and never exceeds the bytes written.
#[test]
fn fresh_memory_is_paid_once_up_to_the_peak() {
    for_each_case(|file, params, inst| {
        let read_results = {
            let (dag, _) = lpk_model::dag::expand(inst, 1_000_000).expect("expands");
            let mut engine = lpk_model::query::Engine::new(inst);
            let mut any = false;
            for t in &dag.tasks {
                for w in engine.writes(t).expect("writes") {
                    any |= !engine.readers(&w).expect("readers").is_empty();
                }
            }
            any
        };
        for workers in [1, 3] {
            for policy in Policy::ALL {
                let mut cfg = config(64, Workers::Fixed(workers), policy);
                let plain = run(inst, &cfg);
                assert_eq!(plain.peak_live_bytes, None);
                cfg.costs.fresh_memory_bytes_per_s = Some(1e6);
                let r = run(inst, &cfg);
                let peak = r
                    .peak_live_bytes
                    .expect("a peak with the fresh-memory cost");
                let paid = r.busy_seconds - plain.busy_seconds;
                let what =
                    format_args!("{file} {params:?} {workers} {policy:?}: paid for {peak} bytes");
                assert_close(paid, peak as f64 / 1e6, what);
                assert!(
                    peak <= r.written_bytes,
                    "{file}: peak {peak} > written {}",
                    r.written_bytes
                );
                assert_eq!(peak > 0, read_results, "{file} {params:?}: peak {peak}");
                if workers == 1 {
                    assert_close(r.makespan_s, r.work_s + peak as f64 / 1e6, "makespan");
                    if file.starts_with("gemm_tree") {
                        // Its partial sums die as the tree adds them.
                        assert!(peak < r.written_bytes, "{file}: nothing was freed");
                    }
                }
            }
        }
    });
}

/// `locality` reads a smaller share of its bytes from the store than
/// `fifo` on each of the three programs of the policy table
/// (docs/simulation.md), at a small size with the table's store and a
/// cache that cannot hold a worker's whole share (the GEMM tree used to
/// read 78 % remotely against FIFO's 48 %: products run long before their
/// sums, evicted by then, and inputs ignored by the partition).
#[test]
fn locality_reads_less_remotely_than_fifo() {
    let cases: [(&str, Params, usize); 3] = [
        ("gemm_tree.lpka", vec![("M", 4), ("N", 4), ("K", 16)], 8),
        ("cholesky.lpka", vec![("N", 12)], 8),
        ("tsqr.lpka", vec![("N", 64)], 8),
    ];
    for (file, params, w) in cases {
        let p = program(file);
        let inst = bind(&p, &params);
        let share = |policy| {
            let mut cfg = config(4096, Workers::Fixed(w), policy);
            cfg.costs.store = StoreCost {
                latency_s: 0.02,
                bandwidth_bytes_per_s: 1e8,
            };
            cfg.cache_tiles = 16;
            let r = run(&inst, &cfg);
            assert_within_bounds(&r, w, file);
            (
                r.remote_read_bytes as f64 / r.read_bytes as f64,
                r.makespan_s,
            )
        };
        let (fifo, fifo_s) = share(Policy::Fifo);
        let (local, local_s) = share(Policy::Locality);
        eprintln!("{file}: fifo {fifo:.3} {fifo_s:.1} s, locality {local:.3} {local_s:.1} s");
        assert!(local < fifo, "{file}: locality {local:.3}, fifo {fifo:.3}");
    }
}
