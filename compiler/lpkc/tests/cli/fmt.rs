//! `lpkc fmt`: `--check` shows what would change as a unified diff and
//! takes several files; the examples are in canonical form, and the
//! formatter keeps every comment and is idempotent on them.

use crate::binary::{lpkc, scratch_dir};
use std::path::PathBuf;

/// A temporary directory for one test.
fn tmp_dir(test: &str) -> PathBuf {
    scratch_dir(&format!("fmt-{test}"))
}

/// A source that is formatted but for the two spaces after `input` and
/// the missing spaces around `=` on line 7.
const UNFORMATTED: &str = "\
kernel copy(a) -> (b);

program p(N: int) {
    input  A[N];
    output B[N];
    for i in range(N) {
        B[i]=copy(A[i]);
    }
}
";

#[test]
fn check_prints_a_unified_diff_and_fails() {
    let dir = tmp_dir("diff");
    let path = dir.join("p.lpk");
    std::fs::write(&path, UNFORMATTED).expect("write");
    let name = path.display().to_string();
    let (code, out, err) = lpkc(&["fmt", "--check", &name]);
    assert_eq!(code, 1, "{err}");
    let expected = format!(
        "--- {name}
+++ {name} (formatted)
@@ -1,9 +1,9 @@
 kernel copy(a) -> (b);
 
 program p(N: int) {{
-    input  A[N];
+    input A[N];
     output B[N];
     for i in range(N) {{
-        B[i]=copy(A[i]);
+        B[i] = copy(A[i]);
     }}
 }}
"
    );
    assert_eq!(out, expected);
    assert!(err.contains(&format!("{name} is not formatted")), "{err}");
    // --check never writes.
    assert_eq!(std::fs::read_to_string(&path).expect("read"), UNFORMATTED);
}

#[test]
fn check_takes_several_files_and_names_only_the_unformatted() {
    let dir = tmp_dir("several");
    let bad = dir.join("bad.lpk");
    std::fs::write(&bad, UNFORMATTED).expect("write");
    let good = dir.join("good.lpk");
    let (_, formatted, _) = lpkc(&["fmt", "--stdout", &bad.display().to_string()]);
    std::fs::write(&good, &formatted).expect("write");
    let (code, out, err) = lpkc(&[
        "fmt",
        "--check",
        &good.display().to_string(),
        &bad.display().to_string(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.starts_with(&format!("--- {}\n", bad.display())),
        "{out}"
    );
    assert!(!out.contains("good.lpk"), "{out}");
    assert!(!err.contains("good.lpk"), "{err}");

    // All formatted: silent, exit 0.
    let (code, out, err) = lpkc(&["fmt", "--check", &good.display().to_string()]);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
}

#[test]
fn fmt_rewrites_several_files() {
    let dir = tmp_dir("rewrite");
    let files: Vec<PathBuf> = ["a.lpk", "b.lpk"].iter().map(|n| dir.join(n)).collect();
    for f in &files {
        std::fs::write(f, UNFORMATTED).expect("write");
    }
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let mut args = vec!["fmt"];
    args.extend(names.iter().map(String::as_str));
    let (code, _, err) = lpkc(&args);
    assert_eq!(code, 0, "{err}");
    args.insert(1, "--check");
    let (code, out, err) = lpkc(&args);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
}

#[test]
fn stdout_takes_one_file() {
    let (code, _, err) = lpkc(&["fmt", "--stdout", "examples/gemm.lpk", "examples/lu.lpk"]);
    assert_eq!(code, 2);
    assert!(err.contains("`lpkc fmt --stdout` prints one file"), "{err}");
}

#[test]
fn the_examples_are_formatted() {
    let names = lpk_test_support::lpk_files_under("examples");
    assert!(names.len() >= 8, "{names:?}");
    let mut args = vec!["fmt", "--check"];
    args.extend(names.iter().map(String::as_str));
    let (code, out, err) = lpkc(&args);
    assert_eq!(code, 0, "{out}{err}");
}

/// Formatting an example stripped of its indentation gives the example
/// back, every comment in its place; formatting the result again changes
/// nothing.
#[test]
fn formatting_the_examples_keeps_every_comment_and_is_idempotent() {
    let dir = tmp_dir("examples");
    let comments = |s: &str| -> Vec<String> {
        s.lines()
            .filter_map(|l| l.find('#').map(|at| l[at..].to_string()))
            .collect()
    };
    for name in lpk_test_support::lpk_files_under("examples") {
        let text = lpk_test_support::read(&name);
        let flat: String = text
            .lines()
            .map(|l| format!("{}\n", l.trim_start()))
            .collect();
        let path = dir.join(name.replace('/', "_"));
        std::fs::write(&path, &flat).expect("write");
        let (code, once, err) = lpkc(&["fmt", "--stdout", &path.display().to_string()]);
        assert_eq!(code, 0, "{name}: {err}");
        assert_eq!(comments(&once), comments(&text), "{name}");
        assert_eq!(once, text, "{name}: formatting does not restore it");
        std::fs::write(&path, &once).expect("write");
        let (_, twice, _) = lpkc(&["fmt", "--stdout", &path.display().to_string()]);
        assert_eq!(twice, once, "{name}: formatting twice differs from once");
    }
}
