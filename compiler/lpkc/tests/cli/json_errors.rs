//! One error contract everywhere (docs/cli.md): every subcommand that has
//! `--format json` prints the diagnostics object `{"diagnostics": [...]}`
//! on stdout for each way it can fail (bad source, unmet `require`,
//! unknown or missing parameter, missing file, corrupt artifact), with the
//! exit codes of the contract, and points at the source where it can.

use crate::binary::{lpkc, scratch_dir, scratch_file};
use serde_json::Value;

/// A program whose `require` does not hold for N < 8, on line 3.
const REQUIRES_EIGHT: &str = "kernel copy(a) -> (b);\n\
program p(N: int) {\n\
\x20   require N >= 8;\n\
\x20   input A[N];\n\
\x20   output B[N];\n\
\x20   for i in range(N) {\n\
\x20       B[i] = copy(A[i]);\n\
\x20   }\n\
}\n";

/// A syntax error: a missing `;` at the end of line 3.
const BAD_SOURCE: &str = "kernel copy(a) -> (b);\nprogram p(N: int) {\n    input A[N]\n}\n";

/// The fixtures of this module, written once per test process.
struct Fixtures {
    requires: String,
    bad: String,
    artifact: String,
    artifact_no_source: String,
    corrupt: String,
    missing: String,
}

fn fixtures() -> &'static Fixtures {
    static F: std::sync::OnceLock<Fixtures> = std::sync::OnceLock::new();
    F.get_or_init(|| {
        let dir = scratch_dir("json-errors");
        let path = |name: &str| dir.join(name).display().to_string();
        let requires = path("requires.lpk");
        std::fs::write(&requires, REQUIRES_EIGHT).expect("write");
        let bad = path("bad.lpk");
        std::fs::write(&bad, BAD_SOURCE).expect("write");
        let artifact = path("requires.lpka");
        let (code, _, err) = lpkc(&["compile", &requires, "-o", &artifact]);
        assert_eq!(code, 0, "{err}");
        let artifact_no_source = path("requires-no-source.lpka");
        let (code, _, err) = lpkc(&[
            "compile",
            &requires,
            "-o",
            &artifact_no_source,
            "--no-source",
        ]);
        assert_eq!(code, 0, "{err}");
        // Flip a payload byte: the checksum no longer matches.
        let mut bytes = std::fs::read(&artifact).expect("artifact");
        let last = bytes.len() - 1;
        bytes[last] ^= 0x55;
        let corrupt = path("corrupt.lpka");
        std::fs::write(&corrupt, bytes).expect("write");
        Fixtures {
            requires,
            bad,
            artifact,
            artifact_no_source,
            corrupt,
            missing: path("no-such-file.lpk"),
        }
    })
}

/// Runs lpkc and parses its stdout as one diagnostics object; returns
/// the exit code and the first diagnostic.
fn failing(args: &[&str]) -> (i32, Value) {
    let (code, out, err) = lpkc(args);
    assert_ne!(code, 0, "{args:?} succeeded:\n{out}\n{err}");
    let value: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("{args:?}: stdout is not one JSON value ({e}):\n{out}\n{err}"));
    let first = value["diagnostics"][0].clone();
    assert!(
        first.is_object(),
        "{args:?}: no diagnostic in {value}\nstderr: {err}"
    );
    (code, first)
}

/// The subcommands with `--format json` that take `-p`, each with the
/// arguments it needs besides the file and the parameters.
fn instance_commands() -> Vec<Vec<&'static str>> {
    vec![
        vec!["lint"],
        vec!["query", "-e", "tasks"],
        vec!["dag"],
        vec!["stats"],
    ]
}

/// `cmd FILE rest... --format json`.
fn argv<'a>(cmd: &[&'a str], file: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![cmd[0], file];
    v.extend(&cmd[1..]);
    v.extend(rest);
    v.extend(["--format", "json"]);
    v
}

#[test]
fn an_unmet_require_is_a_diagnostic_at_the_require_with_the_values() {
    let f = fixtures();
    for cmd in instance_commands() {
        for file in [&f.requires, &f.artifact] {
            let args = argv(&cmd, file, &["-p", "N=5"]);
            let (code, d) = failing(&args);
            assert_eq!(code, 1, "{args:?}");
            assert_eq!(d["code"], "E0601", "{args:?}");
            assert_eq!(
                d["message"], "`require N >= 8` does not hold for N = 5",
                "{args:?}"
            );
            assert_eq!(d["line"], 3, "{args:?}: {d}");
            assert_eq!(d["column"], 5, "{args:?}");
            assert_eq!(d["labels"][0]["primary"], true);
            assert_eq!(d["file"], f.requires.as_str(), "{args:?}");
        }
        // Compiled without its source: no position to point at, but the
        // same message, and the file named.
        let args = argv(&cmd, &f.artifact_no_source, &["-p", "N=5"]);
        let (code, d) = failing(&args);
        assert_eq!(code, 1);
        assert_eq!(d["message"], "`require N >= 8` does not hold for N = 5");
        assert_eq!(d["line"], 0);
        assert_eq!(d["labels"], Value::Array(Vec::new()));
        assert_eq!(d["file"], f.artifact_no_source.as_str());
    }
}

#[test]
fn the_require_diagnostic_is_rendered_at_the_source_in_text_mode_too() {
    let f = fixtures();
    let (code, out, err) = lpkc(&["--color", "never", "lint", &f.requires, "-p", "N=5"]);
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert!(
        err.contains("error[E0601]: `require N >= 8` does not hold for N = 5"),
        "{err}"
    );
    assert!(err.contains(&format!("{}:3:5", f.requires)), "{err}");
    assert!(err.contains("require N >= 8;"), "{err}");
}

#[test]
fn unknown_and_missing_parameters_are_usage_diagnostics_at_the_parameters() {
    let f = fixtures();
    for cmd in instance_commands() {
        let args = argv(&cmd, &f.requires, &["-p", "Q=5"]);
        let (code, d) = failing(&args);
        assert_eq!(code, 2, "{args:?}");
        assert_eq!(d["code"], "E0602");
        assert_eq!(
            d["message"],
            "`Q` is not a parameter of program `p` (its parameters: N)"
        );
        assert_eq!(d["line"], 2, "{args:?}: {d}");
        if cmd[0] == "lint" {
            // Without -p, lint checks every instance.
            continue;
        }
        let args = argv(&cmd, &f.requires, &[]);
        let (code, d) = failing(&args);
        assert_eq!(code, 2, "{args:?}");
        assert_eq!(d["message"], "parameter `N` needs a value (-p N=INT)");
        assert_eq!(d["line"], 2);
        assert_eq!(d["column"], 11);
    }
}

#[test]
fn a_bad_source_gives_its_diagnostics_as_json_to_every_command() {
    let f = fixtures();
    let mut commands = instance_commands();
    commands.extend([vec!["check"], vec!["compile", "-o", "/dev/null"]]);
    for cmd in commands {
        let args = argv(&cmd, &f.bad, &["-p", "N=5"]);
        let args: Vec<&str> = if ["check", "compile"].contains(&cmd[0]) {
            argv(&cmd, &f.bad, &[])
        } else {
            args
        };
        let (code, d) = failing(&args);
        assert_eq!(code, 1, "{args:?}");
        assert_eq!(d["code"], "E0002", "{args:?}: {d}");
        assert_eq!(d["line"], 3, "{args:?}: {d}");
        assert_eq!(d["column"], 15, "{args:?}: {d}");
        assert_eq!(d["file"], f.bad.as_str());
    }
    let (code, d) = failing(&argv(
        &["run", "--block", "2"],
        &f.bad,
        &["--input", "A=random:4x1"],
    ));
    assert_eq!(code, 1);
    assert_eq!(d["code"], "E0002");
}

#[test]
fn a_missing_file_is_a_usage_diagnostic_naming_it() {
    let f = fixtures();
    let mut commands = instance_commands();
    commands.extend([
        vec!["check"],
        vec!["compile"],
        vec!["inspect"],
        vec!["run", "--block", "2"],
    ]);
    for cmd in commands {
        let args = argv(&cmd, &f.missing, &[]);
        let (code, d) = failing(&args);
        assert_eq!(code, 2, "{args:?}");
        assert_eq!(d["code"], "E0602", "{args:?}");
        assert_eq!(d["file"], f.missing.as_str());
        assert!(
            d["message"]
                .as_str()
                .is_some_and(|m| m.starts_with(&format!("cannot read {}", f.missing))),
            "{args:?}: {d}"
        );
    }
}

#[test]
fn a_corrupt_artifact_is_its_artifact_error_as_json() {
    let f = fixtures();
    let mut commands = instance_commands();
    commands.extend([vec!["inspect"], vec!["check"], vec!["run", "--block", "2"]]);
    for cmd in commands {
        let rest: &[&str] = if ["inspect", "check"].contains(&cmd[0]) {
            &[]
        } else {
            &["-p", "N=8"]
        };
        let args = argv(&cmd, &f.corrupt, rest);
        let (code, d) = failing(&args);
        assert_eq!(code, 1, "{args:?}");
        assert_eq!(d["code"], "E0406", "{args:?}: {d}");
        assert_eq!(d["file"], f.corrupt.as_str());
    }
}

#[test]
fn run_and_bench_failures_are_json_too() {
    let f = fixtures();
    // An unmet require met while inferring the parameters.
    let (code, d) = failing(&argv(
        &["run"],
        &f.requires,
        &["-p", "N=5", "--block", "2", "--input", "A=random:10x1"],
    ));
    assert_eq!(code, 1);
    assert!(d["message"].as_str().is_some_and(|m| !m.is_empty()), "{d}");
    let (code, d) = failing(&["run", &f.requires, "--block", "0", "--format", "json"]);
    assert_eq!(code, 2);
    assert_eq!(d["code"], "E0602");
    assert_eq!(d["message"], "--block must be at least 1");
    let (code, d) = failing(&["bench", "cholesky", "--workers", "0", "--format", "json"]);
    assert_eq!(code, 2);
    assert_eq!(d["code"], "E0602");
    assert_eq!(d["message"], "--workers must be at least 1");
    assert_eq!(d["file"], "");
}

#[test]
fn a_file_without_a_program_is_an_error_of_the_input() {
    let (_, file) = scratch_file("no-program", "kernels.lpk", "kernel copy(a) -> (b);\n");
    for args in [
        vec!["stats", &file, "-p", "N=1", "--format", "json"],
        vec!["lint", &file, "--format", "json"],
        vec!["compile", &file, "--format", "json"],
    ] {
        let (code, d) = failing(&args);
        assert_eq!(code, 1, "{args:?}");
        assert_eq!(d["message"], "the file declares no program");
        assert_eq!(d["file"], file.as_str());
    }
    let (code, _, err) = lpkc(&["plans", &file]);
    assert_eq!(code, 1);
    assert_eq!(err, "error: the file declares no program\n");
    // Choosing a program that is not there stays a usage error.
    let (code, d) = failing(&argv(
        &["stats", "--program", "nope"],
        "examples/cholesky.lpk",
        &["-p", "N=1"],
    ));
    assert_eq!(code, 2);
    assert_eq!(d["code"], "E0602");
}
