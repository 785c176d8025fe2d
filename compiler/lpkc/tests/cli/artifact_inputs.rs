//! A compiled artifact given to the commands that read source: `check`
//! validates it, `lint` runs the rules that need only the plans, and
//! `fmt` and `compile` refuse it, naming the file as an artifact (not
//! "not valid UTF-8").

use crate::binary::{lpkc, scratch_dir};
use std::path::PathBuf;

/// A temporary directory for this module's files.
fn tmp(name: &str) -> PathBuf {
    let dir = scratch_dir("artifact-inputs");
    dir.join(name)
}

/// Compiles `source` (from the workspace root) to a fresh artifact.
fn compiled(source: &str, name: &str, extra: &[&str]) -> String {
    let out = tmp(name).display().to_string();
    let mut args = vec!["compile", source, "-o", &out];
    args.extend(extra);
    let (code, _, err) = lpkc(&args);
    assert_eq!(code, 0, "{err}");
    out
}

#[test]
fn check_validates_an_artifact() {
    let art = compiled("examples/cholesky.lpk", "check.lpka", &[]);
    let (code, out, err) = lpkc(&["check", &art]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "");
    assert_eq!(
        err,
        format!(
            "{art}: a valid artifact of program `cholesky` (format lpka 2.1, lpkc {})\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    let (code, out, _) = lpkc(&["check", &art, "--format", "json"]);
    assert_eq!(code, 0);
    assert_eq!(out.trim(), r#"{"diagnostics":[]}"#);
    // A truncated artifact: its artifact error, not a UTF-8 complaint.
    let bytes = std::fs::read(&art).expect("artifact");
    let cut = tmp("cut.lpka");
    std::fs::write(&cut, &bytes[..30]).expect("write");
    let cut = cut.display().to_string();
    let (code, _, err) = lpkc(&["--color", "never", "check", &cut]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error[E0403]: the artifact is truncated"),
        "{err}"
    );
    assert!(!err.contains("UTF-8"), "{err}");
}

#[test]
fn lint_runs_the_plan_rules_on_an_artifact_and_says_what_it_skipped() {
    let art = compiled("tests/ui/lint/W0501_dead_write.lpk", "dead.lpka", &[]);
    let (code, out, err) = lpkc(&["lint", &art, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let d = &v["diagnostics"][0];
    assert_eq!(d["code"], "W0501");
    assert_eq!(d["line"], 11, "{d}");
    assert_eq!(d["file"], "tests/ui/lint/W0501_dead_write.lpk");
    assert_eq!(v["lint"]["program"], "scratch");
    assert_eq!(v["lint"]["rules"][0]["status"], "proved");
    assert!(
        v["lint"]["skipped"]
            .as_str()
            .is_some_and(|s| s.contains("unused-name warnings")),
        "{v}"
    );
    // With --deny warnings the dead write fails the lint, as from source.
    let (code, _, _) = lpkc(&["lint", &art, "--deny", "warnings"]);
    assert_eq!(code, 1);
    // Without the source: the same finding, without a position.
    let bare = compiled(
        "tests/ui/lint/W0501_dead_write.lpk",
        "dead-bare.lpka",
        &["--no-source"],
    );
    let (code, out, err) = lpkc(&["--color", "never", "lint", &bare]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning[W0501]: tiles written here are never read"),
        "{err}"
    );
    assert!(out.contains("E0501 single assignment: proved"), "{out}");
    assert!(
        out.contains("need the source and were not checked"),
        "{out}"
    );
}

#[test]
fn fmt_and_compile_refuse_an_artifact_naming_it() {
    let art = compiled("examples/gemm.lpk", "gemm.lpka", &[]);
    for cmd in ["fmt", "compile"] {
        let (code, _, err) = lpkc(&[cmd, &art]);
        assert_eq!(code, 2, "{cmd}");
        assert!(
            err.starts_with(&format!(
                "error: {art} is a compiled lpk artifact, not `.lpk` source: `lpkc {cmd}` needs the source"
            )),
            "{cmd}: {err}"
        );
        assert!(
            err.contains("the commands that take an artifact: check, lint"),
            "{err}"
        );
    }
    // The JSON twin is an artifact too.
    let twin = compiled("examples/gemm.lpk", "gemm.lpka.json", &[]);
    let (code, _, err) = lpkc(&["fmt", "--check", &twin]);
    assert_eq!(code, 2);
    assert!(err.contains("is a compiled lpk artifact"), "{err}");
}
