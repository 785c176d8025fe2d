//! The type checker: gives every expression of a resolved program its type
//! (`int`, `real` or `bool`) by the rules of `docs/language.md`, and checks
//! that indices, bounds, steps and extents are `int`, conditions are
//! `bool`, scalar kernel arguments fit their parameters, constant steps are
//! positive and constant extents non-negative, and that declarations of
//! standard kernels match their standard signatures.
//!
//! It writes types into the HIR in place (the only mutation after
//! resolution) and reports every error; an expression whose operands have
//! errors gets [`Ty::Error`] and causes no further errors.

use crate::diag::{Code, Diagnostic, IntoDiagnostic};
use crate::front::hir::*;
use crate::front::kernels::{matches_standard, standard_signature, Signature};
use lpk_grammar::ast::{BinOp, ScalarType, Span, UnOp};
use thiserror::Error;

/// A type error.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum TypeError {
    /// A real where an int is required.
    #[error("expected `int`, found `real` in {context}")]
    RealForInt {
        /// The expression.
        span: Span,
        /// Where it is used ("a tile index", "a loop bound", ...).
        context: &'static str,
    },
    /// A condition that is not bool.
    #[error("expected `bool`, found `{found}` in {context}")]
    NotBool {
        /// The expression.
        span: Span,
        /// Its type.
        found: Ty,
        /// Where it is used.
        context: &'static str,
    },
    /// A bool where a number is required.
    #[error("expected a number, found `bool` in {context}")]
    BoolForNumber {
        /// The expression.
        span: Span,
        /// Where it is used.
        context: &'static str,
    },
    /// A comparison of incompatible values.
    #[error("cannot compare `{left}` with `{right}` using `{op}`")]
    BadComparison {
        /// The comparison.
        span: Span,
        /// The operator.
        op: BinOp,
        /// Left type.
        left: Ty,
        /// Right type.
        right: Ty,
    },
    /// A constant loop step that is not positive.
    #[error("loop step must be positive, found {value}")]
    NonPositiveStep {
        /// The step.
        span: Span,
        /// Its value.
        value: i64,
    },
    /// A constant negative extent.
    #[error("matrix extent must not be negative, found {value}")]
    NegativeExtent {
        /// The extent.
        span: Span,
        /// Its value.
        value: i64,
    },
    /// An expression that becomes too large once `let`s are substituted.
    #[error("expression is too large once `let`s are substituted ({size} nodes, at most {limit})")]
    TooLarge {
        /// The `let` value or expression.
        span: Span,
        /// Its size after substitution (saturated).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A standard kernel declared with a different signature.
    #[error("`{name}` is a standard kernel but this declaration does not match its signature")]
    StandardMismatch {
        /// The declaration.
        span: Span,
        /// The kernel.
        name: String,
        /// The standard declaration.
        expected: String,
    },
    /// A kernel that is not a standard kernel but is named one letter away
    /// from one with the same signature (a warning): a name misspelt in
    /// both its declaration and its calls checks, then has no
    /// implementation when it runs.
    #[error("`{name}` is not a standard kernel; did you mean `{standard}`?")]
    NearStandard {
        /// The declaration.
        span: Span,
        /// The kernel.
        name: String,
        /// The standard kernel it is close to.
        standard: &'static str,
    },
}

impl TypeError {
    /// The stable diagnostic code.
    pub fn code(&self) -> Code {
        match self {
            TypeError::RealForInt { .. } => Code::E0201,
            TypeError::NotBool { .. } => Code::E0202,
            TypeError::BoolForNumber { .. } => Code::E0203,
            TypeError::BadComparison { .. } => Code::E0204,
            TypeError::NonPositiveStep { .. } => Code::E0205,
            TypeError::NegativeExtent { .. } => Code::E0206,
            TypeError::StandardMismatch { .. } => Code::E0207,
            TypeError::TooLarge { .. } => Code::E0208,
            TypeError::NearStandard { .. } => Code::W0201,
        }
    }
}

impl IntoDiagnostic for TypeError {
    fn to_diagnostic(&self) -> Diagnostic {
        let msg = self.to_string();
        let code = self.code();
        match self {
            TypeError::RealForInt { span, .. } => Diagnostic::error(code, msg, *span)
                .with_primary_message("this is a `real`")
                .with_help("round it to an int with `ceil(...)` or `floor(...)`; `/`, `log` and `log2` always give reals"),
            TypeError::NotBool { span, .. } => Diagnostic::error(code, msg, *span)
                .with_primary_message("not a condition")
                .with_help("compare it, e.g. `x != 0`"),
            TypeError::BoolForNumber { span, .. } => {
                Diagnostic::error(code, msg, *span).with_primary_message("this is a `bool`")
            }
            TypeError::BadComparison { span, .. } => Diagnostic::error(code, msg, *span)
                .with_note("numbers compare with numbers; two bools compare only with `==` and `!=`"),
            TypeError::NonPositiveStep { span, .. } => Diagnostic::error(code, msg, *span)
                .with_primary_message("the step of `range(lo, hi, step)`")
                .with_note("loops count upwards; a step must be at least 1"),
            TypeError::NegativeExtent { span, .. } => Diagnostic::error(code, msg, *span)
                .with_primary_message("negative extent"),
            TypeError::TooLarge { span, .. } => Diagnostic::error(code, msg, *span)
                .with_primary_message("this grows too large")
                .with_note("`let`s are substituted where they are used, so a chain of `let`s that each use the previous one several times grows exponentially")
                .with_help("simplify the chain of `let`s"),
            TypeError::StandardMismatch { span, expected, .. } => Diagnostic::error(code, msg, *span)
                .with_help(format!("the standard declaration is `{expected}`"))
                .with_note("the runtime ships this kernel with that signature (see `lpkc explain E0207`); rename your kernel to define a different one"),
            TypeError::NearStandard { span, standard, .. } => Diagnostic::warning(code, msg, *span)
                .with_help(format!("rename it `{standard}` here and where it is called"))
                .with_note("a kernel that is not standard runs only with an implementation you supply; if this one is yours, ignore this warning"),
        }
    }
}

/// Type-checks a whole module in place.
pub(crate) fn typeck(module: &mut Module) -> Vec<TypeError> {
    let mut errors = Vec::new();
    for k in &module.kernels {
        if let Some(sig) = standard_signature(&k.name) {
            if !matches_standard(k, sig) {
                errors.push(TypeError::StandardMismatch {
                    span: k.span,
                    name: k.name.clone(),
                    expected: sig.declaration(),
                });
            }
        } else if let Some(sig) = near_standard(k) {
            errors.push(TypeError::NearStandard {
                span: k.span,
                name: k.name.clone(),
                standard: sig.name,
            });
        }
    }
    let kernels = &module.kernels;
    for p in &mut module.programs {
        Checker {
            program: p,
            kernels,
            errors: &mut errors,
            let_sizes: std::collections::HashMap::new(),
        }
        .program();
    }
    errors
}

/// The standard kernel one edit away from `kernel`'s name with the same
/// signature, if exactly one is.
fn near_standard(kernel: &crate::front::hir::Kernel) -> Option<&'static Signature> {
    let mut close = lpk_model::stdlib::STANDARD
        .iter()
        .filter(|sig| strsim::damerau_levenshtein(&kernel.name, sig.name) == 1)
        .filter(|sig| matches_standard(kernel, sig));
    let first = close.next()?;
    close.next().is_none().then_some(first)
}

/// Most nodes an expression may have once `let`s are substituted: plans
/// and evaluators see the substituted form, so this bounds their work.
pub(crate) const MAX_EXPANDED: u64 = 100_000;

struct Checker<'a> {
    program: &'a mut ProgramDef,
    kernels: &'a [Kernel],
    errors: &'a mut Vec<TypeError>,
    /// Expanded size of each `let` seen so far.
    let_sizes: std::collections::HashMap<VarId, u64>,
}

impl Checker<'_> {
    fn program(&mut self) {
        for i in 0..self.program.requires.len() {
            let e = self.program.requires[i];
            self.expect_bool(e, "a `require` condition");
        }
        for m in 0..self.program.matrices.len() {
            for d in 0..self.program.matrices[m].extents.len() {
                let e = self.program.matrices[m].extents[d];
                self.expect_int(e, "a matrix extent");
                if let Some(v) = self.constant(e) {
                    if v < 0 {
                        let span = self.program.expr(e).span;
                        self.errors
                            .push(TypeError::NegativeExtent { span, value: v });
                    }
                }
            }
        }
        let body = self.program.body.clone();
        self.block(&body);
    }

    fn block(&mut self, stmts: &[StmtId]) {
        for &s in stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, id: StmtId) {
        match self.program.stmt(id).kind.clone() {
            StmtKind::Call(call) => {
                for a in &call.outputs {
                    self.access(a);
                }
                let Some(kernel) = self.kernels.get(call.kernel.index()) else {
                    return;
                };
                for (arg, param) in call.args.iter().zip(&kernel.params) {
                    match (arg, param.kind) {
                        (Arg::Tile(a), _) => self.access(a),
                        (Arg::Scalar(e), ParamKind::Scalar(ScalarType::Int)) => {
                            self.expect_int(*e, "an `int` kernel argument")
                        }
                        (Arg::Scalar(e), _) => {
                            self.expect_number(*e, "a `real` kernel argument");
                        }
                    }
                }
            }
            StmtKind::For(f) => {
                self.expect_int(f.lo, "a loop bound");
                self.expect_int(f.hi, "a loop bound");
                self.expect_int(f.step, "a loop step");
                if let Some(v) = self.constant(f.step) {
                    if v <= 0 {
                        let span = self.program.expr(f.step).span;
                        self.errors
                            .push(TypeError::NonPositiveStep { span, value: v });
                    }
                }
                self.block(&f.body);
            }
            StmtKind::If(i) => {
                for (c, body) in &i.branches {
                    self.expect_bool(*c, "an `if` condition");
                    self.block(body);
                }
                if let Some(e) = &i.else_body {
                    self.block(e);
                }
            }
            StmtKind::Let(l) => {
                let ty = self.ty(l.value);
                self.program.vars[l.var.index()].ty = ty;
                let size = self.expanded_size(l.value);
                if size > MAX_EXPANDED {
                    let span = self.program.expr(l.value).span;
                    self.errors.push(TypeError::TooLarge {
                        span,
                        size,
                        limit: MAX_EXPANDED,
                    });
                    // Reported once: its uses count as small.
                    self.let_sizes.insert(l.var, 1);
                } else {
                    self.let_sizes.insert(l.var, size);
                }
            }
        }
    }

    fn access(&mut self, a: &Access) {
        for &i in &a.indices {
            self.expect_int(i, "a tile index");
        }
    }

    fn expect_int(&mut self, e: ExprId, context: &'static str) {
        let span = self.program.expr(e).span;
        match self.ty(e) {
            Ty::Int | Ty::Error => {}
            Ty::Real => self.errors.push(TypeError::RealForInt { span, context }),
            Ty::Bool => self.errors.push(TypeError::BoolForNumber { span, context }),
        }
    }

    fn expect_number(&mut self, e: ExprId, context: &'static str) -> Ty {
        let span = self.program.expr(e).span;
        let ty = self.ty(e);
        if ty == Ty::Bool {
            self.errors.push(TypeError::BoolForNumber { span, context });
            return Ty::Error;
        }
        ty
    }

    fn expect_bool(&mut self, e: ExprId, context: &'static str) {
        let span = self.program.expr(e).span;
        match self.ty(e) {
            Ty::Bool | Ty::Error => {}
            found => self.errors.push(TypeError::NotBool {
                span,
                found,
                context,
            }),
        }
    }

    /// The value of an integer expression made only of literals.
    fn constant(&self, e: ExprId) -> Option<i64> {
        match &self.program.expr(e).kind {
            ExprKind::Int(v) => Some(*v),
            ExprKind::Unary(UnOp::Neg, inner) => self.constant(*inner)?.checked_neg(),
            ExprKind::Binary(op, a, b) => {
                let (a, b) = (self.constant(*a)?, self.constant(*b)?);
                match op {
                    BinOp::Add => a.checked_add(b),
                    BinOp::Sub => a.checked_sub(b),
                    BinOp::Mul => a.checked_mul(b),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The number of nodes of an expression once `let`s are substituted
    /// (saturating).
    fn expanded_size(&self, e: ExprId) -> u64 {
        match &self.program.expr(e).kind {
            ExprKind::Int(_) | ExprKind::Real(_) | ExprKind::Bool(_) => 1,
            ExprKind::Var(v) => self.let_sizes.get(v).copied().unwrap_or(1),
            ExprKind::Unary(_, a) => self.expanded_size(*a).saturating_add(1),
            ExprKind::Binary(_, a, b) => self
                .expanded_size(*a)
                .saturating_add(self.expanded_size(*b))
                .saturating_add(1),
            ExprKind::Call(_, args) => args
                .iter()
                .fold(1u64, |acc, &a| acc.saturating_add(self.expanded_size(a))),
        }
    }

    /// Computes (once) and returns an expression's type.
    fn ty(&mut self, e: ExprId) -> Ty {
        let expr = self.program.expr(e);
        if expr.ty != Ty::Error {
            return expr.ty;
        }
        let kind = expr.kind.clone();
        let span = expr.span;
        let ty = match kind {
            ExprKind::Int(_) => Ty::Int,
            ExprKind::Real(_) => Ty::Real,
            ExprKind::Bool(_) => Ty::Bool,
            ExprKind::Var(v) => self.program.var(v).ty,
            ExprKind::Unary(UnOp::Neg, a) => self.expect_number(a, "an operand of `-`"),
            ExprKind::Unary(UnOp::Not, a) => {
                self.expect_bool(a, "the operand of `not`");
                Ty::Bool
            }
            ExprKind::Binary(op, a, b) => self.binary(op, a, b, span),
            ExprKind::Call(f, args) => {
                let tys: Vec<Ty> = args
                    .iter()
                    .map(|&a| self.expect_number(a, "a built-in function argument"))
                    .collect();
                if tys.contains(&Ty::Error) {
                    Ty::Error
                } else {
                    match f {
                        Builtin::Ceil | Builtin::Floor => Ty::Int,
                        Builtin::Log | Builtin::Log2 => Ty::Real,
                        Builtin::Min | Builtin::Max | Builtin::Abs => join(&tys),
                    }
                }
            }
        };
        self.program.exprs[e.index()].ty = ty;
        ty
    }

    fn binary(&mut self, op: BinOp, a: ExprId, b: ExprId, span: Span) -> Ty {
        match op {
            BinOp::And | BinOp::Or => {
                let ctx = if op == BinOp::And {
                    "an operand of `and`"
                } else {
                    "an operand of `or`"
                };
                self.expect_bool(a, ctx);
                self.expect_bool(b, ctx);
                Ty::Bool
            }
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                let (ta, tb) = (self.ty(a), self.ty(b));
                if ta == Ty::Error || tb == Ty::Error {
                    return Ty::Bool;
                }
                let numeric = |t: Ty| matches!(t, Ty::Int | Ty::Real);
                let ok = (numeric(ta) && numeric(tb))
                    || (ta == Ty::Bool && tb == Ty::Bool && matches!(op, BinOp::Eq | BinOp::Ne));
                if !ok {
                    self.errors.push(TypeError::BadComparison {
                        span,
                        op,
                        left: ta,
                        right: tb,
                    });
                }
                Ty::Bool
            }
            BinOp::Div => {
                let ctx = "an operand of `/`";
                let (ta, tb) = (self.expect_number(a, ctx), self.expect_number(b, ctx));
                if ta == Ty::Error || tb == Ty::Error {
                    Ty::Error
                } else {
                    Ty::Real
                }
            }
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::FloorDiv | BinOp::Mod | BinOp::Pow => {
                let ctx = match op {
                    BinOp::Add => "an operand of `+`",
                    BinOp::Sub => "an operand of `-`",
                    BinOp::Mul => "an operand of `*`",
                    BinOp::FloorDiv => "an operand of `//`",
                    BinOp::Mod => "an operand of `%`",
                    _ => "an operand of `**`",
                };
                let ta = self.expect_number(a, ctx);
                let tb = self.expect_number(b, ctx);
                join(&[ta, tb])
            }
        }
    }
}

/// The type of an arithmetic result: `real` if any operand is real.
fn join(tys: &[Ty]) -> Ty {
    if tys.contains(&Ty::Error) {
        Ty::Error
    } else if tys.contains(&Ty::Real) {
        Ty::Real
    } else {
        Ty::Int
    }
}
