//! The command-line contract of docs/cli.md: exit codes and the JSON of
//! `query` and `dag`, through the real binary.

use crate::binary::{lpkc, scratch_file};
use crate::strings_of;

#[test]
fn every_example_checks_clean() {
    for path in lpk_test_support::examples() {
        let rel = format!("examples/{}", path.file_name().unwrap().to_string_lossy());
        let (code, _, err) = lpkc(&["check", &rel]);
        assert_eq!(code, 0, "{rel}: {err}");
        let (code, out, _) = lpkc(&["check", "--format", "json", &rel]);
        assert_eq!(code, 0);
        assert_eq!(out.trim(), r#"{"diagnostics":[]}"#);
    }
}

#[test]
fn exit_codes() {
    assert_eq!(lpkc(&["check", "no/such/file.lpk"]).0, 2);
    assert_eq!(lpkc(&["stats", "examples/cholesky.lpk", "-p", "N=x"]).0, 2);
    assert_eq!(lpkc(&["stats", "examples/cholesky.lpk", "-p", "Q=3"]).0, 2);
    assert_eq!(
        lpkc(&["stats", "examples/cholesky.lpk"]).0,
        2,
        "missing parameter"
    );
    let (code, _, err) = lpkc(&["stats", "examples/cholesky.lpk", "-p", "N=0"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("error[E0601]: `require N >= 1` does not hold for N = 0"),
        "{err}"
    );
    assert_eq!(
        lpkc(&["check", "tests/ui/resolve/E0101_undefined_name.lpk"]).0,
        1
    );
    assert_eq!(lpkc(&["explain", "E0101"]).0, 0);
    assert_eq!(lpkc(&["explain", "E9999"]).0, 2);
}

#[test]
fn query_answers_one_json_line_per_command_and_goes_on_after_errors() {
    let (code, out, _) = lpkc(&[
        "query",
        "examples/cholesky.lpk",
        "-p",
        "N=3",
        "--format",
        "json",
        "-e",
        "writer L[1, 0]",
        "-e",
        "children nonsense",
        "-e",
        "readers L[9, 9]",
        "-e",
        "tasks 37",
    ]);
    assert_eq!(code, 1, "a failed command makes the exit code 1");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["cmd"], "writer L[1, 0]");
    assert_eq!(
        lines[0]["tasks"],
        serde_json::json!([{"kernel": "trsm", "line": 44, "column": 17, "vars": {"k": 0, "i": 1}}])
    );
    assert!(lines[1]["error"].is_string());
    assert!(lines[2]["error"]
        .as_str()
        .unwrap()
        .contains("outside the extents"));
    assert_eq!(lines[3]["tasks"].as_array().map(Vec::len), Some(1));
}

/// A zero matrix's tile that no task writes has no writer, and the task
/// reading it has a parent only through its other tile: `writer` is empty,
/// `parents` names one task, and `dag --method expand` (the oracle) sees
/// no violation and draws one edge into it.
#[test]
fn a_zero_tile_has_no_writer_and_gives_no_parent() {
    let instance = [
        "examples/gemm_tree_zero.lpk",
        "-p",
        "M=1",
        "-p",
        "N=1",
        "-p",
        "K=3",
    ];
    let (code, out, err) = lpkc(
        &[
            &["query"][..],
            &instance,
            &[
                "-e",
                "writer P[0, 0, 0, 3]",
                "-e",
                "parents add@61(level=0, m=0, n=0, k=2)",
            ],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out, "(none)\ngemm@50(m=0, n=0, k=2)  via P[0, 0, 0, 2]\n",
        "{out}"
    );
    let (code, out, err) = lpkc(&[&["dag"][..], &instance, &["--method", "expand"]].concat());
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let into_padded = v["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .filter(|e| e["to"] == 4)
        .count();
    assert_eq!(v["tasks"][4]["vars"]["k"], 2);
    assert_eq!(into_padded, 1, "one parent: the zero tile gives no edge");
}

/// Lint proves every rule of the GEMM tree padded with a zero matrix, for
/// all parameter values (not only up to the exhaustive bound), with no
/// diagnostic; without `= 0` its padded reads are E0503.
#[test]
fn the_zero_padded_gemm_tree_lints_proved_and_needs_its_zero_matrix() {
    let (code, out, err) = lpkc(&["lint", "examples/gemm_tree_zero.lpk", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["diagnostics"], serde_json::json!([]));
    let rules = v["lint"]["rules"].as_array().expect("rules");
    assert_eq!(rules.len(), 5);
    for r in rules {
        assert_eq!(r["status"], "proved", "{r}");
    }
    let text = lpk_test_support::read("examples/gemm_tree_zero.lpk").replace("] = 0;", "];");
    let (dir, plain) = scratch_file("plain", "plain.lpk", &text);
    let (code, out, _) = lpkc(&["lint", &plain, "--format", "json"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(strings_of(&v["diagnostics"], "code"), ["E0503"], "{out}");
}

#[test]
fn dag_json_has_the_contract_fields_and_both_methods_agree() {
    let (code, plans, _) = lpkc(&["dag", "examples/tsqr.lpk", "-p", "N=5", "--format", "json"]);
    assert_eq!(code, 0);
    let (_, expand, _) = lpkc(&[
        "dag",
        "examples/tsqr.lpk",
        "-p",
        "N=5",
        "--format",
        "json",
        "--method",
        "expand",
    ]);
    assert_eq!(plans, expand);
    let v: serde_json::Value = serde_json::from_str(&plans).unwrap();
    assert_eq!(v["program"], "tsqr");
    assert_eq!(v["params"], serde_json::json!({"N": 5}));
    assert_eq!(v["tasks"][0]["id"], 0);
    assert_eq!(v["edges"][0]["tile"], "R[0,0]");
}

#[test]
fn expand_reports_violations_naming_both_tasks() {
    let (_, file) = scratch_file(
        "cli",
        "double.lpk",
        "kernel copy(a) -> (b);\nprogram p(N: int) {\n    input A[N];\n    output B[N];\n    for i in range(N) {\n        B[0] = copy(A[i]);\n    }\n}\n",
    );
    let (code, _, err) = lpkc(&["dag", &file, "-p", "N=2", "--method", "expand"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("`copy@6(i=0)` and `copy@6(i=1)` both write `B[0]`"),
        "{err}"
    );
}

#[test]
fn compile_refuses_a_program_with_lint_errors() {
    let out = std::env::temp_dir().join(format!("lpk-lint-gate-{}.lpka", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let out_s = out.display().to_string();
    let (code, _, err) = lpkc(&[
        "--color",
        "never",
        "compile",
        "tests/ui/lint/E0501_double_write_trsm.lpk",
        "-o",
        &out_s,
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("error[E0501]"), "{err}");
    assert!(!out.exists(), "no artifact may be written");
    let (code, _, err) = lpkc(&["compile", "examples/cholesky.lpk", "-o", &out_s]);
    assert_eq!(code, 0, "{err}");
    assert!(out.exists());
    let _ = std::fs::remove_file(&out);
}

#[test]
fn a_loop_that_never_runs_a_task_is_refused_not_spun() {
    let src = "kernel copy(a) -> (b);\n\
               program idle(N: int) {\n\
               \x20   input A[1];\n\
               \x20   output B[N];\n\
               \x20   for i in range(N) {\n\
               \x20       if i < 0 {\n\
               \x20           B[i] = copy(A[0]);\n\
               \x20       }\n\
               \x20   }\n\
               }\n";
    let (dir, p) = scratch_file("idle", "idle.lpk", src);
    let (code, _, err) = lpkc(&["stats", &p, "-p", "N=4000000000000"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("loop iterations in a row ran no task"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_examples_lint_clean_with_deny_warnings() {
    for example in lpk_test_support::examples() {
        let name = example.display().to_string();
        let (code, _, stderr) = lpkc(&["lint", "--deny", "warnings", "--color", "never", &name]);
        assert_eq!(code, 0, "{name}:\n{stderr}");
        assert!(!stderr.contains("warning["), "{name}:\n{stderr}");
        assert!(!stderr.contains("error["), "{name}:\n{stderr}");
    }
}

/// `--help` points only at what a clone has: `docs/...`, never the
/// design contract's `spec/` paths.
#[test]
fn help_names_no_path_outside_the_clone() {
    let (_, top, _) = lpkc(&["--help"]);
    let commands: Vec<String> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() > 20, "{top}");
    for c in commands {
        let (code, out, err) = lpkc(&[&c, "--help"]);
        assert_eq!(code, 0, "{c} --help: {err}");
        assert!(
            !out.contains("spec/"),
            "`lpkc {c} --help` names spec/:\n{out}"
        );
    }
}
