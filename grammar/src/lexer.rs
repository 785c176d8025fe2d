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
    /// A `#` line comment (filtered out before parsing).
    #[regex(r"#[^\n]*", allow_greedy = true)]
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
pub type Spanned<'input> = (usize, Tok<'input>, usize);

/// Lexes the whole source: tokens (without comments) and comments.
pub fn lex(src: &str) -> (Vec<Spanned<'_>>, Vec<Comment>) {
    let mut tokens = Vec::new();
    let mut comments = Vec::new();
    let mut lexer = Tok::lexer(src);
    while let Some(result) = lexer.next() {
        let span = lexer.span();
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
