//! Parser behaviour through one `check` helper: parse a source and compare
//! the error codes (and, where it matters, the tree).

use crate::TSQR;
use lpk_grammar::ast::{BinOp, ExprKind, FileId, Item, StmtKind, UnOp};
use lpk_grammar::parse;

fn codes(src: &str) -> Vec<&'static str> {
    parse(src, FileId(0))
        .errors
        .iter()
        .map(|e| e.code())
        .collect()
}

fn expr(src: &str) -> lpk_grammar::ast::Expr {
    let program = format!("program p() {{ let x = {src}; }}");
    let parsed = parse(&program, FileId(0));
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    let Item::Program(p) = &parsed.file.items[0] else {
        panic!("not a program")
    };
    let StmtKind::Let(l) = &p.body.stmts[0].kind else {
        panic!("not a let")
    };
    l.value.clone()
}

#[test]
fn the_contract_example_parses() {
    let parsed = parse(TSQR, FileId(0));
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    assert_eq!(parsed.file.items.len(), 3);
}

#[test]
fn declarations_may_carry_an_initialiser() {
    let parsed = parse(
        "program p(N: int) { input A[N] = 1; matrix T[N, N] = 0; output C[N]; }",
        FileId(0),
    );
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    let Item::Program(p) = &parsed.file.items[0] else {
        panic!("not a program")
    };
    let inits: Vec<Option<ExprKind>> = p
        .body
        .stmts
        .iter()
        .map(|s| match &s.kind {
            StmtKind::Decl(d) => d.init.as_ref().map(|e| e.kind.clone()),
            other => panic!("not a declaration: {other:?}"),
        })
        .collect();
    // The grammar takes any initialiser on any role; the resolver decides.
    assert_eq!(
        inits,
        [Some(ExprKind::Int(1)), Some(ExprKind::Int(0)), None]
    );
    let StmtKind::Decl(d) = &p.body.stmts[1].kind else {
        panic!("not a declaration")
    };
    let init = d.init.as_ref().expect("an initialiser");
    assert_eq!(
        &"program p(N: int) { input A[N] = 1; matrix T[N, N] = 0; output C[N]; }"
            [init.span.range()],
        "0"
    );
    // `=` needs a value.
    assert_eq!(codes("program p() { matrix T[1] = ; }"), ["E0002"]);
}

#[test]
fn power_is_right_associative_and_binds_tighter_than_unary_minus() {
    // -2 ** 2 == -(2 ** 2)
    let e = expr("-2 ** 2");
    let ExprKind::Unary(UnOp::Neg, inner) = e.kind else {
        panic!("{e:?}")
    };
    assert!(matches!(inner.kind, ExprKind::Binary(BinOp::Pow, _, _)));
    // 2 ** 3 ** 2 == 2 ** (3 ** 2)
    let e = expr("2 ** 3 ** 2");
    let ExprKind::Binary(BinOp::Pow, lhs, rhs) = e.kind else {
        panic!()
    };
    assert!(matches!(lhs.kind, ExprKind::Int(2)));
    assert!(matches!(rhs.kind, ExprKind::Binary(BinOp::Pow, _, _)));
    // the exponent may carry its own sign
    let e = expr("2 ** -1");
    let ExprKind::Binary(BinOp::Pow, _, rhs) = e.kind else {
        panic!()
    };
    assert!(matches!(rhs.kind, ExprKind::Unary(UnOp::Neg, _)));
}

#[test]
fn precedence_from_or_down_to_products() {
    // not a == b or c and d  ==  (not (a == b)) or (c and d)
    let e = expr("not a == b or c and d");
    let ExprKind::Binary(BinOp::Or, lhs, rhs) = e.kind else {
        panic!()
    };
    assert!(matches!(lhs.kind, ExprKind::Unary(UnOp::Not, _)));
    assert!(matches!(rhs.kind, ExprKind::Binary(BinOp::And, _, _)));
    // a + b * c // d  ==  a + ((b * c) // d)
    let e = expr("a + b * c // d");
    let ExprKind::Binary(BinOp::Add, _, rhs) = e.kind else {
        panic!()
    };
    assert!(matches!(rhs.kind, ExprKind::Binary(BinOp::FloorDiv, _, _)));
}

#[test]
fn comparisons_do_not_chain() {
    assert_eq!(codes("program p() { let x = 1 < 2 < 3; }"), vec!["E0007"]);
}

#[test]
fn every_broken_statement_is_reported() {
    let src =
        "program p(N: int) {\n  let a = ;\n  let b = 1 +;\n  let c = 2;\n  L[0] = chol(;\n}\n";
    assert_eq!(codes(src), vec!["E0002", "E0002", "E0002"]);
}

#[test]
fn literals_that_do_not_fit_are_errors() {
    assert_eq!(
        codes("program p() { let x = 99999999999999999999; }"),
        vec!["E0004"]
    );
}

#[test]
fn deep_nesting_is_a_diagnostic_not_a_crash() {
    let src = format!(
        "program p() {{ let x = {}1{}; }}",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    assert_eq!(codes(&src), vec!["E0005"]);
    let mut loops = String::from("program p() {");
    for i in 0..10_000 {
        loops.push_str(&format!("for i{i} in range(1) {{"));
    }
    loops.push_str(&"}".repeat(10_001));
    assert_eq!(codes(&loops), vec!["E0005"]);
    let long = format!("program p() {{ let x = 1{}; }}", " + 1".repeat(100_000));
    assert_eq!(codes(&long), vec!["E0006"]);
    let unary = format!("program p() {{ let x = {}1; }}", "-".repeat(100_000));
    assert_eq!(codes(&unary), vec!["E0006"]);
}

#[test]
fn unknown_characters_and_end_of_file() {
    assert_eq!(codes("program p() { let x = 1 $ 2; }"), vec!["E0001"]);
    assert_eq!(codes("program p() { let x = 1;"), vec!["E0003"]);
}
