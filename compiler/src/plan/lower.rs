//! Lowering of a resolved, typed program to the index-constraint IR, which
//! is the runtime's program model ([`lpk_model::program`]): every
//! kernel call becomes a [`Statement`] with its iteration domain (enclosing
//! loops with bounds and steps, every guard on the path with skipped
//! branches negated) and its tile accesses as index expressions over the
//! loop variables (slots) and the parameters; `let`s are substituted.
//!
//! `ceil`/`floor` of `log2(int)`, of `int / int` and of
//! `log(int) / log(int)` become exact integer operations here, so no
//! evaluator ever rounds a float for them.
//!
//! Precondition: the module has no resolve or type errors. A broken
//! invariant of the checked HIR (a variable bound by nothing, a built-in
//! without its arguments, more items than 32-bit ids name) is a
//! [`LowerError::Internal`], never a silent default.

use crate::diag::SourceMap;
use crate::front::hir::{self, Builtin, ExprId, ProgramDef, StmtKind, Ty, VarId};
use lpk_grammar::ast::{self, Span};
use lpk_model::expr::{BinOp, ExprPool, ExprRef, Func, Func2, Node, UnOp};
use lpk_model::program::{
    Access, Arg, DomainItem, KernelDecl, LoopNode, MatrixDecl, ParamDecl, ParamKind, Role,
    Statement, TreeNode,
};
use lpk_model::{KernelId, MatrixId, StmtId};
use std::collections::HashMap;

/// Why lowering failed. Lowering runs on checked programs only, so every
/// failure is a compiler bug, reported as such and never blamed on the
/// user.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LowerError {
    /// A broken invariant of the checked HIR.
    #[error("internal compiler error while lowering: {0}")]
    Internal(#[from] InternalError),
    /// The lowered program fails the validation every program passes
    /// before anything evaluates it: beyond an artifact's limits (far above
    /// what real programs need), or a lowering bug.
    #[error("the compiled program cannot be used: {0}")]
    Invalid(#[from] lpk_model::artifact::ValidationError),
}

/// A broken invariant of the checked HIR, met while lowering.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InternalError {
    /// A variable used with no binding in scope (resolve binds every use).
    #[error("variable `{name}` is used but bound by nothing in scope")]
    UnboundVariable {
        /// The variable's name.
        name: String,
        /// The use.
        span: Span,
    },
    /// A built-in called without the arguments resolve checked (E0112).
    #[error("built-in `{builtin:?}` called with {found} arguments")]
    BuiltinArity {
        /// The built-in.
        builtin: Builtin,
        /// How many arguments it has.
        found: usize,
        /// The call.
        span: Span,
    },
    /// More items of a kind than a 32-bit id names.
    #[error("more {what} than a 32-bit id can name")]
    TooMany {
        /// What there are too many of.
        what: &'static str,
        /// Where the first one that does not fit is.
        span: Span,
    },
}

impl InternalError {
    /// Where it was met.
    pub fn span(&self) -> Span {
        match self {
            InternalError::UnboundVariable { span, .. }
            | InternalError::BuiltinArity { span, .. }
            | InternalError::TooMany { span, .. } => *span,
        }
    }
}

/// An index as a 32-bit id, or the internal error saying there are too
/// many `what`.
fn id(i: usize, what: &'static str, span: Span) -> Result<u32, InternalError> {
    id_as(u32::try_from, i, what, span)
}

/// An index as the id `make` builds of it (the model's checked
/// `from_index`), or the internal error saying there are too many `what`.
fn id_as<T, E>(
    make: impl FnOnce(usize) -> Result<T, E>,
    i: usize,
    what: &'static str,
    span: Span,
) -> Result<T, InternalError> {
    make(i).map_err(|_| InternalError::TooMany { what, span })
}

/// Lowers one program of a module.
pub fn lower(
    module: &hir::Module,
    program: &ProgramDef,
    sources: &SourceMap,
) -> Result<lpk_model::program::ProgramParts, LowerError> {
    let mut l = Lowerer {
        hir: program,
        sources,
        pool: ExprPool::default(),
        bindings: HashMap::new(),
        statements: Vec::new(),
        domain: Vec::new(),
        order: Vec::new(),
        loop_names: Vec::new(),
        counter: 0,
    };
    for (i, &v) in program.param_vars.iter().enumerate() {
        let index = id(i, "parameters", program.name_span)?;
        l.bindings.insert(v, Binding::Node(Node::Param(index)));
    }
    let requires = program
        .requires
        .iter()
        .map(|&e| l.expr(e))
        .collect::<Result<_, _>>()?;
    let mut matrices = Vec::with_capacity(program.matrices.len());
    for m in &program.matrices {
        matrices.push(MatrixDecl {
            name: m.name.clone(),
            role: match m.role {
                ast::Role::Input => Role::Input,
                ast::Role::Output => Role::Output,
                ast::Role::Temporary => Role::Temporary,
            },
            extents: m
                .extents
                .iter()
                .map(|&e| l.expr(e))
                .collect::<Result<_, _>>()?,
            zero: m.zero,
        });
    }
    let tree = l.block(&program.body, 0)?;
    Ok(lpk_model::program::ProgramParts {
        name: program.name.clone(),
        params: program
            .params
            .iter()
            .map(|p| ParamDecl {
                name: p.name.clone(),
                default: p.default,
            })
            .collect(),
        requires,
        matrices,
        kernels: module
            .kernels
            .iter()
            .map(|k| KernelDecl {
                name: k.name.clone(),
                params: k
                    .params
                    .iter()
                    .map(|p| {
                        let kind = match p.kind {
                            hir::ParamKind::Tile => ParamKind::Tile,
                            hir::ParamKind::Scalar(ast::ScalarType::Int) => ParamKind::Int,
                            hir::ParamKind::Scalar(ast::ScalarType::Real) => ParamKind::Real,
                        };
                        (p.name.clone(), kind)
                    })
                    .collect(),
                results: k.results.clone(),
            })
            .collect(),
        exprs: l.pool,
        statements: l.statements,
        tree,
        plans: Vec::new(),
    })
}

#[derive(Clone, Copy)]
enum Binding {
    Node(Node),
    Expr(ExprRef),
}

struct Lowerer<'a> {
    hir: &'a ProgramDef,
    sources: &'a SourceMap,
    pool: ExprPool,
    bindings: HashMap<VarId, Binding>,
    statements: Vec<Statement>,
    /// The domain of the current position: enclosing loops and guards.
    domain: Vec<DomainItem>,
    /// Pre-order numbers of the enclosing loops.
    order: Vec<u32>,
    /// Names of the enclosing loop variables, outermost first.
    loop_names: Vec<String>,
    counter: u32,
}

impl Lowerer<'_> {
    fn line(&self, span: Span) -> u32 {
        self.sources.line_col(span.file, span.start).0
    }

    fn next_order(&mut self) -> u32 {
        self.counter += 1;
        self.counter
    }

    fn block(&mut self, stmts: &[hir::StmtId], depth: u32) -> Result<Vec<TreeNode>, InternalError> {
        let mut out = Vec::new();
        for &s in stmts {
            let stmt = self.hir.stmt(s);
            match &stmt.kind {
                StmtKind::Let(l) => {
                    let value = self.expr(l.value)?;
                    self.bindings.insert(l.var, Binding::Expr(value));
                }
                StmtKind::For(f) => {
                    let order = self.next_order();
                    let (lo, hi, step) = (self.expr(f.lo)?, self.expr(f.hi)?, self.expr(f.step)?);
                    self.bindings
                        .insert(f.var, Binding::Node(Node::Slot(depth)));
                    self.domain.push(DomainItem::Loop {
                        slot: depth,
                        lo,
                        hi,
                        step,
                    });
                    self.order.push(order);
                    self.loop_names.push(self.hir.var(f.var).name.clone());
                    let body = self.block(&f.body, depth + 1)?;
                    self.loop_names.pop();
                    self.order.pop();
                    self.domain.pop();
                    out.push(TreeNode::Loop(LoopNode {
                        slot: depth,
                        lo,
                        hi,
                        step,
                        body,
                        line: self.line(stmt.span),
                    }));
                }
                StmtKind::If(i) => {
                    self.next_order();
                    let conds: Vec<ExprRef> = i
                        .branches
                        .iter()
                        .map(|(c, _)| self.expr(*c))
                        .collect::<Result<_, _>>()?;
                    let mut branches = Vec::new();
                    for (k, ((_, body), &cond)) in i.branches.iter().zip(&conds).enumerate() {
                        let saved = self.domain.len();
                        for &c in conds.iter().take(k) {
                            self.domain.push(DomainItem::Guard {
                                cond: c,
                                positive: false,
                            });
                        }
                        self.domain.push(DomainItem::Guard {
                            cond,
                            positive: true,
                        });
                        let nodes = self.block(body, depth)?;
                        self.domain.truncate(saved);
                        branches.push((cond, nodes));
                    }
                    let saved = self.domain.len();
                    for &c in &conds {
                        self.domain.push(DomainItem::Guard {
                            cond: c,
                            positive: false,
                        });
                    }
                    let else_body = match &i.else_body {
                        Some(b) => self.block(b, depth)?,
                        None => Vec::new(),
                    };
                    self.domain.truncate(saved);
                    out.push(TreeNode::If {
                        branches,
                        else_body,
                        line: self.line(stmt.span),
                    });
                }
                StmtKind::Call(call) => {
                    let order = self.next_order();
                    let index = id_as(
                        StmtId::from_index,
                        self.statements.len(),
                        "kernel calls",
                        stmt.span,
                    )?;
                    let stmt_out = self.call(call, stmt.span, depth, order)?;
                    self.statements.push(stmt_out);
                    out.push(TreeNode::Call(index));
                }
            }
        }
        Ok(out)
    }

    fn access(&mut self, a: &hir::Access) -> Result<Access, InternalError> {
        Ok(Access {
            matrix: id_as(MatrixId::from_index, a.matrix.index(), "matrices", a.span)?,
            indices: a
                .indices
                .iter()
                .map(|&i| self.expr(i))
                .collect::<Result<_, _>>()?,
            span: (a.span.start, a.span.end),
        })
    }

    fn call(
        &mut self,
        call: &hir::Call,
        span: Span,
        depth: u32,
        order: u32,
    ) -> Result<Statement, InternalError> {
        let writes = call
            .outputs
            .iter()
            .map(|a| self.access(a))
            .collect::<Result<_, _>>()?;
        let mut reads = Vec::new();
        let mut args = Vec::new();
        for arg in &call.args {
            match arg {
                hir::Arg::Tile(a) => {
                    args.push(Arg::Tile(id(reads.len(), "tile arguments", a.span)?));
                    let acc = self.access(a)?;
                    reads.push(acc);
                }
                hir::Arg::Scalar(e) => {
                    let r = self.expr(*e)?;
                    args.push(Arg::Scalar(r));
                }
            }
        }
        let vars = self.loop_names.clone();
        let mut order_list = self.order.clone();
        order_list.push(order);
        debug_assert_eq!(vars.len(), depth as usize);
        Ok(Statement {
            kernel: id_as(
                KernelId::from_index,
                call.kernel.index(),
                "kernels",
                call.kernel_span,
            )?,
            line: call.line,
            column: call.column,
            span: (span.start, span.end),
            vars,
            domain: self.domain.clone(),
            writes,
            reads,
            args,
            order: order_list,
        })
    }

    fn node(&mut self, n: Node) -> ExprRef {
        self.pool.add(n)
    }

    fn ty(&self, e: ExprId) -> Ty {
        self.hir.expr(e).ty
    }

    fn expr(&mut self, e: ExprId) -> Result<ExprRef, InternalError> {
        let kind = self.hir.expr(e).kind.clone();
        Ok(match kind {
            hir::ExprKind::Int(v) => self.node(Node::Int(v)),
            hir::ExprKind::Real(v) => self.node(Node::Real(v)),
            hir::ExprKind::Bool(v) => self.node(Node::Bool(v)),
            hir::ExprKind::Var(v) => match self.bindings.get(&v).copied() {
                Some(Binding::Node(n)) => self.node(n),
                Some(Binding::Expr(r)) => r,
                None => {
                    return Err(InternalError::UnboundVariable {
                        name: self.hir.var(v).name.clone(),
                        span: self.hir.expr(e).span,
                    })
                }
            },
            hir::ExprKind::Unary(op, a) => {
                let a = self.expr(a)?;
                let op = match op {
                    ast::UnOp::Neg => UnOp::Neg,
                    ast::UnOp::Not => UnOp::Not,
                };
                self.node(Node::Unary(op, a))
            }
            hir::ExprKind::Binary(op, a, b) => {
                let (a, b) = (self.expr(a)?, self.expr(b)?);
                self.node(Node::Binary(bin_op(op), a, b))
            }
            hir::ExprKind::Call(f, args) => self.call_builtin(f, &args, self.hir.expr(e).span)?,
        })
    }

    fn call_builtin(
        &mut self,
        f: Builtin,
        args: &[ExprId],
        span: Span,
    ) -> Result<ExprRef, InternalError> {
        if let (Builtin::Ceil | Builtin::Floor, [x]) = (f, args) {
            if let Some(r) = self.exact_rounding(f == Builtin::Ceil, *x)? {
                return Ok(r);
            }
        }
        let lowered: Vec<ExprRef> = args
            .iter()
            .map(|&a| self.expr(a))
            .collect::<Result<_, _>>()?;
        let Some((&first, rest)) = lowered.split_first() else {
            return Err(InternalError::BuiltinArity {
                builtin: f,
                found: 0,
                span,
            });
        };
        let func = match f {
            Builtin::Ceil => Func::Ceil,
            Builtin::Floor => Func::Floor,
            Builtin::Log2 => Func::Log2,
            Builtin::Log => Func::Log,
            Builtin::Abs => Func::Abs,
            Builtin::Min | Builtin::Max => {
                let op = if f == Builtin::Min {
                    BinOp::Min
                } else {
                    BinOp::Max
                };
                let mut acc = first;
                for &b in rest {
                    acc = self.node(Node::Binary(op, acc, b));
                }
                return Ok(acc);
            }
        };
        Ok(self.node(Node::Call(func, first)))
    }

    /// `ceil`/`floor` of `log2(int)`, `int / int` or `log(int) / log(int)`
    /// as exact integer operations.
    fn exact_rounding(&mut self, ceil: bool, x: ExprId) -> Result<Option<ExprRef>, InternalError> {
        Ok(match self.hir.expr(x).kind.clone() {
            hir::ExprKind::Call(Builtin::Log2, args)
                if args.len() == 1 && self.ty(args[0]) == Ty::Int =>
            {
                let a = self.expr(args[0])?;
                let f = if ceil {
                    Func::CeilLog2
                } else {
                    Func::FloorLog2
                };
                Some(self.node(Node::Call(f, a)))
            }
            hir::ExprKind::Binary(ast::BinOp::Div, a, b) => {
                let logs = (self.hir.expr(a).kind.clone(), self.hir.expr(b).kind.clone());
                if let (
                    hir::ExprKind::Call(Builtin::Log, la),
                    hir::ExprKind::Call(Builtin::Log, lb),
                ) = logs
                {
                    if la.len() == 1
                        && lb.len() == 1
                        && self.ty(la[0]) == Ty::Int
                        && self.ty(lb[0]) == Ty::Int
                    {
                        let (x, y) = (self.expr(la[0])?, self.expr(lb[0])?);
                        let f = if ceil {
                            Func2::CeilLogB
                        } else {
                            Func2::FloorLogB
                        };
                        return Ok(Some(self.node(Node::Call2(f, x, y))));
                    }
                }
                if self.ty(a) == Ty::Int && self.ty(b) == Ty::Int {
                    let (x, y) = (self.expr(a)?, self.expr(b)?);
                    return Ok(Some(if ceil {
                        self.node(Node::Call2(Func2::CeilDiv, x, y))
                    } else {
                        self.node(Node::Binary(BinOp::FloorDiv, x, y))
                    }));
                }
                None
            }
            _ => None,
        })
    }
}

fn bin_op(op: ast::BinOp) -> BinOp {
    match op {
        ast::BinOp::Or => BinOp::Or,
        ast::BinOp::And => BinOp::And,
        ast::BinOp::Eq => BinOp::Eq,
        ast::BinOp::Ne => BinOp::Ne,
        ast::BinOp::Lt => BinOp::Lt,
        ast::BinOp::Le => BinOp::Le,
        ast::BinOp::Gt => BinOp::Gt,
        ast::BinOp::Ge => BinOp::Ge,
        ast::BinOp::Add => BinOp::Add,
        ast::BinOp::Sub => BinOp::Sub,
        ast::BinOp::Mul => BinOp::Mul,
        ast::BinOp::Div => BinOp::Div,
        ast::BinOp::FloorDiv => BinOp::FloorDiv,
        ast::BinOp::Mod => BinOp::Mod,
        ast::BinOp::Pow => BinOp::Pow,
    }
}
