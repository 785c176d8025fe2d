//! The parser's entry point: lexing, the nesting guard, the lalrpop parser
//! with error recovery, and the conversion of lalrpop's errors into
//! [`ParseError`]s that carry spans and data (never formatted strings).

use crate::ast::{BinOp, Expr, ExprKind, FileId, SourceFile, Span, UnOp};
use crate::lexer::{lex, Comment, Tok};
use lalrpop_util::{lalrpop_mod, ErrorRecovery};
use thiserror::Error;

lalrpop_mod!(
    #[allow(
        clippy::all,
        clippy::pedantic,
        clippy::unwrap_used,
        unused_qualifications,
        missing_docs
    )]
    generated,
    "/grammar.rs"
);

/// Deepest nesting of `(`, `[` and `{` accepted. Real programs nest a
/// handful of levels; the limit keeps every later recursive pass far from
/// the stack's end.
pub(crate) const MAX_NESTING: usize = 100;

/// Most operators accepted in one statement, for the same reason: a chain
/// `1 + 1 + ... + 1` builds a tree as deep as it is long.
pub(crate) const MAX_OPERATORS: usize = 1000;

/// Errors the grammar's actions record while parsing goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UserError {
    /// An integer literal that does not fit in an `i64`.
    IntTooLarge(Span),
}

/// A syntax error the grammar recovered from.
pub(crate) type Recovered<'input> = ErrorRecovery<usize, Tok<'input>, UserError>;

/// A syntax error.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ParseError {
    /// A character that starts no token.
    #[error("unknown character `{text}`")]
    UnknownChar {
        /// The character.
        span: Span,
        /// Its text.
        text: String,
    },
    /// A statement not ended by `;` before the next line's token: reported
    /// at the end of the statement, where the `;` belongs, as rustc does.
    #[error("expected `;`, found {found}")]
    MissingSemicolon {
        /// Where the `;` belongs: just after the statement's last token.
        span: Span,
        /// How the next token reads.
        found: String,
        /// The next token.
        found_span: Span,
    },
    /// A token the grammar does not allow here.
    #[error("expected {}, found {found}", expected_list(expected))]
    UnexpectedToken {
        /// The token.
        span: Span,
        /// How the token reads, e.g. "`;`" or "identifier `x`".
        found: String,
        /// What would have been allowed (already readable).
        expected: Vec<String>,
    },
    /// A comparison directly after another comparison.
    #[error("comparison operators cannot be chained")]
    ChainedComparison {
        /// The second comparison operator.
        span: Span,
    },
    /// The file ended inside an item.
    #[error("unexpected end of file, expected {}", expected_list(expected))]
    UnexpectedEof {
        /// The end of the file.
        span: Span,
        /// What would have been allowed.
        expected: Vec<String>,
    },
    /// An integer literal too large for 64 bits.
    #[error("integer literal is too large")]
    IntTooLarge {
        /// The literal.
        span: Span,
    },
    /// Brackets nested deeper than [`MAX_NESTING`].
    #[error("brackets are nested too deeply (more than {limit} levels)")]
    TooDeep {
        /// The bracket that went past the limit.
        span: Span,
        /// The limit.
        limit: usize,
    },
    /// A statement with more than [`MAX_OPERATORS`] operators.
    #[error("statement is too complex (more than {limit} operators)")]
    TooComplex {
        /// The operator that went past the limit.
        span: Span,
        /// The limit.
        limit: usize,
    },
    /// A source file larger than [`MAX_SOURCE_BYTES`].
    #[error("source file is too large")]
    FileTooLarge {
        /// The file's start.
        span: Span,
    },
}

impl ParseError {
    /// The stable diagnostic code.
    pub fn code(&self) -> &'static str {
        match self {
            ParseError::UnknownChar { .. } => "E0001",
            ParseError::UnexpectedToken { .. } | ParseError::MissingSemicolon { .. } => "E0002",
            ParseError::UnexpectedEof { .. } => "E0003",
            ParseError::IntTooLarge { .. } => "E0004",
            ParseError::TooDeep { .. } => "E0005",
            ParseError::TooComplex { .. } => "E0006",
            ParseError::ChainedComparison { .. } => "E0007",
            ParseError::FileTooLarge { .. } => "E0008",
        }
    }

    /// Where the error points.
    pub fn span(&self) -> Span {
        match self {
            ParseError::UnknownChar { span, .. }
            | ParseError::UnexpectedToken { span, .. }
            | ParseError::MissingSemicolon { span, .. }
            | ParseError::ChainedComparison { span }
            | ParseError::UnexpectedEof { span, .. }
            | ParseError::IntTooLarge { span }
            | ParseError::TooDeep { span, .. }
            | ParseError::TooComplex { span, .. }
            | ParseError::FileTooLarge { span } => *span,
        }
    }
}

fn expected_list(expected: &[String]) -> String {
    match expected {
        [] => "something else".to_string(),
        [one] => one.clone(),
        [a, b] => format!("{a} or {b}"),
        [init @ .., last] => format!("one of {}, or {last}", init.join(", ")),
    }
}

/// The result of parsing one file: the tree (with `Error` nodes where the
/// parser recovered), every syntax error, and the comments.
#[derive(Clone, Debug)]
pub struct Parsed {
    /// The syntax tree.
    pub file: SourceFile,
    /// Every syntax error, in source order.
    pub errors: Vec<ParseError>,
    /// The comments, in source order.
    pub comments: Vec<Comment>,
}

/// The largest source file accepted (16 MiB). Compiling takes memory of
/// the order of a hundred times the source (tokens, syntax tree, HIR and
/// spans), so this bounds a compile to a few GiB; no hand-written program
/// comes within a thousandth of it.
pub(crate) const MAX_SOURCE_BYTES: usize = 16 << 20;

/// Parses `src` as file `file`. Never panics; every problem is a
/// [`ParseError`].
pub fn parse(src: &str, file: FileId) -> Parsed {
    if src.len() > MAX_SOURCE_BYTES {
        return Parsed {
            file: SourceFile::default(),
            errors: vec![ParseError::FileTooLarge {
                span: Span::new(file, 0, 0),
            }],
            comments: Vec::new(),
        };
    }
    let (tokens, comments) = lex(src);
    if let Some(error) = guard_nesting(&tokens, file) {
        return Parsed {
            file: SourceFile::default(),
            errors: vec![error],
            comments,
        };
    }
    let token_ends: Vec<usize> = tokens.iter().map(|&(_, _, end)| end).collect();
    let mut recovered = Vec::new();
    let sync_points: Vec<usize> = tokens
        .iter()
        .filter(|(_, t, _)| matches!(t, Tok::Semi | Tok::LBrace | Tok::RBrace))
        .map(|(s, _, _)| *s)
        .collect();
    let result =
        generated::FileParser::new().parse(file, &mut recovered, tokens.into_iter().map(Ok));
    let mut raw: Vec<lalrpop_util::ParseError<usize, Tok<'_>, UserError>> =
        recovered.into_iter().map(|r| r.error).collect();
    let tree = match result {
        Ok(tree) => tree,
        Err(e) => {
            raw.push(e);
            SourceFile::default()
        }
    };
    let mut errors: Vec<ParseError> = raw
        .into_iter()
        .map(|e| convert(e, file, src, &token_ends))
        .collect();
    errors.sort_by_key(|e| e.span().start);
    let errors = one_per_statement(errors, &sync_points);
    Parsed {
        file: tree,
        errors,
        comments,
    }
}

/// Keeps the first syntax error of each statement: after an error, the
/// recovering parser may trip again on the rest of the same broken
/// statement, which only repeats the first complaint. Errors the grammar's
/// actions record (bad literals) are always kept.
fn one_per_statement(errors: Vec<ParseError>, sync_points: &[usize]) -> Vec<ParseError> {
    let mut kept: Vec<ParseError> = Vec::new();
    let mut last_syntax: Option<usize> = None;
    for e in errors {
        let start = e.span().start as usize;
        let is_syntax = !matches!(e, ParseError::IntTooLarge { .. });
        if is_syntax {
            if let Some(prev) = last_syntax {
                // A sync token strictly between the two errors starts a new
                // statement; without one, this is the same statement.
                let lo = sync_points.partition_point(|&p| p < prev);
                let separated = sync_points.get(lo).is_some_and(|&p| p < start);
                if !separated {
                    continue;
                }
            }
            last_syntax = Some(start);
        }
        if !kept.contains(&e) {
            kept.push(e);
        }
    }
    kept
}

fn guard_nesting(tokens: &[(usize, Tok<'_>, usize)], file: FileId) -> Option<ParseError> {
    let mut depth = 0usize;
    let mut operators = 0usize;
    for &(start, ref tok, end) in tokens {
        match tok {
            Tok::LParen | Tok::LBracket | Tok::LBrace => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(ParseError::TooDeep {
                        span: Span::new(file, start, end),
                        limit: MAX_NESTING,
                    });
                }
            }
            Tok::RParen | Tok::RBracket | Tok::RBrace => depth = depth.saturating_sub(1),
            _ => {}
        }
        match tok {
            Tok::Semi | Tok::LBrace | Tok::RBrace => operators = 0,
            t if t.is_arithmetic()
                || t.is_comparison()
                || matches!(t, Tok::And | Tok::Or | Tok::Not | Tok::Comma) =>
            {
                operators += 1;
                if operators > MAX_OPERATORS {
                    return Some(ParseError::TooComplex {
                        span: Span::new(file, start, end),
                        limit: MAX_OPERATORS,
                    });
                }
            }
            _ => {}
        }
    }
    None
}

/// Turns lalrpop's error into ours. `token_ends` holds the end offset of
/// every token in order, to find the token before an unexpected one.
fn convert(
    e: lalrpop_util::ParseError<usize, Tok<'_>, UserError>,
    file: FileId,
    src: &str,
    token_ends: &[usize],
) -> ParseError {
    use lalrpop_util::ParseError as P;
    let len = src.len();
    let text = |l: usize, r: usize| src.get(l..r).unwrap_or("").to_string();
    // An invisible or control character is named by its code point, never
    // echoed raw (a NUL or an escape sequence would reach the terminal).
    let shown = |l: usize, r: usize| {
        let t = text(l, r);
        let invisible = |c: char| {
            c.is_control()
                || c.is_whitespace()
                || matches!(c, '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}')
        };
        match t.chars().next() {
            Some(c) if invisible(c) => format!("U+{:04X}", c as u32),
            _ => t,
        }
    };
    match e {
        P::InvalidToken { location } => ParseError::UnknownChar {
            span: Span::new(file, location, location + 1),
            text: shown(location, location + 1),
        },
        P::UnrecognizedEof { location, expected } => ParseError::UnexpectedEof {
            span: Span::new(file, location.min(len), len),
            expected: readable_expected(&expected),
        },
        P::ExtraToken { token: (l, tok, r) } => ParseError::UnexpectedToken {
            span: Span::new(file, l, r),
            found: tok.to_string(),
            expected: vec!["end of file".to_string()],
        },
        P::UnrecognizedToken {
            token: (l, tok, r),
            expected,
        } => {
            let span = Span::new(file, l, r);
            if tok == Tok::Error {
                return ParseError::UnknownChar {
                    span,
                    text: shown(l, r),
                };
            }
            // A comparison where a complete comparison could only be
            // continued by `and`/`or` is a chained comparison.
            let expected_cmp = expected.iter().any(|e| e == "\"<\"");
            let after_expression = expected.iter().any(|e| e == "\"and\"");
            if tok.is_comparison() && after_expression && !expected_cmp {
                return ParseError::ChainedComparison { span };
            }
            // A `;` could end the statement and the unexpected token stands
            // on a later line: the statement lacks its `;`. Point where it
            // belongs, not at the next line.
            let prev_end = token_ends[..token_ends.partition_point(|&e| e <= l)].last();
            if let Some(&prev_end) = prev_end {
                let newline_between = src
                    .get(prev_end..l)
                    .is_some_and(|gap| gap.contains(['\n', '\r']));
                if expected.iter().any(|e| e == "\";\"") && newline_between {
                    return ParseError::MissingSemicolon {
                        span: Span::new(file, prev_end, prev_end),
                        found: tok.to_string(),
                        found_span: span,
                    };
                }
            }
            ParseError::UnexpectedToken {
                span,
                found: tok.to_string(),
                expected: readable_expected(&expected),
            }
        }
        P::User {
            error: UserError::IntTooLarge(span),
        } => ParseError::IntTooLarge { span },
    }
}

/// Turns lalrpop's terminal names into what a user would call them, and
/// folds the many ways an expression can start into "an expression".
fn readable_expected(expected: &[String]) -> Vec<String> {
    let has = |t: &str| expected.iter().any(|e| e == t);
    let expression = has("IDENT") && has("INT") && has("\"(\"");
    // After a complete operand every binary operator could follow; name
    // them as one.
    let operators = [
        "\"and\"", "\"or\"", "\"==\"", "\"!=\"", "\"<\"", "\"<=\"", "\">\"", "\">=\"", "\"+\"",
        "\"-\"", "\"*\"", "\"/\"", "\"//\"", "\"%\"", "\"**\"",
    ];
    let operator = !expression && has("\"+\"") && has("\"*\"");
    let mut out: Vec<String> = Vec::new();
    if expression {
        out.push("an expression".to_string());
    }
    for e in expected {
        if operator && operators.contains(&e.as_str()) {
            continue;
        }
        let folded = [
            "IDENT",
            "INT",
            "REAL",
            "\"(\"",
            "\"-\"",
            "\"not\"",
            "\"true\"",
            "\"false\"",
        ];
        if expression && folded.contains(&e.as_str()) {
            continue;
        }
        let readable = match e.as_str() {
            "IDENT" => "identifier".to_string(),
            "INT" => "integer".to_string(),
            "REAL" => "real number".to_string(),
            s => format!("`{}`", s.trim_matches('"')),
        };
        if !out.contains(&readable) {
            out.push(readable);
        }
    }
    if operator {
        out.push("an operator".to_string());
    }
    out
}

/// Builds a binary expression node (used by the grammar).
pub(crate) fn bin(file: FileId, l: usize, r: usize, op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr {
        kind: ExprKind::Binary(op, Box::new(a), Box::new(b)),
        span: sp(file, l, r),
    }
}

/// Builds a span (used by the grammar).
pub(crate) fn sp(file: FileId, l: usize, r: usize) -> Span {
    Span::new(file, l, r)
}

/// Parses an integer literal, recording an error when it does not fit in
/// an `i64`. The error yields 0, except for 2^63, which yields `i64::MIN`
/// so that [`negate`] can take back the error for `-9223372036854775808`,
/// the smallest integer.
pub(crate) fn int_literal<'input>(s: &str, span: Span, errors: &mut Vec<Recovered<'input>>) -> i64 {
    match s.parse::<i64>() {
        Ok(v) => v,
        Err(_) => {
            let two_to_63 = s.trim_start_matches('0') == "9223372036854775808";
            errors.push(ErrorRecovery {
                error: lalrpop_util::ParseError::User {
                    error: UserError::IntTooLarge(span),
                },
                dropped_tokens: Vec::new(),
            });
            if two_to_63 {
                i64::MIN
            } else {
                0
            }
        }
    }
}

/// `-e` over `span`. The negation of the literal 2^63 (which alone does not
/// fit) is the literal `i64::MIN`, and its "too large" error is taken back.
pub(crate) fn negate<'input>(span: Span, e: Expr, errors: &mut Vec<Recovered<'input>>) -> Expr {
    if let ExprKind::Int(i64::MIN) = e.kind {
        let literal_error = matches!(
            errors.last(),
            Some(ErrorRecovery { error: lalrpop_util::ParseError::User { error: UserError::IntTooLarge(s) }, .. })
                if *s == e.span
        );
        if literal_error {
            errors.pop();
            return Expr {
                kind: ExprKind::Int(i64::MIN),
                span,
            };
        }
    }
    Expr {
        kind: ExprKind::Unary(UnOp::Neg, Box::new(e)),
        span,
    }
}

/// Parses a real literal (the lexer guarantees the form).
pub(crate) fn real_literal(s: &str) -> f64 {
    s.parse::<f64>().unwrap_or(f64::INFINITY)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "kernel k(a) -> (b);\nprogram p(N: int) {\n  input A[N];\n  output B[N];\n";

    fn errors(body: &str) -> Vec<ParseError> {
        parse(&format!("{HEAD}{body}}}\n"), FileId(0)).errors
    }

    #[test]
    fn a_missing_semicolon_is_reported_where_it_belongs_and_only_once() {
        let src = format!("{HEAD}  B[0] = k(A[0])\n  B[1] = k(A[1]);\n}}\n");
        let errs = parse(&src, FileId(0)).errors;
        let end_of_statement = src.find("k(A[0])").map(|i| i + "k(A[0])".len());
        let next_line = src.find("  B[1]").map(|i| i + 2);
        match errs.as_slice() {
            [ParseError::MissingSemicolon {
                span,
                found,
                found_span,
            }] => {
                assert_eq!(Some(span.start as usize), end_of_statement);
                assert_eq!(span.start, span.end);
                assert_eq!(found, "identifier `B`");
                assert_eq!(Some(found_span.start as usize), next_line);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(errs[0].to_string(), "expected `;`, found identifier `B`");
    }

    #[test]
    fn an_unexpected_token_on_the_same_line_is_reported_at_the_token() {
        let errs = errors("  B[0] = k(A[0]) B[1] = k(A[1]);\n");
        assert!(
            matches!(errs.as_slice(), [ParseError::UnexpectedToken { .. }]),
            "{errs:?}"
        );
    }

    #[test]
    fn a_source_over_the_limit_is_one_error_at_its_start() {
        let mut big = String::from(HEAD);
        big.push_str(&" ".repeat(MAX_SOURCE_BYTES - HEAD.len() - 2));
        big.push_str("}\n");
        assert_eq!(big.len(), MAX_SOURCE_BYTES);
        assert_eq!(parse(&big, FileId(0)).errors, vec![]);
        big.push(' ');
        let errs = parse(&big, FileId(0)).errors;
        assert!(
            matches!(errs.as_slice(), [ParseError::FileTooLarge { span }] if span.start == 0),
            "{errs:?}"
        );
    }

    #[test]
    fn invisible_and_control_characters_are_named_by_code_point() {
        for (ch, name) in [
            ('\0', "U+0000"),
            ('\u{1b}', "U+001B"),
            ('\u{200B}', "U+200B"),
        ] {
            let errs = errors(&format!("  B[0] = k(A[0]);{ch}\n"));
            assert_eq!(
                errs.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
                vec![format!("unknown character `{name}`")]
            );
        }
        let errs = errors("  B[0] = k(A[0]);$\n");
        assert_eq!(errs[0].to_string(), "unknown character `$`");
    }

    #[test]
    fn the_smallest_integer_is_a_literal_but_two_to_the_63_alone_is_too_large() {
        let parsed = parse(
            &format!("{HEAD}  B[0] = k(A[-9223372036854775808]);\n}}\n"),
            FileId(0),
        );
        assert_eq!(parsed.errors, vec![]);
        let errs = errors("  B[0] = k(A[9223372036854775808]);\n");
        assert!(
            matches!(errs.as_slice(), [ParseError::IntTooLarge { .. }]),
            "{errs:?}"
        );
        let errs = errors("  B[0] = k(A[-9223372036854775809]);\n");
        assert!(
            matches!(errs.as_slice(), [ParseError::IntTooLarge { .. }]),
            "{errs:?}"
        );
    }
}
