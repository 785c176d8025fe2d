//! Tasks, their names and their sequential order, and the sequential
//! enumeration of a program instance's tasks (the loop tree run in order).

use crate::expr::{Env, EvalError, ExprPool, ExprRef};
use crate::ids::{IdOverflow, MatrixId, StmtId};
use crate::program::{Access, DomainItem, Instance, LoopNode, Program, TreeNode};
use std::cmp::Ordering;
use std::fmt;
use std::ops::ControlFlow;

/// A task: a statement and the values of its loop variables.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Task {
    /// The statement.
    pub stmt: StmtId,
    /// Loop variable values, outermost first.
    pub vars: Vars,
}

/// How many loop variables a task keeps inline, without allocating.
const INLINE: usize = 6;

/// Loop variable values: inline up to six (every realistic loop nest), on
/// the heap beyond. Behaves as a slice.
#[derive(Clone)]
pub enum Vars {
    /// Up to [`INLINE`] values.
    Inline(u8, [i64; INLINE]),
    /// More.
    Heap(Box<[i64]>),
}

impl std::ops::Deref for Vars {
    type Target = [i64];
    fn deref(&self) -> &[i64] {
        match self {
            Vars::Inline(n, a) => &a[..*n as usize],
            Vars::Heap(b) => b,
        }
    }
}

impl From<&[i64]> for Vars {
    fn from(s: &[i64]) -> Vars {
        if s.len() <= INLINE {
            let mut a = [0; INLINE];
            a[..s.len()].copy_from_slice(s);
            Vars::Inline(s.len() as u8, a)
        } else {
            Vars::Heap(s.into())
        }
    }
}

impl From<Vec<i64>> for Vars {
    fn from(v: Vec<i64>) -> Vars {
        Vars::from(v.as_slice())
    }
}

impl PartialEq for Vars {
    fn eq(&self, o: &Vars) -> bool {
        **self == **o
    }
}
impl Eq for Vars {}
impl std::hash::Hash for Vars {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (**self).hash(h)
    }
}
impl PartialOrd for Vars {
    fn partial_cmp(&self, o: &Vars) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Vars {
    fn cmp(&self, o: &Vars) -> Ordering {
        (**self).cmp(&**o)
    }
}
impl fmt::Debug for Vars {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

/// A tile's name: a matrix and one index per dimension (no data; the
/// runtime's `kernels::Tile` holds a tile's numbers).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TileRef {
    /// The matrix.
    pub matrix: MatrixId,
    /// The indices.
    pub index: Vec<i64>,
}

/// Renders a task as `kernel@LINE(i=0, j=1)`.
pub struct TaskName<'a> {
    program: &'a Program,
    task: &'a Task,
}

impl Program {
    /// A displayable name of a task.
    pub fn task_name<'a>(&'a self, task: &'a Task) -> TaskName<'a> {
        TaskName {
            program: self,
            task,
        }
    }

    /// Renders a tile as `M[1, 2]`.
    pub fn tile_name(&self, tile: &TileRef) -> String {
        let name = self
            .matrices
            .get(tile.matrix.index())
            .map(|m| m.name.as_str())
            .unwrap_or("?");
        let idx: Vec<String> = tile.index.iter().map(|i| i.to_string()).collect();
        format!("{name}[{}]", idx.join(", "))
    }

    /// The tile `acc` names at `task` with parameters `params` (the oracle's
    /// and the exhaustive lint's one way from an access to its tile).
    pub fn tile_of(&self, params: &[i64], task: &Task, acc: &Access) -> Result<TileRef, EvalError> {
        let env = Env {
            params,
            slots: &task.vars,
        };
        let mut index = Vec::with_capacity(acc.indices.len());
        for &i in &acc.indices {
            index.push(self.exprs.eval_int(i, env)?);
        }
        Ok(TileRef {
            matrix: acc.matrix,
            index,
        })
    }

    /// Compares two tasks in sequential (program) order.
    pub fn sequential_cmp(&self, a: &Task, b: &Task) -> Ordering {
        let (Some(sa), Some(sb)) = (self.get_statement(a.stmt), self.get_statement(b.stmt)) else {
            return a.cmp(b);
        };
        // Keys interleave pre-order numbers of the enclosing loops with the
        // loop values: [loop0, v0, loop1, v1, ..., stmt].
        let n = sa.order.len().max(sb.order.len()) * 2;
        for k in 0..n {
            let ka = key_at(&sa.order, &a.vars, k);
            let kb = key_at(&sb.order, &b.vars, k);
            match ka.cmp(&kb) {
                Ordering::Equal => continue,
                other => return other,
            }
        }
        Ordering::Equal
    }

    /// Whether `vars` is an iteration of statement `stmt` in this instance.
    pub fn in_domain(&self, params: &[i64], stmt: StmtId, vars: &[i64]) -> Result<bool, EvalError> {
        let Some(s) = self.get_statement(stmt) else {
            return Ok(false);
        };
        if vars.len() != s.depth() {
            return Ok(false);
        }
        let env = Env {
            params,
            slots: vars,
        };
        for item in &s.domain {
            match item {
                DomainItem::Loop { slot, lo, hi, step } => {
                    let v = vars.get(*slot as usize).copied().unwrap_or(0);
                    let (lo, hi, step) = (
                        self.exprs.eval_int(*lo, env)?,
                        self.exprs.eval_int(*hi, env)?,
                        self.exprs.eval_int(*step, env)?,
                    );
                    if step <= 0 {
                        return Ok(false);
                    }
                    if v < lo || v >= hi || (v as i128 - lo as i128) % step as i128 != 0 {
                        return Ok(false);
                    }
                }
                DomainItem::Guard { cond, positive } => {
                    if self.exprs.eval_bool(*cond, env)? != *positive {
                        return Ok(false);
                    }
                }
            }
        }
        Ok(true)
    }
}

fn key_at(order: &[u32], vars: &[i64], k: usize) -> Option<i64> {
    if k.is_multiple_of(2) {
        order.get(k / 2).map(|&o| o as i64)
    } else {
        vars.get(k / 2).copied()
    }
}

impl fmt::Display for TaskName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(s) = self.program.get_statement(self.task.stmt) else {
            return write!(f, "?@?");
        };
        let kernel = self
            .program
            .get_kernel(s.kernel)
            .map(|k| k.name.as_str())
            .unwrap_or("?");
        write!(f, "{kernel}@{}", s.line)?;
        if self
            .program
            .statements
            .iter()
            .filter(|o| o.line == s.line)
            .count()
            > 1
        {
            write!(f, ":{}", s.column)?;
        }
        f.write_str("(")?;
        for (i, (n, v)) in s.vars.iter().zip(self.task.vars.iter()).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{n}={v}")?;
        }
        f.write_str(")")
    }
}

/// An evaluation error met while running the program sequentially.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("line {line}: {error}")]
pub struct WalkError {
    /// The line of the loop, `if` or statement being evaluated.
    pub line: u32,
    /// What went wrong.
    pub error: WalkErrorKind,
}

/// What went wrong during a sequential run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum WalkErrorKind {
    /// An expression failed.
    #[error("{0}")]
    Eval(EvalError),
    /// A loop step that is not positive.
    #[error("loop step must be positive, found {0}")]
    Step(i64),
    /// Too many loop iterations in a row without a task: a (possibly
    /// hostile) program whose loops run for ever without doing anything.
    #[error("{0} loop iterations in a row ran no task; refusing to go on (a loop whose guards never hold?)")]
    Idle(u64),
}

/// How many tasks an instance has, per statement ([`Instance::count_tasks`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskCounts {
    /// The tasks of each statement, by statement index.
    pub per_statement: Vec<u64>,
}

impl TaskCounts {
    /// All tasks (saturating at `u64::MAX`, which no count reaches: each
    /// statement's count is checked).
    pub fn total(&self) -> u64 {
        self.per_statement
            .iter()
            .fold(0u64, |a, &b| a.saturating_add(b))
    }
}

/// Why an instance's tasks were not counted.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CountError {
    /// The loop tree could not be run (an expression failed to evaluate, a
    /// step was not positive).
    #[error(transparent)]
    Walk(#[from] WalkError),
    /// Counting would run more loop iterations than allowed.
    #[error("the instance is too large to count: more than {counted} tasks after {budget} loop iterations")]
    TooLarge {
        /// The iterations allowed.
        budget: u64,
        /// The tasks counted when the budget ran out (a lower bound).
        counted: u64,
    },
    /// A statement has more than `u64::MAX` tasks.
    #[error("statement {stmt} has more than 2^64 tasks")]
    Overflow {
        /// The statement.
        stmt: StmtId,
    },
    /// The loop tree calls a statement the program does not have (a
    /// program that skipped validation).
    #[error("internal error: the loop tree calls statement {0}, which does not exist")]
    UnknownStatement(StmtId),
    /// A statement index that does not fit in a statement id.
    #[error(transparent)]
    Id(#[from] IdOverflow),
}

/// Loop iterations [`Instance::count_tasks`] runs by default before it
/// refuses: a few tenths of a second of work in a release build (Cholesky
/// needs about N²/2, so it counts up to N ≈ 2,900, 4·10^9 tasks).
pub const COUNT_BUDGET: u64 = 1 << 22;

struct Counter {
    only: Option<StmtId>,
    counts: Vec<u64>,
    slots: Vec<i64>,
    iterations: u64,
    budget: u64,
    /// Loop iterations since the last task was counted.
    idle: u64,
}

impl Counter {
    /// Spends `n` loop iterations of the loop on `line`.
    fn spend(&mut self, n: u64, line: u32) -> Result<(), CountError> {
        self.iterations = self.iterations.saturating_add(n);
        self.idle = self.idle.saturating_add(n);
        if self.iterations > self.budget {
            // Most of the budget went on iterations that ran no task: say
            // so, as the sequential walk does, rather than "too large".
            if self.idle > self.budget / 2 {
                return Err(WalkError {
                    line,
                    error: WalkErrorKind::Idle(self.idle),
                }
                .into());
            }
            return Err(CountError::TooLarge {
                budget: self.budget,
                counted: self.counts.iter().fold(0u64, |a, &b| a.saturating_add(b)),
            });
        }
        Ok(())
    }

    fn add(&mut self, stmt: StmtId, n: u64) -> Result<(), CountError> {
        let c = self
            .counts
            .get_mut(stmt.index())
            .ok_or(CountError::UnknownStatement(stmt))?;
        *c = c.checked_add(n).ok_or(CountError::Overflow { stmt })?;
        if n > 0 {
            self.idle = 0;
        }
        Ok(())
    }
}

/// Loop iterations in a row without a task after which a sequential run
/// gives up (a tenth of a second of work). No useful program comes near it: a
/// loop that runs this long without a task only burns time.
pub(crate) const IDLE_ITERATIONS: u64 = 1 << 26;

/// Whether any expression of `nodes` (conditions, loop bounds and steps)
/// mentions `slot`.
fn mentions_slot(pool: &ExprPool, nodes: &[TreeNode], slot: u32) -> bool {
    let m = |e: ExprRef| pool.mentions_slot(e, &|s| s == slot);
    nodes.iter().any(|n| match n {
        TreeNode::Call(_) => false,
        TreeNode::Loop(l) => m(l.lo) || m(l.hi) || m(l.step) || mentions_slot(pool, &l.body, slot),
        TreeNode::If {
            branches,
            else_body,
            ..
        } => {
            branches
                .iter()
                .any(|(c, b)| m(*c) || mentions_slot(pool, b, slot))
                || mentions_slot(pool, else_body, slot)
        }
    })
}

/// Whether `nodes` contain a call (of statement `only`, when given).
fn has_call(nodes: &[TreeNode], only: Option<StmtId>) -> bool {
    nodes.iter().any(|n| match n {
        TreeNode::Call(s) => only.is_none_or(|o| o == *s),
        TreeNode::Loop(l) => has_call(&l.body, only),
        TreeNode::If {
            branches,
            else_body,
            ..
        } => branches.iter().any(|(_, b)| has_call(b, only)) || has_call(else_body, only),
    })
}

impl Instance<'_> {
    /// Runs the loop tree in sequential order, calling `visit` for every
    /// task; `visit` may stop the walk early with `ControlFlow::Break`.
    pub fn for_each_task(
        &self,
        visit: &mut dyn FnMut(&Task) -> ControlFlow<()>,
    ) -> Result<(), WalkError> {
        self.for_each_task_of(None, visit)
    }

    /// [`for_each_task`](Self::for_each_task) with a `visit` that may fail:
    /// its first error stops the walk and is what this returns, as is a
    /// walk error, converted.
    pub fn try_for_each_task<E: From<WalkError>>(
        &self,
        visit: &mut dyn FnMut(&Task) -> Result<ControlFlow<()>, E>,
    ) -> Result<(), E> {
        let mut failure = None;
        self.for_each_task(&mut |t| match visit(t) {
            Ok(flow) => flow,
            Err(e) => {
                failure = Some(e);
                ControlFlow::Break(())
            }
        })?;
        failure.map_or(Ok(()), Err)
    }

    /// [`for_each_task`](Self::for_each_task) restricted to the tasks of
    /// statement `only` (every task with `None`): loops that do not enclose
    /// it are not run at all, so a statement with one task costs one walk
    /// down to it, not a walk of the whole nest.
    pub fn for_each_task_of(
        &self,
        only: Option<StmtId>,
        visit: &mut dyn FnMut(&Task) -> ControlFlow<()>,
    ) -> Result<(), WalkError> {
        let mut slots = Vec::new();
        let mut task = Task {
            stmt: StmtId::from_u32(0),
            vars: Vars::from(&[][..]),
        };
        let mut idle = 0;
        let tree = &self.program.tree;
        let _ = self.walk(tree, only, &mut slots, &mut task, &mut idle, visit)?;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        nodes: &[TreeNode],
        only: Option<StmtId>,
        slots: &mut Vec<i64>,
        task: &mut Task,
        idle: &mut u64,
        visit: &mut dyn FnMut(&Task) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>, WalkError> {
        let p = self.program;
        for node in nodes {
            match node {
                TreeNode::Loop(l) => {
                    // A loop with no call inside has no task to visit.
                    if !has_call(&l.body, only) {
                        continue;
                    }
                    let (lo, hi, step) = self.loop_header(l, slots)?;
                    let depth = l.slot as usize;
                    slots.truncate(depth);
                    slots.push(lo);
                    let mut v = lo;
                    while v < hi {
                        slots.truncate(depth + 1);
                        slots[depth] = v;
                        *idle += 1;
                        if *idle > IDLE_ITERATIONS {
                            return Err(WalkError {
                                line: l.line,
                                error: WalkErrorKind::Idle(*idle),
                            });
                        }
                        if self
                            .walk(&l.body, only, slots, task, idle, visit)?
                            .is_break()
                        {
                            return Ok(ControlFlow::Break(()));
                        }
                        match v.checked_add(step) {
                            Some(n) => v = n,
                            None => break,
                        }
                    }
                    slots.truncate(depth);
                }
                TreeNode::If {
                    branches,
                    else_body,
                    line,
                } => {
                    let body = self.taken_branch(branches, else_body, *line, slots)?;
                    if self.walk(body, only, slots, task, idle, visit)?.is_break() {
                        return Ok(ControlFlow::Break(()));
                    }
                }
                TreeNode::Call(s) if only.is_some_and(|o| o != *s) => *idle = 0,
                TreeNode::Call(s) => {
                    let depth = p.get_statement(*s).map_or(0, |st| st.depth());
                    task.stmt = *s;
                    task.vars = Vars::from(&slots[..depth.min(slots.len())]);
                    *idle = 0;
                    if visit(task).is_break() {
                        return Ok(ControlFlow::Break(()));
                    }
                }
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// How many tasks each statement has, without visiting the tasks one by
    /// one: a loop whose body never mentions its variable (only calls, or
    /// guards and loops on outer variables) has the same tasks in every
    /// iteration, so its body is counted once and multiplied by its trip
    /// count (Cholesky at N = 1000, 167 million tasks, runs about half a
    /// million iterations). At most `budget`
    /// loop iterations run; past that the count is refused, never slow.
    pub fn count_tasks(&self, budget: u64) -> Result<TaskCounts, CountError> {
        self.count_tasks_of(None, budget)
    }

    /// [`count_tasks`](Self::count_tasks) of statement `only` (every
    /// statement with `None`): loops that do not enclose it are not run,
    /// and the other statements count 0.
    pub fn count_tasks_of(
        &self,
        only: Option<StmtId>,
        budget: u64,
    ) -> Result<TaskCounts, CountError> {
        let mut counter = Counter {
            only,
            counts: vec![0; self.program.statements.len()],
            slots: Vec::new(),
            iterations: 0,
            budget,
            idle: 0,
        };
        self.count(&self.program.tree, &mut counter)?;
        Ok(TaskCounts {
            per_statement: counter.counts,
        })
    }

    fn count(&self, nodes: &[TreeNode], c: &mut Counter) -> Result<(), CountError> {
        let p = self.program;
        for node in nodes {
            match node {
                TreeNode::Loop(l) => {
                    if !has_call(&l.body, c.only) {
                        continue;
                    }
                    let (lo, hi, step) = self.loop_header(l, &c.slots)?;
                    let trips = if hi > lo {
                        ((i128::from(hi) - i128::from(lo) - 1) / i128::from(step) + 1) as u64
                    } else {
                        0
                    };
                    c.spend(1, l.line)?;
                    let depth = l.slot as usize;
                    c.slots.truncate(depth);
                    // A body that never looks at this loop's variable has
                    // the same tasks in every iteration: count one, multiply.
                    if trips > 0 && !mentions_slot(&p.exprs, &l.body, l.slot) {
                        let before = c.counts.clone();
                        c.slots.push(lo);
                        self.count(&l.body, c)?;
                        c.slots.truncate(depth);
                        for (i, b) in before.iter().enumerate() {
                            let once = c.counts[i] - b;
                            let stmt = StmtId::from_index(i)?;
                            let rest = once
                                .checked_mul(trips - 1)
                                .ok_or(CountError::Overflow { stmt })?;
                            c.add(stmt, rest)?;
                        }
                        continue;
                    }
                    let mut v = lo;
                    while v < hi {
                        c.spend(1, l.line)?;
                        c.slots.truncate(depth);
                        c.slots.push(v);
                        self.count(&l.body, c)?;
                        match v.checked_add(step) {
                            Some(n) => v = n,
                            None => break,
                        }
                    }
                    c.slots.truncate(depth);
                }
                TreeNode::If {
                    branches,
                    else_body,
                    line,
                } => {
                    let body = self.taken_branch(branches, else_body, *line, &c.slots)?;
                    self.count(body, c)?;
                }
                // Another statement's task is not counted, but the loops
                // that reach it are not idle (as in the walk).
                TreeNode::Call(s) if c.only.is_some_and(|o| o != *s) => c.idle = 0,
                TreeNode::Call(s) => c.add(*s, 1)?,
            }
        }
        Ok(())
    }

    /// The bounds and step of the loop on `line`, with the enclosing loops'
    /// variables at `slots`: the one reading of a loop header that the walk
    /// and the count share, so both fail alike (an expression error, or a
    /// step that is not positive).
    fn loop_header(&self, l: &LoopNode, slots: &[i64]) -> Result<(i64, i64, i64), WalkError> {
        let line = l.line;
        let err = |e| WalkError {
            line,
            error: WalkErrorKind::Eval(e),
        };
        let env = Env {
            params: &self.params,
            slots,
        };
        let exprs = &self.program.exprs;
        let lo = exprs.eval_int(l.lo, env).map_err(err)?;
        let hi = exprs.eval_int(l.hi, env).map_err(err)?;
        let step = exprs.eval_int(l.step, env).map_err(err)?;
        if step <= 0 {
            return Err(WalkError {
                line,
                error: WalkErrorKind::Step(step),
            });
        }
        Ok((lo, hi, step))
    }

    /// The body the `if` chain on `line` runs with the loop variables at
    /// `slots`: the first branch whose condition holds, else `else_body`
    /// (shared by the walk and the count).
    fn taken_branch<'n>(
        &self,
        branches: &'n [(ExprRef, Vec<TreeNode>)],
        else_body: &'n [TreeNode],
        line: u32,
        slots: &[i64],
    ) -> Result<&'n [TreeNode], WalkError> {
        let env = Env {
            params: &self.params,
            slots,
        };
        for (cond, body) in branches {
            let holds = self
                .program
                .exprs
                .eval_bool(*cond, env)
                .map_err(|e| WalkError {
                    line,
                    error: WalkErrorKind::Eval(e),
                })?;
            if holds {
                return Ok(body);
            }
        }
        Ok(else_body)
    }

    /// Every task in sequential order (for small instances).
    pub fn tasks(&self) -> Result<Vec<Task>, WalkError> {
        let mut out = Vec::new();
        self.for_each_task(&mut |t| {
            out.push(t.clone());
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }
}

/// The JSON of one task: `{"kernel", "line", "column", "vars": {...}}`.
pub fn task_json(program: &Program, t: &Task) -> serde_json::Value {
    let st = program.get_statement(t.stmt);
    let kernel = st
        .and_then(|s| program.get_kernel(s.kernel))
        .map(|k| k.name.clone())
        .unwrap_or_default();
    let mut vars = serde_json::Map::new();
    if let Some(s) = st {
        for (n, v) in s.vars.iter().zip(t.vars.iter()) {
            vars.insert(n.clone(), serde_json::Value::from(*v));
        }
    }
    serde_json::json!({
        "kernel": kernel,
        "line": st.map(|s| s.line).unwrap_or(0),
        "column": st.map(|s| s.column).unwrap_or(0),
        "vars": vars,
    })
}
