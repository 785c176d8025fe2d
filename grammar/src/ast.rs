//! The abstract syntax tree. Every node carries the [`Span`] of the source it
//! came from; the grammar attaches them in one place. The AST knows nothing
//! of names, types or solving: those belong to the compiler.

use std::fmt;

/// Identifies a source file in a diagnostics file database.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// A byte range in one source file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    /// The file the range is in.
    pub file: FileId,
    /// Byte offset of the first byte.
    pub start: u32,
    /// Byte offset one past the last byte.
    pub end: u32,
}

impl Span {
    /// A span from byte offsets (sources are limited to `u32::MAX` bytes by
    /// the parser's entry point).
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span {
            file,
            start: u32::try_from(start).unwrap_or(u32::MAX),
            end: u32::try_from(end).unwrap_or(u32::MAX),
        }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// The byte range, for slicing the source.
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// A name with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    /// The name's text.
    pub name: String,
    /// Where it is written.
    pub span: Span,
}

/// A parsed file: kernel declarations and programs, in source order.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct SourceFile {
    /// The top-level items.
    pub items: Vec<Item>,
}

/// A top-level item.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// `kernel name(params) -> (results);`
    Kernel(KernelDecl),
    /// `program name(params) { ... }`
    Program(ProgramDecl),
    /// A top-level item that failed to parse (its error is reported).
    Error(Span),
}

/// A kernel declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelDecl {
    /// The kernel's name.
    pub name: Ident,
    /// Parameters in order: tiles, or typed scalars.
    pub params: Vec<KernelParam>,
    /// Result names in order (all tiles).
    pub results: Vec<Ident>,
    /// The whole declaration.
    pub span: Span,
}

/// A kernel parameter: a tile when untyped, a scalar when typed.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelParam {
    /// The parameter's name.
    pub name: Ident,
    /// `: int` or `: real`, absent for a tile.
    pub ty: Option<TypeAnn>,
}

/// A written scalar type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeAnn {
    /// Which type.
    pub kind: ScalarType,
    /// Where it is written.
    pub span: Span,
}

/// The scalar types a declaration may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarType {
    /// `int`
    Int,
    /// `real`
    Real,
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScalarType::Int => "int",
            ScalarType::Real => "real",
        })
    }
}

/// A program declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramDecl {
    /// The program's name.
    pub name: Ident,
    /// Its parameters.
    pub params: Vec<ProgramParam>,
    /// Its body.
    pub body: Block,
    /// The whole program.
    pub span: Span,
}

/// A program parameter `NAME: int = DEFAULT`.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramParam {
    /// The parameter's name.
    pub name: Ident,
    /// Its declared type (the language allows only `int`; the resolver
    /// rejects others).
    pub ty: TypeAnn,
    /// The default value, an integer literal possibly negated (the resolver
    /// rejects other expressions).
    pub default: Option<Expr>,
    /// The whole parameter.
    pub span: Span,
}

/// A `{ ... }` block.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// The statements, in order.
    pub stmts: Vec<Stmt>,
    /// From `{` to `}`.
    pub span: Span,
}

/// A statement with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// What it is.
    pub kind: StmtKind,
    /// From its first token to its last.
    pub span: Span,
}

/// The kinds of statement. `require` and declarations parse anywhere so the
/// resolver can say precisely why one is misplaced.
#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `require cond;`
    Require(Expr),
    /// `input|output|matrix NAME[extents];` or `matrix NAME[extents] = 0;`
    Decl(MatrixDecl),
    /// `T0, T1 = kernel(args);`
    Call(Call),
    /// `for v in range(args) { }`
    For(ForLoop),
    /// `if c { } else if c { } else { }`
    If(IfStmt),
    /// `let name = value;`
    Let(LetStmt),
    /// A statement that failed to parse (its error is reported).
    Error,
}

/// The role of a declared matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Read-only program input.
    Input,
    /// Kept after the run.
    Output,
    /// Intermediate storage.
    Temporary,
}

impl Role {
    /// The keyword that declares this role.
    pub fn keyword(self) -> &'static str {
        match self {
            Role::Input => "input",
            Role::Output => "output",
            Role::Temporary => "matrix",
        }
    }
}

/// A matrix declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct MatrixDecl {
    /// Input, output or temporary.
    pub role: Role,
    /// The matrix's name.
    pub name: Ident,
    /// Extents in tiles, one per dimension.
    pub extents: Vec<Expr>,
    /// The initialiser after `=`, as in `matrix T[N] = 0;` (a zero
    /// matrix). The grammar takes any expression so the resolver can say
    /// precisely what is wrong with one: only the literal `0`, on a
    /// `matrix` declaration, is allowed.
    pub init: Option<Expr>,
}

/// A kernel call statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The tiles written, one per kernel result.
    pub lhs: Vec<TileRef>,
    /// The kernel called.
    pub kernel: Ident,
    /// The arguments: tile references (parsed as [`ExprKind::Index`]) or
    /// scalar expressions.
    pub args: Vec<Expr>,
}

/// A tile reference `M[i, j]`.
#[derive(Clone, Debug, PartialEq)]
pub struct TileRef {
    /// The matrix.
    pub matrix: Ident,
    /// One index expression per dimension.
    pub indices: Vec<Expr>,
    /// The whole reference.
    pub span: Span,
}

/// A `for` loop.
#[derive(Clone, Debug, PartialEq)]
pub struct ForLoop {
    /// The loop variable.
    pub var: Ident,
    /// The `range` arguments (the resolver checks there are 1 to 3).
    pub range_args: Vec<Expr>,
    /// The span of `range(...)`.
    pub range_span: Span,
    /// The body.
    pub body: Block,
}

/// An `if` chain: `if c0 {b0} else if c1 {b1} ... else {e}`.
#[derive(Clone, Debug, PartialEq)]
pub struct IfStmt {
    /// Each condition with its block, in order.
    pub branches: Vec<(Expr, Block)>,
    /// The final `else` block.
    pub else_block: Option<Block>,
}

/// A `let` binding.
#[derive(Clone, Debug, PartialEq)]
pub struct LetStmt {
    /// The bound name.
    pub name: Ident,
    /// Its value.
    pub value: Expr,
}

/// An expression with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where it is written.
    pub span: Span,
}

/// The kinds of expression.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// An integer literal.
    Int(i64),
    /// A real literal.
    Real(f64),
    /// `true` or `false`.
    Bool(bool),
    /// A name.
    Name(Ident),
    /// A tile reference `M[i, j]` (only meaningful as a kernel argument).
    Index(Ident, Vec<Expr>),
    /// A call `f(args)` of a built-in function.
    Call(Ident, Vec<Expr>),
    /// A prefix operator.
    Unary(UnOp, Box<Expr>),
    /// An infix operator.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `( e )`, kept so the formatter preserves the author's grouping.
    Paren(Box<Expr>),
}

/// Prefix operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `-`
    Neg,
    /// `not`
    Not,
}

/// Infix operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `or`
    Or,
    /// `and`
    And,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `//`
    FloorDiv,
    /// `%`
    Mod,
    /// `**`
    Pow,
}

impl BinOp {
    /// The operator's spelling.
    pub fn text(self) -> &'static str {
        match self {
            BinOp::Or => "or",
            BinOp::And => "and",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
        }
    }

    /// Binding strength, loosest first (`or` = 1). Unary `-` sits between
    /// `*` (6) and `**` (8) at 7; `not` sits at 3.
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 4,
            BinOp::Add | BinOp::Sub => 5,
            BinOp::Mul | BinOp::Div | BinOp::FloorDiv | BinOp::Mod => 6,
            BinOp::Pow => 8,
        }
    }

    /// Whether the operator compares (non-chaining, bool result).
    pub fn is_comparison(self) -> bool {
        self.precedence() == 4
    }
}

impl fmt::Display for BinOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl Expr {
    /// Strips any number of enclosing parentheses.
    pub fn peel(&self) -> &Expr {
        let mut e = self;
        while let ExprKind::Paren(inner) = &e.kind {
            e = inner;
        }
        e
    }
}
