//! Bounded work on adversarial parameters: every command that takes
//! parameters, at sizes no machine could expand (`N = 99999999`, i64::MAX,
//! the other extremes of i64), must end by itself with exit code 0, 1 or 2
//! (never a signal, never the 101 of a crash), inside an address-space cap
//! and a hard timeout, and a refusal must name the task count or the limit.
//! How fast is measured in release (docs/explore.md), not asserted here.

use crate::hostile::RUN_CHOLESKY;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The address space every run gets (ulimit -v, in KiB): 2 GB.
const ADDRESS_SPACE_KB: u64 = 2_000_000;

/// A run that is still going after this long is killed and fails the test
/// (a debug build on a loaded machine: each run counts for a few seconds
/// at most; release is ten times faster).
const TIMEOUT: Duration = Duration::from_secs(30);

/// What one bounded run of lpkc did.
struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs lpkc with `args` (and `stdin`) under the address-space cap; fails
/// the test if it is killed, crashes or outlives [`TIMEOUT`].
fn bounded(args: &[&str], stdin: &str) -> Outcome {
    let what = format!("lpkc {}", args.join(" "));
    let mut child = Command::new("bash")
        .current_dir(lpk_test_support::workspace_root())
        .arg("-c")
        .arg(format!("ulimit -v {ADDRESS_SPACE_KB}; exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_lpkc"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash runs");
    let mut input = child.stdin.take().expect("stdin");
    let text = stdin.to_string();
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(text.as_bytes());
    });
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits") {
            break status;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {TIMEOUT:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = feeder.join();
    let stdout = String::from_utf8_lossy(&reader.join().expect("reads")).into_owned();
    let stderr = String::from_utf8_lossy(&err_reader.join().expect("reads")).into_owned();
    let Some(code) = status.code() else {
        panic!("{what}: killed by a signal ({status:?}); stderr:\n{stderr}");
    };
    assert!(
        matches!(code, 0..=2),
        "{what}: exit code {code}; stderr:\n{stderr}"
    );
    Outcome {
        code,
        stdout,
        stderr,
    }
}

/// The huge sizes of the issue.
const HUGE: [&str; 2] = ["99999999", "9223372036854775807"];

/// Two examples with one size parameter `N`.
const EXAMPLES: [&str; 2] = ["examples/cholesky.lpk", "examples/tsqr.lpk"];

/// A refusal names the instance's task count or the limit that refused it.
fn names_count_or_limit(text: &str) -> bool {
    text.contains(" tasks")
        && (text.contains("--max-tasks") || text.contains("limit") || text.contains("2^64"))
}

fn each_huge_instance(f: impl Fn(&str, &str)) {
    for file in EXAMPLES {
        for n in HUGE {
            f(file, &format!("N={n}"));
        }
    }
}

#[test]
fn dag_and_dot_refuse_at_once_with_the_count() {
    each_huge_instance(|file, n| {
        for args in [
            vec!["dag", file, "-p", n],
            vec!["dag", file, "-p", n, "--method", "expand"],
            vec!["dot", file, "-p", n],
        ] {
            let o = bounded(&args, "");
            assert_eq!(o.code, 1, "{args:?}: {}", o.stderr);
            // `dag` answers in JSON, so its refusal is the diagnostics
            // object on stdout (docs/cli.md); `dot` says it on stderr.
            let said = if args[0] == "dag" {
                let v: serde_json::Value = serde_json::from_str(&o.stdout)
                    .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", o.stdout));
                v["diagnostics"][0]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            } else {
                assert!(o.stdout.is_empty(), "{args:?}");
                o.stderr.clone()
            };
            assert!(names_count_or_limit(&said), "{args:?}: {said}");
        }
    });
}

#[test]
fn stats_counts_or_refuses_and_never_expands_a_huge_instance() {
    each_huge_instance(|file, n| {
        let o = bounded(&["stats", file, "-p", n], "");
        if o.code == 0 {
            // Counted: the DAG parts are said to be missing.
            assert!(
                o.stdout.contains("not computed") && names_count_or_limit(&o.stdout),
                "{file} {n}: {}",
                o.stdout
            );
        } else {
            assert_eq!(o.code, 1, "{file} {n}");
            assert!(names_count_or_limit(&o.stderr), "{file} {n}: {}", o.stderr);
        }
        let svg = std::env::temp_dir().join(format!("lpk-bounds-{}.svg", std::process::id()));
        let o = bounded(
            &["stats", file, "-p", n, "--svg", &svg.display().to_string()],
            "",
        );
        assert_eq!(o.code, 1, "{file} {n} --svg");
        assert!(names_count_or_limit(&o.stderr), "{}", o.stderr);
        assert!(!svg.exists());
    });
}

#[test]
fn stats_of_a_large_countable_instance_prints_the_counts() {
    let o = bounded(&["stats", "examples/cholesky.lpk", "-p", "N=1000"], "");
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("total        167167000"), "{}", o.stdout);
    assert!(
        o.stdout.ends_with(
            "edges, critical path and parallelism profile not computed: the instance \
             cholesky(N=1000) has 167167000 tasks, more than --max-tasks 2000000; \
             raise the limit with --max-tasks N\n"
        ),
        "{}",
        o.stdout
    );
    let o = bounded(
        &[
            "stats",
            "examples/cholesky.lpk",
            "-p",
            "N=1000",
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).expect("one JSON object");
    assert_eq!(v["tasks"], 167_167_000u64);
    assert_eq!(v["expanded"], false);
    assert!(v["edges"].is_null() && v["critical_path"].is_null() && v["levels"].is_null());
    assert!(v["kernels"]["syrk"]["edges_out"].is_null());
    assert_eq!(v["kernels"]["chol"]["tasks"], 1000);
}

#[test]
fn query_refuses_huge_answers_with_the_count_or_the_limit() {
    let commands = [
        ("examples/cholesky.lpk", "tasks"),
        ("examples/cholesky.lpk", "tasks 55"),
        ("examples/cholesky.lpk", "children chol@37(k=0)"),
        ("examples/cholesky.lpk", "readers L[0, 0]"),
        ("examples/tsqr.lpk", "tasks"),
        ("examples/tsqr.lpk", "readers A[0]"),
        ("examples/tsqr.lpk", "children qr_factor@41(j=0)"),
    ];
    for n in HUGE {
        let p = format!("N={n}");
        for (file, cmd) in commands {
            for format in ["human", "json"] {
                let o = bounded(
                    &["query", file, "-p", &p, "-e", cmd, "--format", format],
                    "",
                );
                if o.code == 0 {
                    continue;
                }
                assert_eq!(o.code, 1, "{file} {p} {cmd}: {}", o.stderr);
                let message = if format == "json" {
                    &o.stdout
                } else {
                    &o.stderr
                };
                assert!(names_count_or_limit(message), "{file} {p} {cmd}: {message}");
            }
        }
    }
    // The cap: children of chol k=0 at N = 99999999 are 99999998 trsm
    // tasks, more than --max-tasks allows.
    let o = bounded(
        &[
            "query",
            "examples/cholesky.lpk",
            "-p",
            "N=99999999",
            "-e",
            "children chol@37(k=0)",
            "--max-tasks",
            "1000",
        ],
        "",
    );
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        "error: children chol@37(k=0): the answer has more than 1000 tasks, more than \
         --max-tasks 1000; raise the limit with --max-tasks N\n"
    );
    // A statement with one task costs a walk of the loops around it only,
    // even where the whole instance is too large to count (2·10^10 tasks).
    let o = bounded(
        &[
            "query",
            "examples/cholesky.lpk",
            "-p",
            "N=5000",
            "-e",
            "tasks 37",
            "-e",
            "writer L[5, 5]",
        ],
        "",
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, "chol@37(k=0)\nchol@39(k=5)\n");
}

#[test]
fn query_and_stats_at_the_extremes_of_i64() {
    let values = [
        0i64,
        1,
        -1,
        i64::MAX,
        i64::MIN,
        1 << 31,
        1 << 62,
        (1 << 62) + 1,
    ];
    for file in EXAMPLES {
        for v in values {
            let p = format!("N={v}");
            let o = bounded(
                &[
                    "query",
                    file,
                    "-p",
                    &p,
                    "--format",
                    "json",
                    "-e",
                    "tasks",
                    "-e",
                    "readers L[0, 0]",
                    "-e",
                    "readers A[0]",
                    "-e",
                    "children @37(k=0)",
                    "-e",
                    "writer R[0, 0]",
                ],
                "",
            );
            if v < 1 {
                // `require N >= 1`: refused at the binding.
                assert_eq!(o.code, 1, "{file} {p}");
                // As JSON on stdout, like every failure with --format json.
                assert!(o.stdout.contains("N >= 1"), "{file} {p}: {}", o.stdout);
                continue;
            }
            // One JSON line per command, whatever each one's fate.
            assert_eq!(o.stdout.lines().count(), 5, "{file} {p}: {}", o.stdout);
            for line in o.stdout.lines() {
                let answer: serde_json::Value = serde_json::from_str(line).expect("JSON");
                assert!(
                    answer.get("tasks").is_some() || answer.get("error").is_some(),
                    "{line}"
                );
            }
            let o = bounded(&["stats", file, "-p", &p, "--format", "json"], "");
            if o.code == 0 {
                let s: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON");
                assert!(s["tasks"].as_u64().is_some_and(|t| t >= 1), "{}", o.stdout);
            } else {
                // The refusal is the diagnostics object on stdout.
                assert!(names_count_or_limit(&o.stdout), "{file} {p}: {}", o.stdout);
            }
        }
    }
}

#[test]
fn repl_count_and_critical_path_are_bounded() {
    each_huge_instance(|file, n| {
        // One or two commands a run: each counts the instance.
        for input in [
            "count\ncritical-path\n",
            "path @37(k=0) @39(k=1)\ntasks --all\n",
        ] {
            let o = bounded(&["repl", file, "-p", n, "--no-history"], input);
            assert_eq!(o.code, 1, "{file} {n} {input:?}");
            for line in o.stderr.lines() {
                assert!(
                    names_count_or_limit(line)
                        || line.contains("too large to count")
                        || line.contains("has no kernel call"),
                    "{file} {n}: {line}"
                );
            }
        }
    });
    // Within the count budget the count is exact and instant, and
    // critical-path is refused with it.
    let o = bounded(
        &[
            "repl",
            "examples/cholesky.lpk",
            "-p",
            "N=1000",
            "--no-history",
        ],
        "count\ncritical-path\n",
    );
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.ends_with("total                167167000\n"),
        "{}",
        o.stdout
    );
    assert_eq!(
        o.stderr,
        "error: critical-path: the instance cholesky(N=1000) has 167167000 tasks, more than \
         --max-tasks 1000000; raise the limit with --max-tasks N\n"
    );
}

#[test]
fn lint_skips_an_instance_over_its_limit_and_says_why() {
    for (file, n) in [
        ("examples/cholesky.lpk", "N=1000"),
        ("examples/cholesky.lpk", "N=99999999"),
        ("examples/tsqr.lpk", "N=9223372036854775807"),
    ] {
        let o = bounded(&["lint", file, "-p", n], "");
        assert_eq!(o.code, 0, "{file} {n}: {}", o.stderr);
        // The report is lint's output, on stdout.
        let line = o
            .stdout
            .lines()
            .find(|l| l.contains("the instance given with -p"))
            .unwrap_or_else(|| panic!("{file} {n}: {}", o.stdout));
        assert!(line.contains("not checked"), "{line}");
        assert!(names_count_or_limit(line), "{line}");
    }
}

#[test]
fn commands_without_an_instance_limit_still_end() {
    each_huge_instance(|file, n| {
        for args in [
            vec!["check", file, "-p", n],
            vec!["plans", file, "-p", n],
            vec![
                "run",
                file,
                "-p",
                n,
                "--block",
                "1",
                "--kernels",
                "noop",
                "--no-progress",
            ],
        ] {
            // Any of 0, 1, 2, checked by `bounded`, with a message if not 0.
            let o = bounded(&args, "");
            if o.code != 0 {
                assert!(!o.stderr.is_empty(), "{args:?}");
            }
        }
    });
}

#[test]
fn absurd_worker_counts_are_usage_errors() {
    for w in ["0", "4097", "1000000000"] {
        let o = bounded(&[&RUN_CHOLESKY[..], &["--workers", w]].concat(), "");
        assert_eq!(o.code, 2, "--workers {w}");
        assert!(o.stderr.contains("1..=4096"), "{}", o.stderr);
    }
}
