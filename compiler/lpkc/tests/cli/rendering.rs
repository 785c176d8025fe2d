//! How diagnostics read as text: rustc's closing count, and output bounded
//! whatever the input (generated sources with thousands of diagnostics on
//! one line, and a line of thousands of characters, whose snippet is cut
//! around its label).

use crate::binary::{lpkc, scratch_file};

/// Writes `text` to a fresh temporary file and returns its path.
fn source(name: &str, text: &str) -> String {
    scratch_file("rendering", name, text).1
}

/// A program whose body is `line`, one line of statements over the
/// one-dimensional `A` (input) and `B` (output) of `n` tiles.
fn program(n: usize, line: &str) -> String {
    format!(
        "kernel copy(a) -> (b);\n\nprogram p() {{\n    input  A[{n}];\n    output B[{n}];\n    {line}\n}}\n"
    )
}

/// Text output worth reading stays under this size, whatever the input.
const BOUND: usize = 100_000;

/// The stderr of `lpkc COMMAND --color never FILE`, which must exit with
/// `code` and stay under [`BOUND`].
fn text(command: &str, file: &str, code: i32) -> String {
    let (got, _, err) = lpkc(&[command, "--color", "never", file]);
    assert_eq!(got, code, "{err}");
    assert!(err.len() < BOUND, "{} bytes of diagnostics", err.len());
    err
}

/// [`text`] of `lpkc COMMAND` on [`program`]`(n, line)`, written to NAME;
/// and the file's path.
fn line_text(command: &str, name: &str, n: usize, line: &str, code: i32) -> (String, String) {
    let path = source(name, &program(n, line));
    let err = text(command, &path, code);
    (path, err)
}

/// `count` statements on one line, the `i`th `statement(i)`.
fn statements(count: usize, statement: impl Fn(usize) -> String) -> String {
    (0..count).map(statement).collect()
}

/// Checks that `lpkc COMMAND` on `source` (written to NAME) exits with
/// `code` and closes its stderr with `ending`.
fn closes_with(command: &str, name: &str, source_text: &str, code: i32, ending: &str) {
    let err = text(command, &source(name, source_text), code);
    assert!(err.ends_with(ending), "{err}");
}

#[test]
fn errors_close_with_rustcs_count_in_the_right_number() {
    for (name, line, ending) in [
        (
            "one.lpk",
            "B[0] = copy(Q[0]);",
            "error: aborting due to 1 previous error\n\n",
        ),
        (
            "two.lpk",
            "B[0] = copy(Q[0]);\n    B[1] = copy(R[1]);",
            "error: aborting due to 2 previous errors\n\n",
        ),
    ] {
        closes_with("check", name, &program(2, line), 1, ending);
    }
}

#[test]
fn warnings_are_counted_alone_or_after_the_errors() {
    // W0509 twice: three calls on one line, two of them after the first
    // (their two warnings collapse into one drawn, and both are counted).
    closes_with(
        "lint",
        "warn.lpk",
        &program(
            3,
            "B[0] = copy(A[0]); B[1] = copy(A[1]); B[2] = copy(A[2]);",
        ),
        0,
        "warning: 2 warnings emitted\n\n",
    );

    // A write to an input (E0502) and the same two warnings.
    closes_with(
        "lint",
        "both.lpk",
        &program(
            3,
            "A[0] = copy(A[1]); B[1] = copy(A[1]); B[2] = copy(A[2]);",
        ),
        1,
        "error: aborting due to 1 previous error; 2 warnings emitted\n\n",
    );
}

#[test]
fn json_has_no_closing_count() {
    let one = source("json.lpk", &program(2, "B[0] = copy(Q[0]);"));
    let (code, out, err) = lpkc(&["check", "--format", "json", &one]);
    assert_eq!(code, 1);
    assert!(
        !out.contains("aborting") && !err.contains("aborting"),
        "{out}{err}"
    );
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(json["diagnostics"].as_array().map(Vec::len), Some(1));
}

#[test]
fn a_thousand_different_errors_on_one_line_stop_after_a_hundred() {
    let line = statements(1000, |i| format!("B[0] = copy(Q{i}[0]); "));
    let (path, err) = line_text("check", "distinct.lpk", 1, &line, 1);
    assert_eq!(err.matches("error[E0103]").count(), 100);
    assert!(
        err.contains("error: too many errors; stopping after 100 diagnostics (900 more not shown)"),
        "{err}"
    );
    assert!(
        err.ends_with("error: aborting due to 1000 previous errors\n\n"),
        "{err}"
    );
    // JSON still lists every one.
    let (_, out, _) = lpkc(&["check", "--format", "json", &path]);
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(json["diagnostics"].as_array().map(Vec::len), Some(1000));
}

#[test]
fn a_thousand_identical_errors_on_one_line_are_drawn_once() {
    let line = "B[0] = copy(Q[0]); ".repeat(1000);
    let (_, err) = line_text("check", "identical.lpk", 1, &line, 1);
    assert_eq!(err.matches("error[E0103]").count(), 1, "{err}");
    assert!(
        err.contains("= and 999 more like this on this line"),
        "{err}"
    );
    assert!(err.ends_with("error: aborting due to 1000 previous errors\n\n"));
}

#[test]
fn two_thousand_calls_on_one_line_are_one_bounded_warning() {
    let line = statements(2000, |i| format!("B[{i}] = copy(A[{i}]); "));
    let (_, err) = line_text("lint", "calls.lpk", 2000, &line, 0);
    assert_eq!(err.matches("warning[W0509]").count(), 1, "{err}");
    assert!(
        err.contains("= and 1998 more like this on this line"),
        "{err}"
    );
    assert!(err.ends_with("warning: 1999 warnings emitted\n\n"), "{err}");
}

#[test]
fn a_long_line_is_cut_around_its_label() {
    // One error in the middle of a line of 5,000 characters.
    let calls = statements(135, |i| format!("B[{}] = copy(A[{}]); ", i % 3, i % 3));
    let line = format!("{calls}B[1] = copy(Q[1]); {calls}");
    assert!(line.len() > 5000);
    let column = line.find("Q[1]").expect("the error") + 5; // 4 of indent, 1-based
    let (_, err) = line_text("check", "long.lpk", 3, &line, 1);
    assert!(err.len() < 2000, "{err}");
    // The header still says the real line and column.
    assert!(err.contains(&format!("long.lpk:6:{column}")), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    let snippet = lines
        .iter()
        .position(|l| l.starts_with("6 │ "))
        .expect("the snippet line");
    let shown = lines[snippet];
    assert!(
        shown.starts_with("6 │ ...") && shown.ends_with("..."),
        "{shown}"
    );
    assert!(shown.chars().count() < 140, "{shown}");
    // The caret under the cut line points at the `Q`.
    let carets = lines[snippet + 1];
    let at = carets.find('^').expect("a caret");
    assert_eq!(shown.get(at..at + 4), Some("Q[1]"), "{shown}\n{carets}");
}
