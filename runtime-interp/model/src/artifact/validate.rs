//! Validation of a decoded artifact before anything evaluates it. After
//! [`validate`] succeeds, every id and index is in range, the expression
//! pool is a DAG whose nodes refer only to earlier nodes, no expression is
//! deeper or (unfolded) larger than the limits, every expression mentions
//! only slots that are bound where it is evaluated, every plan reads a slot
//! only after assigning it and enumerates only a loop variable over that
//! loop's own range, kernel arities match the calls, and the loop tree
//! agrees with the statements' domains and sequential-order keys.
//!
//! What this buys: the evaluators ([`crate::plan::Plan::run`],
//! [`crate::program::Instance::for_each_task`], [`crate::query::Engine`])
//! cannot index out of range, recurse without bound or loop over anything
//! but the program's own loop ranges (and their work budget) on a
//! validated program. Type errors (a `bool` where an `int` is needed) are
//! not checked here: they are evaluation errors, which reject a plan
//! candidate or fail the sequential walk with a message.

use crate::artifact::{Artifact, ArtifactParts};
use crate::expr::{ExprRef, Node};
use crate::plan::{Plan, PlanStep, RangeStep};
use crate::program::{
    Arg, DomainItem, KernelDecl, ParamKind, Program, ProgramParts, Role, Statement, StmtId,
    TreeNode,
};

/// The limits a loaded artifact must respect. The defaults are documented
/// in `docs/artifact.md`; they are far above what real programs need and
/// low enough that a hostile artifact cannot exhaust memory or the stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Program parameters.
    pub params: usize,
    /// `require` conditions.
    pub requires: usize,
    /// Matrices.
    pub matrices: usize,
    /// Dimensions of one matrix.
    pub dims: usize,
    /// Kernels.
    pub kernels: usize,
    /// Parameters (and, separately, results) of one kernel.
    pub kernel_params: usize,
    /// Nodes in the expression pool.
    pub exprs: usize,
    /// Longest chain of nodes below (and including) any node.
    pub expr_depth: u32,
    /// Unfolded size (nodes counted once per use) of any node.
    pub expr_size: u64,
    /// Kernel-call statements.
    pub statements: usize,
    /// Loop variables of one statement.
    pub loop_depth: usize,
    /// Domain items of one statement.
    pub domain_items: usize,
    /// Reads (and, separately, writes) of one statement.
    pub accesses: usize,
    /// Nodes of the loop tree (loops, `if`s, branches and calls).
    pub tree_nodes: usize,
    /// Nesting of the loop tree (loops and `if`s).
    pub tree_depth: usize,
    /// Steps of one plan.
    pub plan_steps: usize,
    /// Slots of one plan.
    pub plan_slots: u32,
    /// Extra bounds of one enumeration step.
    pub range_bounds: usize,
    /// Partners of one access.
    pub partners: usize,
    /// Bytes of a name (program, parameter, matrix, kernel, variable).
    pub name_len: usize,
    /// Bytes of the source file name.
    pub file_name_len: usize,
    /// Expression nodes visited while validating, in all.
    pub work: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            params: 64,
            requires: 256,
            matrices: 1024,
            dims: 16,
            kernels: 1024,
            kernel_params: 256,
            exprs: 1 << 18,
            expr_depth: 1024,
            expr_size: 1_000_000,
            statements: 4096,
            loop_depth: 32,
            domain_items: 1024,
            accesses: 256,
            tree_nodes: 1 << 16,
            tree_depth: 128,
            plan_steps: 4096,
            plan_slots: 4096,
            range_bounds: 256,
            partners: 1 << 16,
            name_len: 256,
            file_name_len: 4096,
            work: 1 << 26,
        }
    }
}

/// Why a decoded artifact is not a usable program.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// More items of a kind than the limits allow.
    #[error("too many {what}: {count}, at most {limit}")]
    TooMany {
        /// What is counted.
        what: &'static str,
        /// How many there are.
        count: u64,
        /// The limit.
        limit: u64,
    },
    /// A name longer than the limit.
    #[error("{what} is {len} bytes long, at most {limit}")]
    NameTooLong {
        /// Which name.
        what: String,
        /// Its length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// A name that is not an identifier of the language: matrix names
    /// become file names (`M.npy`), so a name like `../x` or `/tmp/x` would
    /// write outside the output directory.
    #[error("{what} {name:?} is not an identifier (a letter or `_`, then letters, digits or `_`)")]
    NotIdentifier {
        /// Which name.
        what: String,
        /// The name, as found.
        name: String,
    },
    /// Two declarations with one name in a namespace that must keep them
    /// apart.
    #[error("{what} `{name}` is declared twice")]
    DuplicateName {
        /// What kind of name.
        what: &'static str,
        /// The name.
        name: String,
    },
    /// An id or index past the end of what it indexes.
    #[error("{at}: {what} {index} is out of range (there are {len})")]
    OutOfRange {
        /// Where the reference is.
        at: String,
        /// What it refers to.
        what: &'static str,
        /// The index.
        index: u64,
        /// How many there are.
        len: u64,
    },
    /// An expression node referring to itself or a later node.
    #[error("expression node {node} refers to node {child}, which is not before it")]
    ForwardReference {
        /// The node.
        node: u32,
        /// Its child.
        child: u32,
    },
    /// An expression nested too deeply.
    #[error("expression node {node} is nested {depth} deep, at most {limit}")]
    ExprTooDeep {
        /// The node.
        node: u32,
        /// Its depth.
        depth: u32,
        /// The limit.
        limit: u32,
    },
    /// An expression too large once shared nodes are unfolded.
    #[error("expression node {node} has {size} nodes once unfolded, at most {limit}")]
    ExprTooLarge {
        /// The node.
        node: u32,
        /// Its unfolded size (saturated at the limit + 1).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// An expression mentioning a slot that is not bound where it is
    /// evaluated (or, in a plan, not assigned yet).
    #[error("{at}: slot {slot} is read before it is bound")]
    UnboundSlot {
        /// Where the expression is used.
        at: String,
        /// The slot.
        slot: u32,
    },
    /// A constant outside its domain (a zero denominator, a log base
    /// below 2).
    #[error("{at}: {what} is {value}")]
    BadConstant {
        /// Where.
        at: String,
        /// What is wrong.
        what: &'static str,
        /// The value.
        value: i64,
    },
    /// Parts of the program that disagree with each other.
    #[error("{at}: {what}")]
    Inconsistent {
        /// Where.
        at: String,
        /// What disagrees.
        what: String,
    },
}

/// Validates an artifact's parts against the limits and makes the
/// artifact of them: the only way to a [`Program`] (the compiler's lowering
/// goes through [`Program::validate`]).
pub fn validate(parts: ArtifactParts, limits: &Limits) -> Result<Artifact, ValidationError> {
    check(&parts, limits)?;
    Ok(Artifact {
        compiler: parts.compiler,
        source: parts.source,
        program: Program(parts.program),
        lint: parts.lint,
    })
}

impl Program {
    /// Validates a program's parts against the limits and makes the
    /// program of them.
    pub fn validate(parts: ProgramParts, limits: &Limits) -> Result<Program, ValidationError> {
        check_program(&parts, limits)?;
        Ok(Program(parts))
    }
}

/// The checks of [`validate`] on an artifact, validated or not (the
/// writer checks again what it writes against the default limits).
pub(crate) fn check<P: AsRef<ProgramParts>>(
    artifact: &Artifact<P>,
    limits: &Limits,
) -> Result<(), ValidationError> {
    let p = artifact.program.as_ref();
    check_program(p, limits)?;
    let n = p.statements.len();
    if artifact.source.statements.len() != n {
        return Err(ValidationError::Inconsistent {
            at: "source map".into(),
            what: format!(
                "{} statement locations for {n} statements",
                artifact.source.statements.len()
            ),
        });
    }
    name(
        || "the source file name".into(),
        &artifact.source.file,
        limits.file_name_len,
    )?;
    name(
        || "the compiler name".into(),
        &artifact.compiler,
        limits.name_len,
    )?;
    if let Some(lint) = &artifact.lint {
        lint_record(lint, limits)?;
    }
    Ok(())
}

/// The program's own checks, in the order they may rely on each other.
fn check_program(p: &ProgramParts, limits: &Limits) -> Result<(), ValidationError> {
    let mut v = Validator::new(p, limits)?;
    v.declarations()?;
    v.statements()?;
    v.tree()?;
    v.plans()
}

/// A lint record lists a few rules, each `proved` or `checked`: an
/// artifact is written only when lint found no error.
fn lint_record(lint: &super::LintRecord, limits: &Limits) -> Result<(), ValidationError> {
    too_many("lint rules", lint.rules.len(), 64)?;
    for r in &lint.rules {
        ident(|| "a lint rule's code".into(), &r.code, limits.name_len)?;
        if r.status != "proved" && r.status != "checked" {
            return Err(ValidationError::Inconsistent {
                at: format!("the lint record of rule {}", r.code),
                what: format!(
                    "status {:?}: an artifact records only `proved` or `checked` rules",
                    r.status
                ),
            });
        }
    }
    Ok(())
}

fn too_many(what: &'static str, count: usize, limit: usize) -> Result<(), ValidationError> {
    if count > limit {
        Err(ValidationError::TooMany {
            what,
            count: count as u64,
            limit: limit as u64,
        })
    } else {
        Ok(())
    }
}

fn name(what: impl Fn() -> String, s: &str, limit: usize) -> Result<(), ValidationError> {
    if s.len() > limit {
        Err(ValidationError::NameTooLong {
            what: what(),
            len: s.len(),
            limit,
        })
    } else {
        Ok(())
    }
}

/// [`name`], and the name is an identifier (`[A-Za-z_][A-Za-z0-9_]*`).
fn ident(what: impl Fn() -> String, s: &str, limit: usize) -> Result<(), ValidationError> {
    name(&what, s, limit)?;
    let mut chars = s.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Ok(())
    } else {
        Err(ValidationError::NotIdentifier {
            what: what(),
            name: s.to_string(),
        })
    }
}

/// Refuses the first name that `names` yields twice.
fn distinct<'n>(
    what: &'static str,
    names: impl Iterator<Item = &'n str>,
) -> Result<(), ValidationError> {
    let mut seen = std::collections::BTreeSet::new();
    for n in names {
        if !seen.insert(n) {
            return Err(ValidationError::DuplicateName {
                what,
                name: n.to_string(),
            });
        }
    }
    Ok(())
}

fn in_range(
    at: impl Fn() -> String,
    what: &'static str,
    index: u32,
    len: usize,
) -> Result<(), ValidationError> {
    if (index as usize) < len {
        Ok(())
    } else {
        Err(ValidationError::OutOfRange {
            at: at(),
            what,
            index: u64::from(index),
            len: len as u64,
        })
    }
}

fn children(n: &Node) -> (Option<ExprRef>, Option<ExprRef>) {
    match *n {
        Node::Int(_) | Node::Real(_) | Node::Bool(_) | Node::Param(_) | Node::Slot(_) => {
            (None, None)
        }
        Node::Unary(_, a) | Node::Call(_, a) => (Some(a), None),
        Node::Binary(_, a, b) | Node::Call2(_, a, b) => (Some(a), Some(b)),
    }
}

struct Validator<'a> {
    p: &'a ProgramParts,
    limits: &'a Limits,
    /// Per node: one more than the largest slot it mentions (0: none).
    need: Vec<u32>,
    /// Per node: the generation it was last visited in.
    seen: Vec<u32>,
    generation: u32,
    work: u64,
    stack: Vec<u32>,
}

impl<'a> Validator<'a> {
    /// Checks the pool: references backwards only, parameters in range,
    /// depth and unfolded size within the limits.
    fn new(p: &'a ProgramParts, limits: &'a Limits) -> Result<Validator<'a>, ValidationError> {
        let nodes = p.exprs.nodes();
        too_many("expression nodes", nodes.len(), limits.exprs)?;
        too_many("parameters", p.params.len(), limits.params)?;
        let mut need = Vec::with_capacity(nodes.len());
        let mut depth: Vec<u32> = Vec::with_capacity(nodes.len());
        let mut size: Vec<u64> = Vec::with_capacity(nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            let i32_ = i as u32;
            let (a, b) = children(n);
            let (mut nd, mut d, mut s) = (0u32, 1u32, 1u64);
            for c in [a, b].into_iter().flatten() {
                if c.0 as usize >= i {
                    return Err(ValidationError::ForwardReference {
                        node: i32_,
                        child: c.0,
                    });
                }
                let k = c.0 as usize;
                nd = nd.max(need.get(k).copied().unwrap_or(0));
                d = d.max(depth.get(k).copied().unwrap_or(0).saturating_add(1));
                s = s.saturating_add(size.get(k).copied().unwrap_or(0));
            }
            match *n {
                Node::Param(k) => in_range(
                    || format!("expression node {i}"),
                    "parameter",
                    k,
                    p.params.len(),
                )?,
                Node::Slot(k) => nd = k.saturating_add(1),
                _ => {}
            }
            if d > limits.expr_depth {
                return Err(ValidationError::ExprTooDeep {
                    node: i32_,
                    depth: d,
                    limit: limits.expr_depth,
                });
            }
            if s > limits.expr_size {
                return Err(ValidationError::ExprTooLarge {
                    node: i32_,
                    size: s,
                    limit: limits.expr_size,
                });
            }
            need.push(nd);
            depth.push(d);
            size.push(s);
        }
        Ok(Validator {
            p,
            limits,
            need,
            seen: vec![0; nodes.len()],
            generation: 0,
            work: 0,
            stack: Vec::new(),
        })
    }

    /// An expression that may mention slots `0..bound` only.
    fn expr(&self, r: ExprRef, bound: u32, at: &dyn Fn() -> String) -> Result<(), ValidationError> {
        in_range(at, "expression", r.0, self.need.len())?;
        let need = self.need.get(r.0 as usize).copied().unwrap_or(0);
        if need > bound {
            return Err(ValidationError::UnboundSlot {
                at: at(),
                slot: need - 1,
            });
        }
        Ok(())
    }

    /// An expression that may mention only the slots marked in `known`.
    fn expr_known(
        &mut self,
        r: ExprRef,
        known: &[bool],
        at: &dyn Fn() -> String,
    ) -> Result<(), ValidationError> {
        self.expr(r, known.len() as u32, at)?;
        if self.need.get(r.0 as usize).copied().unwrap_or(0) == 0 {
            return Ok(());
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.seen.iter_mut().for_each(|s| *s = 0);
            self.generation = 1;
        }
        let nodes = self.p.exprs.nodes();
        self.stack.clear();
        self.stack.push(r.0);
        while let Some(i) = self.stack.pop() {
            let Some(seen) = self.seen.get_mut(i as usize) else {
                continue;
            };
            if *seen == self.generation {
                continue;
            }
            *seen = self.generation;
            self.work += 1;
            if self.work > self.limits.work {
                return Err(ValidationError::TooMany {
                    what: "expression nodes visited during validation",
                    count: self.work,
                    limit: self.limits.work,
                });
            }
            let Some(n) = nodes.get(i as usize) else {
                continue;
            };
            if let Node::Slot(s) = *n {
                if !known.get(s as usize).copied().unwrap_or(false) {
                    return Err(ValidationError::UnboundSlot { at: at(), slot: s });
                }
            }
            let (a, b) = children(n);
            for c in [a, b].into_iter().flatten() {
                if self.need.get(c.0 as usize).copied().unwrap_or(0) > 0 {
                    self.stack.push(c.0);
                }
            }
        }
        Ok(())
    }

    fn declarations(&mut self) -> Result<(), ValidationError> {
        let p = self.p;
        let l = self.limits;
        ident(|| "the program name".into(), &p.name, l.name_len)?;
        for (i, q) in p.params.iter().enumerate() {
            ident(|| format!("the name of parameter {i}"), &q.name, l.name_len)?;
        }
        too_many("requires", p.requires.len(), l.requires)?;
        for (i, &r) in p.requires.iter().enumerate() {
            self.expr(r, 0, &|| format!("require {}", i + 1))?;
        }
        too_many("matrices", p.matrices.len(), l.matrices)?;
        for (i, m) in p.matrices.iter().enumerate() {
            ident(|| format!("the name of matrix {i}"), &m.name, l.name_len)?;
            too_many("matrix dimensions", m.extents.len(), l.dims)?;
            for (d, &e) in m.extents.iter().enumerate() {
                self.expr(e, 0, &|| format!("extent {} of matrix `{}`", d + 1, m.name))?;
            }
            if m.zero && m.role != Role::Temporary {
                return Err(ValidationError::Inconsistent {
                    at: format!("matrix `{}`", m.name),
                    what: "only a temporary matrix may be a zero matrix".into(),
                });
            }
        }
        too_many("kernels", p.kernels.len(), l.kernels)?;
        for (i, k) in p.kernels.iter().enumerate() {
            ident(|| format!("the name of kernel {i}"), &k.name, l.name_len)?;
            too_many("kernel parameters", k.params.len(), l.kernel_params)?;
            too_many("kernel results", k.results.len(), l.kernel_params)?;
            for (n, _) in &k.params {
                ident(
                    || format!("a parameter of kernel `{}`", k.name),
                    n,
                    l.name_len,
                )?;
            }
            for n in &k.results {
                ident(|| format!("a result of kernel `{}`", k.name), n, l.name_len)?;
            }
        }
        // Parameters and matrices share one namespace; kernels have their
        // own. Two matrices of one name would be written to one file.
        distinct(
            "parameter or matrix",
            p.params
                .iter()
                .map(|q| q.name.as_str())
                .chain(p.matrices.iter().map(|m| m.name.as_str())),
        )?;
        distinct("kernel", p.kernels.iter().map(|k| k.name.as_str()))?;
        Ok(())
    }

    fn statements(&mut self) -> Result<(), ValidationError> {
        let p = self.p;
        too_many("statements", p.statements.len(), self.limits.statements)?;
        for (si, st) in p.statements.iter().enumerate() {
            self.statement(si, st)?;
        }
        Ok(())
    }

    /// Checks statement `si`: its kernel, loop variables, order keys,
    /// domain, accesses and arguments.
    fn statement(&self, si: usize, st: &Statement) -> Result<(), ValidationError> {
        let p = self.p;
        let l = self.limits;
        let here = || format!("statement {si} (line {})", st.line);
        in_range(here, "kernel", u32::from(st.kernel), p.kernels.len())?;
        let kernel = p.get_kernel(st.kernel);
        let depth = st.vars.len();
        too_many("loop variables of a statement", depth, l.loop_depth)?;
        for v in &st.vars {
            ident(|| format!("a loop variable of {}", here()), v, l.name_len)?;
        }
        if st.order.len() != depth + 1 {
            return Err(ValidationError::Inconsistent {
                at: here(),
                what: format!(
                    "{} order keys for {depth} loop variables (expected {})",
                    st.order.len(),
                    depth + 1
                ),
            });
        }
        too_many(
            "domain items of a statement",
            st.domain.len(),
            l.domain_items,
        )?;
        self.domain(st, &here)?;
        too_many("writes of a statement", st.writes.len(), l.accesses)?;
        too_many("reads of a statement", st.reads.len(), l.accesses)?;
        self.accesses(st, &here)?;
        let Some(kernel) = kernel else {
            return Ok(());
        };
        self.call_args(st, kernel, &here)
    }

    /// Checks the domain of `st` (at `here`): one loop per slot, in order,
    /// and every expression bound by the loops around it.
    fn domain(&self, st: &Statement, here: &dyn Fn() -> String) -> Result<(), ValidationError> {
        let depth = st.vars.len();
        let mut loops = 0u32;
        for (k, item) in st.domain.iter().enumerate() {
            let at = || format!("{}, domain item {k}", here());
            match *item {
                DomainItem::Loop { slot, lo, hi, step } => {
                    if slot != loops {
                        return Err(ValidationError::Inconsistent {
                            at: at(),
                            what: format!("loop over slot {slot} where slot {loops} is next"),
                        });
                    }
                    for e in [lo, hi, step] {
                        self.expr(e, loops, &at)?;
                    }
                    loops += 1;
                }
                DomainItem::Guard { cond, .. } => self.expr(cond, loops, &at)?,
            }
        }
        if loops as usize != depth {
            return Err(ValidationError::Inconsistent {
                at: here(),
                what: format!("{loops} loops in the domain for {depth} loop variables"),
            });
        }
        Ok(())
    }

    /// Checks the writes and reads of `st` (at `here`): matrices in range,
    /// one index per dimension, indices bound by the loop variables.
    fn accesses(&self, st: &Statement, here: &dyn Fn() -> String) -> Result<(), ValidationError> {
        let p = self.p;
        let depth = st.vars.len();
        for (kind, list) in [("write", &st.writes), ("read", &st.reads)] {
            for (a, acc) in list.iter().enumerate() {
                let at = || format!("{}, {kind} {a}", here());
                in_range(at, "matrix", u32::from(acc.matrix), p.matrices.len())?;
                let dims = p.get_matrix(acc.matrix).map_or(0, |m| m.extents.len());
                if acc.indices.len() != dims {
                    return Err(ValidationError::Inconsistent {
                        at: at(),
                        what: format!(
                            "{} indices for a matrix of {dims} dimensions",
                            acc.indices.len()
                        ),
                    });
                }
                for &e in &acc.indices {
                    self.expr(e, depth as u32, &at)?;
                }
            }
        }
        Ok(())
    }

    /// Checks the arguments of `st` (at `here`) against `kernel`'s
    /// parameters: tiles name the reads in order, scalars are bound.
    fn call_args(
        &self,
        st: &Statement,
        kernel: &KernelDecl,
        here: &dyn Fn() -> String,
    ) -> Result<(), ValidationError> {
        let depth = st.vars.len();
        if st.writes.len() != kernel.results.len() || st.args.len() != kernel.params.len() {
            return Err(ValidationError::Inconsistent {
                at: here(),
                what: format!(
                    "kernel `{}` takes {} arguments and gives {} results, the call has {} \
                     and {}",
                    kernel.name,
                    kernel.params.len(),
                    kernel.results.len(),
                    st.args.len(),
                    st.writes.len()
                ),
            });
        }
        let mut next_read = 0u32;
        for (j, (arg, (_, kind))) in st.args.iter().zip(&kernel.params).enumerate() {
            let at = || format!("{}, argument {}", here(), j + 1);
            match (arg, *kind) {
                (Arg::Tile(i), ParamKind::Tile) if *i == next_read => next_read += 1,
                (Arg::Scalar(e), ParamKind::Int | ParamKind::Real) => {
                    self.expr(*e, depth as u32, &at)?
                }
                _ => {
                    return Err(ValidationError::Inconsistent {
                        at: at(),
                        what: format!(
                            "{} does not fit the kernel's {} parameter (tile \
                             arguments name the reads in order, next {next_read})",
                            match arg {
                                Arg::Tile(i) => format!("tile argument (read {i})"),
                                Arg::Scalar(_) => "a scalar argument".to_string(),
                            },
                            match kind {
                                ParamKind::Tile => "tile",
                                ParamKind::Int => "int",
                                ParamKind::Real => "real",
                            }
                        ),
                    })
                }
            }
        }
        if next_read as usize != st.reads.len() {
            return Err(ValidationError::Inconsistent {
                at: here(),
                what: format!("{} reads but {next_read} tile arguments", st.reads.len()),
            });
        }
        Ok(())
    }

    /// Recomputes what lowering derives from the loop tree (each call's
    /// domain and order keys) and compares.
    fn tree(&mut self) -> Result<(), ValidationError> {
        let mut walk = TreeWalk {
            counter: 0,
            nodes: 0,
            orders: Vec::new(),
            domain: Vec::new(),
            called: vec![false; self.p.statements.len()],
        };
        self.tree_nodes(&self.p.tree, 0, &mut walk)?;
        if let Some(s) = walk.called.iter().position(|c| !c) {
            return Err(ValidationError::Inconsistent {
                at: format!("statement {s}"),
                what: "the loop tree never calls it".into(),
            });
        }
        Ok(())
    }

    fn tree_nodes(
        &mut self,
        nodes: &[TreeNode],
        nesting: usize,
        w: &mut TreeWalk,
    ) -> Result<(), ValidationError> {
        let l = self.limits;
        too_many("nesting levels of the loop tree", nesting, l.tree_depth)?;
        let depth = w.orders.len() as u32;
        for node in nodes {
            w.nodes += 1;
            too_many("loop tree nodes", w.nodes, l.tree_nodes)?;
            w.counter += 1;
            match node {
                TreeNode::Loop(lp) => {
                    let at = || format!("the loop at line {}", lp.line);
                    if lp.slot != depth {
                        return Err(ValidationError::Inconsistent {
                            at: at(),
                            what: format!("loop over slot {} at nesting depth {depth}", lp.slot),
                        });
                    }
                    for e in [lp.lo, lp.hi, lp.step] {
                        self.expr(e, depth, &at)?;
                    }
                    w.domain.push(DomainItem::Loop {
                        slot: lp.slot,
                        lo: lp.lo,
                        hi: lp.hi,
                        step: lp.step,
                    });
                    w.orders.push(w.counter);
                    self.tree_nodes(&lp.body, nesting + 1, w)?;
                    w.orders.pop();
                    w.domain.pop();
                }
                TreeNode::If {
                    branches,
                    else_body,
                    line,
                } => {
                    let at = || format!("the `if` at line {line}");
                    self.tree_if(branches, else_body, &at, nesting, w)?;
                }
                TreeNode::Call(s) => self.tree_call(*s, w)?,
            }
        }
        Ok(())
    }

    /// Walks the branches of an `if` (at `at`) and its else branch, each
    /// under the guards that lead to it.
    fn tree_if(
        &mut self,
        branches: &[(ExprRef, Vec<TreeNode>)],
        else_body: &[TreeNode],
        at: &dyn Fn() -> String,
        nesting: usize,
        w: &mut TreeWalk,
    ) -> Result<(), ValidationError> {
        let l = self.limits;
        let depth = w.orders.len() as u32;
        for (k, (cond, body)) in branches.iter().enumerate() {
            self.expr(*cond, depth, at)?;
            w.nodes += 1;
            too_many("loop tree nodes", w.nodes, l.tree_nodes)?;
            self.tree_guarded(&branches[..k], Some(*cond), body, nesting, w)?;
        }
        self.tree_guarded(branches, None, else_body, nesting, w)
    }

    /// Walks one branch `body` of an `if` under the guards that lead to it:
    /// the conditions of the branches `passed` before it false, and its own
    /// condition `taken` (none for the else branch) true.
    fn tree_guarded(
        &mut self,
        passed: &[(ExprRef, Vec<TreeNode>)],
        taken: Option<ExprRef>,
        body: &[TreeNode],
        nesting: usize,
        w: &mut TreeWalk,
    ) -> Result<(), ValidationError> {
        let saved = w.domain.len();
        let negated = passed.iter().map(|(c, _)| (*c, false));
        for (cond, positive) in negated.chain(taken.map(|c| (c, true))) {
            w.domain.push(DomainItem::Guard { cond, positive });
        }
        too_many(
            "domain items of a statement",
            w.domain.len(),
            self.limits.domain_items,
        )?;
        self.tree_nodes(body, nesting + 1, w)?;
        w.domain.truncate(saved);
        Ok(())
    }

    /// Checks a call of statement `s` in the loop tree: called once, with
    /// the domain and order keys of its place in the tree.
    fn tree_call(&self, s: StmtId, w: &mut TreeWalk) -> Result<(), ValidationError> {
        let at = || format!("a call in the loop tree (order {})", w.counter);
        in_range(at, "statement", u32::from(s), self.p.statements.len())?;
        let Some(st) = self.p.get_statement(s) else {
            return Ok(());
        };
        let here = format!("statement {s} (line {})", st.line);
        if w.called.get(s.index()).copied().unwrap_or(true) {
            return Err(ValidationError::Inconsistent {
                at: here,
                what: "the loop tree calls it twice".into(),
            });
        }
        if let Some(c) = w.called.get_mut(s.index()) {
            *c = true;
        }
        if st.domain != w.domain {
            return Err(ValidationError::Inconsistent {
                at: here,
                what: "its domain differs from its loops and guards in the loop tree".into(),
            });
        }
        let mut order = w.orders.clone();
        order.push(w.counter);
        if st.order != order {
            return Err(ValidationError::Inconsistent {
                at: here,
                what: format!(
                    "order keys ({}) differ from its place in the loop tree ({})",
                    keys_text(&st.order),
                    keys_text(&order)
                ),
            });
        }
        Ok(())
    }

    fn plans(&mut self) -> Result<(), ValidationError> {
        let p = self.p;
        if p.plans.len() != p.statements.len() {
            return Err(ValidationError::Inconsistent {
                at: "plans".into(),
                what: format!(
                    "{} plan sets for {} statements",
                    p.plans.len(),
                    p.statements.len()
                ),
            });
        }
        for (si, (st, sp)) in p.statements.iter().zip(&p.plans).enumerate() {
            for (write, accesses, plans) in [
                (true, &st.writes, &sp.writes),
                (false, &st.reads, &sp.reads),
            ] {
                let kind = if write { "write" } else { "read" };
                if accesses.len() != plans.len() {
                    return Err(ValidationError::Inconsistent {
                        at: format!("statement {si} (line {})", st.line),
                        what: format!(
                            "{} {kind} plans for {} {kind}s",
                            plans.len(),
                            accesses.len()
                        ),
                    });
                }
                for (a, (acc, ap)) in accesses.iter().zip(plans).enumerate() {
                    let at = || format!("statement {si} (line {}), {kind} {a}", st.line);
                    too_many(
                        "partners of an access",
                        ap.partners.len(),
                        self.limits.partners,
                    )?;
                    for r in &ap.partners {
                        in_range(
                            at,
                            "partner statement",
                            u32::from(r.stmt),
                            p.statements.len(),
                        )?;
                        let other = p.get_statement(r.stmt);
                        let list = other.map(|o| if write { &o.reads } else { &o.writes });
                        let len = list.map_or(0, |l| l.len());
                        in_range(at, "partner access", r.access, len)?;
                        let m = list
                            .and_then(|l| l.get(r.access as usize))
                            .map(|x| x.matrix);
                        if m != Some(acc.matrix) {
                            return Err(ValidationError::Inconsistent {
                                at: at(),
                                what: format!(
                                    "partner (statement {}, access {}) is of another matrix",
                                    r.stmt, r.access
                                ),
                            });
                        }
                    }
                    let dims = acc.indices.len() as u32;
                    self.plan(&ap.inverse, st, dims, &at)?;
                }
            }
        }
        Ok(())
    }

    fn plan(
        &mut self,
        plan: &Plan,
        st: &crate::program::Statement,
        dims: u32,
        at: &dyn Fn() -> String,
    ) -> Result<(), ValidationError> {
        let l = self.limits;
        let depth = st.vars.len() as u32;
        plan_shape(plan, depth, dims, l, at)?;
        too_many("plan steps", plan.steps.len(), l.plan_steps)?;
        let mut known = vec![false; plan.slots as usize];
        for s in known.iter_mut().skip(depth as usize).take(dims as usize) {
            *s = true;
        }
        for (k, step) in plan.steps.iter().enumerate() {
            let here = || format!("{}, plan step {k}", at());
            self.plan_step(plan, st, step, &known, &here)?;
            if let Some(s) = step.assigned_slot().and_then(|s| known.get_mut(s as usize)) {
                *s = true;
            }
        }
        if let Some(s) = known.iter().take(depth as usize).position(|k| !k) {
            return Err(ValidationError::UnboundSlot {
                at: format!("{}, the plan's answer", at()),
                slot: s as u32,
            });
        }
        Ok(())
    }

    /// Checks one step of `plan` (for `st`, at `here`) given the slots
    /// `known` before it: its expressions use only known slots, its
    /// constants are valid and the slot it sets is in range.
    fn plan_step(
        &mut self,
        plan: &Plan,
        st: &Statement,
        step: &PlanStep,
        known: &[bool],
        here: &dyn Fn() -> String,
    ) -> Result<(), ValidationError> {
        let target = |slot: u32| in_range(here, "slot", slot, plan.slots as usize);
        match step {
            PlanStep::Set { slot, value } => {
                self.expr_known(*value, known, here)?;
                target(*slot)?;
            }
            PlanStep::SetDiv { slot, num, den } => {
                self.expr_known(*num, known, here)?;
                if *den == 0 {
                    return Err(ValidationError::BadConstant {
                        at: here(),
                        what: "the denominator",
                        value: 0,
                    });
                }
                target(*slot)?;
            }
            PlanStep::SetLog { slot, value, base } => {
                self.expr_known(*value, known, here)?;
                if *base < 2 {
                    return Err(ValidationError::BadConstant {
                        at: here(),
                        what: "the logarithm's base (at least 2)",
                        value: *base,
                    });
                }
                target(*slot)?;
            }
            PlanStep::Check { cond } => self.expr_known(*cond, known, here)?,
            PlanStep::CheckRange { slot, lo, hi } => {
                target(*slot)?;
                if !known.get(*slot as usize).copied().unwrap_or(false) {
                    return Err(ValidationError::UnboundSlot {
                        at: here(),
                        slot: *slot,
                    });
                }
                self.expr_known(*lo, known, here)?;
                self.expr_known(*hi, known, here)?;
            }
            PlanStep::Range(r) => {
                self.range_step(st, r, known, here)?;
                target(r.slot)?;
            }
        }
        Ok(())
    }

    /// Checks the expressions of an enumeration step (at `here`), which
    /// must run over one of `st`'s own loops.
    fn range_step(
        &mut self,
        st: &Statement,
        r: &RangeStep,
        known: &[bool],
        here: &dyn Fn() -> String,
    ) -> Result<(), ValidationError> {
        // An enumeration runs over one of the statement's own
        // loops, so it never enumerates more values than the
        // program's loop does.
        let own = st.domain.iter().any(|d| {
            *d == DomainItem::Loop {
                slot: r.slot,
                lo: r.lo,
                hi: r.hi,
                step: r.step,
            }
        });
        if !own {
            return Err(ValidationError::Inconsistent {
                at: here(),
                what: format!(
                    "enumeration of slot {} is not over one of the statement's loops",
                    r.slot
                ),
            });
        }
        for e in [r.lo, r.hi, r.step] {
            self.expr_known(e, known, here)?;
        }
        too_many(
            "bounds of an enumeration",
            r.lower.len() + r.upper.len(),
            self.limits.range_bounds,
        )?;
        for e in r.lower.iter().chain(&r.upper) {
            self.expr_known(*e, known, here)?;
        }
        Ok(())
    }
}

/// Checks a plan's depth, inputs and slot count against the access's
/// `depth` loop variables and `dims` tile coordinates (at `at`).
fn plan_shape(
    plan: &Plan,
    depth: u32,
    dims: u32,
    l: &Limits,
    at: &dyn Fn() -> String,
) -> Result<(), ValidationError> {
    let bad = |what: String| ValidationError::Inconsistent { at: at(), what };
    if plan.depth != depth || plan.inputs != dims {
        return Err(bad(format!(
            "plan for {} loop variables and {} tile coordinates, the access has {depth} and \
             {dims}",
            plan.depth, plan.inputs
        )));
    }
    if plan.slots > l.plan_slots || plan.slots < depth + dims {
        return Err(bad(format!(
            "plan with {} slots (needs {} to {})",
            plan.slots,
            depth + dims,
            l.plan_slots
        )));
    }
    Ok(())
}

struct TreeWalk {
    counter: u32,
    nodes: usize,
    orders: Vec<u32>,
    domain: Vec<DomainItem>,
    called: Vec<bool>,
}

/// Order keys as `0, 2, 1`.
fn keys_text(keys: &[u32]) -> String {
    keys.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
