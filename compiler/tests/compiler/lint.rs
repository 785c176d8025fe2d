//! Lint: the diagnostics of `lint_program` rendered as the terminal shows
//! them without colour, then the one-line-per-rule summary of `lpkc lint`.
//! The exhaustive part is bounded at 8 to keep the tests fast.

use lpk_compiler::lint::{lint_program, LintOptions};

/// The options of these tests: the exhaustive part bounded at 8.
fn options() -> LintOptions {
    LintOptions {
        bound: 8,
        ..LintOptions::default()
    }
}

fn check(src: &str) -> String {
    let (sources, compiled) = crate::compile_text(src);
    let report = lint_program(
        &compiled.checked.module,
        compiled.hir(),
        &compiled.program,
        compiled.checked.file,
        &options(),
        None,
    );
    let mut out = sources.render_plain(&report.diagnostics);
    out.push_str(&format!("lint of `{}`:\n", compiled.program.name));
    for line in &report.summary {
        if line.code.is_empty() {
            out.push_str(&format!(
                "  {}: {}: {}\n",
                line.rule, line.status, line.detail
            ));
        } else {
            out.push_str(&format!("  {} {}: {}\n", line.code, line.rule, line.detail));
        }
    }
    out
}

/// Asserts that program `name` of `src` lints clean: no diagnostic, and
/// every rule proved for all values of `params` (as the summary writes
/// them, `N` or `N, M`) up to 2^20.
#[track_caller]
fn assert_proved(src: &str, name: &str, params: &str) {
    let mut expected = format!("lint of `{name}`:\n");
    for rule in [
        "E0501 single assignment",
        "E0502 no write to an input",
        "E0503 every read tile is written",
        "E0504 every read comes after its write",
        "E0505 indices inside the extents",
    ] {
        expected.push_str(&format!("  {rule}: proved for all {params} up to 2^20\n"));
    }
    assert_eq!(check(src), expected);
}

#[test]
fn a_correct_program_is_proved() {
    assert_proved(
        "
kernel copy(a) -> (b);
program p(N: int) {
    require N >= 1;
    input A[N];
    output B[N];
    for i in range(N) {
        B[i] = copy(A[i]);
    }
}
",
        "p",
        "N",
    );
}

#[test]
fn a_read_of_an_unwritten_tile_has_a_smallest_counterexample() {
    insta::assert_snapshot!(check("
kernel step(a) -> (b);
program chain(N: int) {
    require N >= 2;
    input A[N];
    output X[N];
    output A2[N];
    for i in range(N - 1) {
        X[i] = step(A[i]);
    }
    for i in range(N) {
        A2[i] = step(X[i]);
    }
}
"), @r#"
    error[E0503]: for N = 2: `step@12(i=1)` reads `X[1]`, which no task writes
       ┌─ test.lpk:12:22
       │
    12 │         A2[i] = step(X[i]);
       │                      ^^^^ reads a tile no task writes
       │
       = happens for N = 2..=8 (checked for N <= 8; the counterexample is the smallest failing value)
       = help: check the indices and the guards of this read against its writers

    lint of `chain`:
      E0501 single assignment: proved for all N up to 2^20
      E0502 no write to an input: proved for all N up to 2^20
      E0503 every read tile is written: violated (see the errors)
      E0504 every read comes after its write: checked for N <= 8
      E0505 indices inside the extents: proved for all N up to 2^20
    "#);
}

#[test]
fn an_unused_parameter_is_a_warning() {
    insta::assert_snapshot!(check("
kernel copy(a) -> (b);
program p(N: int, M: int) {
    require N >= 1;
    input A[N];
    output B[N];
    for i in range(N) {
        B[i] = copy(A[i]);
    }
}
"), @r#"
    warning[W0505]: parameter `M` is never used
      ┌─ test.lpk:3:19
      │
    3 │ program p(N: int, M: int) {
      │                   ^ bound here
      │
      = help: remove the parameter, or name it `_name` if callers must still pass it

    lint of `p`:
      E0501 single assignment: proved for all N, M up to 2^20
      E0502 no write to an input: proved for all N, M up to 2^20
      E0503 every read tile is written: proved for all N, M up to 2^20
      E0504 every read comes after its write: proved for all N, M up to 2^20
      E0505 indices inside the extents: proved for all N, M up to 2^20
    "#);
}

/// A reduction tree per panel `k` (the depth `ceil(log2(N - k))` depends
/// on the panel): the writer's depth at the reader's panel is the reader's
/// own term, so the reads of the tree are proved.
const TREE_PER_PANEL: &str = "
kernel one(a) -> (b);
kernel two(a, b) -> (c);
program trees(N: int) {
    require N >= 1;
    input A[N, N];
    output X[N, N + 1, N];
    for k in range(N) {
        for j in range(LO, N) {
            X[k, 0, j] = one(A[k, j]);
        }
        for level in range(ceil(log2(N - k))) {
            for p in range(k, N, 2 ** (level + 1)) {
                if p + 2 ** level < N {
                    X[k, level + 1, p] = two(X[k, level, p], X[k, level, p + 2 ** level]);
                } else {
                    X[k, level + 1, p] = one(X[k, level, p]);
                }
            }
        }
    }
}
";

#[test]
fn a_tree_per_panel_is_proved() {
    assert_proved(&TREE_PER_PANEL.replace("LO", "k"), "trees", "N");
}

#[test]
fn a_tree_per_panel_with_a_missing_leaf_is_not_proved() {
    insta::assert_snapshot!(check(&TREE_PER_PANEL.replace("LO", "k + 1")), @r#"
    error[E0503]: for N = 2: `two@15(k=0, level=0, p=0)` reads `X[0, 0, 0]`, which no task writes
       ┌─ test.lpk:15:46
       │
    15 │                     X[k, level + 1, p] = two(X[k, level, p], X[k, level, p + 2 ** level]);
       │                                              ^^^^^^^^^^^^^^ reads a tile no task writes
       │
       = happens for N = 2..=8 (checked for N <= 8; the counterexample is the smallest failing value)
       = help: check the indices and the guards of this read against its writers

    lint of `trees`:
      E0501 single assignment: proved for all N up to 2^20
      E0502 no write to an input: proved for all N up to 2^20
      E0503 every read tile is written: violated (see the errors)
      E0504 every read comes after its write: checked for N <= 8
      E0505 indices inside the extents: proved for all N up to 2^20
    "#);
}

/// A writer guarded by a term of its own loop variable, read one
/// iteration later: the writer's `ceil(log2(N + 1 - i))` at `i = x - 1`
/// is the reader's `ceil(log2(N + 2 - x))`.
const SHIFTED_GUARD: &str = "
kernel one(a) -> (b);
program shifted(N: int) {
    require N >= 1;
    input A[N];
    output X[N];
    output Y[N];
    for i in range(N) {
        if i < ceil(log2(N + 1 - i)) {
            X[i] = one(A[i]);
        }
    }
    for i in range(1, N) {
        if i - 1 < ceil(log2(N + K - i)) {
            Y[i] = one(X[i - 1]);
        }
    }
}
";

#[test]
fn a_writer_term_at_a_shifted_iteration_is_proved() {
    assert_proved(&SHIFTED_GUARD.replace('K', "2"), "shifted", "N");
}

#[test]
fn a_reader_guard_one_wider_than_the_writer_is_a_violation() {
    insta::assert_snapshot!(check(&SHIFTED_GUARD.replace('K', "3")), @r#"
    error[E0503]: for N = 5: `one@15(i=3)` reads `X[2]`, which no task writes
       ┌─ test.lpk:15:24
       │
    15 │             Y[i] = one(X[i - 1]);
       │                        ^^^^^^^^ reads a tile no task writes
       │
       = happens for N = 5 (checked for N <= 8; the counterexample is the smallest failing value)
       = help: check the indices and the guards of this read against its writers

    lint of `shifted`:
      E0501 single assignment: proved for all N up to 2^20
      E0502 no write to an input: proved for all N up to 2^20
      E0503 every read tile is written: violated (see the errors)
      E0504 every read comes after its write: checked for N <= 8
      E0505 indices inside the extents: proved for all N up to 2^20
    "#);
}

/// A writer bounded by a term the reader never mentions: its facts
/// (`ceil(log2(N)) <= N - 1`) come along with it.
const LOG_START: &str = "
kernel one(a) -> (b);
program start(N: int) {
    require N >= 1;
    input A[N];
    matrix X[N];
    output Y[1];
    let L = ceil(log2(N));
    for k in range(LO, N) {
        X[k - L] = one(A[k]);
    }
    Y[0] = one(X[0]);
}
";

#[test]
fn a_writer_bound_the_reader_never_mentions_is_proved() {
    assert_proved(&LOG_START.replace("LO", "L"), "start", "N");
}

#[test]
fn a_writer_that_starts_one_late_is_a_violation() {
    insta::assert_snapshot!(check(&LOG_START.replace("LO", "L + 1")), @r#"
    warning[W0501]: tiles written here are never read, and `X` is not an output
       ┌─ test.lpk:10:9
       │
    10 │         X[k - L] = one(A[k]);
       │         ^^^^^^^^ dead write
       │
       = proved for all N up to 2^20: no read access of `X` can name a tile this access writes
       = help: read the result, declare `X` as an `output`, or remove the call

    error[E0503]: for N = 1: `one@12()` reads `X[0]`, which no task writes
       ┌─ test.lpk:12:16
       │
    12 │     Y[0] = one(X[0]);
       │                ^^^^ reads a tile no task writes
       │
       = happens for N = 1..=8 (checked for N <= 8; the counterexample is the smallest failing value)
       = help: check the indices and the guards of this read against its writers

    lint of `start`:
      E0501 single assignment: proved for all N up to 2^20
      E0502 no write to an input: proved for all N up to 2^20
      E0503 every read tile is written: violated (see the errors)
      E0504 every read comes after its write: checked for N <= 8
      E0505 indices inside the extents: proved for all N up to 2^20
    "#);
}

/// A writer of every other tile: the writer iteration of a read is `i / 2`,
/// a task only where it is integral.
const EVEN_TILES: &str = "
kernel one(a) -> (b);
program even(N: int) {
    require N >= 1;
    input A[N];
    matrix X[2 * N];
    output Y[2 * N];
    for j in range(N) {
        X[2 * j] = one(A[j]);
    }
    for i in range(2 * N) {
        if GUARD {
            Y[i] = one(X[i]);
        }
    }
}
";

#[test]
fn a_read_of_the_even_tiles_is_proved() {
    assert_proved(&EVEN_TILES.replace("GUARD", "i % 2 == 0"), "even", "N");
}

#[test]
fn a_read_of_every_tile_is_a_violation() {
    insta::assert_snapshot!(check(&EVEN_TILES.replace("GUARD", "i >= 0")), @r#"
    error[E0503]: for N = 1: `one@13(i=1)` reads `X[1]`, which no task writes
       ┌─ test.lpk:13:24
       │
    13 │             Y[i] = one(X[i]);
       │                        ^^^^ reads a tile no task writes
       │
       = happens for N = 1..=8 (checked for N <= 8; the counterexample is the smallest failing value)
       = help: check the indices and the guards of this read against its writers

    lint of `even`:
      E0501 single assignment: proved for all N up to 2^20
      E0502 no write to an input: proved for all N up to 2^20
      E0503 every read tile is written: violated (see the errors)
      E0504 every read comes after its write: checked for N <= 8
      E0505 indices inside the extents: proved for all N up to 2^20
    "#);
}

/// Reads against many split writers that hit the search limit: proved once
/// the writers that cover no read at all are left out of the question.
#[test]
fn writers_that_cover_no_read_are_left_out_past_the_search_limit() {
    let out = check(include_str!(
        "../../../tests/regress/writers_that_cover_nothing.lpk"
    ));
    for code in ["E0501", "E0502", "E0503", "E0504", "E0505"] {
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with(code) && l.contains("proved for all")),
            "{code} not proved:\n{out}"
        );
    }
}

#[test]
fn a_guard_that_is_a_conjunction_of_many_unions_is_assumed_whole() {
    // Five `or`s in one `and`: 32 alternatives as one union, past the
    // case limit; assumed part by part, the guard is kept and the reads
    // it covers are proved.
    assert_proved("
kernel copy(a) -> (b);
program p(N: int) {
    require N >= 1;
    input A[N];
    matrix X[N];
    output B[N];
    for i in range(N) {
        if (i < 2 or i > 3) and (i < 5 or i > 6) and (i < 8 or i > 9) and (i < 11 or i > 12) and (i < 14 or i > 15) {
            X[i] = copy(A[i]);
        }
    }
    for i in range(N) {
        if (i < 2 or i > 3) and (i < 5 or i > 6) and (i < 8 or i > 9) and (i < 11 or i > 12) and (i < 14 or i > 15) {
            B[i] = copy(X[i]);
        }
    }
}
", "p", "N");
}

#[test]
fn a_butterfly_read_at_a_level_of_the_parameters_is_proved_by_cases_on_the_level() {
    // The reader's guard ties `i` to `ceil(log2(2 * N))`; the writers of
    // `X[i + 1, 0]` are three branches over `// 2 ** level % 2`. Too many
    // combinations for one search; one case per value of the logarithm
    // closes it.
    assert_proved(
        "
kernel leaf(a) -> (b);
kernel pair(a, b) -> (c);
kernel copy(a) -> (b);
program butterfly(N: int) {
    require N >= 1;
    input A[2 * N];
    matrix X[ceil(log2(2 * N)) + 1, 2 * N];
    output Y[N];
    for j in range(2 * N) {
        X[0, j] = leaf(A[j]);
    }
    for level in range(ceil(log2(2 * N))) {
        for i in range(2 * N) {
            if i // 2 ** level % 2 == 0 and i + 2 ** level < 2 * N {
                X[level + 1, i] = pair(X[level, i], X[level, i + 2 ** level]);
            } else if i // 2 ** level % 2 == 1 {
                X[level + 1, i] = pair(X[level, i - 2 ** level], X[level, i]);
            } else {
                X[level + 1, i] = copy(X[level, i]);
            }
        }
    }
    for i in range(N) {
        if i < ceil(log2(2 * N)) {
            Y[i] = copy(X[i + 1, 0]);
        }
    }
}
",
        "butterfly",
        "N",
    );
}

#[test]
fn a_diagonal_read_of_per_panel_trees_is_proved_by_narrowing_the_reader_loop() {
    // `j < ceil(log2(N - j))` bounds `j` by 19, so the reader splits like
    // the trees' level loop and meets writers of fixed levels; its `else`
    // branch splits on the same values plus a remainder, so the two
    // branches' single assignment is still proved.
    assert_proved(
        "
kernel leaf(a) -> (b);
kernel pair(a, b) -> (c);
kernel copy(a) -> (b);
program panels(N: int) {
    require N >= 1;
    input A[N];
    matrix T[N, N + 1, N];
    output D[N];
    for k in range(N) {
        for p in range(k, N) {
            T[k, 0, p] = leaf(A[p]);
        }
        for level in range(ceil(log2(N - k))) {
            for i in range(k, N, 2 ** (level + 1)) {
                if i + 2 ** level < N {
                    T[k, level + 1, i] = pair(T[k, level, i], T[k, level, i + 2 ** level]);
                } else {
                    T[k, level + 1, i] = copy(T[k, level, i]);
                }
            }
        }
    }
    for j in range(N) {
        if j < ceil(log2(N - j)) {
            D[j] = pair(T[j, j + 1, j], T[j, 0, j]);
        } else {
            D[j] = copy(T[j, 0, j]);
        }
    }
}
",
        "panels",
        "N",
    );
}

/// A lint cancelled (as the language server cancels the lint of a version
/// the editor replaced) stops like a lint out of budget: what it proves the
/// full lint proves (what is decided without search stays decided), it
/// finds nothing the full lint does not, and it says it was cancelled.
#[test]
fn a_cancelled_lint_proves_and_finds_only_what_the_full_lint_does() {
    use lpk_compiler::lint::{analyze, RuleStatus};
    use lpk_model::program::Program;
    let twice = "
kernel copy(a) -> (b);
program p(N: int) {
    input A[N];
    output B[N];
    for i in range(N) {
        B[i // 2] = copy(A[i]);
    }
}
";
    let mut sources: Vec<(String, String)> = vec![("written twice".into(), twice.into())];
    for example in ["cholesky.lpk", "lu.lpk", "tsqr.lpk"] {
        sources.push((
            example.into(),
            lpk_test_support::read(&format!("examples/{example}")),
        ));
    }
    // A lint cancelled before it starts.
    let cancelled_lint = |program: &Program, opts: &LintOptions| {
        let token = lpk_compiler::cancel::Cancel::new();
        token.cancel();
        token.run(|| analyze(program, opts, None))
    };
    for (name, src) in &sources {
        let (_, compiled) = crate::compile_text(src);
        let opts = options();
        let full = analyze(&compiled.program, &opts, None);
        let cancelled = cancelled_lint(&compiled.program, &opts);
        for ((kind, status), (_, full_status)) in cancelled.rules.iter().zip(&full.rules) {
            if *status == RuleStatus::Proved {
                assert_eq!(*full_status, RuleStatus::Proved, "{name}: {kind:?}");
            }
        }
        for f in &cancelled.findings {
            assert!(full.findings.contains(f), "{name}: {f:?}");
        }
        let stopped = cancelled.coverage.and_then(|c| c.stopped);
        assert_eq!(stopped.as_deref(), Some("the lint was cancelled"), "{name}");
    }
    // The bug is found by the full lint, and not proved away by the
    // cancelled one.
    let (_, compiled) = crate::compile_text(twice);
    let opts = LintOptions::default();
    let cancelled = cancelled_lint(&compiled.program, &opts);
    assert_ne!(cancelled.rules[0].1, RuleStatus::Proved);
    assert!(!analyze(&compiled.program, &opts, None).findings.is_empty());
}
