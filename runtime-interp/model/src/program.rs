//! The program model: what a runtime needs to know of a compiled program.
//! It is the compiler's index-constraint IR and the artifact's data model at
//! once: parameters and `require`s, matrices with extents and roles,
//! kernels, the loop tree (for sequential enumeration), and per kernel-call
//! statement its iteration domain and tile accesses, plus the dependence
//! plans that answer `children`/`parents` without a solver.
//!
//! Slots: an expression in a statement's context refers to the statement's
//! loop variables as `Slot(0)` (outermost) to `Slot(depth - 1)`; `let`s are
//! already substituted. A plan adds its inputs (tile coordinates) and
//! temporaries after those (see [`crate::plan`]).

use crate::expr::{Env, EvalError, ExprPool, ExprRef};
pub use crate::ids::{KernelId, MatrixId, StmtId};
use crate::plan::Plan;
use crate::stdlib::{declaration_text, ScalarKind};
use serde::{Deserialize, Serialize};

/// The role of a matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Read-only input.
    Input,
    /// Kept after the run.
    Output,
    /// Intermediate.
    Temporary,
}

/// A program parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamDecl {
    /// Its name.
    pub name: String,
    /// Its default value.
    pub default: Option<i64>,
}

/// A matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatrixDecl {
    /// Its name.
    pub name: String,
    /// Input, output or temporary.
    pub role: Role,
    /// Extent expressions over the parameters, one per dimension.
    pub extents: Vec<ExprRef>,
    /// A zero matrix (`matrix T[..] = 0;`): a tile no task writes reads as
    /// a zero tile, so reading it is no violation and gives no edge. Only
    /// a [`Role::Temporary`] matrix may be one (artifact validation checks
    /// it). Absent in artifacts of format 1, which load as `false`.
    #[serde(default)]
    pub zero: bool,
}

/// The kind of a kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    /// A tile.
    Tile,
    /// An int scalar.
    Int,
    /// A real scalar.
    Real,
}

impl ParamKind {
    /// The scalar type of a scalar parameter (`None` for a tile), as a
    /// standard [`Signature`](crate::stdlib::Signature) writes it.
    pub fn scalar(self) -> Option<ScalarKind> {
        match self {
            ParamKind::Tile => None,
            ParamKind::Int => Some(ScalarKind::Int),
            ParamKind::Real => Some(ScalarKind::Real),
        }
    }
}

/// A kernel signature.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelDecl {
    /// Its name.
    pub name: String,
    /// Parameter names and kinds.
    pub params: Vec<(String, ParamKind)>,
    /// Result names.
    pub results: Vec<String>,
}

impl KernelDecl {
    /// Its declaration as a program writes it, without the `;`:
    /// `kernel scale(a, alpha: real) -> (b)`.
    pub fn declaration(&self) -> String {
        let params = self.params.iter().map(|(n, k)| (n.as_str(), k.scalar()));
        declaration_text(&self.name, params, &self.results)
    }
}

/// One tile access of a statement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Access {
    /// The matrix.
    pub matrix: MatrixId,
    /// Index expressions over the statement's slots and the parameters.
    pub indices: Vec<ExprRef>,
    /// Source span (byte offsets) of the reference.
    pub span: (u32, u32),
}

/// A constraint of a statement's iteration domain, in program order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DomainItem {
    /// `for slot in range(lo, hi, step)`: bounds over the outer slots.
    Loop {
        /// The loop variable's slot.
        slot: u32,
        /// Lower bound.
        lo: ExprRef,
        /// Upper bound (exclusive).
        hi: ExprRef,
        /// Step (positive).
        step: ExprRef,
    },
    /// A condition that must be `positive` for the statement to run.
    Guard {
        /// The condition.
        cond: ExprRef,
        /// True for an `if` branch taken, false for a branch skipped.
        positive: bool,
    },
}

/// A kernel argument.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arg {
    /// The `i`th read access of the statement.
    Tile(u32),
    /// A scalar expression.
    Scalar(ExprRef),
}

/// A kernel-call statement: each execution is a task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    /// The kernel.
    pub kernel: KernelId,
    /// 1-based source line of the statement's first token.
    pub line: u32,
    /// 1-based column of that token.
    pub column: u32,
    /// Source span (byte offsets) of the statement.
    pub span: (u32, u32),
    /// Names of the enclosing loop variables, outermost first (slot order).
    pub vars: Vec<String>,
    /// The iteration domain, outermost first.
    pub domain: Vec<DomainItem>,
    /// Tiles written, one per kernel result.
    pub writes: Vec<Access>,
    /// Tiles read, in argument order.
    pub reads: Vec<Access>,
    /// The arguments in kernel-parameter order.
    pub args: Vec<Arg>,
    /// Pre-order number of each enclosing loop and of the statement itself
    /// in the loop tree (length `vars.len() + 1`), for sequential order.
    pub order: Vec<u32>,
}

impl Statement {
    /// The number of loop variables.
    pub fn depth(&self) -> usize {
        self.vars.len()
    }
}

/// A node of the loop tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TreeNode {
    /// A loop (see [`LoopNode`]).
    Loop(LoopNode),
    /// An `if` chain.
    If {
        /// Conditions and bodies.
        branches: Vec<(ExprRef, Vec<TreeNode>)>,
        /// The `else` body.
        else_body: Vec<TreeNode>,
        /// 1-based line of the `if`.
        line: u32,
    },
    /// A kernel call: the statement.
    Call(StmtId),
}

/// A loop of the loop tree over `slot` (= its depth). Serialised as the
/// fields of [`TreeNode::Loop`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoopNode {
    /// The slot (nesting depth).
    pub slot: u32,
    /// Lower bound.
    pub lo: ExprRef,
    /// Upper bound.
    pub hi: ExprRef,
    /// Step.
    pub step: ExprRef,
    /// The body.
    pub body: Vec<TreeNode>,
    /// 1-based line of the `for` (for evaluation errors).
    pub line: u32,
}

/// Which reader accesses a write access may feed, and which writer
/// accesses a read access may come from: the pairs the compiler could not
/// prove disjoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccessRef {
    /// The statement.
    pub stmt: StmtId,
    /// The access's index among the statement's writes or reads.
    pub access: u32,
}

/// The plans of one access.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccessPlans {
    /// Given a tile of this access's matrix, every iteration of the
    /// statement whose access touches it.
    pub inverse: Plan,
    /// For a write: the read accesses it may feed. For a read: the write
    /// accesses it may read from.
    pub partners: Vec<AccessRef>,
}

/// The plans of one statement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatementPlans {
    /// One per write access.
    pub writes: Vec<AccessPlans>,
    /// One per read access.
    pub reads: Vec<AccessPlans>,
}

/// The parts of a compiled program, as the compiler lowers them and an
/// artifact stores them: not yet validated. Only
/// [`Program::validate`](crate::artifact::validate) makes a [`Program`] of
/// them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProgramParts {
    /// Its name.
    pub name: String,
    /// Its parameters.
    pub params: Vec<ParamDecl>,
    /// `require` conditions over the parameters.
    pub requires: Vec<ExprRef>,
    /// The matrices.
    pub matrices: Vec<MatrixDecl>,
    /// The kernels.
    pub kernels: Vec<KernelDecl>,
    /// Every expression.
    pub exprs: ExprPool,
    /// The kernel-call statements, in source order.
    pub statements: Vec<Statement>,
    /// The loop tree.
    pub tree: Vec<TreeNode>,
    /// The plans, one per statement (empty until the solver ran).
    pub plans: Vec<StatementPlans>,
}

/// A validated compiled program: every id and index in range, the
/// expression pool a DAG of bounded depth, the plans well formed (see
/// [`crate::artifact::validate`]). The evaluators, queries and runtimes
/// trust these invariants, so a `Program` is built only by
/// [`Program::validate`] (the compiler's lowering and the artifact loader
/// both go through it) and its parts are read, never changed, through
/// `Deref` (`program.statements`); [`Program::into_parts`] gives them back
/// to be changed and validated again.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Program(
    /// Written only by `artifact::validate`, after it checked them.
    pub(crate) ProgramParts,
);

impl std::ops::Deref for Program {
    type Target = ProgramParts;

    fn deref(&self) -> &ProgramParts {
        &self.0
    }
}

impl AsRef<ProgramParts> for Program {
    fn as_ref(&self) -> &ProgramParts {
        &self.0
    }
}

impl AsRef<ProgramParts> for ProgramParts {
    fn as_ref(&self) -> &ProgramParts {
        self
    }
}

/// A parameter binding that violates the program's contract.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BindError {
    /// A parameter with no value and no default.
    #[error("parameter `{0}` needs a value (-p {0}=INT)")]
    Missing(String),
    /// A name that is not a parameter.
    #[error("`{name}` is not a parameter of program `{program}` (its parameters: {known})")]
    Unknown {
        /// The name given.
        name: String,
        /// The program.
        program: String,
        /// Its parameters, comma-separated.
        known: String,
    },
    /// A `require` that does not hold.
    #[error("requirement {index} of the program is not met: `{text}`")]
    Require {
        /// 1-based index of the `require`.
        index: usize,
        /// The condition.
        text: String,
    },
    /// A `require` or extent that cannot be evaluated.
    #[error("cannot evaluate {what}: {error}")]
    Eval {
        /// Which expression.
        what: String,
        /// Why.
        error: EvalError,
    },
    /// A negative extent.
    #[error("matrix `{matrix}` has a negative extent ({value}) in dimension {dim}")]
    NegativeExtent {
        /// The matrix.
        matrix: String,
        /// 1-based dimension.
        dim: usize,
        /// The extent.
        value: i64,
    },
}

/// A program with its parameters bound and its extents evaluated.
#[derive(Clone, Debug)]
pub struct Instance<'p> {
    /// The program.
    pub program: &'p Program,
    /// Parameter values, in declaration order.
    pub params: Vec<i64>,
    /// Extents of each matrix.
    pub extents: Vec<Vec<i64>>,
}

impl ProgramParts {
    /// Whether `matrix` is a zero matrix: its tiles that no task writes
    /// read as zero tiles. `false` for an id out of range.
    pub fn is_zero(&self, matrix: MatrixId) -> bool {
        self.matrices.get(matrix.index()).is_some_and(|m| m.zero)
    }

    /// The parameters' names, in declaration order.
    pub fn param_names(&self) -> Vec<&str> {
        self.params.iter().map(|p| p.name.as_str()).collect()
    }

    /// The statement `id`. Panics if `id` is out of range: ids of a
    /// validated program (or of the compiler's own lowering) are in range;
    /// check ids from user input with [`ProgramParts::get_statement`].
    #[inline]
    pub fn statement(&self, id: StmtId) -> &Statement {
        &self.statements[id.index()]
    }

    /// The statement `id`, or `None` if out of range.
    #[inline]
    pub fn get_statement(&self, id: StmtId) -> Option<&Statement> {
        self.statements.get(id.index())
    }

    /// The plans of statement `id` (panics if out of range or before the
    /// solver ran, as indexing `plans` does).
    #[inline]
    pub fn plans_of(&self, id: StmtId) -> &StatementPlans {
        &self.plans[id.index()]
    }

    /// The matrix `id` (panics if out of range, as [`ProgramParts::statement`]).
    #[inline]
    pub fn matrix(&self, id: MatrixId) -> &MatrixDecl {
        &self.matrices[id.index()]
    }

    /// The matrix `id`, or `None` if out of range.
    #[inline]
    pub fn get_matrix(&self, id: MatrixId) -> Option<&MatrixDecl> {
        self.matrices.get(id.index())
    }

    /// The kernel `id` (panics if out of range, as [`ProgramParts::statement`]).
    #[inline]
    pub fn kernel(&self, id: KernelId) -> &KernelDecl {
        &self.kernels[id.index()]
    }

    /// The kernel `id`, or `None` if out of range.
    #[inline]
    pub fn get_kernel(&self, id: KernelId) -> Option<&KernelDecl> {
        self.kernels.get(id.index())
    }

    /// The statements with their ids, in source order. A program holds
    /// far fewer than 2^32 statements (the artifact validator allows 4096,
    /// and the compiler checks its own with [`StmtId::from_index`]); the
    /// ids are counted in `u32`, so iteration could never wrap.
    pub fn statement_ids(&self) -> impl Iterator<Item = (StmtId, &Statement)> + '_ {
        (0..=u32::MAX).map(StmtId::from_u32).zip(&self.statements)
    }

    /// The matrices with their ids, in declaration order (bounded as in
    /// [`ProgramParts::statement_ids`]).
    pub fn matrix_ids(&self) -> impl Iterator<Item = (MatrixId, &MatrixDecl)> + '_ {
        (0..=u32::MAX).map(MatrixId::from_u32).zip(&self.matrices)
    }

    /// The matrix named `name`, if the program has one.
    pub fn matrix_named(&self, name: &str) -> Option<MatrixId> {
        self.matrix_ids()
            .find(|(_, m)| m.name == name)
            .map(|(id, _)| id)
    }

    /// Renders an expression of a statement's context.
    pub fn expr_text(&self, r: ExprRef, vars: &[String]) -> String {
        let names = |n: crate::expr::Node| match n {
            crate::expr::Node::Param(i) => self
                .params
                .get(i as usize)
                .map(|p| p.name.clone())
                .unwrap_or_else(|| format!("param{i}")),
            crate::expr::Node::Slot(i) => vars
                .get(i as usize)
                .cloned()
                .unwrap_or_else(|| format!("t{}", i as usize - vars.len())),
            _ => String::new(),
        };
        let text = self.exprs.display(r, &names).to_string();
        text
    }
}

impl Program {
    /// Its parts, to change them (a validated program is never changed in
    /// place); validate them again to have a program.
    pub fn into_parts(self) -> ProgramParts {
        self.0
    }

    /// Binds parameters by name (defaults fill the rest) and checks the
    /// `require`s and extents.
    pub fn bind(&self, given: &[(String, i64)]) -> Result<Instance<'_>, BindError> {
        for (name, _) in given {
            if !self.params.iter().any(|p| &p.name == name) {
                return Err(BindError::Unknown {
                    name: name.clone(),
                    program: self.name.clone(),
                    known: self
                        .params
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        let mut values = Vec::with_capacity(self.params.len());
        for p in &self.params {
            let v = given
                .iter()
                .rev()
                .find(|(n, _)| *n == p.name)
                .map(|(_, v)| *v)
                .or(p.default)
                .ok_or_else(|| BindError::Missing(p.name.clone()))?;
            values.push(v);
        }
        self.bind_values(values)
    }

    /// Binds parameter values given in declaration order.
    pub fn bind_values(&self, params: Vec<i64>) -> Result<Instance<'_>, BindError> {
        let env = Env {
            params: &params,
            slots: &[],
        };
        for (i, &r) in self.requires.iter().enumerate() {
            let text = self.expr_text(r, &[]);
            match self.exprs.eval_bool(r, env) {
                Ok(true) => {}
                Ok(false) => return Err(BindError::Require { index: i + 1, text }),
                Err(error) => {
                    return Err(BindError::Eval {
                        what: format!("`require {text}`"),
                        error,
                    })
                }
            }
        }
        let mut extents = Vec::with_capacity(self.matrices.len());
        for m in &self.matrices {
            let mut ext = Vec::with_capacity(m.extents.len());
            for (d, &e) in m.extents.iter().enumerate() {
                let v = self
                    .exprs
                    .eval_int(e, env)
                    .map_err(|error| BindError::Eval {
                        what: format!("extent {} of matrix `{}`", d + 1, m.name),
                        error,
                    })?;
                if v < 0 {
                    return Err(BindError::NegativeExtent {
                        matrix: m.name.clone(),
                        dim: d + 1,
                        value: v,
                    });
                }
                ext.push(v);
            }
            extents.push(ext);
        }
        Ok(Instance {
            program: self,
            params,
            extents,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{PlanStep, RangeStep};

    /// A loop and an enumeration are written as the struct variants they
    /// were before they had a struct of their own (serde writes a newtype
    /// variant holding a struct as a struct variant, so the CBOR of an
    /// artifact keeps its bytes as this JSON does).
    #[test]
    fn a_loop_and_a_range_serialise_as_their_fields() {
        let e = ExprRef;
        let range = PlanStep::Range(RangeStep {
            slot: 1,
            lo: e(2),
            hi: e(3),
            step: e(4),
            lower: vec![e(5)],
            upper: vec![],
        });
        let json = r#"{"range":{"slot":1,"lo":2,"hi":3,"step":4,"lower":[5],"upper":[]}}"#;
        assert_eq!(serde_json::to_string(&range).unwrap(), json);
        assert_eq!(serde_json::from_str::<PlanStep>(json).unwrap(), range);
        let tree = TreeNode::Loop(LoopNode {
            slot: 0,
            lo: e(1),
            hi: e(2),
            step: e(3),
            body: vec![TreeNode::Call(crate::StmtId::from_index(0).unwrap())],
            line: 7,
        });
        let json = r#"{"loop":{"slot":0,"lo":1,"hi":2,"step":3,"body":[{"call":0}],"line":7}}"#;
        assert_eq!(serde_json::to_string(&tree).unwrap(), json);
        assert_eq!(serde_json::from_str::<TreeNode>(json).unwrap(), tree);
    }
}
