//! `lpkc simulate` and `lpkc calibrate` through the real binary: the JSON
//! contract of docs/cli.md ("Simulation"), the honesty checks (one worker
//! and a free store take the sum of the costs; the makespan never beats
//! the critical path or the work per worker; every task runs once, as many
//! as `lpkc stats` counts), and clear errors for bad input.

use crate::binary::lpkc;
use serde_json::Value;
use std::path::Path;

fn json(args: &[&str]) -> Value {
    let (code, out, err) = lpkc(args);
    assert_eq!(code, 0, "lpkc {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("lpkc {args:?}: {e}: {out}"))
}

fn num(v: &Value, k: &str) -> f64 {
    v.get(k)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("`{k}` is not a number in {v}"))
}

const POLICIES: [&str; 4] = ["fifo", "critical-path", "heft", "locality"];

/// (file, parameters) of several examples.
const CASES: [(&str, &[&str]); 5] = [
    ("examples/cholesky.lpk", &["-p", "N=7"]),
    (
        "examples/gemm_tree.lpk",
        &["-p", "M=2", "-p", "N=2", "-p", "K=6"],
    ),
    ("examples/tsqr.lpk", &["-p", "N=11"]),
    ("examples/lu.lpk", &["-p", "N=5"]),
    (
        "examples/gemm_tree_zero.lpk",
        &["-p", "M=1", "-p", "N=2", "-p", "K=5"],
    ),
];

/// A small simulation of two workers (a cholesky of 4 x 4 tiles), to add
/// flags to.
pub(crate) const SIMULATE_CHOLESKY: [&str; 8] = [
    "simulate",
    "examples/cholesky.lpk",
    "-p",
    "N=4",
    "--block",
    "64",
    "--workers",
    "2",
];

/// `lpkc calibrate --kernels KERNELS --block BLOCKS --min-time 0 EXTRA`
/// into `costs.json` of `dir`; returns its path and the model it holds.
fn calibrate(dir: &Path, kernels: &str, blocks: &str, extra: &[&str]) -> (String, Value) {
    let costs = dir.join("costs.json");
    let c = costs.to_str().expect("utf-8").to_string();
    let mut a = vec!["calibrate", "--block", blocks, "--kernels", kernels];
    a.extend(["--min-time", "0"]);
    a.extend_from_slice(extra);
    a.extend(["-o", &c]);
    let (code, _, err) = lpkc(&a);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&costs).expect("written");
    (c, serde_json::from_str(&text).expect("JSON"))
}

fn args<'a>(file: &'a str, params: &'a [&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["simulate", file];
    a.extend_from_slice(params);
    a.extend_from_slice(extra);
    a.extend_from_slice(&["--format", "json"]);
    a
}

#[test]
fn the_report_has_the_contract_fields() {
    for policy in POLICIES {
        let v = json(&args(
            "examples/cholesky.lpk",
            &["-p", "N=6"],
            &["--block", "128", "--workers", "3", "--policy", policy],
        ));
        assert_eq!(v["policy"], policy);
        for k in ["tasks", "read_bytes", "remote_read_bytes", "peak_workers"] {
            assert!(v[k].is_u64(), "{k} is not an integer: {v}");
        }
        for k in ["makespan_s", "worker_seconds", "critical_path_s", "work_s"] {
            assert!(v[k].is_f64(), "{k} is not a float: {v}");
        }
        assert_eq!(v["tasks"], 56);
        assert_eq!(v["peak_workers"], 3);
    }
}

#[test]
fn one_worker_and_a_free_store_take_the_sum_of_the_costs() {
    for (file, params) in CASES {
        for policy in POLICIES {
            let v = json(&args(
                file,
                params,
                &["--block", "64", "--workers", "1", "--policy", policy],
            ));
            let (m, w) = (num(&v, "makespan_s"), num(&v, "work_s"));
            assert!(
                (m - w).abs() <= 1e-9 * w,
                "{file} {policy}: makespan {m} work {w}"
            );
        }
    }
}

#[test]
fn the_makespan_respects_the_bounds_and_every_task_runs_once() {
    for (file, params) in CASES {
        let mut stats = vec!["stats", file];
        stats.extend_from_slice(params);
        stats.extend_from_slice(&["--format", "json"]);
        let counted = json(&stats)["tasks"].as_u64().expect("a count");
        for policy in POLICIES {
            for w in ["2", "5"] {
                let v = json(&args(
                    file,
                    params,
                    &[
                        "--block",
                        "64",
                        "--workers",
                        w,
                        "--policy",
                        policy,
                        "--store-latency",
                        "0.001",
                        "--store-bandwidth",
                        "200",
                        "--cache-tiles",
                        "3",
                    ],
                ));
                let what = format!("{file} {policy} W={w}");
                assert_eq!(v["tasks"].as_u64(), Some(counted), "{what}");
                assert_eq!(v["executions"].as_u64(), Some(counted), "{what}");
                let m = num(&v, "makespan_s");
                let wn: f64 = w.parse().expect("a number");
                assert!(m >= num(&v, "critical_path_s") * (1.0 - 1e-12), "{what}");
                assert!(m >= num(&v, "work_s") / wn * (1.0 - 1e-12), "{what}");
                assert!(
                    v["remote_read_bytes"].as_u64() <= v["read_bytes"].as_u64(),
                    "{what}"
                );
            }
        }
    }
}

#[test]
fn autoscaling_start_up_bounds_and_failures() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let delays = dir.path().join("delays.txt");
    // 40 delays 0.01, 0.02, ..., 0.40: the 0.9 quantile at 0.95 needs the
    // order statistic k with P(Bin(40, 0.9) < k) >= 0.95. For k = 39 that
    // is 1 - 40 0.9^39 0.1 - 0.9^40 = 0.92 (too low); for k = 40 it is
    // 1 - 0.9^40 = 0.985: the bound is the largest delay, 0.40.
    let text: String = (1..=40)
        .map(|i| format!("{}\n", i as f64 / 100.0))
        .collect();
    std::fs::write(&delays, text).expect("writes");
    let d = delays.to_str().expect("utf-8");
    let base = [
        "--block",
        "128",
        "--autoscale",
        "sf=0.5,max=4,idle=0.01",
        "--startup",
        d,
    ];
    let plain = json(&args("examples/cholesky.lpk", &["-p", "N=6"], &base));
    let mut ahead_args = base.to_vec();
    ahead_args.push("--ahead");
    let ahead = json(&args("examples/cholesky.lpk", &["-p", "N=6"], &ahead_args));
    let bound = num(&ahead, "startup_bound_s");
    assert!((bound - 0.40).abs() < 1e-12, "{bound}");
    assert!(num(&plain, "peak_workers") <= 4.0);
    assert!(num(&ahead, "makespan_s") >= num(&ahead, "critical_path_s"));
    // Failures: every execution beyond the tasks is a re-run.
    let v = json(&args(
        "examples/cholesky.lpk",
        &["-p", "N=6"],
        &[
            "--block",
            "128",
            "--workers",
            "3",
            "--fail-rate",
            "0.3",
            "--lease",
            "0.5",
        ],
    ));
    let (e, t, f) = (num(&v, "executions"), num(&v, "tasks"), num(&v, "failures"));
    assert!(f > 0.0 && e == t + f, "{v}");
}

#[test]
fn calibrate_writes_a_model_simulate_reads() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let kernels = "chol,trsm,syrk,qr_apply_pair";
    let (c, model) = calibrate(dir.path(), kernels, "8,16", &[]);
    for k in kernels.split(',') {
        let times = model["kernels"][k].as_array().expect("times");
        assert_eq!(times.len(), 2, "{k}");
        assert!(
            times
                .iter()
                .all(|t| t["seconds"].as_f64().is_some_and(|s| s > 0.0)),
            "{k}"
        );
    }
    assert!(model["store"]["latency_s"]
        .as_f64()
        .is_some_and(|l| l > 0.0));
    // The simulation of one worker with a free store is the sum of the
    // calibrated times: chol + trsm + syrk of cholesky(N=2) at block 16.
    let v = json(&args(
        "examples/cholesky.lpk",
        &["-p", "N=2"],
        &[
            "--block",
            "16",
            "--workers",
            "1",
            "--costs",
            &c,
            "--store-latency",
            "0",
        ],
    ));
    let at16 = |k: &str| model["kernels"][k][1]["seconds"].as_f64().expect("a time");
    let sum = 2.0 * at16("chol") + at16("trsm") + at16("syrk");
    let rate = model["store"]["bandwidth_bytes_per_s"]
        .as_f64()
        .expect("bw");
    let bw = num(&v, "written_bytes") / rate;
    let reads = num(&v, "remote_read_bytes") / rate;
    assert!((num(&v, "work_s") - sum).abs() <= 1e-12 + 1e-9 * sum, "{v}");
    assert!(
        (num(&v, "makespan_s") - (sum + bw + reads)).abs() <= 1e-9 * (sum + bw + reads),
        "{v}"
    );
}

#[test]
fn bad_input_gets_a_clear_error() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"gflops\": \"fast\"}").expect("writes");
    let few = dir.path().join("few.txt");
    std::fs::write(&few, "1.0\n2.0\n").expect("writes");
    let nan = dir.path().join("nan.txt");
    std::fs::write(&nan, "1.0\nsoon\n").expect("writes");
    let (b, f, n) = (
        bad.to_str().expect("utf-8"),
        few.to_str().expect("utf-8"),
        nan.to_str().expect("utf-8"),
    );
    // (flags, exit code, what stderr says): without the workers, then
    // beside `--workers 2`.
    let no_workers: [(&[&str], i32, &str); 3] = [
        (&["--autoscale", "sf=0.5,max=0,idle=1"], 2, "max=MAX"),
        (&["--autoscale", "speed=2"], 2, "not an autoscale setting"),
        (&[], 2, "--workers"),
    ];
    let two_workers: [(&[&str], i32, &str); 17] = [
        (&["--costs", b], 2, "lpkc calibrate"),
        (
            &["--costs", "/nonexistent/costs.json"],
            2,
            "cannot read the costs",
        ),
        (&["--startup", f, "--ahead"], 2, "cannot bound"),
        (&["--startup", n], 2, "`soon` is not a delay"),
        (&["--max-tasks", "5"], 1, "--max-tasks"),
        (&["--fail-rate", "1.5"], 2, "--fail-rate"),
        (&["--gflops", "0"], 2, "gflops"),
        (
            &["--stragglers", "rate=1.5,slow=10"],
            2,
            "rate must be from 0 to 1",
        ),
        (
            &["--stragglers", "rate=0.1,slow=0.5"],
            2,
            "slow must be at least 1",
        ),
        (&["--stragglers", "rate=0.1"], 2, "expected rate=P"),
        (&["--stragglers", "often"], 2, "expected KEY=VALUE"),
        (
            &["--speculate", "q=1"],
            2,
            "q must be strictly between 0 and 1",
        ),
        (&["--speculate", "min=0"], 2, "min must be a whole number"),
        (&["--speculate", "k=3"], 2, "not a speculation setting"),
        (
            &["--lease", "auto:factor=0.5"],
            2,
            "factor must be at least 1",
        ),
        (&["--lease", "soon"], 2, "`soon` is not a lease"),
        (&["--lease", "0"], 2, "`0` is not a lease"),
    ];
    let cases = (no_workers.iter().map(|c| (&SIMULATE_CHOLESKY[..6], c)))
        .chain(two_workers.iter().map(|c| (&SIMULATE_CHOLESKY[..], c)));
    for (base, (extra, want, text)) in cases {
        let (code, _, err) = lpkc(&[base, extra].concat());
        assert_eq!(code, *want, "{extra:?}: {err}");
        assert!(err.contains(text), "{extra:?}: `{text}` not in {err}");
        assert!(!err.contains("panicked"), "{extra:?}: {err}");
    }
    // The JSON error object on stdout with --format json.
    let json_error = ["--max-tasks", "5", "--format", "json"];
    let (code, out, _) = lpkc(&[&SIMULATE_CHOLESKY[..], &json_error].concat());
    assert_eq!(code, 1);
    assert!(serde_json::from_str::<Value>(&out).is_ok(), "{out}");
}

#[test]
fn the_svg_chart_is_written() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let svg = dir.path().join("util.svg");
    let s = svg.to_str().expect("utf-8");
    let (code, _, err) = lpkc(&[
        "simulate",
        "examples/tsqr.lpk",
        "-p",
        "N=16",
        "--block",
        "256",
        "--workers",
        "4",
        "--svg",
        s,
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&svg).expect("written");
    assert!(
        text.starts_with("<svg") && text.contains("busy workers"),
        "{}",
        &text[..100.min(text.len())]
    );
}

/// `calibrate --no-store` models the embedded executor: a free store, the
/// input cut and the fresh-memory rate, which `simulate` then charges.
#[test]
fn calibrate_no_store_models_cuts_and_fresh_memory() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (c, model) = calibrate(dir.path(), "gemm,add,add4,copy", "16", &["--no-store"]);
    assert_eq!(model["store"]["latency_s"].as_f64(), Some(0.0), "{model}");
    assert!(
        model["input_cut"]["bandwidth_bytes_per_s"]
            .as_f64()
            .is_some_and(|b| b > 0.0),
        "{model}"
    );
    assert!(
        model["fresh_memory_bytes_per_s"]
            .as_f64()
            .is_some_and(|b| b > 0.0),
        "{model}"
    );
    let v = json(&args(
        "examples/gemm_tree.lpk",
        &["-p", "M=2", "-p", "N=2", "-p", "K=5"],
        &["--block", "16", "--workers", "1", "--costs", &c],
    ));
    let peak = num(&v, "peak_live_bytes");
    assert!(peak > 0.0 && peak < num(&v, "written_bytes"), "{v}");
    // One worker: compute, one cut per input read (2 per product), and
    // the peak first touched once.
    let cut = |b: f64| {
        model["input_cut"]["latency_s"].as_f64().expect("latency")
            + b / model["input_cut"]["bandwidth_bytes_per_s"]
                .as_f64()
                .expect("bandwidth")
    };
    let expect = num(&v, "work_s")
        + 2.0 * 20.0 * cut(8.0 * 16.0 * 16.0)
        + peak / model["fresh_memory_bytes_per_s"].as_f64().expect("rate");
    assert!(
        (num(&v, "makespan_s") - expect).abs() <= 1e-9 * expect,
        "{v}: expected {expect}"
    );
}

/// `--stragglers`, `--speculate` and `--lease auto` through the binary: the
/// extra fields, a straggler rate of 0 changes nothing, every task
/// completes once whatever copies ran, the bounds hold, and speculation
/// takes back time lost to stragglers.
#[test]
fn stragglers_speculation_and_automatic_leases() {
    let chol = ["-p", "N=9"];
    let base = [
        "--block",
        "256",
        "--workers",
        "4",
        "--store-latency",
        "0.002",
        "--store-bandwidth",
        "100",
    ];
    let with = |extra: &[&'static str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        json(&args("examples/cholesky.lpk", &chol, &a))
    };
    let plain = with(&[]);
    assert!(plain["straggling"].is_null() && plain["speculation"].is_null());
    assert_eq!(plain["lease"], 30.0);
    assert_eq!(plain["backups"], 0);
    assert_eq!(plain["kernels"].as_array().map(Vec::len), Some(0));
    let zero = with(&["--stragglers", "rate=0,slow=10"]);
    for k in [
        "makespan_s",
        "worker_seconds",
        "executions",
        "remote_read_bytes",
    ] {
        assert_eq!(plain[k], zero[k], "{k}");
    }
    let slow = with(&["--stragglers", "rate=0.1,slow=20"]);
    let spec = with(&["--stragglers", "rate=0.1,slow=20", "--speculate"]);
    assert!(num(&slow, "stragglers") > 0.0, "{slow}");
    assert!(
        num(&spec, "backups") > 0.0 && num(&spec, "backups_won") > 0.0,
        "{spec}"
    );
    assert!(num(&spec, "makespan_s") < num(&slow, "makespan_s"));
    assert_eq!(spec["speculation"]["q"], 0.9);
    let kernels = spec["kernels"].as_array().expect("kernels");
    assert!(kernels.iter().any(|k| k["threshold_s"].is_f64()), "{spec}");
    let observed: f64 = kernels.iter().map(|k| num(k, "observed")).sum();
    assert_eq!(observed, num(&spec, "tasks") + num(&spec, "cancelled"));
    // Failures and an automatic lease on top.
    let all = with(&[
        "--stragglers",
        "rate=0.1,slow=20",
        "--speculate",
        "q=0.8,c=0.9,min=10",
        "--fail-rate",
        "0.05",
        "--lease",
        "auto:q=0.9,c=0.9,factor=1.5,min=10,fallback=1",
    ]);
    assert_eq!(all["lease"]["factor"], 1.5);
    let (e, t) = (num(&all, "executions"), num(&all, "tasks"));
    let (f, c) = (num(&all, "failures"), num(&all, "cancelled"));
    assert!(f > 0.0 && e == t + f + c, "{all}");
    assert!(num(&all, "makespan_s") >= num(&all, "critical_path_s"));
    assert!(
        all["kernels"]
            .as_array()
            .expect("kernels")
            .iter()
            .any(|k| k["lease_s"].is_f64()),
        "{all}"
    );
    // The human summary names the copies.
    let mut a = vec!["simulate", "examples/cholesky.lpk", "-p", "N=9"];
    a.extend_from_slice(&base);
    a.extend_from_slice(&["--stragglers", "rate=0.1,slow=20", "--speculate"]);
    let (code, out, err) = lpkc(&a);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("backups") && out.contains("threshold"),
        "{out}"
    );
}

/// A calibration whose tiles would not fit is refused before anything is
/// allocated (at once, with what to change), not run into swap.
#[test]
fn calibrate_refuses_more_tile_memory_than_it_allows() {
    let (code, out, err) = lpkc(&[
        "calibrate",
        "--block",
        "8192",
        "--threads",
        "4",
        "--kernels",
        "gemm",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("block 8192 on 4 thread(s)") && err.contains("fewer --threads"),
        "{err}"
    );
}

/// A kernel of the program's own (no implementation in lpk, no flop model)
/// is simulated at the time a cost file gives it, and named as unmodelled
/// (counted as 0 s) when none does.
#[test]
fn a_user_kernel_takes_its_time_from_the_cost_file() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("negate.lpk");
    std::fs::write(
        &file,
        "kernel negate(a) -> (b);\n\nprogram negated(N: int) {\n    input A[N];\n    \
         output B[N];\n    for i in range(N) {\n        B[i] = negate(A[i]);\n    }\n}\n",
    )
    .expect("write the program");
    let f = file.to_str().expect("utf-8");
    let base = ["--block", "64", "--workers", "1"];
    let v = json(&args(f, &["-p", "N=5"], &base));
    assert_eq!(
        v["unmodelled_kernels"],
        serde_json::json!(["negate"]),
        "{v}"
    );
    assert_eq!(num(&v, "work_s"), 0.0, "{v}");

    let costs = dir.path().join("costs.json");
    let model = serde_json::json!({
        "gflops": 10.0,
        "store": {"latency_s": 0.0, "bandwidth_bytes_per_s": 0.0},
        "kernels": {"negate": [{"block": 64, "seconds": 0.25}]},
    });
    std::fs::write(&costs, model.to_string()).expect("write the costs");
    let c = costs.to_str().expect("utf-8");
    let with_costs = |block: &'static str| {
        json(&args(
            f,
            &["-p", "N=5"],
            &["--block", block, "--workers", "1", "--costs", c],
        ))
    };
    let v = with_costs("64");
    assert_eq!(v["unmodelled_kernels"], serde_json::json!([]), "{v}");
    assert!((num(&v, "work_s") - 5.0 * 0.25).abs() < 1e-9, "{v}");
    // Another block: the calibrated time scaled by the tile's area (the
    // kernel has no flop model to scale by).
    let v = with_costs("128");
    assert!((num(&v, "work_s") - 5.0 * 1.0).abs() < 1e-9, "{v}");
}

/// `lpkc calibrate` with its default kernel list times every standard
/// kernel, each on arguments it accepts (the pivoted LU's and the QR/LQ
/// applies' on the factors a run passes them).
#[test]
fn calibrate_times_every_standard_kernel() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let costs = dir.path().join("costs.json");
    let c = costs.to_str().expect("utf-8");
    let (code, _, err) = lpkc(&[
        "calibrate",
        "--block",
        "8",
        "--min-time",
        "0",
        "--no-store",
        "-o",
        c,
    ]);
    assert_eq!(code, 0, "{err}");
    let model: Value =
        serde_json::from_str(&std::fs::read_to_string(&costs).expect("written")).expect("JSON");
    let timed: Vec<&str> = model["kernels"]
        .as_object()
        .expect("a kernels table")
        .keys()
        .map(String::as_str)
        .collect();
    let registry = lpk_runtime::kernels::Registry::standard();
    let standard: Vec<&str> = registry.names().collect();
    assert_eq!(timed, standard);
}
