//! What the second adversarial pass found without Redis: flags that
//! panicked or aborted, files that are read forever, a simulation that
//! never ends or prints `inf`, METIS writing into a JSON report. Each gets
//! a clear error (or a correct answer) in bounded time and memory.

use crate::binary::{lpkc, scratch_file};
use crate::simulate::SIMULATE_CHOLESKY;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Runs lpkc and checks its exit code, that it did not panic or abort, and
/// that it answered within `limit`; returns stdout and stderr.
fn answers(args: &[&str], code: i32, limit: Duration) -> (String, String) {
    let started = Instant::now();
    let (got, out, err) = lpkc(args);
    let took = started.elapsed();
    assert_eq!(got, code, "{args:?}:\nstdout: {out}\nstderr: {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert!(took < limit, "{args:?} took {took:?}");
    (out, err)
}

const SECONDS: Duration = Duration::from_secs(30);

/// `lpkc run` of a cholesky of 2 x 2 tiles, to add flags to.
pub(crate) const RUN_CHOLESKY: [&str; 6] = [
    "run",
    "examples/cholesky.lpk",
    "--block",
    "4",
    "--input",
    "A=spd:8",
];

/// [`RUN_CHOLESKY`] with `--redis` at a port where nothing listens (the
/// flags are refused before any connection) and `extra`.
fn run_redis<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let redis = ["--redis", "redis://127.0.0.1:1", "--no-progress"];
    [&RUN_CHOLESKY[..], &redis, extra].concat()
}

#[test]
fn huge_and_negative_seconds_are_usage_errors_not_panics() {
    for (args, flag) in [
        (
            vec![
                "status",
                "r1",
                "--redis",
                "redis://127.0.0.1:1",
                "--lease",
                "1e20",
            ],
            "1e20",
        ),
        (
            vec![
                "worker",
                "--redis",
                "redis://127.0.0.1:1",
                "--lease",
                "1e20",
            ],
            "1e20",
        ),
        (
            vec!["worker", "--redis", "redis://127.0.0.1:1", "--idle", "-1"],
            "-1",
        ),
        (
            vec!["worker", "--redis", "redis://127.0.0.1:1", "--idle", "NaN"],
            "NaN",
        ),
        (
            run_redis(&["--store", "/tmp/lpk-never", "--lease", "1e20"]),
            "1e20",
        ),
        (
            vec![
                "provision",
                "--redis",
                "redis://127.0.0.1:1",
                "--autoscale",
                "sf=1,max=2,idle=1e20",
            ],
            "idle",
        ),
    ] {
        let (_, err) = answers(&args, 2, SECONDS);
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}

fn simulate<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    [&SIMULATE_CHOLESKY[..], extra].concat()
}

#[test]
fn simulate_takes_any_cache_size_in_bounded_memory() {
    for n in ["100000000", "18446744073709551615"] {
        let args = simulate(&["--cache-tiles", n, "--format", "json"]);
        let (out, _) = answers(&args, 0, SECONDS);
        let v: Value = serde_json::from_str(out.trim()).expect("one JSON object");
        assert_eq!(v["tasks"], 20, "{v}");
    }
}

#[test]
fn simulate_with_a_failure_rate_near_one_ends_with_an_error() {
    let args = simulate(&["--fail-rate", "0.999999", "--lease", "0.001"]);
    // The setting makes the run impossible: a usage error, as a rate of 1.
    let (_, err) = answers(&args, 2, SECONDS);
    assert!(err.contains("does not finish"), "{err}");
}

#[test]
fn simulate_refuses_times_that_overflow_instead_of_printing_inf_or_hanging() {
    let svg = std::env::temp_dir().join(format!("lpk-overflow-{}.svg", std::process::id()));
    let svg = svg.display().to_string();
    for extra in [
        vec!["--store-latency", "1e308"],
        vec!["--store-latency", "1e308", "--svg", &svg],
        vec!["--store-bandwidth", "1e-300"],
        vec!["--gflops", "1e-300"],
    ] {
        let args = simulate(&extra);
        let (out, err) = answers(&args, 2, SECONDS);
        assert!(!out.contains("inf") && !out.contains("NaN"), "{out}");
        assert!(err.contains("must be"), "{extra:?}: {err}");
    }
    assert!(!std::path::Path::new(&svg).exists());
}

#[test]
fn simulate_locality_with_more_workers_than_tasks_prints_only_json() {
    let (out, err) = answers(
        &[
            "simulate",
            "examples/cholesky.lpk",
            "-p",
            "N=2",
            "--block",
            "64",
            "--workers",
            "64",
            "--policy",
            "locality",
            "--format",
            "json",
        ],
        0,
        SECONDS,
    );
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!(v["tasks"], 4, "{v}");
    assert!(!out.contains("***"), "{out}");
}

#[test]
fn endless_files_are_refused_after_a_bounded_read() {
    for args in [
        vec!["check", "/dev/zero"],
        vec!["inspect", "/dev/zero"],
        vec!["query", "/dev/zero", "-e", "tasks"],
    ] {
        let (_, err) = answers(&args, 2, SECONDS);
        assert!(err.contains("larger than 64 MiB"), "{args:?}: {err}");
    }
    for flag in ["--costs", "--startup"] {
        let args = simulate(&[flag, "/dev/zero"]);
        let (_, err) = answers(&args, 2, SECONDS);
        assert!(err.contains("larger than 16 MiB"), "{flag}: {err}");
    }
}

#[test]
fn the_file_system_root_is_no_tile_store() {
    for store in ["/", "file:///", "dir:/"] {
        let args = run_redis(&["--store", store]);
        let (_, err) = answers(&args, 2, SECONDS);
        assert!(
            err.contains("the file system's root is not a tile store"),
            "{store}: {err}"
        );
        let (_, err) = answers(&["calibrate", "--block", "8", "--store", store], 2, SECONDS);
        assert!(
            err.contains("the file system's root is not a tile store"),
            "{store}: {err}"
        );
    }
    assert!(!std::path::Path::new("/lpkc_calibrate").exists());
    assert!(!std::path::Path::new("/calib").exists());
}

/// A port that takes connections but never answers: a clear error naming
/// what happened, not only the socket's "Resource temporarily
/// unavailable".
#[test]
fn a_silent_server_is_named_as_such() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming().flatten() {
            held.push(c);
        }
    });
    let url = format!("redis://:secret-pw@127.0.0.1:{port}");
    let (_, err) = answers(
        &["status", "r-1", "--redis", &url],
        1,
        Duration::from_secs(60),
    );
    assert!(err.contains("no answer in time"), "{err}");
    assert!(err.contains("redis://:***@127.0.0.1"), "{err}");
    assert!(!err.contains("secret-pw"), "{err}");
}

/// HEFT with the most workers `simulate` takes: starting a worker and
/// stealing from gone workers' queues no longer scan every slot (it took
/// minutes, quadratic in the workers).
#[test]
fn heft_with_65536_workers_answers() {
    let (out, _) = answers(
        &[
            "simulate",
            "examples/cholesky.lpk",
            "-p",
            "N=8",
            "--block",
            "64",
            "--workers",
            "65536",
            "--policy",
            "heft",
            "--format",
            "json",
        ],
        0,
        Duration::from_secs(60),
    );
    let v: Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(v["tasks"], 120, "{v}");
}

/// A tile index that cannot be evaluated (`log(0)`): every command names
/// its line, and lint does not call the statement dead (its loop runs;
/// its tasks fail).
#[test]
fn an_index_that_cannot_be_evaluated_is_named_with_its_line_everywhere() {
    let (dir, file) = scratch_file(
        "log0",
        "log0.lpk",
        "kernel copy(a) -> (b);\n\nprogram p(N: int) {\n    input A[N];\n    output B[N];\n    \
         for i in range(N) {\n        B[i] = copy(A[ceil(log(0))]);\n    }\n}\n",
    );
    for args in [
        vec!["stats", &file, "-p", "N=3"],
        vec![
            "simulate",
            &file,
            "-p",
            "N=3",
            "--block",
            "4",
            "--workers",
            "1",
        ],
        vec!["query", &file, "-p", "N=3", "-e", "parents copy@7(i=0)"],
    ] {
        let (_, out, err) = lpkc(&args);
        let all = format!("{out}{err}");
        assert!(
            all.contains("line 7: task copy@7(i=0): evaluation error in a tile index: logarithm"),
            "{args:?}: {all}"
        );
    }
    let (_, out, err) = lpkc(&["--color", "never", "lint", &file]);
    assert!(!err.contains("W0502") && !err.contains("W0508"), "{err}");
    assert!(
        out.contains("evaluation: failed: for N = 1: line 7: logarithm"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Found while writing the fuzz harnesses: when no instance up to lint's
/// bound binds (every extent negative below N = 100), lint said the
/// `require`s could never hold (E0506), and `lpkc run`, which refuses a
/// program lint finds an error in, would have refused a valid program.
#[test]
fn instances_that_fail_for_another_reason_do_not_make_requires_unsatisfiable() {
    let (dir, file) = scratch_file(
        "e0506",
        "late.lpk",
        "kernel copy(a) -> (b);\n\nprogram p(N: int) {\n    require N >= 1;\n    input A[N - 100];\n    \
         output B[N];\n    for i in range(N) {\n        B[i] = copy(A[i]);\n    }\n}\n",
    );
    let (code, out, err) = lpkc(&["--color", "never", "lint", &file]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("E0506"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
