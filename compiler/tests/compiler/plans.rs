//! Lowering and solving: the readable plans (`explore::plans_text`) of a
//! program that checks clean.

use lpk_compiler::explore::plans_text::plans_text;

fn check(src: &str) -> String {
    let (_, compiled) = crate::compile_text(src);
    plans_text(&compiled.program)
}

#[test]
fn a_chain_reads_the_previous_iteration() {
    insta::assert_snapshot!(check("
kernel step(a) -> (b);
program chain(N: int) {
    require N >= 1;
    input A[1];
    output X[N];
    X[0] = step(A[0]);
    for i in range(1, N) {
        X[i] = step(X[i - 1]);
    }
}
"), @r#"
    program chain

    statement step@7:5 (no loop variables)
      writes X[0] — given tile X[t0], closed form, no enumeration:
          1. check 0 == t0
        feeds: step@9:9 X[i - 1]
      reads A[0] — given tile A[t0], closed form, no enumeration:
          1. check 0 == t0
        reads from: nothing (an input, or no statement writes these tiles)

    statement step@9:9 (i)
      writes X[i] — given tile X[t0], closed form, no enumeration:
          1. i := t0
          2. check 1 <= i < N
        feeds: step@9:9 X[i - 1]
      reads X[i - 1] — given tile X[t0], closed form, no enumeration:
          1. i := t0 + 1
          2. check 1 <= i < N
        reads from: step@7:5 X[0]; step@9:9 X[i]
    "#);
}

#[test]
fn a_strided_write_checks_divisibility() {
    insta::assert_snapshot!(check("
kernel copy(a) -> (b);
program p(N: int) {
    input A[N];
    output B[N];
    for i in range(0, N, 2) {
        B[i] = copy(A[i]);
    }
}
"), @r#"
    program p

    statement copy@7:9 (i)
      writes B[i] — given tile B[t0], closed form, no enumeration:
          1. i := t0
          2. check 0 <= i < N
          3. check (i - 0) % 2 == 0
        feeds: nothing (no access reads this matrix where it is written)
      reads A[i] — given tile A[t0], closed form, no enumeration:
          1. i := t0
          2. check 0 <= i < N
          3. check (i - 0) % 2 == 0
        reads from: nothing (an input, or no statement writes these tiles)
    "#);
}

#[test]
fn a_reduction_tree_enumerates_its_level() {
    insta::assert_snapshot!(check("
kernel add(a, b) -> (c);
program tree(N: int) {
    require N >= 1;
    input A[N];
    output T[N];
    for i in range(N) {
        T[i] = add(A[i], A[i]);
    }
    for level in range(ceil(log2(N))) {
        for i in range(0, N - 2 ** level, 2 ** (level + 1)) {
            T[i] = add(T[i], T[i + 2 ** level]);
        }
    }
}
"), @r#"
    program tree

    statement add@8:9 (i)
      writes T[i] — given tile T[t0], closed form, no enumeration:
          1. i := t0
          2. check 0 <= i < N
        feeds: add@12:13 T[i]; add@12:13 T[i + 2 ** level]
      reads A[i] — given tile A[t0], closed form, no enumeration:
          1. i := t0
          2. check 0 <= i < N
        reads from: nothing (an input, or no statement writes these tiles)
      reads A[i] — given tile A[t0], closed form, no enumeration:
          1. i := t0
          2. check 0 <= i < N
        reads from: nothing (an input, or no statement writes these tiles)

    statement add@12:13 (level, i)
      writes T[i] — given tile T[t0], enumerates:
          1. i := t0
          2. ENUMERATE level in [0, ceil(log2(N)))
          3. check 0 <= i < N - 2 ** level
          4. check (i - 0) % 2 ** (level + 1) == 0
        feeds: add@12:13 T[i]; add@12:13 T[i + 2 ** level]
      reads T[i] — given tile T[t0], enumerates:
          1. i := t0
          2. ENUMERATE level in [0, ceil(log2(N)))
          3. check 0 <= i < N - 2 ** level
          4. check (i - 0) % 2 ** (level + 1) == 0
        reads from: add@8:9 T[i]; add@12:13 T[i]
      reads T[i + 2 ** level] — given tile T[t0], enumerates:
          1. ENUMERATE level in [0, ceil(log2(N)))
          2. i := -2 ** level + t0
          3. check 0 <= i < N - 2 ** level
          4. check (i - 0) % 2 ** (level + 1) == 0
        reads from: add@8:9 T[i]; add@12:13 T[i]
    "#);
}
