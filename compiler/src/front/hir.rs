//! The resolved, typed program: names are ids, parentheses are gone, every
//! item a diagnostic could point at keeps its span. Items live in vectors
//! indexed by typed ids (arena style); nothing here owns a tree of boxes.
//!
//! Invariant: a [`Module`] built by [`crate::front::resolve`] without errors and
//! accepted by [`crate::front::typeck`] only holds ids that index its own vectors,
//! every index, bound and step expression is `int`, and every condition is
//! `bool`. Later phases may rely on that and report broken invariants as
//! internal errors.

use lpk_grammar::ast::{BinOp, Role, ScalarType, Span, UnOp};
use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $name {
            /// The id as a vector index.
            pub fn index(self) -> usize {
                self.0 as usize
            }

            /// The id of the `i`th item.
            ///
            /// # Panics
            ///
            /// When `i` does not fit 32 bits, which no source reaches:
            /// E0008 caps a file below 2^32 bytes, and resolve makes fewer
            /// items of one kind than the source has bytes (the most
            /// per byte are the two synthesized bounds of
            /// `for i in range(n)`, 20 bytes).
            pub fn from_index(i: usize) -> Self {
                $name(u32::try_from(i).expect("a source under 4 GiB has fewer than 2^32 items"))
            }
        }
    };
}

id_type!(
    /// A kernel of the module.
    KernelId
);
id_type!(
    /// A matrix of a program.
    MatrixId
);
id_type!(
    /// A variable (parameter, loop variable or `let`) of a program.
    VarId
);
id_type!(
    /// An expression of a program.
    ExprId
);
id_type!(
    /// A statement of a program.
    StmtId
);

/// A resolved file: its kernels and programs.
#[derive(Clone, Debug, Default)]
pub struct Module {
    /// Kernel signatures, in declaration order.
    pub kernels: Vec<Kernel>,
    /// Programs, in declaration order.
    pub programs: Vec<ProgramDef>,
}

impl Module {
    /// The kernel with this id.
    pub fn kernel(&self, id: KernelId) -> &Kernel {
        &self.kernels[id.index()]
    }

    /// Finds a program by name.
    pub fn program_named(&self, name: &str) -> Option<&ProgramDef> {
        self.programs.iter().find(|p| p.name == name)
    }
}

/// A kernel signature.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// Its name.
    pub name: String,
    /// Its parameters.
    pub params: Vec<KernelParam>,
    /// Its result names.
    pub results: Vec<String>,
    /// The declaration.
    pub span: Span,
    /// The name's span.
    pub name_span: Span,
}

/// A kernel parameter.
#[derive(Clone, Debug)]
pub struct KernelParam {
    /// Its name.
    pub name: String,
    /// A tile, or a scalar of some type.
    pub kind: ParamKind,
}

/// What a kernel parameter takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A tile reference.
    Tile,
    /// A scalar value.
    Scalar(ScalarType),
}

/// A program.
#[derive(Clone, Debug)]
pub struct ProgramDef {
    /// Its name.
    pub name: String,
    /// The whole program.
    pub span: Span,
    /// The name's span.
    pub name_span: Span,
    /// Parameters, in order; `params[i]` is variable `param_vars[i]`.
    pub params: Vec<Param>,
    /// The variable of each parameter.
    pub param_vars: Vec<VarId>,
    /// `require` conditions, in order.
    pub requires: Vec<ExprId>,
    /// Matrices, in declaration order.
    pub matrices: Vec<Matrix>,
    /// Every variable.
    pub vars: Vec<Var>,
    /// Every expression.
    pub exprs: Vec<Expr>,
    /// Every statement.
    pub stmts: Vec<Stmt>,
    /// The top-level statements after the declarations, in order.
    pub body: Vec<StmtId>,
}

impl ProgramDef {
    /// The expression with this id.
    pub fn expr(&self, id: ExprId) -> &Expr {
        &self.exprs[id.index()]
    }

    /// The statement with this id.
    pub fn stmt(&self, id: StmtId) -> &Stmt {
        &self.stmts[id.index()]
    }

    /// The variable with this id.
    pub fn var(&self, id: VarId) -> &Var {
        &self.vars[id.index()]
    }

    /// The matrix with this id.
    pub fn matrix(&self, id: MatrixId) -> &Matrix {
        &self.matrices[id.index()]
    }

    /// Finds a matrix by name.
    pub fn matrix_named(&self, name: &str) -> Option<MatrixId> {
        self.matrices
            .iter()
            .position(|m| m.name == name)
            .map(MatrixId::from_index)
    }

    /// Finds a parameter's index by name.
    pub fn param_index(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| p.name == name)
    }

    /// Every kernel-call statement, in source (= sequential) order.
    pub fn calls(&self) -> Vec<StmtId> {
        let mut out = Vec::new();
        let mut stack: Vec<StmtId> = self.body.iter().rev().copied().collect();
        while let Some(id) = stack.pop() {
            match &self.stmt(id).kind {
                StmtKind::Call(_) => out.push(id),
                StmtKind::For(f) => stack.extend(f.body.iter().rev()),
                StmtKind::If(i) => {
                    if let Some(e) = &i.else_body {
                        stack.extend(e.iter().rev());
                    }
                    for (_, b) in i.branches.iter().rev() {
                        stack.extend(b.iter().rev());
                    }
                }
                StmtKind::Let(_) => {}
            }
        }
        out
    }
}

/// A program parameter.
#[derive(Clone, Debug)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// Its default value.
    pub default: Option<i64>,
    /// The parameter's span.
    pub span: Span,
}

/// A declared matrix.
#[derive(Clone, Debug)]
pub struct Matrix {
    /// Its name.
    pub name: String,
    /// Input, output or temporary.
    pub role: Role,
    /// Extents in tiles (int expressions over parameters).
    pub extents: Vec<ExprId>,
    /// Declared `= 0` (only a temporary may be): its tiles that no task
    /// writes read as zero tiles.
    pub zero: bool,
    /// The declaration statement.
    pub span: Span,
    /// The name's span.
    pub name_span: Span,
}

/// A variable.
#[derive(Clone, Debug)]
pub struct Var {
    /// Its name.
    pub name: String,
    /// What binds it.
    pub kind: VarKind,
    /// Where it is bound.
    pub span: Span,
    /// Its type (parameters and loop variables are `int`).
    pub ty: Ty,
}

/// What binds a variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarKind {
    /// The `i`th program parameter.
    Param(usize),
    /// The variable of a `for` statement.
    Loop(StmtId),
    /// The name of a `let` statement.
    Let(StmtId),
}

/// Expression types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// Integers (64-bit, checked).
    Int,
    /// Reals (f64).
    Real,
    /// Booleans.
    Bool,
    /// The type of an expression that already has an error.
    Error,
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ty::Int => "int",
            Ty::Real => "real",
            Ty::Bool => "bool",
            Ty::Error => "{error}",
        })
    }
}

/// An expression.
#[derive(Clone, Debug)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where it is written (a synthesized default inherits its origin's).
    pub span: Span,
    /// Its type, set by the type checker.
    pub ty: Ty,
}

/// The built-in functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `ceil(x)`
    Ceil,
    /// `floor(x)`
    Floor,
    /// `log2(x)`
    Log2,
    /// `log(x)` (natural)
    Log,
    /// `min(a, b, ...)`
    Min,
    /// `max(a, b, ...)`
    Max,
    /// `abs(x)`
    Abs,
}

impl Builtin {
    /// Every built-in, for suggestions.
    pub const ALL: [Builtin; 7] = [
        Builtin::Ceil,
        Builtin::Floor,
        Builtin::Log2,
        Builtin::Log,
        Builtin::Min,
        Builtin::Max,
        Builtin::Abs,
    ];

    /// The function's name.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::Ceil => "ceil",
            Builtin::Floor => "floor",
            Builtin::Log2 => "log2",
            Builtin::Log => "log",
            Builtin::Min => "min",
            Builtin::Max => "max",
            Builtin::Abs => "abs",
        }
    }

    /// Looks a built-in up by name.
    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }

    /// `(min, max)` number of arguments.
    pub fn arity(self) -> (usize, Option<usize>) {
        match self {
            Builtin::Min | Builtin::Max => (2, None),
            _ => (1, Some(1)),
        }
    }
}

/// The kinds of expression.
#[derive(Clone, Debug)]
pub enum ExprKind {
    /// Integer literal.
    Int(i64),
    /// Real literal.
    Real(f64),
    /// Boolean literal.
    Bool(bool),
    /// A variable.
    Var(VarId),
    /// Prefix operator.
    Unary(UnOp, ExprId),
    /// Infix operator.
    Binary(BinOp, ExprId, ExprId),
    /// Built-in call.
    Call(Builtin, Vec<ExprId>),
}

/// A statement.
#[derive(Clone, Debug)]
pub struct Stmt {
    /// What it is.
    pub kind: StmtKind,
    /// From its first token to its last.
    pub span: Span,
}

/// The kinds of statement that remain after resolution (requires and
/// declarations moved into the [`ProgramDef`]).
#[derive(Clone, Debug)]
pub enum StmtKind {
    /// A kernel call: one task per execution.
    Call(Call),
    /// A loop.
    For(For),
    /// A conditional chain.
    If(If),
    /// A binding.
    Let(Let),
}

/// A kernel call.
#[derive(Clone, Debug)]
pub struct Call {
    /// The kernel.
    pub kernel: KernelId,
    /// The tiles written, one per result.
    pub outputs: Vec<Access>,
    /// The arguments, one per kernel parameter.
    pub args: Vec<Arg>,
    /// 1-based line of the statement's first token (the task name's LINE).
    pub line: u32,
    /// 1-based column of the statement's first token.
    pub column: u32,
    /// The kernel name's span.
    pub kernel_span: Span,
}

impl Call {
    /// The tiles read, in argument order.
    pub fn reads(&self) -> impl Iterator<Item = &Access> {
        self.args.iter().filter_map(|a| match a {
            Arg::Tile(t) => Some(t),
            Arg::Scalar(_) => None,
        })
    }
}

/// A tile access `M[e, ...]`.
#[derive(Clone, Debug)]
pub struct Access {
    /// The matrix.
    pub matrix: MatrixId,
    /// One int expression per dimension.
    pub indices: Vec<ExprId>,
    /// The whole reference.
    pub span: Span,
}

/// A kernel argument.
#[derive(Clone, Debug)]
pub enum Arg {
    /// A tile read.
    Tile(Access),
    /// A scalar value.
    Scalar(ExprId),
}

/// A `for` loop over `range(lo, hi, step)`.
#[derive(Clone, Debug)]
pub struct For {
    /// The loop variable.
    pub var: VarId,
    /// Lower bound (a synthesized `0` when omitted).
    pub lo: ExprId,
    /// Upper bound, exclusive.
    pub hi: ExprId,
    /// Step (a synthesized `1` when omitted).
    pub step: ExprId,
    /// The body.
    pub body: Vec<StmtId>,
}

/// An `if` chain.
#[derive(Clone, Debug)]
pub struct If {
    /// Conditions with their bodies, in order.
    pub branches: Vec<(ExprId, Vec<StmtId>)>,
    /// The `else` body.
    pub else_body: Option<Vec<StmtId>>,
}

/// A `let` binding.
#[derive(Clone, Debug)]
pub struct Let {
    /// The bound variable.
    pub var: VarId,
    /// Its value.
    pub value: ExprId,
}
