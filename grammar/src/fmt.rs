//! The canonical pretty-printer for `.lpk` source. It prints a parsed file
//! in one fixed style (4-space indentation, one statement per line, spaced
//! binary operators, a blank line around programs, long kernel calls broken
//! after `=`) and keeps every comment, in order, next to the code it was
//! next to.
//!
//! Blank lines: a run of blank lines between two statements, two comment
//! lines, or a comment and what follows it, becomes one blank line; blank
//! lines after `{` and before `}` are dropped. A program is always set off
//! from the items around it by one blank line; between two kernel
//! declarations the source's choice (none or one) is kept, so a group of
//! declarations stays together.
//!
//! It assumes the tree came from `src` without syntax errors. It never adds
//! or drops parentheses ([`ExprKind::Paren`] is printed as written), so the
//! output parses back to the same tree up to spans. Comments are placed by
//! walking the source tokens alongside the tree: every token the printer
//! writes is matched with the next source token, and the comments that came
//! before that token in the source are written first, either at the end of
//! the current line (when they were on the same source line as the previous
//! token) or on lines of their own.

use crate::ast::{
    BinOp, Block, Call, Expr, ExprKind, FileId, Ident, Item, KernelDecl, ProgramDecl, Role,
    ScalarType, SourceFile, Stmt, StmtKind, TileRef, UnOp,
};
use crate::lexer::{lex, Comment, Spanned, Tok};
use crate::parse::{parse, ParseError};
use std::mem::discriminant;

/// Columns per indentation level.
const INDENT: usize = 4;

/// A kernel-call statement longer than this many columns (indentation
/// included) is broken after `=`, with the call on the next line indented
/// one more level; if that line is still too long, its arguments are filled
/// into lines aligned after the call's `(`. Other statements stay on one
/// line.
const MAX_WIDTH: usize = 100;

/// Parses `src` (as file 0) and formats it, or returns its syntax errors.
pub fn format_source(src: &str) -> Result<String, Vec<ParseError>> {
    let parsed = parse(src, FileId(0));
    if !parsed.errors.is_empty() {
        return Err(parsed.errors);
    }
    Ok(format_file(&parsed.file, &parsed.comments, src))
}

/// Formats a file parsed from `src` without syntax errors, keeping
/// `comments` (the parser's, in source order). The result ends with a
/// newline unless it is empty.
pub(crate) fn format_file(file: &SourceFile, comments: &[Comment], src: &str) -> String {
    let (tokens, _) = lex(src);
    let mut p = Printer::new(src, tokens, comments);
    p.file(file);
    p.out
}

/// How a kernel call statement is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallLayout {
    /// On one line.
    Flat,
    /// The call on the line after `=`, one level deeper.
    BrokenAfterAssign,
    /// As `BrokenAfterAssign`, with the arguments filled into lines aligned
    /// after the call's `(`.
    Wrapped,
}

/// Output state plus cursors into the source's tokens and comments.
struct Printer<'a> {
    src: &'a str,
    /// The source tokens; the printer consumes one per token it writes.
    tokens: Vec<Spanned<'a>>,
    next_token: usize,
    comments: &'a [Comment],
    next_comment: usize,
    out: String,
    /// Nothing (not even indentation) is written on the current line yet.
    line_empty: bool,
    /// Write a space before the next token if the line goes on.
    pending_space: bool,
    /// End the line before the next token (after its comments are placed,
    /// so a comment after `=` stays on the `=` line).
    pending_break: bool,
    /// Indentation of the current block's statements.
    indent: usize,
    /// Indentation of the next line started in the middle of a construct.
    line_indent: usize,
    /// The next token written starts a statement or item: after it, lines
    /// inside the statement are continuation lines.
    starts_stmt: bool,
    /// Source offset just past the last token or comment written.
    last_end: usize,
}

impl<'a> Printer<'a> {
    fn new(src: &'a str, tokens: Vec<Spanned<'a>>, comments: &'a [Comment]) -> Printer<'a> {
        Printer {
            src,
            tokens,
            next_token: 0,
            comments,
            next_comment: 0,
            out: String::new(),
            line_empty: true,
            pending_space: false,
            pending_break: false,
            indent: 0,
            line_indent: 0,
            starts_stmt: false,
            last_end: 0,
        }
    }

    /// The width of a construct printed on one line without comments.
    fn measure(&self, print: impl FnOnce(&mut Printer<'a>)) -> usize {
        let mut p = Printer::new(self.src, Vec::new(), &[]);
        print(&mut p);
        p.out.chars().count()
    }

    // ---- source cursors ----

    /// Where the next source token starts (the end of the file if none is
    /// left).
    fn peek_start(&self) -> usize {
        self.tokens
            .get(self.next_token)
            .map_or(self.src.len(), |&(start, _, _)| start)
    }

    /// Consumes the source token matching `kind` (skipping a trailing comma
    /// the printer drops) and returns its byte range. Returns `None`, and
    /// consumes nothing, if the source does not match the tree.
    fn take_token(&mut self, kind: &Tok<'_>) -> Option<(usize, usize)> {
        let same = |i: usize| {
            self.tokens
                .get(i)
                .is_some_and(|(_, t, _)| discriminant(t) == discriminant(kind))
        };
        let mut i = self.next_token;
        if !matches!(kind, Tok::Comma)
            && matches!(self.tokens.get(i), Some((_, Tok::Comma, _)))
            && same(i + 1)
        {
            i += 1;
        }
        if !same(i) {
            return None;
        }
        self.next_token = i + 1;
        self.tokens.get(i).map(|&(start, _, end)| (start, end))
    }

    /// The next comment if it starts before `pos`.
    fn comment_before(&self, pos: usize) -> Option<&'a Comment> {
        self.comments
            .get(self.next_comment)
            .filter(|c| c.start < pos)
    }

    fn newlines_between(&self, from: usize, to: usize) -> usize {
        let bytes = self.src.as_bytes();
        let to = to.min(bytes.len());
        bytes
            .get(from.min(to)..to)
            .map_or(0, |gap| gap.iter().filter(|&&b| b == b'\n').count())
    }

    /// Whether the next comment was on the source line of the last thing
    /// written, with that line still open in the output.
    fn trails(&self, c: &Comment) -> bool {
        !self.line_empty && self.newlines_between(self.last_end, c.start) == 0
    }

    // ---- output ----

    fn end_line(&mut self) {
        if !self.line_empty {
            self.out.push('\n');
            self.line_empty = true;
        }
        self.pending_space = false;
        self.pending_break = false;
    }

    fn push_indent(&mut self, columns: usize) {
        self.out.push_str(&" ".repeat(columns));
        self.line_empty = false;
    }

    fn write_comment(&mut self, c: &Comment, indent: usize) {
        if self.trails(c) {
            self.out.push_str("  ");
        } else {
            self.end_line();
            self.push_indent(indent);
        }
        self.out.push_str(&c.text);
        self.line_empty = false;
        self.end_line();
        self.last_end = c.end;
        self.next_comment += 1;
    }

    fn space(&mut self) {
        self.pending_space = true;
    }

    /// A keyword and the space after it.
    fn keyword(&mut self, text: &str, kind: Tok<'_>) {
        self.token(text, kind);
        self.space();
    }

    /// A token between spaces (`->`, `=`, `in`).
    fn spaced(&mut self, text: &str, kind: Tok<'_>) {
        self.space();
        self.keyword(text, kind);
    }

    /// Ends the line before the next token, which goes at column `indent`
    /// (as do later continuation lines of the statement).
    fn break_line(&mut self, indent: usize) {
        self.pending_break = true;
        self.line_indent = indent;
    }

    /// The output column the next character goes to.
    fn column(&self) -> usize {
        let line = self.out.rfind('\n').map_or(0, |i| i + 1);
        self.out.get(line..).map_or(0, |l| l.chars().count())
    }

    /// Writes one token, after the source comments that precede it.
    fn token(&mut self, text: &str, kind: Tok<'_>) {
        let range = self.take_token(&kind);
        if let Some((start, _)) = range {
            while let Some(c) = self.comment_before(start) {
                let indent = self.line_indent;
                self.write_comment(c, indent);
            }
        }
        if self.pending_break {
            self.end_line();
        }
        if self.line_empty {
            let indent = self.line_indent;
            self.push_indent(indent);
        } else if self.pending_space {
            self.out.push(' ');
        }
        self.pending_space = false;
        self.out.push_str(text);
        if let Some((_, end)) = range {
            self.last_end = end;
        }
        if self.starts_stmt {
            self.starts_stmt = false;
            self.line_indent = self.indent + INDENT;
        }
    }

    /// Places the comments before `pos`, the start of a line-level element
    /// (an item, a statement, a closing brace or the end of the file): one
    /// on the current source line stays at the end of the output line, the
    /// others get lines of their own at the current indentation. Keeps at
    /// most one blank line where the source had any, once `allow_blank`;
    /// `force_blank` puts one before the first element. Returns whether a
    /// blank line belongs before the element at `pos`.
    fn lines_before(&mut self, pos: usize, allow_blank: bool, force_blank: bool) -> bool {
        if let Some(c) = self.comment_before(pos) {
            if self.trails(c) {
                self.write_comment(c, 0);
            }
        }
        self.end_line();
        let (mut allow, mut force) = (allow_blank, force_blank);
        while let Some(c) = self.comment_before(pos) {
            if force || (allow && self.newlines_between(self.last_end, c.start) >= 2) {
                self.out.push('\n');
            }
            (allow, force) = (true, false);
            let indent = self.indent;
            self.write_comment(c, indent);
        }
        force || (allow && self.newlines_between(self.last_end, pos) >= 2)
    }

    /// Prepares to write an element that starts its own line.
    fn start_stmt(&mut self) {
        self.line_indent = self.indent;
        self.starts_stmt = true;
    }

    /// Writes the source of a node the parser could not parse, verbatim
    /// (such trees are not meant for the formatter; this keeps it total).
    fn verbatim(&mut self, start: usize, end: usize) {
        while self
            .tokens
            .get(self.next_token)
            .is_some_and(|&(s, _, _)| s < end)
        {
            self.next_token += 1;
        }
        while self.comment_before(end).is_some() {
            self.next_comment += 1;
        }
        if let Some(text) = self.src.get(start..end) {
            self.start_stmt();
            self.push_indent(self.indent);
            self.out.push_str(text.trim());
            self.last_end = end;
        }
    }

    // ---- items ----

    fn file(&mut self, file: &SourceFile) {
        let mut prev: Option<&Item> = None;
        for item in &file.items {
            let force = prev.is_some_and(|p| is_program(p) || is_program(item));
            let allow = !self.out.is_empty();
            if self.lines_before(self.peek_start(), allow, force) {
                self.out.push('\n');
            }
            self.item(item);
            prev = Some(item);
        }
        let allow = !self.out.is_empty();
        self.lines_before(usize::MAX, allow, false);
        self.end_line();
    }

    fn item(&mut self, item: &Item) {
        self.start_stmt();
        match item {
            Item::Kernel(k) => self.kernel(k),
            Item::Program(p) => self.program(p),
            Item::Error(span) => self.verbatim(span.start as usize, span.end as usize),
        }
    }

    fn kernel(&mut self, k: &KernelDecl) {
        self.keyword("kernel", Tok::Kernel);
        self.ident(&k.name);
        self.parenthesized(&k.params, |p, param| {
            p.ident(&param.name);
            if let Some(ty) = &param.ty {
                p.annotation(ty.kind);
            }
        });
        self.spaced("->", Tok::Arrow);
        self.parenthesized(&k.results, Self::ident);
        self.token(";", Tok::Semi);
    }

    fn program(&mut self, p: &ProgramDecl) {
        self.keyword("program", Tok::Program);
        self.ident(&p.name);
        self.parenthesized(&p.params, |p, param| {
            p.ident(&param.name);
            p.annotation(param.ty.kind);
            if let Some(default) = &param.default {
                p.spaced("=", Tok::Assign);
                p.expr(default);
            }
        });
        self.space();
        self.block(&p.body);
    }

    /// `: int` or `: real`.
    fn annotation(&mut self, ty: ScalarType) {
        self.token(":", Tok::Colon);
        self.space();
        match ty {
            ScalarType::Int => self.token("int", Tok::IntKw),
            ScalarType::Real => self.token("real", Tok::RealKw),
        }
    }

    // ---- statements ----

    fn block(&mut self, b: &Block) {
        self.token("{", Tok::LBrace);
        if b.stmts.is_empty() && self.comment_before(self.peek_start()).is_none() {
            self.token("}", Tok::RBrace);
            self.line_indent = self.indent;
            return;
        }
        let outer = self.indent;
        self.indent += INDENT;
        for (i, stmt) in b.stmts.iter().enumerate() {
            if self.lines_before(self.peek_start(), i > 0, false) {
                self.out.push('\n');
            }
            self.stmt(stmt);
        }
        self.lines_before(self.peek_start(), !b.stmts.is_empty(), false);
        self.indent = outer;
        self.line_indent = outer;
        self.token("}", Tok::RBrace);
    }

    fn stmt(&mut self, s: &Stmt) {
        self.start_stmt();
        match &s.kind {
            StmtKind::Require(cond) => {
                self.keyword("require", Tok::Require);
                self.expr(cond);
                self.token(";", Tok::Semi);
            }
            StmtKind::Decl(d) => {
                let kind = match d.role {
                    Role::Input => Tok::Input,
                    Role::Output => Tok::Output,
                    Role::Temporary => Tok::Matrix,
                };
                self.keyword(d.role.keyword(), kind);
                self.indexed(&d.name, &d.extents);
                if let Some(init) = &d.init {
                    self.spaced("=", Tok::Assign);
                    self.expr(init);
                }
                self.token(";", Tok::Semi);
            }
            StmtKind::Call(call) => {
                let layout = self.call_layout(call);
                self.call(call, layout);
            }
            StmtKind::For(f) => {
                self.keyword("for", Tok::For);
                self.ident(&f.var);
                self.spaced("in", Tok::In);
                self.token("range", Tok::Range);
                self.parenthesized(&f.range_args, Self::expr);
                self.space();
                self.block(&f.body);
            }
            StmtKind::If(stmt) => {
                for (i, (cond, block)) in stmt.branches.iter().enumerate() {
                    if i > 0 {
                        self.else_keyword();
                    }
                    self.keyword("if", Tok::If);
                    self.expr(cond);
                    self.space();
                    self.block(block);
                }
                if let Some(block) = &stmt.else_block {
                    self.else_keyword();
                    self.block(block);
                }
            }
            StmtKind::Let(l) => {
                self.keyword("let", Tok::Let);
                self.ident(&l.name);
                self.spaced("=", Tok::Assign);
                self.expr(&l.value);
                self.token(";", Tok::Semi);
            }
            StmtKind::Error => self.verbatim(s.span.start as usize, s.span.end as usize),
        }
    }

    /// The first layout, of flat, broken after `=` and wrapped, whose lines
    /// fit in [`MAX_WIDTH`] columns (wrapped if none does).
    fn call_layout(&self, call: &Call) -> CallLayout {
        if self.indent + self.measure(|p| p.call(call, CallLayout::Flat)) <= MAX_WIDTH {
            CallLayout::Flat
        } else if self.indent + INDENT + self.measure(|p| p.call_rhs(call, CallLayout::Flat))
            <= MAX_WIDTH
        {
            CallLayout::BrokenAfterAssign
        } else {
            CallLayout::Wrapped
        }
    }

    /// ` else ` after a `}`; what follows it on a new line is a
    /// continuation.
    fn else_keyword(&mut self) {
        self.spaced("else", Tok::Else);
        self.line_indent = self.indent + INDENT;
    }

    /// A kernel call statement in the given layout.
    fn call(&mut self, call: &Call, layout: CallLayout) {
        for (i, tile) in call.lhs.iter().enumerate() {
            self.comma(i);
            self.tile_ref(tile);
        }
        self.space();
        self.token("=", Tok::Assign);
        if layout == CallLayout::Flat {
            self.space();
        } else {
            self.break_line(self.indent + INDENT);
        }
        self.call_rhs(call, layout);
    }

    /// `kernel(args);`, with the arguments filled into lines aligned after
    /// the `(` when `layout` is [`CallLayout::Wrapped`].
    fn call_rhs(&mut self, call: &Call, layout: CallLayout) {
        self.ident(&call.kernel);
        self.token("(", Tok::LParen);
        let align = self.column();
        for (i, arg) in call.args.iter().enumerate() {
            if i > 0 {
                self.token(",", Tok::Comma);
                if layout == CallLayout::Wrapped && self.column() + self.need(call, i) > MAX_WIDTH {
                    self.break_line(align);
                } else {
                    self.space();
                }
            }
            self.expr(arg);
        }
        self.token(")", Tok::RParen);
        self.token(";", Tok::Semi);
    }

    /// The columns argument `i` of `call` needs after the `,` before it: a
    /// space, the argument, and the `,` or `);` after it.
    fn need(&self, call: &Call, i: usize) -> usize {
        let after = if i + 1 == call.args.len() { 2 } else { 1 };
        let width = call
            .args
            .get(i)
            .map_or(0, |arg| self.measure(|p| p.expr(arg)));
        1 + width + after
    }

    fn tile_ref(&mut self, t: &TileRef) {
        self.indexed(&t.matrix, &t.indices);
    }

    // ---- expressions ----

    fn ident(&mut self, id: &Ident) {
        self.token(&id.name, Tok::Ident(""));
    }

    /// The separator before the `i`-th element of a list.
    fn comma(&mut self, i: usize) {
        if i > 0 {
            self.token(",", Tok::Comma);
            self.space();
        }
    }

    /// `items` separated by commas, each printed by `item`.
    fn list<T>(&mut self, items: &[T], item: impl Fn(&mut Self, &T)) {
        for (i, x) in items.iter().enumerate() {
            self.comma(i);
            item(self, x);
        }
    }

    /// `(a, b)`, each item printed by `item`.
    fn parenthesized<T>(&mut self, items: &[T], item: impl Fn(&mut Self, &T)) {
        self.token("(", Tok::LParen);
        self.list(items, item);
        self.token(")", Tok::RParen);
    }

    /// `name[i, j]`.
    fn indexed(&mut self, name: &Ident, indices: &[Expr]) {
        self.ident(name);
        self.token("[", Tok::LBracket);
        self.list(indices, Self::expr);
        self.token("]", Tok::RBracket);
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Int(v) => self.token(&v.to_string(), Tok::Int("")),
            ExprKind::Real(v) => {
                let text = real_text(*v, self.src.get(e.span.range()));
                self.token(&text, Tok::Real(""));
            }
            ExprKind::Bool(true) => self.token("true", Tok::True),
            ExprKind::Bool(false) => self.token("false", Tok::False),
            ExprKind::Name(id) => self.ident(id),
            ExprKind::Index(name, indices) => self.indexed(name, indices),
            ExprKind::Call(name, args) => {
                self.ident(name);
                self.parenthesized(args, Self::expr);
            }
            ExprKind::Unary(UnOp::Neg, operand) => {
                self.token("-", Tok::Minus);
                self.expr(operand);
            }
            ExprKind::Unary(UnOp::Not, operand) => {
                self.keyword("not", Tok::Not);
                self.expr(operand);
            }
            ExprKind::Binary(op, lhs, rhs) => {
                self.expr(lhs);
                self.space();
                self.token(op.text(), binop_token(*op));
                self.space();
                self.expr(rhs);
            }
            ExprKind::Paren(inner) => {
                self.token("(", Tok::LParen);
                self.expr(inner);
                self.token(")", Tok::RParen);
            }
        }
    }
}

fn is_program(item: &Item) -> bool {
    matches!(item, Item::Program(_))
}

fn binop_token(op: BinOp) -> Tok<'static> {
    match op {
        BinOp::Or => Tok::Or,
        BinOp::And => Tok::And,
        BinOp::Eq => Tok::EqEq,
        BinOp::Ne => Tok::NotEq,
        BinOp::Lt => Tok::Lt,
        BinOp::Le => Tok::Le,
        BinOp::Gt => Tok::Gt,
        BinOp::Ge => Tok::Ge,
        BinOp::Add => Tok::Plus,
        BinOp::Sub => Tok::Minus,
        BinOp::Mul => Tok::Star,
        BinOp::Div => Tok::Slash,
        BinOp::FloorDiv => Tok::SlashSlash,
        BinOp::Mod => Tok::Percent,
        BinOp::Pow => Tok::StarStar,
    }
}

/// A real literal's text: as written when that is one real token with the
/// same value (it always is for a tree parsed from the source), else the
/// shortest text that reads back as `v`.
fn real_text(v: f64, written: Option<&str>) -> String {
    if let Some(text) = written {
        let (tokens, comments) = lex(text);
        let one_real = matches!(tokens.as_slice(), [(_, Tok::Real(_), _)]) && comments.is_empty();
        if one_real && text.parse::<f64>().is_ok_and(|w| w == v) {
            return text.to_string();
        }
    }
    if v.is_infinite() {
        // Only an overflowing literal gives infinity, and the tree cannot
        // hold a negative literal.
        return "1e999".to_string();
    }
    // `{:?}` always writes a `.` or an exponent, so the text lexes as a
    // real, and it reads back as exactly `v`.
    format!("{v:?}")
}

#[cfg(test)]
mod tests {
    use super::real_text;

    #[test]
    fn real_literals_keep_their_spelling_and_read_back() {
        assert_eq!(real_text(0.002, Some("2.0e-3")), "2.0e-3");
        assert_eq!(real_text(1.5, None), "1.5");
        assert_eq!(real_text(1e300, None), "1e300");
        assert_eq!(real_text(1e16, None), "1e16");
        assert_eq!(real_text(f64::INFINITY, Some("1e999")), "1e999");
        assert_eq!(real_text(f64::INFINITY, None), "1e999");
        // A span that does not hold the literal falls back to the value.
        assert_eq!(real_text(2.5, Some("x")), "2.5");
    }
}
