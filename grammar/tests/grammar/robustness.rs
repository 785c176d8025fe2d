//! Property tests of the front end on hostile input: random bytes, random
//! token streams, random edits of real programs, and random valid programs
//! with comments in random places. Through one `check` helper: `parse`
//! returns (it neither panics nor hangs), every error's span lies inside the
//! source, and whenever the parse is clean the formatter succeeds, its
//! output parses to the same tree up to spans with the same comments, and
//! formatting again changes nothing.

use crate::erase::erase_file;
use crate::TSQR;
use lpk_grammar::ast::FileId;
use lpk_grammar::fmt::format_source;
use lpk_grammar::parse;
use proptest::prelude::*;
use proptest::sample::Index;
use std::sync::OnceLock;

/// Whether `src` parsed cleanly.
fn check(src: &str) -> Result<bool, TestCaseError> {
    let parsed = parse(src, FileId(0));
    for e in &parsed.errors {
        let span = e.span();
        prop_assert_eq!(span.file, FileId(0));
        prop_assert!(
            span.start <= span.end && src.get(span.range()).is_some(),
            "{} at {:?} is not inside the {}-byte source (or splits a character)",
            e.code(),
            span,
            src.len()
        );
    }
    if !parsed.errors.is_empty() {
        return Ok(false);
    }
    let once = format_source(src);
    prop_assert!(once.is_ok(), "the formatter rejected a clean parse");
    let once = once.unwrap_or_default();
    let again = parse(&once, FileId(0));
    prop_assert!(
        again.errors.is_empty(),
        "the output does not parse: {:?}\n{}",
        again.errors,
        once
    );
    prop_assert!(
        erase_file(&again.file) == erase_file(&parsed.file),
        "the output parses to another tree:\n{}",
        once
    );
    let texts = |p: &lpk_grammar::Parsed| -> Vec<String> {
        p.comments.iter().map(|c| c.text.clone()).collect()
    };
    prop_assert_eq!(texts(&again), texts(&parsed), "comments changed:\n{}", once);
    let twice = format_source(&once).unwrap_or_default();
    prop_assert_eq!(twice, once, "formatting is not idempotent");
    Ok(true)
}

// ---- inputs ----

/// Every token the language has, a few spellings of each kind of literal
/// (including ones out of range) and bad characters, separated by spaces;
/// [`vocabulary`] adds comments and line breaks.
const WORDS: &str = "kernel program input output matrix for in range if else let require \
    and or not true false int real ( ) [ ] { } , ; : -> = == != < <= > >= + - * / // % ** \
    x N A _t0 log2 ceil min 0 1 42 007 99999999999999999999 1.5 2.0e-3 1e6 1e999 $ é";

fn vocabulary() -> &'static [&'static str] {
    static VOCABULARY: OnceLock<Vec<&'static str>> = OnceLock::new();
    VOCABULARY.get_or_init(|| {
        let mut v: Vec<&str> = WORDS.split_whitespace().collect();
        v.extend(["# note\n", "#\n", "\n"]);
        v
    })
}

/// Separators between generated tokens; the empty one glues tokens into
/// other tokens (`=` `=` becomes `==`).
const SEPARATORS: &[&str] = &[" ", " ", " ", "\n", "", "\t", "\r\n"];

/// The example programs, if the directory exists yet.
fn examples() -> Vec<String> {
    lpk_test_support::lpk_files_under("examples")
        .iter()
        .map(|p| lpk_test_support::read(p))
        .collect()
}

/// The programs to mutate (the contract's example and every example), read
/// once.
fn mutation_bases() -> &'static [String] {
    static BASES: OnceLock<Vec<String>> = OnceLock::new();
    BASES.get_or_init(|| {
        let mut bases = vec![TSQR.to_string()];
        bases.extend(examples());
        bases
    })
}

/// The characters an edit may insert: those of the programs to mutate, and
/// a few that start no token.
fn edit_chars() -> &'static [char] {
    static CHARS: OnceLock<Vec<char>> = OnceLock::new();
    CHARS.get_or_init(|| {
        let mut chars: Vec<char> = mutation_bases().iter().flat_map(|b| b.chars()).collect();
        chars.extend(['$', '@', '!', '.', 'é', '\t', '#', '\n']);
        chars.sort_unstable();
        chars.dedup();
        chars
    })
}

/// One edit: 0 deletes, 1 inserts `ch` before, 2 replaces the character
/// at `at` (taken modulo the length).
fn apply_edit(src: &str, op: u8, at: usize, ch: char) -> String {
    let mut chars: Vec<char> = src.chars().collect();
    if chars.is_empty() {
        return ch.to_string();
    }
    let i = at % chars.len();
    match op {
        0 => {
            chars.remove(i);
        }
        1 => chars.insert(i, ch),
        _ => chars[i] = ch,
    }
    chars.into_iter().collect()
}

/// Random valid programs, driven by a list of choices so proptest can
/// shrink them: an exhausted list picks option 0, which always ends the
/// recursion.
struct Gen {
    choices: Vec<u8>,
    next: usize,
    tokens: Vec<String>,
}

/// Names for everything; the long one makes kernel calls long enough to be
/// broken and wrapped.
const NAMES: &[&str] = &[
    "i",
    "j",
    "N",
    "A",
    "log",
    "x_1",
    "a_long_name_for_long_lines",
];

impl Gen {
    fn pick(&mut self, n: usize) -> usize {
        let c = self.choices.get(self.next).copied().unwrap_or(0);
        self.next += 1;
        usize::from(c) % n
    }

    /// One of `n` choices, or of the first `few` (those that do not
    /// recurse) once `depth` reaches `limit`.
    fn pick_below(&mut self, depth: usize, limit: usize, few: usize, n: usize) -> usize {
        self.pick(if depth >= limit { few } else { n })
    }

    fn push(&mut self, t: &str) {
        self.tokens.push(t.to_string());
    }

    fn one_of(&mut self, options: &[&str]) {
        let t = options[self.pick(options.len())];
        self.push(t);
    }

    fn name(&mut self) {
        self.one_of(NAMES);
    }

    /// `items` comma-separated, between `lo` and `lo + spread - 1` of them,
    /// sometimes with a trailing comma.
    fn list(&mut self, lo: usize, spread: usize, mut item: impl FnMut(&mut Gen)) {
        let n = lo + self.pick(spread);
        for i in 0..n {
            if i > 0 {
                self.push(",");
            }
            item(self);
        }
        if n > 0 && self.pick(6) == 5 {
            self.push(",");
        }
    }

    fn file(&mut self) {
        let items = self.pick(5);
        for _ in 0..items {
            if self.pick(2) == 0 {
                self.kernel();
            } else {
                self.program();
            }
        }
    }

    /// `keyword NAME(` up to `max` parameters `)`.
    fn header(&mut self, keyword: &str, max: usize, param: impl FnMut(&mut Gen)) {
        self.push(keyword);
        self.name();
        self.push("(");
        self.list(0, max, param);
        self.push(")");
    }

    fn kernel(&mut self) {
        self.header("kernel", 4, |g| {
            g.name();
            match g.pick(3) {
                0 => {}
                1 => {
                    g.push(":");
                    g.push("int");
                }
                _ => {
                    g.push(":");
                    g.push("real");
                }
            }
        });
        self.push("->");
        self.push("(");
        self.list(0, 3, Gen::name);
        self.push(")");
        self.push(";");
    }

    fn program(&mut self) {
        self.header("program", 3, |g| {
            g.name();
            g.push(":");
            g.push("int");
            if g.pick(2) == 1 {
                g.push("=");
                if g.pick(2) == 1 {
                    g.push("-");
                }
                g.push("3");
            }
        });
        self.block(0);
    }

    fn block(&mut self, depth: usize) {
        self.push("{");
        let n = self.pick(4);
        for _ in 0..n {
            self.stmt(depth);
        }
        self.push("}");
    }

    fn stmt(&mut self, depth: usize) {
        match self.pick_below(depth, 3, 4, 6) {
            0 => {
                self.push("let");
                self.name();
                self.push("=");
                self.expr(depth);
                self.push(";");
            }
            1 => {
                self.push("require");
                self.expr(depth);
                self.push(";");
            }
            2 => {
                self.one_of(&["input", "output", "matrix"]);
                self.name();
                self.push("[");
                self.list(1, 3, |g| g.expr(depth + 1));
                self.push("]");
                self.push(";");
            }
            3 => {
                self.list(1, 3, |g| {
                    g.name();
                    g.push("[");
                    g.list(1, 3, |g| g.expr(depth + 1));
                    g.push("]");
                });
                self.push("=");
                self.name();
                self.push("(");
                self.list(0, 6, |g| g.expr(depth + 1));
                self.push(")");
                self.push(";");
            }
            4 => {
                self.push("for");
                self.name();
                self.push("in");
                self.push("range");
                self.push("(");
                self.list(1, 3, |g| g.expr(depth + 1));
                self.push(")");
                self.block(depth + 1);
            }
            _ => {
                self.push("if");
                self.expr(depth);
                self.block(depth + 1);
                let more = self.pick(3);
                for _ in 0..more {
                    self.push("else");
                    self.push("if");
                    self.expr(depth);
                    self.block(depth + 1);
                }
                if self.pick(2) == 1 {
                    self.push("else");
                    self.block(depth + 1);
                }
            }
        }
    }

    /// `or_expr`, following the grammar's levels so every output parses.
    fn expr(&mut self, depth: usize) {
        self.chain(depth, &["or"], Gen::and_expr);
    }

    fn chain(&mut self, depth: usize, ops: &[&str], mut operand: impl FnMut(&mut Gen, usize)) {
        operand(self, depth);
        while self.deeper(depth, 4) {
            self.one_of(ops);
            operand(self, depth + 1);
        }
    }

    /// Whether to nest one level more: one time in `n` while shallow.
    fn deeper(&mut self, depth: usize, n: usize) -> bool {
        depth < 6 && self.pick(n) == n - 1
    }

    /// `prefix` before a deeper `this`, or else `operand`.
    fn prefixed(
        &mut self,
        depth: usize,
        prefix: &str,
        this: fn(&mut Gen, usize),
        operand: fn(&mut Gen, usize),
    ) {
        if self.deeper(depth, 5) {
            self.push(prefix);
            this(self, depth + 1);
        } else {
            operand(self, depth);
        }
    }

    fn and_expr(&mut self, depth: usize) {
        self.chain(depth, &["and"], Gen::not_expr);
    }

    fn not_expr(&mut self, depth: usize) {
        self.prefixed(depth, "not", Gen::not_expr, Gen::comparison);
    }

    fn comparison(&mut self, depth: usize) {
        self.sum(depth);
        if self.deeper(depth, 3) {
            self.one_of(&["==", "!=", "<", "<=", ">", ">="]);
            self.sum(depth + 1);
        }
    }

    fn sum(&mut self, depth: usize) {
        self.chain(depth, &["+", "-"], Gen::product);
    }

    fn product(&mut self, depth: usize) {
        self.chain(depth, &["*", "/", "//", "%"], Gen::unary);
    }

    fn unary(&mut self, depth: usize) {
        self.prefixed(depth, "-", Gen::unary, Gen::power);
    }

    fn power(&mut self, depth: usize) {
        self.atom(depth);
        if self.deeper(depth, 4) {
            self.push("**");
            self.unary(depth + 1);
        }
    }

    fn atom(&mut self, depth: usize) {
        // Few choices recurse, so expressions stay small.
        match self.pick_below(depth, 6, 2, 16) {
            0 | 9..=11 => self.one_of(&["0", "1", "42"]),
            1 | 12.. => self.name(),
            2 => self.one_of(&["1.5", "2.0e-3", "1e6", "1e999"]),
            3 => self.one_of(&["true", "false"]),
            4 | 5 => {
                self.push("(");
                self.expr(depth + 1);
                self.push(")");
            }
            6 => {
                self.name();
                self.push("[");
                self.list(1, 3, |g| g.expr(depth + 1));
                self.push("]");
            }
            _ => {
                self.name();
                self.push("(");
                self.list(0, 3, |g| g.expr(depth + 1));
                self.push(")");
            }
        }
    }
}

/// Layout between generated tokens: mostly a space, sometimes line
/// breaks, blank lines and comments of both kinds.
fn layout(choice: u8) -> &'static str {
    match choice % 24 {
        0 => "\n",
        1 => "\n    ",
        2 => "\n\n\n",
        6 => "\r\n\t",
        3 => "  # trailing\n",
        4 => "\n# own line\n",
        5 => "\n\n# after a blank line\n\n",
        _ => " ",
    }
}

/// A valid program from `choices`, laid out by `layout`.
fn generated_program(choices: Vec<u8>, layout_choices: &[u8]) -> String {
    let mut g = Gen {
        choices,
        next: 0,
        tokens: Vec::new(),
    };
    g.file();
    let mut src = String::new();
    for (i, t) in g.tokens.iter().enumerate() {
        src.push_str(t);
        src.push_str(layout(layout_choices.get(i).copied().unwrap_or(u8::MAX)));
    }
    src
}

// ---- properties ----

/// `cases` cases, without regression files (a failure prints its minimal
/// input, which belongs in a named test).
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases)
    }
}

// About 7,500 cases in all, a few seconds in a debug build.
proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        check(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn random_token_streams(
        parts in proptest::collection::vec(
            (any::<Index>(), 0..SEPARATORS.len()),
            0..80,
        )
    ) {
        let mut src = String::new();
        for (t, s) in parts {
            let word = t.get(vocabulary());
            src.push_str(word);
            src.push_str(SEPARATORS[s]);
        }
        check(&src)?;
    }

    #[test]
    fn random_edits_of_real_programs(
        base in any::<Index>(),
        edits in proptest::collection::vec((0u8..3, any::<Index>(), any::<Index>()), 1..4),
    ) {
        let mut src = base.get(mutation_bases()).clone();
        for (op, at, ch) in edits {
            let at = at.index(src.chars().count().max(1));
            src = apply_edit(&src, op, at, *ch.get(edit_chars()));
        }
        check(&src)?;
    }
}

proptest! {
    #![proptest_config(config(1500))]

    #[test]
    fn random_valid_programs_with_comments_anywhere(
        choices in proptest::collection::vec(any::<u8>(), 0..400),
        layout in proptest::collection::vec(any::<u8>(), 0..400),
    ) {
        let src = generated_program(choices, &layout);
        prop_assert!(check(&src)?, "a generated program did not parse:\n{}", src);
    }
}

#[test]
fn the_mutation_bases_are_clean_and_an_edit_breaks_them() {
    // The unedited bases are clean, so edits start from valid programs.
    for base in mutation_bases() {
        assert_eq!(parse(base, FileId(0)).errors, Vec::new());
    }
    // Deleting the `;` after `require N >= 1` is a missing `;`, reported
    // where it belongs, at the end of the `require`.
    let at = TSQR.find(">= 1;").unwrap() + 4;
    let edited = apply_edit(TSQR, 0, at, 'x');
    assert!(edited.contains("require N >= 1\n    input"));
    let errors = parse(&edited, FileId(0)).errors;
    let codes: Vec<_> = errors.iter().map(|e| e.code()).collect();
    assert_eq!(codes, vec!["E0002"]);
    assert_eq!(errors[0].to_string(), "expected `;`, found `input`");
    assert_eq!(errors[0].span().start as usize, at);
    // Replacing it with `$` is an unknown character.
    let edited = apply_edit(TSQR, 2, at, '$');
    let codes: Vec<_> = parse(&edited, FileId(0))
        .errors
        .iter()
        .map(|e| e.code())
        .collect();
    assert_eq!(codes, vec!["E0001"]);
}
