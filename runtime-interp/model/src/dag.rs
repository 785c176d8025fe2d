//! The expanded task DAG of one instance, built two independent ways:
//! from the dependence plans ([`from_plans`]), and by brute force
//! ([`expand`]): running the program sequentially and recording who writes
//! and reads each tile. The brute-force expansion is the oracle the plans
//! are tested against, and it reports every rule violation it sees.

use crate::expr::EvalError;
use crate::frontier::{ReleaseError, Waiting};
use crate::ids::StmtId;
use crate::program::{Access, Instance, Program, Role, Statement};
use crate::query::{Engine, QueryError};
use crate::task::{Task, TileRef, WalkError};
use std::collections::HashMap;
use std::ops::ControlFlow;

/// An edge: `from` wrote `tile`, which `to` reads.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Edge {
    /// Index of the writer in [`Dag::tasks`].
    pub from: usize,
    /// Index of the reader.
    pub to: usize,
    /// The tile.
    pub tile: TileRef,
}

/// An expanded DAG.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dag {
    /// Every task, in sequential order.
    pub tasks: Vec<Task>,
    /// One edge per (writer, reader, tile), sorted.
    pub edges: Vec<Edge>,
}

impl Dag {
    /// How the edges of `other`, a DAG of the same tasks of one instance of
    /// `program`, differ from this one's: `None` when they are the same,
    /// else the first `max` edges `other` lacks and the first `max` it has
    /// in excess, each as `writer -> reader via tile`.
    pub fn edge_difference(
        &self,
        other: &Dag,
        program: &Program,
        max: usize,
    ) -> Option<(Vec<String>, Vec<String>)> {
        if self.edges == other.edges {
            return None;
        }
        Some((
            self.edges_lacking(other, program, max),
            other.edges_lacking(self, program, max),
        ))
    }

    /// The first `max` edges of this DAG that `other` lacks.
    fn edges_lacking(&self, other: &Dag, program: &Program, max: usize) -> Vec<String> {
        let name = |i: usize| match self.tasks.get(i) {
            Some(t) => program.task_name(t).to_string(),
            None => format!("task {i}"),
        };
        self.edges
            .iter()
            .filter(|e| !other.edges.contains(e))
            .take(max)
            .map(|e| {
                let tile = program.tile_name(&e.tile);
                format!("{} -> {} via {tile}", name(e.from), name(e.to))
            })
            .collect()
    }
}

/// A violation of the language's rules seen during expansion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Two tasks (or one task twice) write one tile.
    DoubleWrite {
        /// The tile.
        tile: TileRef,
        /// The first writer.
        first: Task,
        /// The second writer.
        second: Task,
    },
    /// A task writes a tile of an `input` matrix.
    WriteToInput {
        /// The tile.
        tile: TileRef,
        /// The writer.
        task: Task,
    },
    /// A tile is read before the task that writes it runs (or by the task
    /// that writes it).
    ReadBeforeWrite {
        /// The tile.
        tile: TileRef,
        /// The reader.
        reader: Task,
        /// The later writer.
        writer: Task,
    },
    /// A tile of a non-input matrix that is not a zero matrix is read but
    /// never written.
    ReadUnwritten {
        /// The tile.
        tile: TileRef,
        /// The reader.
        reader: Task,
    },
    /// An index outside the declared extents.
    OutOfBounds {
        /// The tile.
        tile: TileRef,
        /// The task.
        task: Task,
        /// Whether the access writes.
        write: bool,
    },
}

impl Violation {
    /// The task the violation is reported at (the later one).
    pub fn task(&self) -> &Task {
        match self {
            Violation::DoubleWrite { second, .. } => second,
            Violation::WriteToInput { task, .. } | Violation::OutOfBounds { task, .. } => task,
            Violation::ReadBeforeWrite { reader, .. } | Violation::ReadUnwritten { reader, .. } => {
                reader
            }
        }
    }

    /// A sentence naming the tasks and the tile.
    pub fn describe(&self, inst: &Instance<'_>) -> String {
        let p = inst.program;
        let t = |t: &Task| format!("`{}`", p.task_name(t));
        match self {
            Violation::DoubleWrite {
                tile,
                first,
                second,
            } => {
                if first == second {
                    format!("{} writes `{}` twice", t(first), p.tile_name(tile))
                } else {
                    format!(
                        "{} and {} both write `{}`",
                        t(first),
                        t(second),
                        p.tile_name(tile)
                    )
                }
            }
            Violation::WriteToInput { tile, task } => {
                format!(
                    "{} writes `{}` of an input matrix",
                    t(task),
                    p.tile_name(tile)
                )
            }
            Violation::ReadBeforeWrite {
                tile,
                reader,
                writer,
            } => {
                if reader == writer {
                    format!(
                        "{} reads `{}`, which it writes itself",
                        t(reader),
                        p.tile_name(tile)
                    )
                } else {
                    format!(
                        "{} reads `{}` before {} writes it",
                        t(reader),
                        p.tile_name(tile),
                        t(writer)
                    )
                }
            }
            Violation::ReadUnwritten { tile, reader } => {
                format!(
                    "{} reads `{}`, which no task writes",
                    t(reader),
                    p.tile_name(tile)
                )
            }
            Violation::OutOfBounds { tile, task, write } => format!(
                "{} {} `{}`, outside the extents of `{}` ({})",
                t(task),
                if *write { "writes" } else { "reads" },
                p.tile_name(tile),
                p.get_matrix(tile.matrix)
                    .map(|m| m.name.as_str())
                    .unwrap_or("?"),
                inst.extents
                    .get(tile.matrix.index())
                    .map(|e| e
                        .iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(" x "))
                    .unwrap_or_default()
            ),
        }
    }
}

/// Why an instance could not be expanded.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ExpandError {
    /// The sequential run failed.
    #[error("{0}")]
    Walk(#[from] WalkError),
    /// An index expression failed.
    #[error("line {line}: {error}")]
    Eval {
        /// The statement's line.
        line: u32,
        /// Why.
        error: EvalError,
    },
    /// More tasks than allowed.
    #[error("the instance has more than {0} tasks")]
    TooLarge(usize),
    /// A plan query failed.
    #[error("{0}")]
    Query(#[from] QueryError),
}

/// The brute-force expansion: the DAG and every violation, in the order
/// seen. At most `max_tasks` tasks.
pub fn expand(inst: &Instance<'_>, max_tasks: usize) -> Result<(Dag, Vec<Violation>), ExpandError> {
    let p = inst.program;
    let mut x = Expansion {
        inst,
        tasks: Vec::new(),
        writer: HashMap::new(),
        early_reads: Vec::new(),
        edges: Vec::new(),
        violations: Vec::new(),
    };
    inst.try_for_each_task(&mut |task| {
        if x.tasks.len() >= max_tasks {
            return Err(ExpandError::TooLarge(max_tasks));
        }
        let id = x.tasks.len();
        x.tasks.push(task.clone());
        let Some(st) = p.get_statement(task.stmt) else {
            return Ok(ControlFlow::Continue(()));
        };
        let (reads, writes) = task_tiles(inst, task, st)?;
        // Reads first: a kernel reads its arguments before it writes.
        x.reads(id, task, reads);
        x.writes(id, task, writes);
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(x.finish())
}

/// The tiles a task of `st` reads and writes. Every tile first: an index
/// that fails to evaluate fails the whole expansion, whichever access it
/// is.
fn task_tiles(
    inst: &Instance<'_>,
    task: &Task,
    st: &Statement,
) -> Result<(Vec<TileRef>, Vec<TileRef>), ExpandError> {
    let tiles = |accs: &[Access]| -> Result<Vec<TileRef>, ExpandError> {
        accs.iter()
            .map(|acc| {
                inst.program
                    .tile_of(&inst.params, task, acc)
                    .map_err(|error| ExpandError::Eval {
                        line: st.line,
                        error,
                    })
            })
            .collect()
    };
    tiles(&st.reads).and_then(|r| Ok((r, tiles(&st.writes)?)))
}

/// Whether `tile` lies inside its matrix's extents in `inst`.
fn in_bounds(inst: &Instance<'_>, tile: &TileRef) -> bool {
    inst.extents.get(tile.matrix.index()).is_some_and(|e| {
        e.len() == tile.index.len() && tile.index.iter().zip(e).all(|(&i, &n)| i >= 0 && i < n)
    })
}

/// The state of the brute-force expansion.
struct Expansion<'a, 'p> {
    inst: &'a Instance<'p>,
    /// Every task so far, by id.
    tasks: Vec<Task>,
    /// The task that wrote each tile.
    writer: HashMap<TileRef, usize>,
    /// Reads that happened before any write: (tile, reader id).
    early_reads: Vec<(TileRef, usize)>,
    edges: Vec<Edge>,
    violations: Vec<Violation>,
}

impl Expansion<'_, '_> {
    /// Whether `tile` is of an input matrix.
    fn is_input(&self, tile: &TileRef) -> bool {
        self.inst
            .program
            .get_matrix(tile.matrix)
            .is_some_and(|m| m.role == Role::Input)
    }

    /// Whether `tile` lies inside its matrix; if not, records that `task`
    /// reads (or writes) it out of bounds.
    fn check_bounds(&mut self, tile: &TileRef, task: &Task, write: bool) -> bool {
        let inside = in_bounds(self.inst, tile);
        if !inside {
            self.violations.push(Violation::OutOfBounds {
                tile: tile.clone(),
                task: task.clone(),
                write,
            });
        }
        inside
    }

    /// Records the reads of task `id`: an edge from each tile's writer, or
    /// an early read if it has none yet.
    fn reads(&mut self, id: usize, task: &Task, reads: Vec<TileRef>) {
        let mut seen_reads: Vec<TileRef> = Vec::new();
        for tile in reads {
            if seen_reads.contains(&tile) {
                continue;
            }
            seen_reads.push(tile.clone());
            if !self.check_bounds(&tile, task, false) {
                continue;
            }
            if self.is_input(&tile) {
                continue;
            }
            match self.writer.get(&tile) {
                Some(&w) => self.edges.push(Edge {
                    from: w,
                    to: id,
                    tile,
                }),
                None => self.early_reads.push((tile, id)),
            }
        }
    }

    /// Records the writes of task `id`, and the violations among them.
    fn writes(&mut self, id: usize, task: &Task, writes: Vec<TileRef>) {
        let mut seen_writes: Vec<TileRef> = Vec::new();
        for tile in writes {
            if !self.check_bounds(&tile, task, true) {
                continue;
            }
            if self.is_input(&tile) {
                self.violations.push(Violation::WriteToInput {
                    tile: tile.clone(),
                    task: task.clone(),
                });
            }
            if seen_writes.contains(&tile) {
                self.violations.push(Violation::DoubleWrite {
                    tile,
                    first: task.clone(),
                    second: task.clone(),
                });
                continue;
            }
            seen_writes.push(tile.clone());
            match self.writer.get(&tile) {
                Some(&first) => self.violations.push(Violation::DoubleWrite {
                    tile,
                    first: self.tasks[first].clone(),
                    second: task.clone(),
                }),
                None => {
                    self.writer.insert(tile, id);
                }
            }
        }
    }

    /// The DAG and the violations, with the early reads now known to read
    /// before a write or an unwritten tile.
    fn finish(mut self) -> (Dag, Vec<Violation>) {
        let p = self.inst.program;
        for (tile, reader) in self.early_reads {
            match self.writer.get(&tile) {
                Some(&w) => self.violations.push(Violation::ReadBeforeWrite {
                    tile,
                    reader: self.tasks[reader].clone(),
                    writer: self.tasks[w].clone(),
                }),
                // A zero matrix's unwritten tile reads as a zero tile.
                None if p.is_zero(tile.matrix) => {}
                None => self.violations.push(Violation::ReadUnwritten {
                    tile,
                    reader: self.tasks[reader].clone(),
                }),
            }
        }
        self.edges.sort();
        self.edges.dedup();
        (
            Dag {
                tasks: self.tasks,
                edges: self.edges,
            },
            self.violations,
        )
    }
}

/// The DAG from the plans: tasks from the sequential enumeration, edges
/// from `children` of every task.
pub fn from_plans(inst: &Instance<'_>, max_tasks: usize) -> Result<Dag, ExpandError> {
    let mut tasks = Vec::new();
    let mut too_large = false;
    inst.for_each_task(&mut |t| {
        if tasks.len() >= max_tasks {
            too_large = true;
            return ControlFlow::Break(());
        }
        tasks.push(t.clone());
        ControlFlow::Continue(())
    })?;
    if too_large {
        return Err(ExpandError::TooLarge(max_tasks));
    }
    let ids: HashMap<&Task, usize> = tasks.iter().enumerate().map(|(i, t)| (t, i)).collect();
    let mut engine = Engine::new(inst);
    let mut edges = Vec::new();
    for (from, t) in tasks.iter().enumerate() {
        for (child, tile) in engine.children(t)? {
            let Some(&to) = ids.get(&child) else {
                return Err(
                    QueryError::NotATask(inst.program.task_name(&child).to_string()).into(),
                );
            };
            edges.push(Edge { from, to, tile });
        }
    }
    edges.sort();
    edges.dedup();
    Ok(Dag { tasks, edges })
}

/// What a walk of the DAG saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkStats {
    /// Tasks with no parents.
    pub roots: u64,
    /// Tasks made ready (each exactly once in a correct walk).
    pub reached: u64,
    /// Edges followed.
    pub edges: u64,
    /// The most tasks waiting for parents at one time.
    pub max_waiting: usize,
}

/// Walks the whole DAG the way a runtime schedules it, without
/// materialising it: roots are the tasks with no parents; completing a task
/// decrements each child's counter (initialised from the parents plan on
/// first sight), and a child whose counter reaches zero becomes ready.
/// Only waiting tasks are kept in memory. Fails if a task would be reached
/// twice or a counter would go negative (a plan bug).
pub fn walk(inst: &Instance<'_>) -> Result<WalkStats, ExpandError> {
    let mut engine = Engine::new(inst);
    let mut stats = WalkStats::default();
    let mut ready: Vec<Task> = Vec::new();
    engine.for_each_task_rooted(&mut |t, root| {
        if root {
            ready.push(t.clone());
            stats.roots += 1;
        }
        ControlFlow::Continue(())
    })?;
    let mut waiting: Waiting = Waiting::new();
    let mut children: Vec<Task> = Vec::new();
    while let Some(task) = ready.pop() {
        stats.reached += 1;
        children.clear();
        engine.for_each_child(&task, &mut |stmt, vars, _, _| {
            children.push(Task {
                stmt,
                vars: vars.into(),
            })
        })?;
        for child in children.drain(..) {
            stats.edges += 1;
            let released = waiting.parent_done(child, |c| engine.in_degree(c), (), |_| {});
            match released {
                Ok(Some((child, ()))) => ready.push(child),
                Ok(None) => {}
                Err(ReleaseError::Plan(e)) => return Err(e.into()),
                Err(ReleaseError::Frontier(e)) => {
                    return Err(QueryError::NotATask(format!(
                        "{} reached twice",
                        inst.program.task_name(e.task())
                    ))
                    .into())
                }
            }
        }
        stats.max_waiting = stats.max_waiting.max(waiting.len());
    }
    if !waiting.is_empty() {
        return Err(
            QueryError::NotATask(format!("{} tasks never became ready", waiting.len())).into(),
        );
    }
    Ok(stats)
}

/// What a sequential-order walk saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SequentialWalkStats {
    /// Tasks with no parents.
    pub roots: u64,
    /// Every task, each scheduled exactly once.
    pub tasks: u64,
    /// Edges followed (= the sum of the in-degrees).
    pub edges: u64,
}

/// One of two independent 64-bit hashes of a task, for the multiset check
/// of [`walk_sequential`].
fn task_hash(seed: u64, stmt: StmtId, vars: &[i64]) -> u64 {
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let mut h = mix(seed ^ u64::from(u32::from(stmt)));
    for &v in vars {
        h = mix(h ^ v as u64);
    }
    h
}

/// Walks the whole DAG the way the runtime's in-degree counting schedules
/// it, in memory independent of the instance: O(1) beyond the plan
/// evaluator's scratch space.
///
/// Why it is a faithful schedule without counters: every edge goes
/// forward in sequential order (checked here for every edge), so running
/// tasks in sequential order runs each task after all its parents, i.e.
/// exactly when its in-degree counter would reach zero. Instead of keeping
/// a counter per waiting task, the walk checks the bookkeeping a counter
/// would do, as a multiset identity: every child notification `T → C`
/// (from the children plans) adds `h(C)`, every task adds `in_degree(C) ·
/// h(C)` (from the parents plans), and the two sums (two independent
/// 64-bit hashes, wrapping) and the edge counts must agree at the end. A
/// children plan that missed or duplicated an edge would break the
/// identity unless the hash collided (probability about 2⁻¹²⁸).
///
/// Fails on a backward edge, a self edge, or a mismatch.
pub fn walk_sequential(inst: &Instance<'_>) -> Result<SequentialWalkStats, ExpandError> {
    let p = inst.program;
    let mut engine = Engine::new(inst);
    let mut stats = SequentialWalkStats::default();
    let (mut notified, mut expected) = ([0u64; 2], [0u64; 2]);
    let mut expected_edges = 0u64;
    let mut children: Vec<Task> = Vec::new();
    inst.try_for_each_task::<ExpandError>(&mut |t| {
        let d = engine.in_degree(t)? as u64;
        if d == 0 {
            stats.roots += 1;
        }
        stats.tasks += 1;
        expected_edges += d;
        for (k, e) in expected.iter_mut().enumerate() {
            *e = e.wrapping_add(d.wrapping_mul(task_hash(k as u64, t.stmt, &t.vars)));
        }
        children.clear();
        engine.for_each_child(t, &mut |stmt, vars, _, _| {
            children.push(Task {
                stmt,
                vars: vars.into(),
            })
        })?;
        for c in &children {
            if p.sequential_cmp(t, c) != std::cmp::Ordering::Less {
                return Err(QueryError::NotATask(format!(
                    "edge {} -> {} goes backwards in sequential order",
                    p.task_name(t),
                    p.task_name(c)
                ))
                .into());
            }
            stats.edges += 1;
            for (k, n) in notified.iter_mut().enumerate() {
                *n = n.wrapping_add(task_hash(k as u64, c.stmt, &c.vars));
            }
        }
        Ok(ControlFlow::Continue(()))
    })?;
    if stats.edges != expected_edges || notified != expected {
        return Err(QueryError::NotATask(format!(
            "the children plans gave {} edges, the parents plans {} (or the edge multisets differ)",
            stats.edges, expected_edges
        ))
        .into());
    }
    Ok(stats)
}
