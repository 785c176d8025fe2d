//! The formatter through one `check` helper: the exact output for small
//! inputs, and for every input (these, the contract's example, `examples/`
//! and `tests/ui/`) the three promises: the output parses to the same tree
//! up to spans, formatting it again changes nothing, and the comments are
//! the same, in the same order.

use crate::erase::erase_file;
use crate::TSQR;
use lpk_grammar::ast::FileId;
use lpk_grammar::fmt::format_source;
use lpk_grammar::parse;

// ---- the promises ----

fn comment_texts(parsed: &lpk_grammar::Parsed) -> Vec<&str> {
    parsed.comments.iter().map(|c| c.text.as_str()).collect()
}

/// Formats `src` (which must parse) and checks the three promises; returns
/// the formatted text.
fn assert_round_trip(src: &str, what: &str) -> String {
    let before = parse(src, FileId(0));
    assert!(before.errors.is_empty(), "{what}: {:?}", before.errors);
    let once = format_source(src).unwrap_or_else(|e| panic!("{what}: {e:?}"));
    let after = parse(&once, FileId(0));
    assert!(
        after.errors.is_empty(),
        "{what}: the output does not parse: {:?}\n{once}",
        after.errors
    );
    assert!(
        erase_file(&after.file) == erase_file(&before.file),
        "{what}: the output parses to another tree:\n{once}"
    );
    assert_eq!(
        comment_texts(&after),
        comment_texts(&before),
        "{what}: comments changed:\n{once}"
    );
    let twice = format_source(&once).unwrap_or_else(|e| panic!("{what}: {e:?}"));
    assert_eq!(twice, once, "{what}: formatting is not idempotent");
    once
}

/// The one helper behind the hand-written cases.
fn check(src: &str, expected: &str) {
    let formatted = assert_round_trip(src, "inline case");
    assert_eq!(formatted, expected, "\n--- got ---\n{formatted}");
}

// ---- hand-written cases ----

const COMMENTS_IN: &str = "\
# header

kernel chol(a) -> (l); # after a kernel
program p(N:int, # the size
   # before a parameter
   t : int = 0) {   # after the brace
    L[0] = chol(A[0, 0]);  # trailing
    let q = f(a, # inside a call
              b,
              # on its own line inside a call
              c);
    L[1] =   # after `=`
        chol(A[1, 1]);
    if q { let r = 1; # in a one-line block
    }
    # before `else`
    else {
        # alone in a block
    }
    # at the end of the body
}
# at the end of the file
";

const COMMENTS_OUT: &str = "\
# header

kernel chol(a) -> (l);  # after a kernel

program p(N: int,  # the size
    # before a parameter
    t: int = 0) {  # after the brace
    L[0] = chol(A[0, 0]);  # trailing
    let q = f(a,  # inside a call
        b,
        # on its own line inside a call
        c);
    L[1] =  # after `=`
        chol(A[1, 1]);
    if q {
        let r = 1;  # in a one-line block
    }
    # before `else`
    else {
        # alone in a block
    }
    # at the end of the body
}
# at the end of the file
";

#[test]
fn comments_stay_next_to_their_code() {
    check(COMMENTS_IN, COMMENTS_OUT);
}

#[test]
fn else_if_chains_share_lines_with_braces() {
    check(
        "program p(n: int) { if n==0 { let a = 1; } else if n==1 { let b = 2; }\n\
         else if (n > 2) {} else { let c = 3; } }",
        "\
program p(n: int) {
    if n == 0 {
        let a = 1;
    } else if n == 1 {
        let b = 2;
    } else if (n > 2) {} else {
        let c = 3;
    }
}
",
    );
}

#[test]
fn long_calls_break_after_assign_then_wrap_their_arguments() {
    let fits = "    Vvvvvvvvvvvvvv[i, j], Tttttttttttttt[i, j], Rrrrrrrrrrrrrrr[i, j] = factor(Aaaaaaaaaaaaa[i, j]);";
    assert_eq!(fits.len(), 100);
    let src = format!(
        "kernel factor(a) -> (v, t, r);\n\
         kernel apply(v, t, c0, c1) -> (d0, d1);\n\
         program p() {{\n\
         {fits}\n\
         Vvvvvvvvvvvvvv[i, j], Tttttttttttttt[i, j], Rrrrrrrrrrrrrrr[i, j] = factor(Aaaaaaaaaaaaaa[i, j]);\n\
         Dddddddddddddddddddd[i, j], Eeeeeeeeeeeeeeeeeeee[i, j] = apply(Vvvvvvvvvvvvvvvvv[i, j], \
         Tttttttttttttttttt[i, j], Cccccccccccccccccccccc[i, j], Ccccccccccccccccccc[i, j]);\n\
         }}\n"
    );
    check(
        &src,
        "\
kernel factor(a) -> (v, t, r);
kernel apply(v, t, c0, c1) -> (d0, d1);

program p() {
    Vvvvvvvvvvvvvv[i, j], Tttttttttttttt[i, j], Rrrrrrrrrrrrrrr[i, j] = factor(Aaaaaaaaaaaaa[i, j]);
    Vvvvvvvvvvvvvv[i, j], Tttttttttttttt[i, j], Rrrrrrrrrrrrrrr[i, j] =
        factor(Aaaaaaaaaaaaaa[i, j]);
    Dddddddddddddddddddd[i, j], Eeeeeeeeeeeeeeeeeeee[i, j] =
        apply(Vvvvvvvvvvvvvvvvv[i, j], Tttttttttttttttttt[i, j], Cccccccccccccccccccccc[i, j],
              Ccccccccccccccccccc[i, j]);
}
",
    );
}

#[test]
fn negative_defaults_and_declarations() {
    check(
        "kernel scale(x,alpha:real)->(y);\nprogram p(N:int=-1,t:int=0,u:int){require N>=-1;\
         input  A[N,N];output L[N];matrix S[N+1,N,N];L[0]=scale(A[0,0],-1.5);}",
        "\
kernel scale(x, alpha: real) -> (y);

program p(N: int = -1, t: int = 0, u: int) {
    require N >= -1;
    input A[N, N];
    output L[N];
    matrix S[N + 1, N, N];
    L[0] = scale(A[0, 0], -1.5);
}
",
    );
}

#[test]
fn zero_matrices_keep_their_initialiser() {
    check(
        "kernel add(a,b)->(c);\nprogram p(N:int){input A[N];output C[1];matrix T[2*N]=0;\n\
         matrix U[N]   =   (0);  # kept\nC[0]=add(T[0],A[0]);}",
        "\
kernel add(a, b) -> (c);

program p(N: int) {
    input A[N];
    output C[1];
    matrix T[2 * N] = 0;
    matrix U[N] = (0);  # kept
    C[0] = add(T[0], A[0]);
}
",
    );
}

#[test]
fn unary_minus_and_power() {
    check(
        "program p() { let a = -2**2; let b = 2**-1; let c = - -x; let d = (-2)**2;\n\
         let e = 2**3**2; let f = -x*-y; let g = not not a; let h = a- -1; }",
        "\
program p() {
    let a = -2 ** 2;
    let b = 2 ** -1;
    let c = --x;
    let d = (-2) ** 2;
    let e = 2 ** 3 ** 2;
    let f = -x * -y;
    let g = not not a;
    let h = a - -1;
}
",
    );
}

#[test]
fn parentheses_are_kept_as_written() {
    check(
        "program p() { let a = ((b + c)) * (d); let e = ( f ); \
         let g = (not (h < i)) and (j or k); let l = max((m), (n // 2) % 3, ceil(log2((o)))); }",
        "\
program p() {
    let a = ((b + c)) * (d);
    let e = (f);
    let g = (not (h < i)) and (j or k);
    let l = max((m), (n // 2) % 3, ceil(log2((o))));
}
",
    );
}

#[test]
fn blank_lines_collapse_and_programs_are_separated() {
    check(
        "\n\n# header\n\n\n# more header\nkernel a(x) -> (y);\n\nkernel b(x) -> (y);\nkernel c(x) -> (y);\n\
         program p() {\n\n    let a = 1;\n\n\n\n    let b = 2;\n    # about c\n\n    let c = 3;\n\n}\n\
         program q() {}\n\n\n# the end\n\n\n",
        "\
# header

# more header
kernel a(x) -> (y);

kernel b(x) -> (y);
kernel c(x) -> (y);

program p() {
    let a = 1;

    let b = 2;
    # about c

    let c = 3;
}

program q() {}

# the end
",
    );
}

#[test]
fn empty_blocks_trailing_commas_and_literals() {
    check(
        "kernel k(a,) -> (b,c,);\nprogram p(N: int,) { for i in range(N,) { } \
         T[i,], U[0], = k(A[007, 1,],); let r = 1.50 + 2.0e-3 + 1e6 + 1e999 + 0.0; \
         let b = true or false; }",
        "\
kernel k(a) -> (b, c);

program p(N: int) {
    for i in range(N) {}
    T[i], U[0] = k(A[7, 1]);
    let r = 1.50 + 2.0e-3 + 1e6 + 1e999 + 0.0;
    let b = true or false;
}
",
    );
}

#[test]
fn empty_and_comment_only_files() {
    check("", "");
    check("  \n\n", "");
    check("# only\n\n\n#  comments   \n", "# only\n\n#  comments\n");
}

#[test]
fn deep_trees_do_not_overflow_the_stack() {
    // Just under the parser's operator limit, in each direction of nesting.
    let chain = format!("1{}", " + 1".repeat(990));
    let power = format!("{}2", "2 ** ".repeat(990));
    let unary = format!("{}x", "-".repeat(990));
    let nots = format!("{}x", "not ".repeat(990));
    let parens = format!("{}x{}", "(".repeat(95), ")".repeat(95));
    for e in [chain, power, unary, nots, parens] {
        let src = format!("program p() {{ let v = {e}; }}\n");
        assert_round_trip(&src, "deep tree");
    }
}

// ---- the contract's example and the corpus ----

#[test]
fn the_contract_example_is_canonical_but_for_alignment() {
    let formatted = assert_round_trip(TSQR, "tsqr");
    assert_eq!(formatted, TSQR.replace("input  A", "input A"));
}

/// Every `.lpk` file under `dir`, recursively (none if it does not exist).
#[test]
fn every_input_round_trips() {
    let inline = [
        COMMENTS_IN,
        COMMENTS_OUT,
        TSQR,
        "program p() { if a { } else if b { } else { } }",
    ];
    let mut formatted = 0;
    for src in inline {
        assert_round_trip(src, "inline input");
        formatted += 1;
    }
    let mut files = lpk_test_support::lpk_files_under("examples");
    files.extend(lpk_test_support::lpk_files_under("tests/ui"));
    for path in &files {
        let src = lpk_test_support::read(path);
        // UI tests for syntax errors have nothing to format.
        if parse(&src, FileId(0)).errors.is_empty() {
            assert_round_trip(&src, path);
            formatted += 1;
        }
    }
    assert!(formatted >= inline.len());
}
