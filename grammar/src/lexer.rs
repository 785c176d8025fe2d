//! The lexer: a logos token enum wrapped to yield lalrpop's `(start, token,
//! end)` triples. It never fails: a character that starts no token becomes
//! [`Tok::Error`], which the grammar rejects with a recoverable syntax error,
//! so one bad character does not hide the errors after it. Comments are not
//! tokens; they are collected on the side for the formatter.

use logos::Logos;
use std::fmt;

/// One token of `.lpk` source. Literal and name tokens borrow their text.
#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq)]
#[logos(skip r"[ \t\r\n\f]+")]
pub enum Tok<'input> {
    /// A `#` line comment (filtered out before parsing). It ends at a line
    /// feed or a carriage return, so files with CR-only line endings work.
    #[regex(r"#[^\r\n]*", allow_greedy = true)]
    Comment(&'input str),
    /// `kernel`
    #[token("kernel")]
    Kernel,
    /// `program`
    #[token("program")]
    Program,
    /// `input`
    #[token("input")]
    Input,
    /// `output`
    #[token("output")]
    Output,
    /// `matrix`
    #[token("matrix")]
    Matrix,
    /// `for`
    #[token("for")]
    For,
    /// `in`
    #[token("in")]
    In,
    /// `range`
    #[token("range")]
    Range,
    /// `if`
    #[token("if")]
    If,
    /// `else`
    #[token("else")]
    Else,
    /// `let`
    #[token("let")]
    Let,
    /// `require`
    #[token("require")]
    Require,
    /// `and`
    #[token("and")]
    And,
    /// `or`
    #[token("or")]
    Or,
    /// `not`
    #[token("not")]
    Not,
    /// `true`
    #[token("true")]
    True,
    /// `false`
    #[token("false")]
    False,
    /// `int`
    #[token("int")]
    IntKw,
    /// `real`
    #[token("real")]
    RealKw,
    /// An identifier.
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*")]
    Ident(&'input str),
    /// An integer literal (its value is checked by the grammar).
    #[regex(r"[0-9]+")]
    Int(&'input str),
    /// A real literal such as `1.5`, `2.0e-3` or `1e6`.
    #[regex(r"[0-9]+\.[0-9]+([eE][+-]?[0-9]+)?")]
    #[regex(r"[0-9]+[eE][+-]?[0-9]+")]
    Real(&'input str),
    /// `(`
    #[token("(")]
    LParen,
    /// `)`
    #[token(")")]
    RParen,
    /// `[`
    #[token("[")]
    LBracket,
    /// `]`
    #[token("]")]
    RBracket,
    /// `{`
    #[token("{")]
    LBrace,
    /// `}`
    #[token("}")]
    RBrace,
    /// `,`
    #[token(",")]
    Comma,
    /// `;`
    #[token(";")]
    Semi,
    /// `:`
    #[token(":")]
    Colon,
    /// `->`
    #[token("->")]
    Arrow,
    /// `=`
    #[token("=")]
    Assign,
    /// `==`
    #[token("==")]
    EqEq,
    /// `!=`
    #[token("!=")]
    NotEq,
    /// `<`
    #[token("<")]
    Lt,
    /// `<=`
    #[token("<=")]
    Le,
    /// `>`
    #[token(">")]
    Gt,
    /// `>=`
    #[token(">=")]
    Ge,
    /// `+`
    #[token("+")]
    Plus,
    /// `-`
    #[token("-")]
    Minus,
    /// `*`
    #[token("*")]
    Star,
    /// `/`
    #[token("/")]
    Slash,
    /// `//`
    #[token("//")]
    SlashSlash,
    /// `%`
    #[token("%")]
    Percent,
    /// `**`
    #[token("**")]
    StarStar,
    /// Any character that starts no token.
    Error,
}

impl fmt::Display for Tok<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Tok::Comment(_) => "comment",
            Tok::Ident(s) => return write!(f, "identifier `{s}`"),
            Tok::Int(s) => return write!(f, "integer `{s}`"),
            Tok::Real(s) => return write!(f, "real `{s}`"),
            Tok::Error => "unknown character",
            other => return write!(f, "`{}`", other.text()),
        };
        f.write_str(s)
    }
}

impl Tok<'_> {
    /// The fixed spelling of a keyword or punctuation token.
    pub fn text(&self) -> &str {
        match self {
            Tok::Comment(s) | Tok::Ident(s) | Tok::Int(s) | Tok::Real(s) => s,
            Tok::Kernel => "kernel",
            Tok::Program => "program",
            Tok::Input => "input",
            Tok::Output => "output",
            Tok::Matrix => "matrix",
            Tok::For => "for",
            Tok::In => "in",
            Tok::Range => "range",
            Tok::If => "if",
            Tok::Else => "else",
            Tok::Let => "let",
            Tok::Require => "require",
            Tok::And => "and",
            Tok::Or => "or",
            Tok::Not => "not",
            Tok::True => "true",
            Tok::False => "false",
            Tok::IntKw => "int",
            Tok::RealKw => "real",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Comma => ",",
            Tok::Semi => ";",
            Tok::Colon => ":",
            Tok::Arrow => "->",
            Tok::Assign => "=",
            Tok::EqEq => "==",
            Tok::NotEq => "!=",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::SlashSlash => "//",
            Tok::Percent => "%",
            Tok::StarStar => "**",
            Tok::Error => "?",
        }
    }

    /// Whether the token is a comparison operator (used for the
    /// "comparisons do not chain" hint).
    pub fn is_comparison(&self) -> bool {
        matches!(
            self,
            Tok::EqEq | Tok::NotEq | Tok::Lt | Tok::Le | Tok::Gt | Tok::Ge
        )
    }

    /// Whether the token is an arithmetic operator (`+`, `-`, `*`, `/`,
    /// `//`, `%`, `**`).
    pub fn is_arithmetic(&self) -> bool {
        matches!(
            self,
            Tok::Plus
                | Tok::Minus
                | Tok::Star
                | Tok::Slash
                | Tok::SlashSlash
                | Tok::Percent
                | Tok::StarStar
        )
    }
}

/// A source comment, kept for the formatter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    /// Byte offset of the `#`.
    pub start: usize,
    /// Byte offset one past the comment's last character.
    pub end: usize,
    /// The comment's text, including the `#`.
    pub text: String,
}

/// A lexed token with its byte range.
pub(crate) type Spanned<'input> = (usize, Tok<'input>, usize);

/// The UTF-8 byte order mark some editors put at the start of a file.
const BOM: &str = "\u{FEFF}";

/// Lexes the whole source: tokens (without comments) and comments. A byte
/// order mark at the very start is skipped, as compilers do; spans stay
/// byte offsets into `src`.
pub fn lex(src: &str) -> (Vec<Spanned<'_>>, Vec<Comment>) {
    let mut tokens = Vec::new();
    let mut comments = Vec::new();
    let skip = if src.starts_with(BOM) { BOM.len() } else { 0 };
    let mut lexer = Tok::lexer(&src[skip..]);
    while let Some(result) = lexer.next() {
        let span = lexer.span();
        let span = span.start + skip..span.end + skip;
        match result {
            Ok(Tok::Comment(text)) => comments.push(Comment {
                start: span.start,
                end: span.end,
                text: text.trim_end().to_string(),
            }),
            Ok(tok) => tokens.push((span.start, tok, span.end)),
            Err(()) => tokens.push((span.start, Tok::Error, span.end)),
        }
    }
    (tokens, comments)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok<'_>> {
        lex(src).0.into_iter().map(|(_, t, _)| t).collect()
    }

    #[test]
    fn a_byte_order_mark_at_the_start_is_skipped_and_spans_stay_in_the_file() {
        let (tokens, _) = lex("\u{FEFF}kernel k");
        assert_eq!(tokens, vec![(3, Tok::Kernel, 9), (10, Tok::Ident("k"), 11)]);
        // Anywhere else it is an unknown character.
        assert_eq!(kinds("k \u{FEFF}"), vec![Tok::Ident("k"), Tok::Error]);
    }

    #[test]
    fn comments_end_at_a_carriage_return_too() {
        let (tokens, comments) = lex("# one\rkernel\r# two\r\nk");
        assert_eq!(
            tokens.iter().map(|t| t.1).collect::<Vec<_>>(),
            vec![Tok::Kernel, Tok::Ident("k")]
        );
        assert_eq!(
            comments.iter().map(|c| c.text.as_str()).collect::<Vec<_>>(),
            vec!["# one", "# two"]
        );
    }

    #[test]
    fn operators_take_the_longest_match() {
        assert_eq!(
            kinds("a // b ** c -> <= == = !="),
            vec![
                Tok::Ident("a"),
                Tok::SlashSlash,
                Tok::Ident("b"),
                Tok::StarStar,
                Tok::Ident("c"),
                Tok::Arrow,
                Tok::Le,
                Tok::EqEq,
                Tok::Assign,
                Tok::NotEq
            ]
        );
    }

    #[test]
    fn keywords_are_not_identifiers_but_builtins_are() {
        assert_eq!(
            kinds("range ranges log"),
            vec![Tok::Range, Tok::Ident("ranges"), Tok::Ident("log")]
        );
    }

    #[test]
    fn literals_and_comments() {
        let (toks, comments) = lex("1 1.5 2.0e-3 1e6 # hi\nx");
        let kinds: Vec<_> = toks.into_iter().map(|(_, t, _)| t).collect();
        assert_eq!(
            kinds,
            vec![
                Tok::Int("1"),
                Tok::Real("1.5"),
                Tok::Real("2.0e-3"),
                Tok::Real("1e6"),
                Tok::Ident("x")
            ]
        );
        assert_eq!(comments.len(), 1);
        assert_eq!(comments[0].text, "# hi");
    }

    #[test]
    fn unknown_characters_become_error_tokens() {
        assert_eq!(
            kinds("a $ b"),
            vec![Tok::Ident("a"), Tok::Error, Tok::Ident("b")]
        );
    }
}
