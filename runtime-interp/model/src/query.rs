//! Dependency queries answered from the plans alone: `children`,
//! `parents`, `writer` and `readers`, with no solver and no expansion of
//! the DAG. Answers are in sequential order and free of duplicates; every
//! edge carries the tile it is for.

use crate::expr::{Env, EvalError};
use crate::ids::{MatrixId, StmtId};
use crate::plan::{PlanError, Scratch};
use crate::program::{Access, Instance, Statement, StatementPlans};
use crate::task::{Task, TileRef, WalkError};
use std::ops::ControlFlow;

/// Why a query could not be answered.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum QueryError {
    /// The task is not an iteration of its statement in this instance.
    #[error("{0} is not a task of this instance")]
    NotATask(String),
    /// A tile index outside the matrix's extents.
    #[error("tile {tile} is outside the extents of `{matrix}` ({extents})")]
    OutOfBounds {
        /// The tile.
        tile: String,
        /// The matrix.
        matrix: String,
        /// Its extents.
        extents: String,
    },
    /// An expression of the program failed.
    #[error("evaluation error: {0}")]
    Eval(#[from] EvalError),
    /// A tile index of a task could not be evaluated.
    #[error("line {line}: task {task}: evaluation error in a tile index: {source}")]
    Access {
        /// The statement's line.
        line: u32,
        /// The task.
        task: String,
        /// Why.
        source: EvalError,
    },
    /// A plan failed.
    #[error("{0}")]
    Plan(#[from] PlanError),
    /// Walking the instance's loops failed.
    #[error("{0}")]
    Walk(#[from] WalkError),
}

/// Called with (statement, loop variables, matrix, tile index) per edge.
pub(crate) type EdgeVisitor<'a> = dyn FnMut(StmtId, &[i64], MatrixId, &[i64]) + 'a;

/// Like [`EdgeVisitor`], returning whether to go on.
pub(crate) type EdgeFilter<'a> = dyn FnMut(StmtId, &[i64], MatrixId, &[i64]) -> bool + 'a;

/// Work allowed per query: a bound on the values a plan enumerates, so
/// that no program, artifact or parameter value can make one query run
/// for long. 2^26 values take about a second in a release build; no
/// query of a real instance comes near it (a plan enumerates one loop
/// variable over one range, narrowed by every constraint it can use).
pub(crate) const DEFAULT_BUDGET: u64 = 1 << 26;

/// A query engine over one instance, with reusable scratch memory.
pub struct Engine<'i, 'p> {
    inst: &'i Instance<'p>,
    scratch: Scratch,
    tile: Vec<i64>,
    read_tiles: Vec<i64>,
    read_starts: Vec<usize>,
    /// Work allowed per query (see [`DEFAULT_BUDGET`]): every query
    /// starts with this much, so one expensive query cannot starve the
    /// next.
    pub budget: u64,
    /// What is left of `budget` in the current query.
    left: u64,
    /// For each matrix: its write accesses `(stmt, access)`.
    writes_of: Vec<Vec<(StmtId, u32)>>,
    /// For each matrix: its read accesses.
    reads_of: Vec<Vec<(StmtId, u32)>>,
}

impl<'i, 'p> Engine<'i, 'p> {
    /// An engine for an instance.
    pub fn new(inst: &'i Instance<'p>) -> Self {
        let p = inst.program;
        let mut writes_of = vec![Vec::new(); p.matrices.len()];
        let mut reads_of = vec![Vec::new(); p.matrices.len()];
        for (s, st) in p.statements.iter().enumerate() {
            // A statement beyond `u32::MAX` has no id, so no task names it
            // (a validated artifact holds far fewer).
            let Ok(s) = StmtId::from_index(s) else { break };
            for (a, acc) in st.writes.iter().enumerate() {
                if let (Some(v), Ok(a)) = (writes_of.get_mut(acc.matrix.index()), u32::try_from(a))
                {
                    v.push((s, a));
                }
            }
            for (a, acc) in st.reads.iter().enumerate() {
                if let (Some(v), Ok(a)) = (reads_of.get_mut(acc.matrix.index()), u32::try_from(a)) {
                    v.push((s, a));
                }
            }
        }
        Engine {
            inst,
            scratch: Scratch::default(),
            tile: Vec::new(),
            read_tiles: Vec::new(),
            read_starts: Vec::new(),
            budget: DEFAULT_BUDGET,
            left: DEFAULT_BUDGET,
            writes_of,
            reads_of,
        }
    }

    /// The instance.
    pub fn instance(&self) -> &'i Instance<'p> {
        self.inst
    }

    /// Checks that a task exists in this instance.
    pub fn check_task(&self, task: &Task) -> Result<(), QueryError> {
        let p = self.inst.program;
        if p.in_domain(&self.inst.params, task.stmt, &task.vars)? {
            Ok(())
        } else {
            Err(QueryError::NotATask(p.task_name(task).to_string()))
        }
    }

    /// Checks that a tile lies inside its matrix's extents.
    pub fn check_tile(&self, tile: &TileRef) -> Result<(), QueryError> {
        let p = self.inst.program;
        let ext = self.inst.extents.get(tile.matrix.index());
        let inside = ext.is_some_and(|e| {
            e.len() == tile.index.len() && tile.index.iter().zip(e).all(|(&i, &n)| i >= 0 && i < n)
        });
        if inside {
            Ok(())
        } else {
            Err(QueryError::OutOfBounds {
                tile: p.tile_name(tile),
                matrix: p
                    .get_matrix(tile.matrix)
                    .map(|m| m.name.clone())
                    .unwrap_or_default(),
                extents: ext
                    .map(|e| {
                        e.iter()
                            .map(|x| x.to_string())
                            .collect::<Vec<_>>()
                            .join(" x ")
                    })
                    .unwrap_or_default(),
            })
        }
    }

    fn eval_access(&self, acc: &Access, vars: &[i64], out: &mut Vec<i64>) -> Result<(), EvalError> {
        out.clear();
        let env = Env {
            params: &self.inst.params,
            slots: vars,
        };
        for &i in &acc.indices {
            out.push(self.inst.program.exprs.eval_int(i, env)?);
        }
        Ok(())
    }

    /// The tiles a task writes, in result order.
    pub fn writes(&self, task: &Task) -> Result<Vec<TileRef>, QueryError> {
        self.tiles(&self.statement(task)?.writes, task)
    }

    /// The tiles a task reads, in argument order.
    pub fn reads(&self, task: &Task) -> Result<Vec<TileRef>, QueryError> {
        self.tiles(&self.statement(task)?.reads, task)
    }

    /// An index of `task` that failed to evaluate, with the task and its
    /// line (the language's rule: an evaluation error names its line).
    fn access_error(&self, task: &Task, source: EvalError) -> QueryError {
        QueryError::Access {
            line: self.statement(task).map_or(0, |st| st.line),
            task: self.inst.program.task_name(task).to_string(),
            source,
        }
    }

    fn tiles(&self, accesses: &[Access], task: &Task) -> Result<Vec<TileRef>, QueryError> {
        let mut out = Vec::with_capacity(accesses.len());
        for acc in accesses {
            let mut index = Vec::new();
            self.eval_access(acc, &task.vars, &mut index)
                .map_err(|source| self.access_error(task, source))?;
            out.push(TileRef {
                matrix: acc.matrix,
                index,
            });
        }
        Ok(out)
    }

    fn statement(&self, task: &Task) -> Result<&'p Statement, QueryError> {
        self.inst
            .program
            .get_statement(task.stmt)
            .ok_or_else(|| QueryError::NotATask(format!("statement {}", task.stmt)))
    }

    /// Starts an edge walk from `task`: a fresh work budget, and the task's
    /// statement and plans.
    fn begin_edges(
        &mut self,
        task: &Task,
    ) -> Result<(&'p Statement, &'p StatementPlans), QueryError> {
        self.left = self.budget;
        let st = self.statement(task)?;
        let plans = self
            .inst
            .program
            .plans
            .get(task.stmt.index())
            .ok_or(PlanError::Malformed)?;
        Ok((st, plans))
    }

    /// Calls `f(child statement, child vars, matrix, tile)` for every
    /// (child, tile) edge out of `task`, once each, in no particular order.
    /// `task` must be a task of the instance (unchecked).
    pub fn for_each_child(
        &mut self,
        task: &Task,
        f: &mut EdgeVisitor<'_>,
    ) -> Result<(), QueryError> {
        self.try_for_each_child(task, &mut |stmt, vars, matrix, tile| {
            f(stmt, vars, matrix, tile);
            true
        })
    }

    /// [`for_each_child`](Self::for_each_child), stopping as soon as `f`
    /// returns false (so that a caller with a cap on the answer does no
    /// work past it).
    pub fn try_for_each_child(
        &mut self,
        task: &Task,
        f: &mut EdgeFilter<'_>,
    ) -> Result<(), QueryError> {
        let p = self.inst.program;
        let (st, plans) = self.begin_edges(task)?;
        let mut tile = std::mem::take(&mut self.tile);
        let result = (|| {
            for (w, acc) in st.writes.iter().enumerate() {
                self.eval_access(acc, &task.vars, &mut tile)
                    .map_err(|source| self.access_error(task, source))?;
                let partners = &plans.writes.get(w).ok_or(PlanError::Malformed)?.partners;
                for r in partners {
                    let reader = p.get_statement(r.stmt).ok_or(PlanError::Malformed)?;
                    let ap = p
                        .plans
                        .get(r.stmt.index())
                        .and_then(|ps| ps.reads.get(r.access as usize))
                        .ok_or(PlanError::Malformed)?;
                    let params = &self.inst.params;
                    let mut result = Ok(());
                    let mut go_on = true;
                    let mut emit = |vars: &[i64]| {
                        if r.stmt == task.stmt && vars == &*task.vars {
                            // Reading its own output is a violation, not an edge.
                            return true;
                        }
                        // A reader that reads the tile through an earlier access
                        // too gets the edge from that access only.
                        for earlier in reader.reads.iter().take(r.access as usize) {
                            if earlier.matrix != acc.matrix {
                                continue;
                            }
                            let env = Env {
                                params,
                                slots: vars,
                            };
                            let mut same = true;
                            for (&i, &t) in earlier.indices.iter().zip(tile.iter()) {
                                match p.exprs.eval_int(i, env) {
                                    Ok(v) if v == t => {}
                                    Ok(_) => {
                                        same = false;
                                        break;
                                    }
                                    Err(e) => {
                                        result = Err(QueryError::Eval(e));
                                        return false;
                                    }
                                }
                            }
                            if same {
                                return true;
                            }
                        }
                        go_on = f(r.stmt, vars, acc.matrix, &tile);
                        go_on
                    };
                    ap.inverse.run(
                        &p.exprs,
                        params,
                        &tile,
                        &mut self.scratch,
                        &mut self.left,
                        &mut emit,
                    )?;
                    result?;
                    if !go_on {
                        return Ok(());
                    }
                }
            }
            Ok(())
        })();
        self.tile = tile;
        result
    }

    /// The tasks that read a tile `task` writes, each with the tile; in
    /// sequential order, one entry per (child, tile).
    pub fn children(&mut self, task: &Task) -> Result<Vec<(Task, TileRef)>, QueryError> {
        self.edge_list(task, Self::try_for_each_child)
    }

    /// Calls `f(parent statement, parent vars, matrix, tile)` for every
    /// (parent, tile) edge into `task`, once each (a tile read twice counts
    /// once). `task` must be a task of the instance (unchecked).
    pub fn for_each_parent(
        &mut self,
        task: &Task,
        f: &mut EdgeFilter<'_>,
    ) -> Result<(), QueryError> {
        let p = self.inst.program;
        let (st, plans) = self.begin_edges(task)?;
        // The read tiles, flattened into one reused buffer.
        let mut flat = std::mem::take(&mut self.read_tiles);
        flat.clear();
        let mut starts = std::mem::take(&mut self.read_starts);
        starts.clear();
        let result = (|| {
            for (r, acc) in st.reads.iter().enumerate() {
                let start = flat.len();
                let env = Env {
                    params: &self.inst.params,
                    slots: &task.vars,
                };
                for &i in &acc.indices {
                    let v = p
                        .exprs
                        .eval_int(i, env)
                        .map_err(|source| self.access_error(task, source))?;
                    flat.push(v);
                }
                starts.push(start);
                let tile = &flat[start..];
                // A tile read twice gives one edge.
                let repeated = st.reads.iter().take(r).enumerate().any(|(q, a)| {
                    a.matrix == acc.matrix
                        && flat.get(starts[q]..starts[q] + a.indices.len()) == Some(tile)
                });
                if repeated {
                    continue;
                }
                let partners = &plans.reads.get(r).ok_or(PlanError::Malformed)?.partners;
                for w in partners {
                    let ap = p
                        .plans
                        .get(w.stmt.index())
                        .and_then(|ps| ps.writes.get(w.access as usize))
                        .ok_or(PlanError::Malformed)?;
                    let mut go_on = true;
                    let mut emit = |vars: &[i64]| {
                        if !(w.stmt == task.stmt && vars == &*task.vars) {
                            go_on = f(w.stmt, vars, acc.matrix, tile);
                        }
                        go_on
                    };
                    ap.inverse.run(
                        &p.exprs,
                        &self.inst.params,
                        tile,
                        &mut self.scratch,
                        &mut self.left,
                        &mut emit,
                    )?;
                    if !go_on {
                        return Ok(());
                    }
                }
            }
            Ok(())
        })();
        self.read_tiles = flat;
        self.read_starts = starts;
        result
    }

    /// The tasks that wrote a tile `task` reads, each with the tile.
    pub fn parents(&mut self, task: &Task) -> Result<Vec<(Task, TileRef)>, QueryError> {
        self.edge_list(task, Self::for_each_parent)
    }

    /// Every edge `each` visits from `task` (checked first) as a (task,
    /// tile) pair, in sequential order without repeats: the one list
    /// builder behind [`children`](Self::children) and
    /// [`parents`](Self::parents).
    fn edge_list(
        &mut self,
        task: &Task,
        each: fn(&mut Self, &Task, &mut EdgeFilter<'_>) -> Result<(), QueryError>,
    ) -> Result<Vec<(Task, TileRef)>, QueryError> {
        self.check_task(task)?;
        let mut out: Vec<(Task, TileRef)> = Vec::new();
        each(self, task, &mut |stmt, vars, matrix, tile| {
            out.push((
                Task {
                    stmt,
                    vars: vars.into(),
                },
                TileRef {
                    matrix,
                    index: tile.to_vec(),
                },
            ));
            true
        })?;
        let p = self.inst.program;
        out.sort_by(|a, b| p.sequential_cmp(&a.0, &b.0).then_with(|| a.1.cmp(&b.1)));
        out.dedup();
        Ok(out)
    }

    /// The number of (parent, tile) edges into a task, without building
    /// the list (for in-degree counting). `task` must be a task of the
    /// instance (unchecked).
    pub fn in_degree(&mut self, task: &Task) -> Result<usize, QueryError> {
        let mut n = 0;
        self.for_each_parent(task, &mut |_, _, _, _| {
            n += 1;
            true
        })?;
        Ok(n)
    }

    /// Walks every task of the instance in sequential order, calling
    /// `visit(task, root)` with `root` when the task has no parent (from
    /// the parents plans); `visit` may stop the walk with
    /// `ControlFlow::Break`. The one roots pass of the executor, the
    /// simulator, the cluster's submission and resume, and
    /// [`crate::dag::walk`].
    pub fn for_each_task_rooted(
        &mut self,
        visit: &mut dyn FnMut(&Task, bool) -> ControlFlow<()>,
    ) -> Result<(), QueryError> {
        let inst = self.inst;
        inst.try_for_each_task(&mut |t| Ok(visit(t, !self.has_parent(t)?)))
    }

    /// Whether a task has any parent (stops at the first one found).
    /// `task` must be a task of the instance (unchecked).
    pub fn has_parent(&mut self, task: &Task) -> Result<bool, QueryError> {
        let mut found = false;
        self.for_each_parent(task, &mut |_, _, _, _| {
            found = true;
            false
        })?;
        Ok(found)
    }

    /// The tasks that write a tile (none for an input or unwritten tile).
    pub fn writer(&mut self, tile: &TileRef) -> Result<Vec<Task>, QueryError> {
        self.touching(tile, true)
    }

    /// The tasks that read a tile.
    pub fn readers(&mut self, tile: &TileRef) -> Result<Vec<Task>, QueryError> {
        self.touching(tile, false)
    }

    fn touching(&mut self, tile: &TileRef, write: bool) -> Result<Vec<Task>, QueryError> {
        let mut out: Vec<Task> = Vec::new();
        self.for_each_touching(tile, write, &mut |stmt, vars| {
            out.push(Task {
                stmt,
                vars: vars.into(),
            });
            true
        })?;
        let p = self.inst.program;
        out.sort_by(|a, b| p.sequential_cmp(a, b));
        out.dedup();
        Ok(out)
    }

    /// Calls `f(statement, vars)` for every task that writes (`write`) or
    /// reads `tile`, in no particular order and possibly more than once
    /// (a statement reading the tile through two accesses), stopping as
    /// soon as `f` returns false. The tile is checked against the extents.
    pub fn for_each_touching(
        &mut self,
        tile: &TileRef,
        write: bool,
        f: &mut dyn FnMut(StmtId, &[i64]) -> bool,
    ) -> Result<(), QueryError> {
        self.check_tile(tile)?;
        self.left = self.budget;
        let p = self.inst.program;
        let of = if write {
            &self.writes_of
        } else {
            &self.reads_of
        };
        let accesses = of
            .get(tile.matrix.index())
            .map_or(&[][..], |v| v.as_slice());
        for &(stmt, access) in accesses {
            let Some(plans) = p.plans.get(stmt.index()) else {
                return Err(PlanError::Malformed.into());
            };
            let list = if write { &plans.writes } else { &plans.reads };
            let Some(ap) = list.get(access as usize) else {
                return Err(PlanError::Malformed.into());
            };
            let mut go_on = true;
            let mut emit = |vars: &[i64]| {
                go_on = f(stmt, vars);
                go_on
            };
            ap.inverse.run(
                &p.exprs,
                &self.inst.params,
                &tile.index,
                &mut self.scratch,
                &mut self.left,
                &mut emit,
            )?;
            if !go_on {
                break;
            }
        }
        Ok(())
    }
}
