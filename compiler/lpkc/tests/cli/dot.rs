//! `lpkc dot`: insta snapshots of the DOT text of every example's
//! program-level graph and of small expanded DAGs, each rendered through
//! Graphviz `dot -Tsvg`, failing on any warning. Graphviz must be
//! installed: a missing `dot` fails these tests rather than skipping them.

use crate::binary::{lpkc, run};

const EXAMPLES: [&str; 8] = [
    "caqr",
    "cholesky",
    "gemm_tree",
    "gemm_tree_zero",
    "lu",
    "trsolve",
    "trtri",
    "tsqr",
];

/// Renders DOT text with `dot -Tsvg` and returns the SVG; panics on a
/// non-zero exit or any output on stderr (Graphviz warnings).
fn render(what: &str, dot_text: &str) -> String {
    let (code, out, stderr) = run("dot", &["-Tsvg"], dot_text);
    assert_eq!(code, 0, "{what}: dot failed: {stderr}");
    assert!(stderr.trim().is_empty(), "{what}: dot warned: {stderr}");
    out
}

fn dot_of(args: &[&str]) -> String {
    let (code, out, err) = lpkc(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    assert!(err.is_empty(), "{args:?}: {err}");
    out
}

#[test]
fn program_level_graphs_of_every_example() {
    let _guard = lpk_test_support::snapshot_settings("dot").bind_to_scope();
    for name in EXAMPLES {
        let path = format!("examples/{name}.lpk");
        let text = dot_of(&["dot", &path]);
        let svg = render(name, &text);
        assert!(svg.contains("<svg"), "{name}");
        insta::assert_snapshot!(format!("program_{name}"), text);
    }
}

#[test]
fn expanded_dags_of_small_instances() {
    let _guard = lpk_test_support::snapshot_settings("dot").bind_to_scope();
    let cases: [(&str, &str, &[&str]); 7] = [
        ("cholesky_n3", "cholesky", &["-p", "N=3"]),
        (
            "cholesky_n3_cluster_k",
            "cholesky",
            &["-p", "N=3", "--cluster", "k"],
        ),
        ("tsqr_n4", "tsqr", &["-p", "N=4"]),
        (
            "tsqr_n5_cluster_level",
            "tsqr",
            &["-p", "N=5", "--cluster", "level"],
        ),
        ("lu_n2", "lu", &["-p", "N=2"]),
        (
            "gemm_tree_k5",
            "gemm_tree",
            &["-p", "M=1", "-p", "N=1", "-p", "K=5"],
        ),
        (
            "gemm_tree_zero_k3",
            "gemm_tree_zero",
            &["-p", "M=1", "-p", "N=1", "-p", "K=3"],
        ),
    ];
    for (snap, name, extra) in cases {
        let path = format!("examples/{name}.lpk");
        let mut args = vec!["dot", path.as_str()];
        args.extend_from_slice(extra);
        let text = dot_of(&args);
        render(snap, &text);
        insta::assert_snapshot!(format!("expanded_{snap}"), text);
    }
}

#[test]
fn clusters_hold_every_task_with_the_variable() {
    let text = dot_of(&[
        "dot",
        "examples/cholesky.lpk",
        "-p",
        "N=4",
        "--cluster",
        "k",
    ]);
    for k in 0..4 {
        assert!(
            text.contains(&format!("subgraph \"cluster_k_{k}\"")),
            "{text}"
        );
    }
    assert!(!text.contains("cluster_k_4"));
    // N(N+1)(N+2)/6 = 20 task nodes, every one inside a cluster (indented
    // twice), plus the legend's three kernels.
    assert_eq!(text.matches("    \"t").count(), 20);
    assert_eq!(text.matches("\"legend_").count(), 3 + 2 * 2);
}

#[test]
fn dag_dot_agrees_with_dot() {
    let a = dot_of(&["dag", "examples/tsqr.lpk", "-p", "N=4", "--format", "dot"]);
    let b = dot_of(&["dot", "examples/tsqr.lpk", "-p", "N=4"]);
    assert_eq!(a, b);
}

#[test]
fn too_many_tasks_is_a_clear_error() {
    let (code, out, err) = lpkc(&["dot", "examples/cholesky.lpk", "-p", "N=30"]);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert_eq!(
        err,
        "error: the instance cholesky(N=30) has 4960 tasks, more than --max-tasks 2000; \
         Graphviz is slow on big graphs, so raise the limit with --max-tasks N if you mean it, \
         or use smaller parameters\n"
    );
    // A much larger instance is counted exactly, not expanded, and the
    // message names the one limit that applies.
    let (code, _, err) = lpkc(&["dot", "examples/cholesky.lpk", "-p", "N=400"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with(
            "error: the instance cholesky(N=400) has 10746800 tasks, more than --max-tasks 2000;"
        ),
        "{err}"
    );
    assert_eq!(err.matches("--max-tasks").count(), 2, "{err}");
}

#[test]
fn an_unknown_cluster_variable_is_a_usage_error() {
    let (code, _, err) = lpkc(&["dot", "examples/tsqr.lpk", "-p", "N=4", "--cluster", "k"]);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "error: `--cluster k`: no statement has a loop variable `k` (loop variables: j, level)\n"
    );
    let (code, _, err) = lpkc(&["dot", "examples/tsqr.lpk", "--cluster", "j"]);
    assert_eq!(code, 2);
    assert!(err.contains("`--cluster` needs an instance"), "{err}");
}

#[test]
fn labels_are_escaped() {
    assert_eq!(
        lpk_compiler::explore::dot::quote("a\"b\\c\nd\te"),
        "\"a\\\"b\\\\c\\nde\""
    );
}
