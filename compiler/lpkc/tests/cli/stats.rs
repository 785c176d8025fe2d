//! `lpkc stats` numbers against closed forms (the comments of the
//! examples), against hand sums of the flop models, and against the
//! expanded DAG (`lpk_model::dag::expand`) of every example.

use crate::binary::{lpkc, scratch_dir};

use lpk_compiler::explore::stats::{analyse, profile_rows, Stats, StatsOptions};
use lpk_model::flops::flops;
use lpk_model::program::Program;
use std::path::Path;

fn compile(path: &str) -> Program {
    crate::compile(Path::new(path))
}

fn stats_of(program: &Program, params: &[(&str, i64)], block: u64) -> Stats {
    let given: Vec<(String, i64)> = params.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    let inst = program.bind(&given).expect("binds");
    let opts = StatsOptions {
        block,
        ..StatsOptions::default()
    };
    analyse(&inst, &opts).expect("stats").stats
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn cholesky_matches_its_closed_forms() {
    let program = compile("examples/cholesky.lpk");
    for n in 1..=16i64 {
        let s = stats_of(&program, &[("N", n)], 64);
        assert_eq!(s.tasks as i64, n * (n + 1) * (n + 2) / 6, "N={n}");
        assert_eq!(s.critical_path as i64, 3 * n - 2, "N={n}");
        // The first step alone is as wide as its syrk updates and trsm
        // panel allow: level 2 holds the N - 1 trsm tasks of step 0.
        assert_eq!(s.levels.iter().sum::<u64>(), s.tasks);
    }
}

#[test]
fn cholesky_flops_are_the_hand_sum_of_the_models() {
    let program = compile("examples/cholesky.lpk");
    for (n, b) in [(1i64, 16usize), (3, 64), (6, 100), (9, 256)] {
        let s = stats_of(&program, &[("N", n)], b as u64);
        let sq = (b, b);
        let chol = flops("chol", &[sq]).expect("model");
        let trsm = flops("trsm", &[sq, sq]).expect("model");
        let syrk = flops("syrk", &[sq, sq, sq]).expect("model");
        let (nf, nt, ns) = (
            n as f64,
            (n * (n - 1) / 2) as f64,
            ((n - 1) * n * (n + 1) / 6) as f64,
        );
        let total = nf * chol + nt * trsm + ns * syrk;
        assert!(close(s.flops, total), "N={n} B={b}: {} vs {total}", s.flops);
        // A kernel with no task (trsm and syrk at N = 1) has no entry.
        let of = |k: &str| s.kernels.get(k).and_then(|k| k.flops).unwrap_or(0.0);
        assert!(close(of("chol"), nf * chol));
        assert!(close(of("trsm"), nt * trsm));
        assert!(close(of("syrk"), ns * syrk));
        // Bytes: 8 per element read and written, every tile b x b.
        let tile = 8.0 * (b * b) as f64;
        let bytes = nf * 2.0 * tile + nt * 3.0 * tile + ns * 4.0 * tile;
        assert!(close(s.bytes, bytes), "N={n} B={b}");
        // The heaviest path is the chol -> trsm -> syrk chain of every step:
        // N chol, N - 1 trsm and N - 1 syrk.
        let heavy = nf * chol + (nf - 1.0) * (trsm + syrk);
        assert!(close(s.critical_path_flops, heavy), "N={n} B={b}");
        assert_eq!(s.critical_path_flops_tasks as i64, 3 * n - 2);
        assert!(s.unmodelled.is_empty());
    }
}

fn ceil_log2(n: i64) -> i64 {
    let mut l = 0;
    while (1i64 << l) < n {
        l += 1;
    }
    l
}

#[test]
fn tsqr_matches_its_closed_forms() {
    let program = compile("examples/tsqr.lpk");
    for n in 1..=40i64 {
        let s = stats_of(&program, &[("N", n)], 32);
        let popcount = (n - 1).count_ones() as i64;
        assert_eq!(s.tasks as i64, 2 * n - 1 + ceil_log2(n) - popcount, "N={n}");
        assert_eq!(s.critical_path as i64, 1 + ceil_log2(n), "N={n}");
        assert_eq!(
            s.kernels["qr_factor"].tasks as i64,
            n + ceil_log2(n) - popcount
        );
        assert_eq!(
            s.kernels.get("qr_pair").map_or(0, |k| k.tasks) as i64,
            n - 1
        );
        assert_eq!(s.widest_level as i64, n, "the leaves are all ready at once");
    }
}

/// One instance's parameters.
type Params<'a> = &'a [(&'a str, i64)];

/// Levels, edges and the flop-weighted critical path recomputed from the
/// brute-force expansion, for every example and small parameters.
#[test]
fn levels_and_edges_equal_the_expanded_dag() {
    let cases: &[(&str, &[Params])] = &[
        ("cholesky", &[&[("N", 1)], &[("N", 2)], &[("N", 5)]]),
        (
            "tsqr",
            &[&[("N", 1)], &[("N", 5)], &[("N", 8)], &[("N", 9)]],
        ),
        ("lu", &[&[("N", 1)], &[("N", 4)]]),
        ("getrf", &[&[("N", 1)], &[("N", 2)], &[("N", 5)]]),
        ("gesv", &[&[("N", 1), ("M", 1)], &[("N", 4), ("M", 2)]]),
        ("posv", &[&[("N", 1), ("M", 1)], &[("N", 4), ("M", 3)]]),
        ("trtri", &[&[("N", 1)], &[("N", 4)]]),
        ("trsolve", &[&[("N", 3), ("R", 2)], &[("N", 1), ("R", 1)]]),
        (
            "gemm_tree",
            &[
                &[("M", 1), ("N", 1), ("K", 1)],
                &[("M", 2), ("N", 1), ("K", 7)],
                &[("M", 1), ("N", 2), ("K", 17)],
            ],
        ),
        ("caqr", &[&[("M", 1), ("N", 1)], &[("M", 5), ("N", 3)]]),
        ("bdfac", &[&[("N", 1)], &[("N", 4)]]),
    ];
    let block = 48u64;
    for (name, instances) in cases {
        let program = compile(&format!("examples/{name}.lpk"));
        for params in *instances {
            let s = stats_of(&program, params, block);
            let given: Vec<(String, i64)> =
                params.iter().map(|(n, v)| (n.to_string(), *v)).collect();
            let inst = program.bind(&given).expect("binds");
            let (dag, violations) = lpk_model::dag::expand(&inst, 1_000_000).expect("expands");
            assert!(violations.is_empty(), "{name} {params:?}");
            assert_eq!(s.tasks as usize, dag.tasks.len(), "{name} {params:?}");
            assert_eq!(s.edges as usize, dag.edges.len(), "{name} {params:?}");
            // Longest paths over the expansion (tasks are in sequential
            // order, a topological order, and edges are sorted by source).
            let b = block as usize;
            let weight: Vec<f64> = dag
                .tasks
                .iter()
                .map(|t| {
                    let st = program.statement(t.stmt);
                    let k = &program.kernel(st.kernel).name;
                    let tiles = vec![(b, b); st.reads.len()];
                    flops(k, &tiles).unwrap_or(0.0)
                })
                .collect();
            let mut level = vec![1u64; dag.tasks.len()];
            let mut heavy = weight.clone();
            let mut by_target: Vec<Vec<usize>> = vec![Vec::new(); dag.tasks.len()];
            for e in &dag.edges {
                by_target[e.to].push(e.from);
            }
            for t in 0..dag.tasks.len() {
                for &f in &by_target[t] {
                    assert!(f < t, "edges go forward in sequential order");
                    level[t] = level[t].max(level[f] + 1);
                    heavy[t] = heavy[t].max(heavy[f] + weight[t]);
                }
            }
            let depth = level.iter().copied().max().unwrap_or(0);
            let mut levels = vec![0u64; depth as usize];
            for &l in &level {
                levels[(l - 1) as usize] += 1;
            }
            assert_eq!(s.levels, levels, "{name} {params:?}");
            assert_eq!(s.critical_path, depth, "{name} {params:?}");
            let heaviest = heavy.iter().copied().fold(0.0, f64::max);
            assert!(close(s.critical_path_flops, heaviest), "{name} {params:?}");
            let per_kernel_tasks: u64 = s.kernels.values().map(|k| k.tasks).sum();
            assert_eq!(per_kernel_tasks, s.tasks);
            let per_kernel_edges: u64 = s.kernels.values().map(|k| k.edges_out).sum();
            assert_eq!(per_kernel_edges, s.edges);
        }
    }
}

#[test]
fn the_profile_table_buckets_long_profiles_evenly() {
    let levels: Vec<u64> = (1..=94).collect();
    let rows = profile_rows(&levels, 24);
    assert_eq!(rows.len(), 24);
    assert_eq!(
        (rows[0].first, rows[0].last, rows[0].tasks, rows[0].max),
        (1, 4, 10, 4)
    );
    let last = rows.last().expect("rows");
    assert_eq!((last.first, last.last, last.max), (93, 94, 94));
    assert_eq!(
        rows.iter().map(|r| r.tasks).sum::<u64>(),
        levels.iter().sum::<u64>()
    );
    let short = profile_rows(&[3, 1], 24);
    assert_eq!(short.len(), 2);
    assert_eq!((short[1].first, short[1].last), (2, 2));
}

#[test]
fn the_text_table_of_cholesky() {
    let (code, out, err) = lpkc(&[
        "stats",
        "examples/cholesky.lpk",
        "-p",
        "N=4",
        "--block",
        "128",
    ]);
    assert_eq!(code, 0, "{err}");
    let _guard = lpk_test_support::snapshot_settings("stats").bind_to_scope();
    insta::assert_snapshot!(out);
}

#[test]
fn json_keeps_the_old_fields_and_adds_the_new() {
    let (code, out, err) = lpkc(&[
        "stats",
        "examples/tsqr.lpk",
        "-p",
        "N=8",
        "--format",
        "json",
        "--block",
        "64",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["tasks"], 15);
    assert_eq!(v["edges"], 14);
    assert_eq!(v["critical_path"], 4);
    assert_eq!(v["widest_level"], 8);
    assert_eq!(v["levels"], serde_json::json!([8, 4, 2, 1]));
    assert_eq!(v["kernels"]["qr_pair"]["tasks"], 7);
    assert_eq!(v["block"], 64);
    let leaf = flops("qr_factor", &[(64, 64)]).expect("model");
    let pair = flops("qr_pair", &[(64, 64), (64, 64)]).expect("model");
    let total = v["flops"].as_f64().expect("flops");
    assert!(close(total, 8.0 * leaf + 7.0 * pair), "{total}");
    assert!(close(
        v["critical_path_flops"].as_f64().expect("number"),
        leaf + 3.0 * pair
    ));
    assert_eq!(v["critical_path_flops_tasks"], 4);
    assert!(v["kernels"]["qr_factor"]["bytes"]
        .as_f64()
        .is_some_and(|b| b > 0.0));
}

#[test]
fn svg_chart_is_written() {
    let dir = scratch_dir("stats");
    let out = dir.join("profile.svg");
    let out_s = out.to_string_lossy().into_owned();
    let (code, _, err) = lpkc(&[
        "stats",
        "examples/cholesky.lpk",
        "-p",
        "N=6",
        "--svg",
        &out_s,
    ]);
    assert_eq!(code, 0, "{err}");
    let svg = std::fs::read_to_string(&out).expect("svg written");
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
    assert!(svg.contains("cholesky N=6: tasks ready per step"));
    // One bar per level (16 levels for N = 6), filled in the bar colour.
    assert_eq!(svg.matches("fill=\"#4C78A8\"").count(), 16, "{svg}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_block_and_unwritable_svg_are_errors() {
    let (code, _, err) = lpkc(&[
        "stats",
        "examples/cholesky.lpk",
        "-p",
        "N=3",
        "--block",
        "0",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--block must be between 1 and 1048576, found 0"),
        "{err}"
    );
    let (code, _, err) = lpkc(&[
        "stats",
        "examples/cholesky.lpk",
        "-p",
        "N=3",
        "--svg",
        "/no/such/dir/x.svg",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot write /no/such/dir/x.svg"), "{err}");
}
