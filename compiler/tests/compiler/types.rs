//! The type checker: for a source that resolves, its type errors rendered
//! as the terminal shows them without colour or, when there are none, the
//! type of every variable of every program (parameters, loop variables and
//! `let`s, in binding order).

use lpk_compiler::diag::SourceMap;
use lpk_compiler::front::hir::VarKind;
use lpk_compiler::pipeline::check_source;

fn check(src: &str) -> String {
    let mut sources = SourceMap::new();
    let checked = check_source(&mut sources, "test.lpk", src);
    let (type_errors, earlier): (Vec<_>, Vec<_>) = checked
        .diagnostics
        .into_iter()
        .partition(|d| d.code.as_str().starts_with("E02"));
    assert!(
        earlier.is_empty(),
        "the source must resolve:\n{}",
        sources.render_plain(&earlier)
    );
    if !type_errors.is_empty() {
        return sources.render_plain(&type_errors);
    }
    let mut out = String::new();
    for program in &checked.module.programs {
        out.push_str(&format!("program {}\n", program.name));
        for var in &program.vars {
            let kind = match var.kind {
                VarKind::Param(_) => "parameter",
                VarKind::Loop(_) => "loop",
                VarKind::Let(_) => "let",
            };
            out.push_str(&format!("  {}: {} ({kind})\n", var.name, var.ty));
        }
    }
    out
}

#[test]
fn lets_take_the_type_of_their_value() {
    insta::assert_snapshot!(check("
kernel scale(a, s: real) -> (b);
program p(N: int) {
    input A[N];
    output B[N];
    let half = N / 2;
    let levels = ceil(log2(N));
    let big = N > 4;
    for i in range(N) {
        let j = N - 1 - i;
        B[j] = scale(A[i], half);
    }
}
"), @r#"
    program p
      N: int (parameter)
      half: real (let)
      levels: int (let)
      big: bool (let)
      i: int (loop)
      j: int (let)
    "#);
}

#[test]
fn a_real_index_is_an_error() {
    insta::assert_snapshot!(check("
kernel copy(a) -> (b);
program p(N: int) {
    require N >= 1;
    input A[N];
    output B[1];
    B[0] = copy(A[N / 2]);
}
"), @r#"
    error[E0201]: expected `int`, found `real` in a tile index
      ┌─ test.lpk:7:19
      │
    7 │     B[0] = copy(A[N / 2]);
      │                   ^^^^^ this is a `real`
      │
      = help: round it to an int with `ceil(...)` or `floor(...)`; `/`, `log` and `log2` always give reals
    "#);
}

#[test]
fn a_condition_must_be_bool() {
    insta::assert_snapshot!(check("
kernel copy(a) -> (b);
program p(N: int) {
    input A[N];
    output B[N];
    for i in range(N) {
        if i % 2 {
            B[i] = copy(A[i]);
        }
    }
}
"), @r#"
    error[E0202]: expected `bool`, found `int` in an `if` condition
      ┌─ test.lpk:7:12
      │
    7 │         if i % 2 {
      │            ^^^^^ not a condition
      │
      = help: compare it, e.g. `x != 0`
    "#);
}
