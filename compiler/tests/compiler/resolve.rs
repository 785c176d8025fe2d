//! The front end up to name resolution: the diagnostics of parsing and
//! resolving a source (type errors left to `types`), rendered as the
//! terminal shows them without colour, or `ok`.

use lpk_compiler::diag::SourceMap;
use lpk_compiler::pipeline::check_source;

fn check(src: &str) -> String {
    let mut sources = SourceMap::new();
    let checked = check_source(&mut sources, "test.lpk", src);
    let diagnostics: Vec<_> = checked
        .diagnostics
        .into_iter()
        .filter(|d| !d.code.as_str().starts_with("E02"))
        .collect();
    if diagnostics.is_empty() {
        "ok".to_string()
    } else {
        sources.render_plain(&diagnostics)
    }
}

#[test]
fn a_well_formed_program_resolves() {
    insta::assert_snapshot!(check("
kernel chol(a) -> (l);
program p(N: int) {
    input A[N];
    output L[N];
    for i in range(N) {
        L[i] = chol(A[i]);
    }
}
"), @"ok");
}

#[test]
fn an_undefined_name_suggests_the_close_one() {
    insta::assert_snapshot!(check("
kernel copy(a) -> (b);
program p(nb_tiles: int) {
    input A[nb_tiles];
    output B[nb_tiles];
    for i in range(nb_tile) {
        B[i] = copy(A[i]);
    }
}
"), @r#"
    error[E0101]: cannot find `nb_tile` in this scope
      ┌─ test.lpk:6:20
      │
    6 │     for i in range(nb_tile) {
      │                    ^^^^^^^ not found in this scope
      │
      = help: a similar name exists: `nb_tiles`
    "#);
}

#[test]
fn a_loop_variable_cannot_be_shadowed() {
    insta::assert_snapshot!(check("
kernel copy(a) -> (b);
program p(N: int) {
    input A[N, N];
    output B[N, N];
    for i in range(N) {
        for i in range(N) {
            B[i, i] = copy(A[i, i]);
        }
    }
}
"), @r#"
    error[E0106]: `i` is already defined
      ┌─ test.lpk:7:13
      │
    6 │     for i in range(N) {
      │         - the loop variable is defined here and still in scope
    7 │         for i in range(N) {
      │             ^ defined again here
      │
      = parameters, matrices, loop variables and `let`s share one namespace, and a name may not be rebound while it is in scope
      = help: choose a different name
    "#);
}

#[test]
fn indices_must_match_the_rank() {
    insta::assert_snapshot!(check("
kernel copy(a) -> (b);
program p(N: int) {
    input A[N, N];
    output B[N];
    for i in range(N) {
        B[i] = copy(A[i]);
    }
}
"), @r#"
    error[E0121]: matrix `A` has 2 dimensions, but 1 index is given
      ┌─ test.lpk:7:21
      │
    4 │     input A[N, N];
      │           - declared with 2 dimensions here
      ·
    7 │         B[i] = copy(A[i]);
      │                     ^^^^
    "#);
}

#[test]
fn an_undeclared_kernel_and_a_syntax_error() {
    insta::assert_snapshot!(check("
program p(N: int) {
    input A[N];
    output B[N];
    for i in range(N) {
        B[i] = cpy(A[i]);
    }
}
"), @r#"
    error[E0102]: kernel `cpy` is not declared
      ┌─ test.lpk:6:16
      │
    6 │         B[i] = cpy(A[i]);
      │                ^^^ called here but never declared
      │
      = every kernel a program calls must be declared in the same file with `kernel NAME(params) -> (results);`
    "#);
    // A syntax error stops the front end before resolution: the same
    // undeclared kernel is not reported.
    insta::assert_snapshot!(check("
program p(N: int) {
    input A[N]
    output B[N];
    for i in range(N) {
        B[i] = cpy(A[i]);
    }
}
"), @r#"
    error[E0002]: expected `;`, found `output`
      ┌─ test.lpk:3:15
      │
    3 │     input A[N]
      │               ^ add `;` here
    4 │     output B[N];
      │     ------ unexpected `output`
    "#);
}
