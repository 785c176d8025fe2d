//! Lint against the brute-force expansion (the oracle).
//!
//! For every example and for generated programs (the shared generator of
//! `lpk_test_support::gen`, plus a mutator that plants off-by-one bounds, swapped
//! indices, wrong strides and missing guards in the program text), lint
//! (exhaustive part bounded at 32) must report exactly the violation kinds
//! that the expansion shows for some parameter combination in the same
//! range, never one the expansion does not show, and every counterexample
//! it prints must reproduce when that instance is expanded.
//!
//! The oracle side is independent of lint's proofs: it expands every
//! combination in lint's visiting order under the same task budget, so a
//! rule lint *proved* is tested against real expansions too. A false
//! negative is a violation kind the expansion shows that lint does not
//! report; a false positive is a reported kind the expansion does not
//! show (or a counterexample that does not reproduce).
//!
//! `LPK_LINT_HONESTY_CASES=N` sets the number of generated base programs
//! (each is linted as generated and with one planted mutation);
//! `LPK_LINT_HONESTY_SEED=0x...` draws another corpus.

use crate::compile_generated;
use lpk_compiler::lint::exhaustive::{combinations, ErrorKind};
use lpk_compiler::lint::{analyze, LintOptions, RuleStatus};
use lpk_model::dag::{expand, ExpandError};
use lpk_model::program::Program;
use lpk_test_support::gen::{generate, Xorshift};
use std::collections::BTreeSet;
use std::time::Instant;

const BOUND: i64 = 32;
const BUDGET: usize = 5_000;

/// A generated program, `None` when it does not compile.
fn compile(text: &str) -> Option<Program> {
    compile_generated(text).ok()
}

/// The violation kinds the expansion shows, visiting combinations as lint
/// does and stopping where its budget would.
fn oracle_kinds(p: &Program) -> BTreeSet<ErrorKind> {
    let mut kinds = BTreeSet::new();
    let mut tasks = 0usize;
    for (_, tuple) in combinations(p.params.len(), BOUND) {
        let Ok(inst) = p.bind_values(tuple) else {
            continue;
        };
        match expand(&inst, BUDGET.saturating_sub(tasks)) {
            Ok((dag, violations)) => {
                tasks += dag.tasks.len();
                kinds.extend(violations.iter().map(ErrorKind::of));
            }
            Err(ExpandError::TooLarge(_)) => break,
            Err(_) => {}
        }
    }
    kinds
}

#[derive(Default, Debug)]
struct Counts {
    programs: usize,
    flagged: usize,
    violating: usize,
    false_positives: usize,
    false_negatives: usize,
    not_reproduced: usize,
    /// Rules lint proved (for all values up to the ceiling).
    proved_rules: usize,
    /// Instances beyond the exhaustive bound expanded to test the proofs.
    beyond: usize,
    /// Violations of a proved rule seen in those instances.
    proofs_refuted: usize,
}

impl Counts {
    /// Asserts that lint agreed with the expansion: no mismatch (the
    /// `failures` describe them), no false positive or negative, every
    /// counterexample reproduced and no proof refuted.
    #[track_caller]
    fn assert_agreed(&self, failures: &[String]) {
        assert!(failures.is_empty(), "{}", failures.join("\n\n"));
        assert_eq!(self.false_positives, 0);
        assert_eq!(self.false_negatives, 0);
        assert_eq!(self.not_reproduced, 0);
        assert_eq!(self.proofs_refuted, 0);
    }
}

/// Lints one program and compares; returns a description of any mismatch.
fn compare(p: &Program, counts: &mut Counts) -> Option<String> {
    let opts = LintOptions {
        bound: BOUND,
        task_budget: BUDGET,
        ..LintOptions::default()
    };
    let t0 = Instant::now();
    let a = analyze(p, &opts, None);
    if std::env::var("LPK_LINT_TIMES").is_ok() {
        eprintln!("analyze {:.1?}", t0.elapsed());
    }
    let reported: BTreeSet<ErrorKind> = a.findings.iter().map(|f| f.kind).collect();
    let truth = oracle_kinds(p);
    counts.programs += 1;
    counts.flagged += usize::from(!reported.is_empty() || a.unsatisfiable.is_some());
    counts.violating += usize::from(!truth.is_empty());
    let mut problems = Vec::new();
    if a.unsatisfiable.is_some() {
        // Every combination is rejected by the requires: the expansion can
        // show nothing, and neither may lint.
        if !truth.is_empty() {
            counts.false_negatives += 1;
            problems.push(format!(
                "requires reported unsatisfiable, oracle saw {truth:?}"
            ));
        }
    }
    for k in truth.difference(&reported) {
        counts.false_negatives += 1;
        problems.push(format!("missed {k:?}"));
    }
    for k in reported.difference(&truth) {
        counts.false_positives += 1;
        problems.push(format!("reported {k:?}, which the expansion does not show"));
    }
    for f in &a.findings {
        let ok = p
            .bind_values(f.params.clone())
            .ok()
            .and_then(|inst| expand(&inst, 10_000_000).ok())
            .is_some_and(|(_, v)| v.contains(&f.violation));
        if !ok {
            counts.not_reproduced += 1;
            problems.push(format!(
                "counterexample {:?} at {:?} does not reproduce",
                f.violation, f.params
            ));
        }
    }
    // "Proved" claims every value up to 2^20: test them past the bound of
    // the exhaustive check too, on instances with some parameter > 32.
    let proved: Vec<ErrorKind> = a
        .rules
        .iter()
        .filter(|(_, s)| *s == RuleStatus::Proved)
        .map(|&(k, _)| k)
        .collect();
    counts.proved_rules += proved.len();
    if !proved.is_empty() && !p.params.is_empty() {
        let mut rng =
            Xorshift::new((counts.programs as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        for _ in 0..3 {
            let big = rng.below(p.params.len());
            let tuple: Vec<i64> = (0..p.params.len())
                .map(|i| {
                    if i == big || rng.below(2) == 0 {
                        33 + rng.below(268) as i64
                    } else {
                        1 + rng.below(8) as i64
                    }
                })
                .collect();
            let Ok(inst) = p.bind_values(tuple.clone()) else {
                continue;
            };
            if let Ok((_, violations)) = expand(&inst, BEYOND_TASKS) {
                counts.beyond += 1;
                for v in violations {
                    if proved.contains(&ErrorKind::of(&v)) {
                        counts.proofs_refuted += 1;
                        problems.push(format!(
                            "proved {:?}, but {v:?} at {tuple:?}",
                            ErrorKind::of(&v)
                        ));
                        break;
                    }
                }
            }
        }
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// Task limit of the instances that test proofs past the bound.
const BEYOND_TASKS: usize = 20_000;

/// Byte ranges of the top-level bracketed groups that start with `open`.
fn groups(text: &str, opener: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(pos) = text.get(from..).and_then(|t| t.find(opener)) {
        let start = from + pos + opener.len();
        let close = if opener.ends_with('[') { b']' } else { b')' };
        let openb = if close == b']' { b'[' } else { b'(' };
        let mut depth = 1;
        let mut i = start;
        while i < bytes.len() && depth > 0 {
            if bytes[i] == openb {
                depth += 1;
            } else if bytes[i] == close {
                depth -= 1;
            }
            i += 1;
        }
        if depth == 0 {
            out.push((start, i - 1));
        }
        from = start;
    }
    out
}

/// Splits at top-level commas.
fn top_commas(s: &str) -> Vec<usize> {
    let mut depth = 0i32;
    let mut out = Vec::new();
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => out.push(i),
            _ => {}
        }
    }
    out
}

/// Plants one bug in a program's text: an off-by-one loop bound (or
/// stride), swapped tile indices, a wrong stride in an index, or a missing
/// guard. `None` when the text offers no place for the chosen mutation.
fn mutate(text: &str, rng: &mut Xorshift) -> Option<String> {
    let body = text.find("program")?;
    match rng.below(4) {
        0 => {
            let g: Vec<_> = groups(text, "range(")
                .into_iter()
                .filter(|g| g.0 > body)
                .collect();
            let (_, end) = *g.get(rng.below(g.len()))?;
            let delta = if rng.below(2) == 0 { " + 1" } else { " - 1" };
            Some(format!("{}{delta}{}", &text[..end], &text[end..]))
        }
        1 => {
            let g: Vec<_> = groups(text, "[")
                .into_iter()
                .filter(|&(s, e)| s > body && top_commas(&text[s..e]).len() == 1)
                .filter(|&(s, _)| {
                    !text[..s]
                        .trim_end_matches('[')
                        .ends_with(char::is_whitespace)
                })
                .collect();
            let (s, e) = *g.get(rng.below(g.len()))?;
            let inner = &text[s..e];
            let c = *top_commas(inner).first()?;
            let (a, b) = (inner[..c].trim(), inner[c + 1..].trim());
            if a == b {
                return None;
            }
            Some(format!("{}{b}, {a}{}", &text[..s], &text[e..]))
        }
        2 => {
            let g: Vec<_> = groups(text, "[")
                .into_iter()
                .filter(|&(s, _)| s > body)
                .collect();
            let (s, e) = *g.get(rng.below(g.len()))?;
            let inner = &text[s..e];
            let end = top_commas(inner).first().copied().unwrap_or(inner.len());
            Some(format!(
                "{}2 * ({}){}",
                &text[..s],
                &inner[..end],
                &text[s + end..]
            ))
        }
        _ => {
            let ifs: Vec<usize> = text
                .match_indices("if ")
                .map(|(i, _)| i)
                .filter(|&i| i > body)
                .collect();
            let i = *ifs.get(rng.below(ifs.len()))?;
            let brace = i + text[i..].find('{')?;
            Some(format!("{}if true {}", &text[..i], &text[brace..]))
        }
    }
}

#[test]
fn lint_agrees_with_the_expansion_on_the_examples() {
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    let files = lpk_test_support::examples();
    assert!(files.len() >= 7);
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        let p = compile(&text).expect("examples compile");
        if let Some(e) = compare(&p, &mut counts) {
            failures.push(format!("{}: {e}", f.display()));
        }
    }
    eprintln!("examples: {counts:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(counts.proofs_refuted, 0);
    assert_eq!(counts.violating, 0, "the examples are correct programs");
}

/// Lints a slice of base programs and one mutant of each.
fn run_cases(jobs: &[(usize, Vec<u32>, u64)]) -> (Counts, usize, Vec<String>) {
    let mut counts = Counts::default();
    let mut mutants = 0usize;
    let mut failures: Vec<String> = Vec::new();
    for (case, data, seed) in jobs {
        let mut rng = Xorshift::new(*seed);
        let two = case % 4 == 3;
        let text = generate(data.clone(), two);
        let Some(p) = compile(&text) else {
            failures.push(format!("generated program does not compile:\n{text}"));
            continue;
        };
        if let Some(e) = compare(&p, &mut counts) {
            failures.push(format!("{e}\n{text}"));
        }
        // One planted bug per base program (retrying a few placements).
        for _ in 0..8 {
            let Some(m) = mutate(&text, &mut rng) else {
                continue;
            };
            let Some(mp) = compile(&m) else {
                continue;
            };
            mutants += 1;
            if let Some(e) = compare(&mp, &mut counts) {
                failures.push(format!("{e}\n{m}"));
            }
            break;
        }
        if failures.len() > 5 {
            break;
        }
    }
    (counts, mutants, failures)
}

/// The generated corpus: `LPK_LINT_HONESTY_CASES` programs (default 1000),
/// each with a planted bug, split into [`SHARDS`] tests so that each
/// reports as it finishes (the choice lists are drawn up front, so the
/// programs do not depend on the split).
const SHARDS: usize = 50;

fn corpus() -> Vec<(usize, Vec<u32>, u64)> {
    let cases = lpk_test_support::env_number("LPK_LINT_HONESTY_CASES", 1000);
    // `LPK_LINT_HONESTY_SEED` draws another corpus (hex or decimal).
    let seed = lpk_test_support::env_seed("LPK_LINT_HONESTY_SEED", 0x9e37_79b9_7f4a_7c15);
    let mut rng = Xorshift::new(seed);
    (0..cases)
        .map(|case| (case, rng.choices(), u64::from(rng.next_u32()) | 1))
        .collect()
}

/// Lint agrees with the expansion on shard `k` of the corpus.
fn shard(k: usize) {
    let start = Instant::now();
    let jobs = corpus();
    let size = jobs.len().div_ceil(SHARDS);
    let chunk = jobs.chunks(size.max(1)).nth(k).unwrap_or(&[]);
    let (counts, mutants, failures) = run_cases(chunk);
    eprintln!(
        "lint honesty shard {k}/{SHARDS}: {} programs ({} mutants), {} with violations, {} flagged; \
         false positives {}, false negatives {}, counterexamples not reproduced {}; \
         {} rules proved, tested on {} instances past the bound, refuted {}; in {:.1?}",
        counts.programs,
        mutants,
        counts.violating,
        counts.flagged,
        counts.false_positives,
        counts.false_negatives,
        counts.not_reproduced,
        counts.proved_rules,
        counts.beyond,
        counts.proofs_refuted,
        start.elapsed()
    );
    counts.assert_agreed(&failures);
    if chunk.len() >= 20 {
        // Sanity of the corpus itself (deterministic: fixed seeds).
        assert!(
            counts.beyond > counts.programs / 4,
            "proofs are tested past the bound"
        );
        assert!(counts.programs >= chunk.len() * 2 - chunk.len() / 10);
        assert!(
            counts.violating > counts.programs / 10,
            "the mutator plants real bugs"
        );
    }
}

macro_rules! shards {
    ($($name:ident = $k:literal,)*) => {
        $(
            #[test]
            fn $name() {
                shard($k);
            }
        )*
        #[test]
        fn the_shards_cover_the_corpus() {
            let ks = [$($k),*];
            assert_eq!(ks.to_vec(), (0..SHARDS).collect::<Vec<_>>());
        }
    };
}

shards! {
    generated_and_mutated_00 = 0, generated_and_mutated_01 = 1, generated_and_mutated_02 = 2,
    generated_and_mutated_03 = 3, generated_and_mutated_04 = 4, generated_and_mutated_05 = 5,
    generated_and_mutated_06 = 6, generated_and_mutated_07 = 7, generated_and_mutated_08 = 8,
    generated_and_mutated_09 = 9, generated_and_mutated_10 = 10, generated_and_mutated_11 = 11,
    generated_and_mutated_12 = 12, generated_and_mutated_13 = 13, generated_and_mutated_14 = 14,
    generated_and_mutated_15 = 15, generated_and_mutated_16 = 16, generated_and_mutated_17 = 17,
    generated_and_mutated_18 = 18, generated_and_mutated_19 = 19, generated_and_mutated_20 = 20,
    generated_and_mutated_21 = 21, generated_and_mutated_22 = 22, generated_and_mutated_23 = 23,
    generated_and_mutated_24 = 24, generated_and_mutated_25 = 25, generated_and_mutated_26 = 26,
    generated_and_mutated_27 = 27, generated_and_mutated_28 = 28, generated_and_mutated_29 = 29,
    generated_and_mutated_30 = 30, generated_and_mutated_31 = 31, generated_and_mutated_32 = 32,
    generated_and_mutated_33 = 33, generated_and_mutated_34 = 34, generated_and_mutated_35 = 35,
    generated_and_mutated_36 = 36, generated_and_mutated_37 = 37, generated_and_mutated_38 = 38,
    generated_and_mutated_39 = 39, generated_and_mutated_40 = 40, generated_and_mutated_41 = 41,
    generated_and_mutated_42 = 42, generated_and_mutated_43 = 43, generated_and_mutated_44 = 44,
    generated_and_mutated_45 = 45, generated_and_mutated_46 = 46, generated_and_mutated_47 = 47,
    generated_and_mutated_48 = 48, generated_and_mutated_49 = 49,
}

/// The program with every intermediate `matrix` declared `= 0`.
fn with_zero_matrices(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let body = line.trim_end();
        if body.trim_start().starts_with("matrix ") && body.ends_with("];") {
            out.push_str(&body[..body.len() - 1]);
            out.push_str(" = 0;");
            out.push_str(&line[body.len()..]);
        } else {
            out.push_str(line);
        }
    }
    out
}

/// Zero matrices against the expansion: the first generated programs of
/// the corpus, as generated and with one planted bug each, with every
/// intermediate made a zero matrix. Lint must still report exactly what
/// the expansion shows: a planted unwritten read of a zero matrix is no
/// violation any more, a read before a later write still is, and a rule
/// proved for a zero matrix's reads holds past the bound.
#[test]
fn zero_matrices_agree_with_the_expansion() {
    let start = Instant::now();
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    // Programs whose unwritten reads the zero matrices make valid.
    let mut relieved = 0usize;
    for (case, data, seed) in corpus().into_iter().take(40) {
        let mut rng = Xorshift::new(seed);
        let text = generate(data, case % 4 == 3);
        let mut texts = vec![text.clone()];
        for _ in 0..8 {
            if let Some(m) = mutate(&text, &mut rng) {
                texts.push(m);
                break;
            }
        }
        for plain in texts {
            let zeroed = with_zero_matrices(&plain);
            if zeroed == plain {
                continue;
            }
            let (Some(p), Some(z)) = (compile(&plain), compile(&zeroed)) else {
                continue;
            };
            let unwritten = |p: &Program| oracle_kinds(p).contains(&ErrorKind::ReadUnwritten);
            if unwritten(&p) && !unwritten(&z) {
                relieved += 1;
            }
            if let Some(e) = compare(&z, &mut counts) {
                failures.push(format!("{e}\n{zeroed}"));
            }
        }
    }
    eprintln!(
        "zero matrices: {counts:?}, {relieved} made valid, in {:.1?}",
        start.elapsed()
    );
    counts.assert_agreed(&failures);
    // The corpus is fixed, so these hold or the test tests nothing.
    assert!(counts.programs >= 40, "{counts:?}");
    assert!(counts.violating > 0, "{counts:?}");
    assert!(relieved > 0, "no planted unwritten read of a zero matrix");
}
