//! A program that breaks a rule of the language never runs silently:
//! `lpkc run` and `submit` refuse it before any task with lint's codes,
//! messages and lines; `query`, `dag`, `stats` and `dot` answer with a
//! warning naming the code; an artifact that claims a clean lint it does not
//! have is caught by the executor's own checks (a tile written twice, a read
//! before its write); a crafted artifact cannot name a file outside
//! `--output-dir`.

use crate::binary::lpkc;
use lpk_compiler::diag::SourceMap;
use lpk_compiler::pipeline::{compile_source, LintGate};
use lpk_model::artifact::{self, Artifact, LintRecord, LintRule, SourceInfo};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `T` written twice (the second loop overwrites the first), then read.
const TWICE: &str = "\
kernel copy(a) -> (b);
kernel scale(a, alpha: real) -> (b);

program twice(N: int) {
    require N >= 1;
    input A[N];
    output C[N];
    matrix T[N];
    for i in range(N) {
        T[i] = copy(A[i]);
    }
    for i in range(N) {
        T[i] = scale(A[i], 2.0);
    }
    for i in range(N) {
        C[i] = copy(T[i]);
    }
}
";

/// `C` read from `T` before the loop that writes `T`.
const EARLY: &str = "\
kernel copy(a) -> (b);

program early(N: int) {
    require N >= 1;
    input A[N];
    output C[N];
    matrix T[N];
    for i in range(N) {
        C[i] = copy(T[i]);
    }
    for i in range(N) {
        T[i] = copy(A[i]);
    }
}
";

/// An output tile written twice, nothing reading it.
const OUTPUT_TWICE: &str = "\
kernel copy(a) -> (b);
kernel scale(a, alpha: real) -> (b);

program output_twice(N: int) {
    require N >= 1;
    input A[N];
    output C[N];
    for i in range(N) {
        C[i] = copy(A[i]);
    }
    for i in range(N) {
        C[i] = scale(A[i], 2.0);
    }
}
";

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("lpk-rules-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("a scratch directory");
        Scratch(d)
    }

    fn write(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).expect("write a scratch file");
        p.display().to_string()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const INPUT: [&str; 4] = ["--block", "8", "--input", "A=random:32x8"];

/// The error diagnostics of `lpkc lint FILE --format json`, as (code, line,
/// message).
fn lint_errors(file: &str) -> Vec<(String, u64, String)> {
    let (code, out, err) = lpkc(&["lint", file, "--format", "json"]);
    assert_eq!(code, 1, "lint finds the violation: {out}{err}");
    errors_of(&out)
}

fn errors_of(json: &str) -> Vec<(String, u64, String)> {
    let v: Value = serde_json::from_str(json.trim()).expect("one JSON object");
    v["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| {
            (
                d["code"].as_str().unwrap_or_default().to_string(),
                d["line"].as_u64().unwrap_or_default(),
                d["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// `lpkc run` of program `source` (written to a scratch `NAME.lpk`)
/// refuses with exactly lint's errors, among them `code`, writes nothing,
/// and says so in text too.
fn run_refuses_like_lint(name: &str, source: &str, code: &str) {
    let s = Scratch::new(name);
    let file = &s.write(&format!("{name}.lpk"), source);
    let out_dir = &s.path("out");
    let want = lint_errors(file);
    assert!(want.iter().any(|(c, _, _)| c == code), "{want:?}");
    let dir = out_dir.display().to_string();
    let mut args = vec!["run", file, "--output-dir", &dir, "--format", "json"];
    args.extend(INPUT);
    let (status, out, err) = lpkc(&args);
    assert_eq!(status, 1, "{out}{err}");
    assert_eq!(errors_of(&out), want, "run reports what lint reports");
    assert!(
        !out_dir.exists(),
        "nothing is written for a refused program"
    );

    let mut args = vec!["--color", "never", "run", file];
    args.extend(INPUT);
    let (status, _, err) = lpkc(&args);
    assert_eq!(status, 1, "{err}");
    assert!(err.contains(&format!("error[{code}]")), "{err}");
    assert!(!err.contains("tasks ran"), "refused before any task: {err}");
}

#[test]
fn run_refuses_a_tile_written_twice_with_lints_code_and_lines() {
    run_refuses_like_lint("twice", TWICE, "E0501");
}

#[test]
fn run_refuses_a_read_before_its_write_with_lints_code_and_lines() {
    run_refuses_like_lint("early", EARLY, "E0504");
}

#[test]
fn run_refuses_an_output_tile_written_twice_without_output_dir() {
    run_refuses_like_lint("output_twice", OUTPUT_TWICE, "E0501");
}

#[test]
fn submit_refuses_a_program_that_breaks_a_rule_before_touching_redis() {
    let s = Scratch::new("submit");
    let file = s.write("twice.lpk", TWICE);
    let store = s.path("store").display().to_string();
    // Nothing listens on port 1: the refusal comes before any connection.
    let mut args = vec![
        "--color",
        "never",
        "submit",
        &file,
        "--redis",
        "redis://127.0.0.1:1",
        "--store",
        &store,
    ];
    args.extend(INPUT);
    let (status, _, err) = lpkc(&args);
    assert_eq!(status, 1, "{err}");
    assert!(err.contains("error[E0501]"), "{err}");
    assert!(!err.contains("127.0.0.1:1"), "{err}");
}

#[test]
fn explore_commands_answer_with_a_warning_naming_the_code() {
    let s = Scratch::new("explore");
    let twice = s.write("twice.lpk", TWICE);
    let early = s.write("early.lpk", EARLY);
    for (file, code) in [(&twice, "E0501"), (&early, "E0504")] {
        for cmd in [
            vec!["query", file, "-p", "N=2", "-e", "tasks"],
            vec!["dag", file, "-p", "N=2", "--format", "json"],
            vec!["stats", file, "-p", "N=2"],
            vec!["dot", file],
        ] {
            let mut args = vec!["--color", "never"];
            args.extend(cmd.iter().copied());
            let (status, out, err) = lpkc(&args);
            assert_eq!(status, 0, "{cmd:?}: {err}");
            assert!(!out.is_empty(), "{cmd:?} answers");
            assert!(err.contains(&format!("warning[{code}]")), "{cmd:?}: {err}");
            assert!(err.contains("`lpkc run` and `lpkc submit`"), "{err}");
        }
    }
    // A program that breaks no rule gets no warning.
    let (status, _, err) = lpkc(&["query", "examples/cholesky.lpk", "-p", "N=2", "-e", "tasks"]);
    assert_eq!(status, 0);
    assert!(!err.contains("warning"), "{err}");
}

/// The artifact of `text` (compiled without lint's gate), with `lint` as
/// its lint record.
fn artifact_of(text: &str, lint: Option<LintRecord>) -> String {
    let mut sources = SourceMap::new();
    let compiled = compile_source(&mut sources, "crafted.lpk", text, None, LintGate::Off)
        .expect("the program checks");
    let art = Artifact {
        compiler: "a crafting test".into(),
        source: SourceInfo::of_program(&compiled.program, "crafted.lpk", Some(text.into())),
        program: compiled.program,
        lint,
    };
    artifact::encode_json(&art).expect("encodes")
}

/// A lint record that claims every rule proved.
fn false_record() -> LintRecord {
    LintRecord {
        rules: ["E0501", "E0502", "E0503", "E0504", "E0505"]
            .iter()
            .map(|c| LintRule {
                code: c.to_string(),
                status: "proved".into(),
            })
            .collect(),
    }
}

#[test]
fn an_artifact_without_a_lint_record_is_linted_before_it_runs() {
    let s = Scratch::new("unlinted");
    let file = s.write("twice.lpka.json", &artifact_of(TWICE, None));
    let mut args = vec!["--color", "never", "run", &file];
    args.extend(INPUT);
    let (status, _, err) = lpkc(&args);
    assert_eq!(status, 1, "{err}");
    assert!(err.contains("error[E0501]"), "{err}");
    let (status, _, err) = lpkc(&[
        "--color", "never", "query", &file, "-p", "N=2", "-e", "tasks",
    ]);
    assert_eq!(status, 0, "{err}");
    assert!(err.contains("warning[E0501]"), "{err}");
}

#[test]
fn the_executor_refuses_what_a_false_lint_record_let_through() {
    let s = Scratch::new("false-record");
    let cases = [
        ("twice", TWICE, "is written twice, by copy@"),
        ("output_twice", OUTPUT_TWICE, "is written twice, by copy@"),
        ("early", EARLY, "writes after it in program order"),
    ];
    for (name, text, says) in cases {
        let file = s.write(
            &format!("{name}.lpka.json"),
            &artifact_of(text, Some(false_record())),
        );
        let out = s.path(&format!("out-{name}"));
        let dir = out.display().to_string();
        for workers in ["1", "3"] {
            let mut args = vec![
                "--color",
                "never",
                "run",
                &file,
                "--workers",
                workers,
                "--output-dir",
                &dir,
            ];
            args.extend(INPUT);
            let (status, _, err) = lpkc(&args);
            assert_eq!(status, 1, "{name}: {err}");
            assert!(err.contains(says), "{name}: {err}");
            assert!(!out.join("_SUCCESS").exists(), "{name}");
        }
    }
}

#[test]
fn a_crafted_artifact_cannot_name_a_file_outside_the_output_directory() {
    let s = Scratch::new("crafted");
    let good: Value = serde_json::from_str(&artifact_of(
        "kernel copy(a) -> (b);\nprogram p(N: int) {\n    input A[N];\n    output L[N];\n    \
         for i in range(N) {\n        L[i] = copy(A[i]);\n    }\n}\n",
        None,
    ))
    .expect("JSON");
    let out = s.path("out");
    let dir = out.display().to_string();
    for (k, bad) in [
        "../../escape/L",
        "/tmp/lpk-escape/L",
        "L/../../x",
        "",
        "A",
        "L\u{0}",
    ]
    .iter()
    .enumerate()
    {
        let mut art = good.clone();
        art["artifact"]["program"]["matrices"][1]["name"] = Value::from(*bad);
        let file = s.write(&format!("crafted{k}.lpka.json"), &art.to_string());
        let mut args = vec!["--color", "never", "run", &file, "--output-dir", &dir];
        args.extend(INPUT);
        let (status, _, err) = lpkc(&args);
        assert_eq!(status, 1, "{bad:?}: {err}");
        assert!(err.contains("error[E0408]"), "{bad:?}: {err}");
        assert!(
            err.contains("is not an identifier") || err.contains("is declared twice"),
            "{bad:?}: {err}"
        );
        let (status, _, err) = lpkc(&["check", &file]);
        assert_eq!(status, 1, "check refuses it too: {err}");
    }
    assert!(!out.exists(), "nothing was written");
    assert!(!Path::new("/tmp/lpk-escape").exists());
}
