//! Outputs say where they go: `lint`'s rule report is its output (stdout)
//! and names the instance checked with `-p`; `compile` without `-o` says
//! where it wrote the artifact.

use crate::binary::{lpkc, scratch_dir};

#[test]
fn lint_prints_its_report_on_stdout_and_its_diagnostics_on_stderr() {
    let (code, out, err) = lpkc(&[
        "--color",
        "never",
        "lint",
        "tests/ui/lint/W0501_dead_write.lpk",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("lint of `scratch`:\n  E0501 single assignment: "),
        "{out}"
    );
    assert!(!out.contains("warning["), "{out}");
    assert!(err.starts_with("warning[W0501]"), "{err}");
    assert!(!err.contains("lint of"), "{err}");
}

#[test]
fn lint_with_parameters_names_the_instance_it_checked() {
    let (code, out, err) = lpkc(&["lint", "examples/cholesky.lpk", "-p", "N=3"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("lint of `cholesky`, with the instance cholesky(N=3):\n"),
        "{out}"
    );
    let (code, out, _) = lpkc(&[
        "lint",
        "examples/cholesky.lpk",
        "-p",
        "N=3",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["lint"]["instance"], serde_json::json!({"N": 3}));
    let (_, out, _) = lpkc(&["lint", "examples/cholesky.lpk", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(v["lint"].get("instance").is_none(), "{v}");
}

#[test]
fn compile_without_output_says_where_it_wrote() {
    let dir = scratch_dir("outputs");
    let src = dir.join("gemm.lpk");
    std::fs::copy(
        lpk_test_support::workspace_root().join("examples/gemm.lpk"),
        &src,
    )
    .expect("copy");
    let src = src.display().to_string();
    let (code, out, err) = lpkc(&["compile", &src]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "");
    let written = dir.join("gemm.lpka");
    let size = std::fs::metadata(&written).expect("written").len();
    assert!(size > 1024, "{size}");
    assert_eq!(
        err,
        format!(
            "wrote {} ({:.1} KiB)\n",
            written.display(),
            size as f64 / 1024.0
        )
    );
    // Named with -o: nothing to say.
    let named = dir.join("named.lpka").display().to_string();
    let (code, _, err) = lpkc(&["compile", &src, "-o", &named]);
    assert_eq!(code, 0);
    assert_eq!(err, "");
}
