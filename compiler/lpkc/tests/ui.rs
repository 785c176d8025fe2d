//! The UI corpus: every `.lpk` file under `tests/ui/` is run through the
//! real `lpkc` binary (text with `--color never`, then `--format json`) and
//! the outputs are compared with an insta snapshot in `tests/ui/snapshots/`.
//!
//! A first line `# lpkc: SUBCOMMAND ARGS...` picks the command (default
//! `check`); the file path is appended. Files under `tests/ui/ok/` must
//! produce no diagnostics at all.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn lpk_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            lpk_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "lpk") {
            out.push(p);
        }
    }
}

/// Runs lpkc in the workspace root with `args` and returns (exit code,
/// stdout, stderr).
pub fn lpkc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lpkc"))
        .current_dir(workspace_root())
        .args(args)
        .output()
        .expect("lpkc runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn command_of(src: &str) -> Vec<String> {
    let first = src.lines().next().unwrap_or("");
    match first.strip_prefix("# lpkc:") {
        Some(rest) => rest.split_whitespace().map(String::from).collect(),
        None => vec!["check".to_string()],
    }
}

#[test]
fn ui_corpus() {
    let root = workspace_root();
    let mut files = Vec::new();
    lpk_files(&root.join("tests/ui"), &mut files);
    assert!(files.len() >= 40, "the UI corpus has {} files", files.len());
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(root.join("tests/ui/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    let _guard = settings.bind_to_scope();
    for file in files {
        let rel = file
            .strip_prefix(&root)
            .expect("under the root")
            .to_string_lossy()
            .replace('\\', "/");
        let src = std::fs::read_to_string(&file).expect("readable");
        let mut args = command_of(&src);
        args.push("--color".into());
        args.push("never".into());
        args.push(rel.clone());
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout_text, stderr_text) = lpkc(&argv);
        let mut json_args = argv.clone();
        json_args.extend(["--format", "json"]);
        let (json_code, json_out, _) = lpkc(&json_args);
        assert_eq!(code, json_code, "{rel}: exit codes differ between formats");
        let json: serde_json::Value = serde_json::from_str(&json_out)
            .unwrap_or_else(|e| panic!("{rel}: --format json is not JSON ({e}): {json_out}"));
        if rel.starts_with("tests/ui/ok/") {
            assert_eq!(code, 0, "{rel} must check clean:\n{stderr_text}");
            assert_eq!(
                json["diagnostics"].as_array().map(Vec::len),
                Some(0),
                "{rel}"
            );
        } else {
            // The file name starts with the code it demonstrates.
            let name = file.file_stem().unwrap_or_default().to_string_lossy();
            let code_of_file = name.split('_').next().unwrap_or("");
            let codes: Vec<&str> = json["diagnostics"]
                .as_array()
                .map(|a| a.iter().filter_map(|d| d["code"].as_str()).collect())
                .unwrap_or_default();
            assert!(
                codes.contains(&code_of_file),
                "{rel}: expected a {code_of_file} diagnostic, got {codes:?}"
            );
        }
        let snapshot = format!(
            "command: lpkc {}\nexit: {code}\n--- stdout ---\n{stdout_text}--- stderr ---\n{stderr_text}--- json ---\n{}\n",
            args.join(" "),
            serde_json::to_string_pretty(&json).unwrap_or_default()
        );
        let snap_name = rel
            .trim_start_matches("tests/ui/")
            .trim_end_matches(".lpk")
            .replace('/', "__");
        insta::assert_snapshot!(snap_name, snapshot);
    }
}

#[test]
fn every_code_has_documentation_and_a_ui_test() {
    let root = workspace_root();
    let mut files = Vec::new();
    lpk_files(&root.join("tests/ui"), &mut files);
    let names: Vec<String> = files
        .iter()
        .filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let index = std::fs::read_to_string(root.join("docs/errors.md")).unwrap_or_default();
    for info in compiler::diag::codes::CODES {
        assert!(
            info.doc.contains("Wrong") && info.doc.contains("Right"),
            "docs/errors/{}.md needs a wrong and a right example",
            info.code
        );
        assert!(
            index.contains(info.code),
            "docs/errors.md does not list {}",
            info.code
        );
        // A 4 GiB file cannot be part of the corpus.
        // Artifact errors (E04xx) come from binary files, not sources; they
        // are tested in tests/artifact.rs.
        if info.code != "E0008" && !info.code.starts_with("E04") {
            assert!(
                names.iter().any(|n| n.starts_with(info.code)),
                "no UI test for {}",
                info.code
            );
        }
    }
}
