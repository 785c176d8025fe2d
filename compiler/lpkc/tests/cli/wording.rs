//! What the commands say, in words: counts in the right number, no stray
//! spaces, one header, each `--help` default on a line of its own, and no
//! Rust `Debug` text in artifact errors.

use crate::binary::{lpkc, scratch_dir};
use lpk_model::artifact::{crc32, FORMAT_MAJOR, FORMAT_MINOR, MAGIC};

/// A fresh temporary file path for this module.
fn tmp(name: &str) -> String {
    let dir = scratch_dir("wording");
    dir.join(name).display().to_string()
}

#[test]
fn inspect_counts_in_the_right_number() {
    let art = tmp("cholesky.lpka");
    let (code, _, err) = lpkc(&["compile", "examples/cholesky.lpk", "-o", &art]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = lpkc(&["inspect", &art]);
    assert_eq!(code, 0);
    assert!(out.contains(", 1 enumeration, "), "{out}");
    assert!(out.contains(", 1 partner\n"), "{out}");
    for wrong in [
        " 1 enumerations",
        " 1 partners",
        " 1 steps",
        " 1 loop tree roots",
    ] {
        assert!(!out.contains(wrong), "{wrong}:\n{out}");
    }
}

#[test]
fn plans_end_each_access_heading_with_a_plain_colon() {
    let (code, out, _) = lpkc(&["plans", "examples/cholesky.lpk"]);
    assert_eq!(code, 0);
    assert!(out.contains("closed form, no enumeration:\n"), "{out}");
    assert!(!out.contains(" :\n"), "{out}");
}

#[test]
fn bench_prints_its_header_once_on_stdout() {
    let (code, out, err) = lpkc(&["bench", "cholesky", "--n", "64", "--block", "32"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("bench cholesky: n = 64, block 32, "),
        "{out}"
    );
    assert_eq!(out.matches("n = 64").count(), 1, "{out}");
    assert!(!err.contains("n = 64"), "{err}");
    assert!(!out.contains("Cholesky"), "no Debug name: {out}");
}

#[test]
fn every_help_default_stands_on_a_line_of_its_own() {
    for cmd in [
        "check", "fmt", "plans", "query", "dag", "stats", "dot", "repl", "run", "compile", "lint",
        "inspect", "bench", "explain",
    ] {
        let (code, out, _) = lpkc(&[cmd, "--help"]);
        assert_eq!(code, 0);
        for line in out.lines().filter(|l| l.contains("[default:")) {
            assert!(
                line.trim_start().starts_with("[default:"),
                "lpkc {cmd} --help: {line:?}"
            );
        }
    }
    let (_, out, _) = lpkc(&["compile", "--help"]);
    assert!(
        out.contains(
            "\n          [default: FILE.lpka, or FILE.lpka.json with `--encoding json`]\n"
        ),
        "{out}"
    );
}

#[test]
fn a_payload_that_does_not_inflate_is_said_in_words() {
    let payload = b"not a zlib stream";
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&FORMAT_MAJOR.to_le_bytes());
    bytes.extend_from_slice(&FORMAT_MINOR.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&100u32.to_le_bytes());
    bytes.extend_from_slice(&crc32(payload).to_le_bytes());
    bytes.extend_from_slice(payload);
    let path = tmp("not-zlib.lpka");
    std::fs::write(&path, bytes).expect("write");
    let (code, _, err) = lpkc(&["--color", "never", "inspect", &path]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with(
            "error[E0407]: cannot decode the artifact payload: the payload is not a zlib \
             stream inflating to the 100 bytes the header declares (the stream is malformed)"
        ),
        "{err}"
    );
}
