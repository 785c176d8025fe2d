//! The contract of `lpkc run` beyond numerics: an unmet `require` as the
//! binding diagnostic every command gives, which outputs are written and
//! how (`--output`, tiles with an index when an output forms no grid), the
//! warnings only about what was asked for, and the summary's timings.

use crate::binary::lpkc;
use serde_json::Value;

#[test]
fn an_unmet_require_names_the_require_and_the_inferred_values() {
    // 8 x 40 with block 8 is 1 x 5 tiles: M = 1 and N = 5 are inferred,
    // and caqr requires M >= N (line 63).
    let run = [
        "run",
        "examples/caqr.lpk",
        "--block",
        "8",
        "--input",
        "A=random:8x40",
    ];
    let mut json: Vec<&str> = run.to_vec();
    json.extend(["--format", "json"]);
    let (code, out, _) = lpkc(&json);
    assert_eq!(code, 1, "{out}");
    let v: Value = serde_json::from_str(out.trim()).expect("one JSON object");
    let d = &v["diagnostics"][0];
    assert_eq!(d["code"], "E0601", "{d}");
    assert_eq!(
        d["message"],
        "`require M >= N` does not hold for M = 1, N = 5"
    );
    assert_eq!(d["file"], "examples/caqr.lpk");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(63), Some(5))
    );

    let mut text: Vec<&str> = vec!["--color", "never"];
    text.extend(run);
    let (code, out, err) = lpkc(&text);
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains("error[E0601]: `require M >= N` does not hold for M = 1, N = 5"),
        "{err}"
    );
    assert!(err.contains("examples/caqr.lpk:63:5"), "{err}");
    assert!(!err.contains("requirement 2 of the program"), "{err}");
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("lpk-run-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// tsqr on 2000 x 64 with block 256: the last row block has 208 rows, so
/// V's leaves do not tile a rectangle.
const TSQR: [&str; 7] = [
    "run",
    "examples/tsqr.lpk",
    "--block",
    "256",
    "--input",
    "A=random:2000x64",
    "--no-progress",
];

/// `lpkc run` of [`TSQR`] with `--output-dir` a fresh scratch directory
/// `name` and `extra`, which succeeds; returns the directory, stdout and
/// stderr.
fn tsqr_into(name: &str, extra: &[&str]) -> (std::path::PathBuf, String, String) {
    let dir = scratch(name);
    let dir_s = dir.display().to_string();
    let (code, out, err) = lpkc(&[&TSQR[..], &["--output-dir", &dir_s], extra].concat());
    assert_eq!(code, 0, "{err}");
    (dir, out, err)
}

#[test]
fn outputs_not_asked_for_are_not_warned_about() {
    let (code, out, err) = lpkc(&TSQR);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "", "no output directory, nothing to say about outputs");
    assert!(out.starts_with("ran tsqr (N=8)"), "{out}");

    // Asked for R's final tile only: V is not written, nor mentioned.
    let (dir, _, err) = tsqr_into("final-r", &["--output", "R[3, 0]"]);
    assert_eq!(err, "");
    let r = lpk_runtime::npy::read_file(&dir.join("R[3,0].npy")).expect("the final R");
    assert_eq!((r.nrows(), r.ncols()), (64, 64));
    assert!(!dir.join("V").exists() && !dir.join("R.npy").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_output_that_forms_no_grid_is_said_once_and_written_as_tiles() {
    let (dir, out, err) = tsqr_into("no-grid", &["--format", "json"]);
    let dir_s = dir.display().to_string();
    assert_eq!(
        err,
        format!(
            "note: output `V` forms no grid (tiles of tile row 0 have 256 and 208 rows); \
             wrote its 15 tiles and {dir_s}/V/index.json\n"
        )
    );
    let v: Value = serde_json::from_str(out.trim()).expect("one JSON object");
    let outputs = &v["outputs"];
    assert_eq!(outputs[0]["output"], "R");
    assert_eq!(outputs[0]["shape"], serde_json::json!([256, 512]));
    assert_eq!(outputs[1]["output"], "V");
    assert_eq!(outputs[1]["tiles"], 15);
    assert_eq!(outputs[1]["path"], format!("{dir_s}/V/index.json"));
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("V/index.json")).expect("index"))
            .expect("index.json is JSON");
    let tiles = index["tiles"].as_array().expect("tiles");
    assert_eq!(tiles.len(), 15);
    for t in tiles {
        let file = dir.join("V").join(t["file"].as_str().expect("file"));
        let tile = lpk_runtime::npy::read_file(&file).expect("tile");
        assert_eq!(
            serde_json::json!([tile.nrows(), tile.ncols()]),
            t["shape"],
            "{t}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_summary_times_the_run_the_io_and_the_verification_apart() {
    let args = [
        "run",
        "examples/cholesky.lpk",
        "--block",
        "32",
        "--input",
        "A=spd:200",
        "--verify",
    ];
    let mut json = args.to_vec();
    json.extend(["--format", "json"]);
    let (code, out, err) = lpkc(&json);
    assert_eq!(code, 0, "{err}");
    // stderr is not a terminal: no progress, no spinner, nothing at all.
    assert_eq!(err, "");
    let v: Value = serde_json::from_str(out.trim()).expect("one JSON object");
    let t = &v["timings"];
    let secs = |k: &str| t[k].as_f64().unwrap_or_else(|| panic!("timings.{k}: {t}"));
    assert!(secs("verify_seconds") > 0.0, "{t}");
    assert!(secs("io_seconds") >= secs("prepare_seconds"), "{t}");
    assert!(
        secs("total_seconds")
            >= secs("compute_seconds") + secs("verify_seconds") + secs("io_seconds") - 1e-3,
        "{t}"
    );
    for k in [
        "read_in_tasks_seconds",
        "write_in_tasks_seconds",
        "finish_seconds",
    ] {
        secs(k);
    }

    let (code, out, err) = lpkc(&args);
    assert_eq!(code, 0, "{err}");
    let time = out
        .lines()
        .find(|l| l.starts_with("  time: "))
        .unwrap_or_else(|| panic!("a time line: {out}"));
    for part in ["run ", "I/O outside tasks ", "verify ", "total "] {
        assert!(time.contains(part), "{time}");
    }
    assert!(out.contains("  I/O inside tasks (summed over workers): reading inputs "));
}

#[test]
fn verification_shows_a_spinner_on_a_terminal() {
    // `script` gives the run a terminal and copies what it shows to
    // stdout. A run whose verification takes most of a second (the
    // kernels and the residual are optimised even in test builds).
    let lpkc = env!("CARGO_BIN_EXE_lpkc");
    let cmd = format!(
        "{lpkc} run examples/cholesky.lpk --block 250 --input A=spd:2000 --verify --workers 1"
    );
    let out = std::process::Command::new("script")
        .current_dir(lpk_test_support::workspace_root())
        .args(["-qfec", &cmd, "/dev/null"])
        .output()
        .unwrap_or_else(|e| panic!("script(1) of util-linux is needed by this test: {e}"));
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{screen}");
    assert!(screen.contains("tasks"), "the task bar: {screen}");
    assert!(screen.contains("verifying: "), "the spinner: {screen}");
    assert!(screen.contains("residual"), "{screen}");
}

#[test]
fn trace_writes_one_event_per_task_and_a_gantt_chart() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let json = dir.path().join("trace.json");
    let svg = dir.path().join("trace.svg");
    let (code, _, err) = lpkc(&[
        "run",
        "examples/cholesky.lpk",
        "--block",
        "64",
        "--input",
        "A=spd:320",
        "--workers",
        "3",
        "--no-progress",
        "--trace",
        json.to_str().expect("a UTF-8 path"),
        "--trace-svg",
        svg.to_str().expect("a UTF-8 path"),
    ]);
    assert_eq!(code, 0, "{err}");
    let (events, tasks) = crate::distributed::trace_executions(&json);
    // N = 5: 5 chol, 10 trsm, 20 syrk.
    assert_eq!((events.len(), tasks), (35, 35));
    assert!(events
        .iter()
        .all(|e| e["args"]["read_bytes"].as_u64().is_some_and(|b| b > 0)));
    let text = std::fs::read_to_string(&svg).expect("trace.svg");
    assert!(
        text.starts_with("<svg") && text.contains("lpk-worker-") && text.contains("ready tasks")
    );
    crate::distributed::assert_svg_renders(&svg);
}

#[test]
fn a_kernel_without_implementation_is_refused_before_any_task_naming_its_lines() {
    let dir = scratch("missing-kernel");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let src = dir.join("negate.lpk");
    std::fs::write(
        &src,
        "kernel negate(a) -> (b);\n\
         kernel copy(a) -> (b);\n\
         \n\
         program p(N: int) {\n\
         \x20   input A[N];\n\
         \x20   output B[N];\n\
         \x20   output C[N];\n\
         \x20   for i in range(N) {\n\
         \x20       B[i] = negate(A[i]);\n\
         \x20       C[i] = negate(B[i]);\n\
         \x20   }\n\
         }\n",
    )
    .expect("write program");
    let out_dir = dir.join("out");
    let path = src.to_str().expect("utf-8 path");
    let out = out_dir.to_str().expect("utf-8 path");
    let (code, stdout, err) = lpkc(&[
        "run",
        path,
        "--block",
        "4",
        "--input",
        "A=random:8x4",
        "--output-dir",
        out,
        "--no-progress",
    ]);
    assert_eq!(code, 1, "{stdout}{err}");
    assert!(
        err.contains(
            "kernel `negate` has no implementation (called on lines 9 and 10); supply one: \
             from Python `lpk.run(..., kernels={\"negate\": fn})`"
        ),
        "{err}"
    );
    assert!(
        err.contains("the runtime knows: add, add4, chol, copy"),
        "{err}"
    );
    // Refused before any task: no output tile was written.
    assert!(
        !out_dir.join("B").exists() && !out_dir.join("B.npy").exists(),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
