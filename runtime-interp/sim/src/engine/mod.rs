//! The event loop: the real DAG of an instance, walked from the plans as a
//! runtime schedules it, on simulated workers.
//!
//! *Tasks.* Roots come from the parents plans (`has_parent`), in
//! sequential order. A task seen for the first time as a child gets a
//! counter from `in_degree` (the parents plans) and waits in the
//! frontier (`lpk_model::frontier::Waiting`, shared with `dag::walk` and the
//! executor) until its last parent completes; then it is ready. Nothing else about
//! the DAG is kept: memory is the frontier (waiting + ready tasks), the
//! workers' tile caches (an LRU of `cache_tiles` tiles each) and the
//! utilisation histogram (a fixed number of bins).
//!
//! *A task on a worker* reads each distinct tile it reads (a tile of a zero
//! matrix that no task writes is free): from the worker's cache for free,
//! else from the store (`latency + bytes / bandwidth`, counted as a remote
//! read); it computes for its statement's cost, then writes each result to
//! the store (the same cost per tile) and keeps it in its cache.
//!
//! *Lower bounds.* Every edge is followed once, so the top level `tl(t) =
//! max over parents (tl(p) + cost(p))` of every task is exact whatever the
//! schedule, and `critical_path_s = max tl(t) + cost(t)` is the longest path
//! by compute cost; `work_s` is the sum of the costs. The store's costs
//! are in neither (they depend on placement), so both are lower bounds of
//! the makespan: `makespan >= critical_path_s` and `makespan >= work_s / W`.
//!
//! *Policies* (docs/simulation.md): `fifo` (one queue in ready order, as
//! numpywren); `critical-path` (the ready task with the largest upper bound
//! on its bottom level first, see [`Policy::CriticalPath`]); `heft` (each
//! ready task placed at once on the worker with the earliest estimated
//! finish time, the transfer of the tiles that worker lacks included);
//! `locality` (each task queued on the worker of its part in a METIS
//! partition of the coarsened task/tile graph; a worker runs the newest
//! task of its queue, and one whose queue is empty steals the oldest task
//! of the queue where that finishes it soonest before its owner would).
//!
//! *Workers.* A fixed number, or numpywren's autoscaling policy (`ceil(sf
//! x ready)` workers wanted, at most `max`, a worker idle for `idle` seconds
//! exits). Each worker starts after a start-up delay drawn from the observed
//! delays. With a start-up bound `D` (the upper confidence bound of a
//! quantile of those delays), workers are requested `D` before the run is
//! submitted, so that they are up when it starts, and no worker is let go
//! after less than `D` idle (replacing it would cost about `D`).
//!
//! *Failures.* With probability `rate` per execution a worker dies at a
//! uniformly drawn point of the task; the task's lease expires `lease`
//! seconds after it started and it is queued again; a fixed pool requests a
//! replacement worker at once.
//!
//! *Stragglers, speculation and leases* (docs/simulation.md, "Stragglers,
//! speculation and leases from quantile bounds"). With probability `rate`
//! an execution takes `slow` times its modelled time. Each kernel keeps the
//! durations of its completed executions; from them the binomial upper
//! bound of a quantile ([`crate::quantile`]) gives the kernel's
//! speculation threshold (a running execution past it gets a backup copy
//! on the next free worker; the first copy to finish completes the task,
//! the other is cancelled) and, with [`Lease::Auto`], its lease. A lease
//! runs from an execution's start: when it expires on a dead worker the
//! task is queued again; on a live worker (a slow, healthy execution) a
//! copy is started beside it, as a backup.
//!
//! The loop and the DAG walk are here; the rest of the engine is in
//! `schedule` (the policies at work: queues, placement, picking,
//! dispatch), `workers` (the workers' life, caches and autoscaling),
//! `executions` (an execution from start to end: costs, stragglers,
//! crashes, leases, speculative copies and the bounds they use) and
//! `memory` (live tile bytes). The settings, the report and the timeline
//! are the crate's `config`, `faults`, `policy`, `report` and `timeline`,
//! re-exported here.

mod executions;
mod memory;
mod schedule;
mod workers;

use self::schedule::ByPriority;
use self::workers::{State, Worker};
use crate::cost::{statement_costs, CostModel, StatementCost, StoreCost};
use crate::partition::{self, Partition};
use crate::timeline::Histogram;
use lpk_model::frontier::{Queued, ReleaseError, Waiting};
use lpk_model::program::{Instance, Role as MatrixRole};
use lpk_model::query::Engine;
use lpk_model::rng::SplitMix64;
use lpk_model::task::{Task, TileRef};
use rustc_hash::FxHashMap;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeSet, BinaryHeap, VecDeque};
use std::ops::ControlFlow;

pub use crate::config::{Config, Workers};
pub use crate::error::SimError;
pub use crate::faults::{AutoLease, Failures, Lease, Speculation, Stragglers};
pub use crate::policy::Policy;
pub use crate::report::{KernelStats, Report};
pub use crate::timeline::Timeline;

/// A ready task.
#[derive(Clone, Debug)]
struct Ready {
    task: Task,
    /// Top level (compute cost of the longest path to it).
    tl: f64,
    /// Order it became ready in.
    seq: u64,
}

/// Why an execution runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// The task's (re-)run from the ready queue.
    First,
    /// A speculative backup.
    Backup,
    /// Started because a live execution's lease expired.
    LeaseRerun,
}

/// An execution on a worker.
struct Running {
    ready: Ready,
    start: f64,
    /// This execution's number (events of an older one are stale).
    exec: u64,
    /// The worker running the other copy of the task, if any.
    twin: Option<usize>,
    copy: Role,
    /// Its lease (seconds from its start).
    lease_s: f64,
    /// Its modelled duration (the straggler factor included).
    dur: f64,
    /// Its duration as the scheduler expects it (without a straggler's
    /// slow-down, which no scheduler knows in advance).
    expected: f64,
}

/// What an event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Up(usize),
    Done(usize, u64),
    Crash(usize, u64),
    Lease(usize),
    IdleCheck(usize),
    /// Does this execution pass its kernel's speculation threshold?
    Speculate(usize, u64),
    /// This live execution's lease expires.
    LeaseCheck(usize, u64),
}

/// A time or a cost as a heap key: seconds in `f64`'s total order.
#[derive(Clone, Copy, Debug)]
struct Seconds(f64);

impl PartialEq for Seconds {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Seconds {}
impl PartialOrd for Seconds {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Seconds {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0)
    }
}

/// An event keyed by its time, ties in the order they were pushed.
type Event = Queued<(Seconds, u64), Kind>;

/// A simulation's whole state.
struct Sim<'i, 'p> {
    inst: &'i Instance<'p>,
    engine: Engine<'i, 'p>,
    cfg: Config,
    costs: Vec<StatementCost>,
    now: f64,
    events: BinaryHeap<Reverse<Event>>,
    event_seq: u64,
    ready_seq: u64,
    fifo: VecDeque<Ready>,
    heap: BinaryHeap<ByPriority>,
    /// Per slot (HEFT, locality).
    queues: Vec<VecDeque<Ready>>,
    queued: usize,
    /// Locality: per slot, the seconds its queued tasks take their owner
    /// (compute and writes, [`Sim::estimate`]).
    backlog: Vec<f64>,
    /// Per slot, the live worker that holds it.
    holder: Vec<Option<usize>>,
    /// The slots no live worker holds, lowest first: a set, so that
    /// starting a worker or stealing from the gone ones' queues costs a
    /// logarithm, not a scan of every slot (quadratic at 65,536 workers).
    free_slots: BTreeSet<usize>,
    workers: Vec<Worker>,
    idle: Vec<usize>,
    waiting: Waiting<f64>,
    /// Tasks whose worker died, by worker, until the lease expires.
    lost: FxHashMap<usize, Ready>,
    partition: Option<Partition>,
    rng: SplitMix64,
    hist: Histogram,
    children: Vec<Task>,
    r: Report,
    completed: u64,
    live: usize,
    busy: usize,
    /// With `fresh_memory_bytes_per_s`: live tiles (readers left, bytes).
    live_tiles: FxHashMap<TileRef, (u32, u64)>,
    live_bytes: u64,
    peak_live: u64,
    exec_seq: u64,
    /// Copies waiting for a free worker: (worker, execution) to copy.
    copies: VecDeque<(usize, u64, Role)>,
    /// Statement → index into `r.kernels` (observed kernels).
    kernel_of: Vec<usize>,
    /// Whether durations are observed (speculation or an automatic lease).
    observe: bool,
}

/// Simulates one instance.
pub fn simulate(inst: &Instance<'_>, cfg: &Config) -> Result<Report, SimError> {
    cfg.check()?;
    let costs = statement_costs(inst, &cfg.costs, &cfg.kernels, cfg.block);
    let slots = match cfg.workers {
        Workers::Fixed(n) => n,
        Workers::Autoscale { max, .. } => max,
    };
    let partition = if cfg.policy == Policy::Locality {
        Some(partition::build(inst, &costs, slots, cfg.partition_nodes)?)
    } else {
        None
    };
    let observe = observes(cfg);
    let (kernels, kernel_of) = kernel_stats(&costs, observe);
    let r = Report::new(
        cfg.policy,
        unmodelled(&costs),
        partition.as_ref().map(|p| (p.nodes, p.shift)),
        kernels,
    );
    let start = -cfg.ahead.unwrap_or(0.0);
    let mut sim = Sim {
        inst,
        engine: Engine::new(inst),
        costs,
        now: start,
        events: BinaryHeap::new(),
        event_seq: 0,
        ready_seq: 0,
        fifo: VecDeque::new(),
        heap: BinaryHeap::new(),
        queues: vec![VecDeque::new(); slots],
        queued: 0,
        backlog: vec![0.0; slots],
        holder: vec![None; slots],
        free_slots: (0..slots).collect(),
        workers: Vec::new(),
        idle: Vec::new(),
        waiting: Waiting::new(),
        lost: FxHashMap::default(),
        r,
        partition,
        cfg: cfg.clone(),
        rng: SplitMix64::new(cfg.seed),
        hist: Histogram::new(start),
        children: Vec::new(),
        completed: 0,
        live: 0,
        busy: 0,
        live_tiles: FxHashMap::default(),
        live_bytes: 0,
        peak_live: 0,
        exec_seq: 0,
        copies: VecDeque::new(),
        kernel_of,
        observe,
    };
    sim.run()?;
    if cfg.costs.fresh_memory_bytes_per_s.is_some() {
        sim.r.peak_live_bytes = Some(sim.peak_live);
    }
    Ok(sim.r)
}

/// The kernels without a calibrated time or a flop model, sorted, each
/// once.
fn unmodelled(costs: &[StatementCost]) -> Vec<String> {
    let mut unmodelled: Vec<String> = costs
        .iter()
        .filter(|c| c.unmodelled)
        .map(|c| c.kernel.clone())
        .collect();
    unmodelled.sort();
    unmodelled.dedup();
    unmodelled
}

/// Whether durations are observed: for speculation or an automatic lease.
fn observes(cfg: &Config) -> bool {
    cfg.speculation.is_some()
        || matches!(
            cfg.failures,
            Some(Failures {
                lease: Lease::Auto(_),
                ..
            })
        )
}

/// The observed kernels' stats (none unless `observe`), and each
/// statement's kernel as an index into them.
fn kernel_stats(costs: &[StatementCost], observe: bool) -> (Vec<KernelStats>, Vec<usize>) {
    let mut kernels: Vec<KernelStats> = Vec::new();
    let mut kernel_of = Vec::with_capacity(costs.len());
    for c in costs {
        let i = match kernels.iter().position(|k| k.kernel == c.kernel) {
            Some(i) => i,
            None => {
                kernels.push(KernelStats::new(c.kernel.clone()));
                kernels.len() - 1
            }
        };
        kernel_of.push(i);
    }
    if !observe {
        kernels.clear();
    }
    (kernels, kernel_of)
}

impl Sim<'_, '_> {
    fn push_event(&mut self, time: f64, kind: Kind) {
        self.event_seq += 1;
        self.events.push(Reverse(Queued {
            key: (Seconds(time), self.event_seq),
            item: kind,
        }));
    }

    fn cost(&self, task: &Task) -> f64 {
        self.costs.get(task.stmt.index()).map_or(0.0, |c| c.seconds)
    }

    fn ready_len(&self) -> usize {
        self.fifo.len() + self.heap.len() + self.queued
    }

    /// The simulation: the first workers and the roots, then events in
    /// time order until every task has completed.
    fn run(&mut self) -> Result<(), SimError> {
        let roots = self.count_tasks()?;
        // The first workers (at `-D` with a start-up bound, else at 0),
        // before the roots are queued, so that HEFT places them on workers.
        let first = match self.cfg.workers {
            Workers::Fixed(n) => n,
            Workers::Autoscale { sf, max, .. } => {
                ((sf * roots.len() as f64).ceil() as usize).min(max)
            }
        };
        for _ in 0..first {
            self.request_worker();
        }
        for t in roots {
            self.make_ready(t, 0.0)?;
        }
        while let Some(Reverse(ev)) = self.events.pop() {
            let (Seconds(time), _) = ev.key;
            self.hist.advance(time);
            self.now = time;
            self.handle(ev.item)?;
            self.dispatch()?;
            self.autoscale();
            if self.completed == self.r.tasks {
                break;
            }
        }
        self.end()
    }

    /// Walks every task once: counts them and their compute cost, and
    /// returns the roots, in sequential order.
    fn count_tasks(&mut self) -> Result<Vec<Task>, SimError> {
        let mut roots = Vec::new();
        let mut tasks = 0u64;
        let mut work = 0.0f64;
        {
            let costs = &self.costs;
            self.engine.for_each_task_rooted(&mut |t, root| {
                tasks += 1;
                work += costs.get(t.stmt.index()).map_or(0.0, |c| c.seconds);
                if root {
                    roots.push(t.clone());
                }
                ControlFlow::Continue(())
            })?;
        }
        self.r.tasks = tasks;
        self.r.work_s = work;
        Ok(roots)
    }

    /// Handles one event (a stale one does nothing).
    fn handle(&mut self, kind: Kind) -> Result<(), SimError> {
        match kind {
            Kind::Up(w) => {
                if self.workers[w].state == State::Starting {
                    self.set_idle(w);
                }
            }
            Kind::Done(w, e) if self.runs(w, e) => self.complete(w)?,
            Kind::Crash(w, e) if self.runs(w, e) => self.crash(w),
            Kind::Done(..) | Kind::Crash(..) => {}
            Kind::Speculate(w, e) => self.speculate(w, e),
            Kind::LeaseCheck(w, e) => {
                if self.runs(w, e) && self.twin(w).is_none() {
                    self.copies.push_back((w, e, Role::LeaseRerun));
                }
            }
            Kind::Lease(w) => {
                if let Some(r) = self.lost.remove(&w) {
                    self.enqueue(r)?;
                }
            }
            Kind::IdleCheck(w) => self.idle_check(w),
        }
        Ok(())
    }

    /// After the last event: every task completed, and workers still alive
    /// end with the run.
    fn end(&mut self) -> Result<(), SimError> {
        if self.completed != self.r.tasks || !self.waiting.is_empty() {
            return Err(SimError::Inconsistent(format!(
                "{} of {} tasks completed, {} still waiting",
                self.completed,
                self.r.tasks,
                self.waiting.len()
            )));
        }
        let end = self.r.makespan_s;
        self.hist.advance(end);
        for w in &mut self.workers {
            let until = w.ended.unwrap_or(end).max(w.requested);
            self.r.worker_seconds += until - w.requested;
        }
        self.r.timeline = std::mem::take(&mut self.hist.t);
        Ok(())
    }

    /// `task`'s last parent completed (or it is a root).
    fn make_ready(&mut self, task: Task, tl: f64) -> Result<(), SimError> {
        self.ready_seq += 1;
        let r = Ready {
            task,
            tl,
            seq: self.ready_seq,
        };
        self.enqueue(r)?;
        self.r.max_frontier = self
            .r
            .max_frontier
            .max(self.waiting.len() + self.ready_len());
        Ok(())
    }

    /// Worker `w`'s execution finished first: its task completes and its
    /// children lose a parent.
    fn complete(&mut self, w: usize) -> Result<(), SimError> {
        let Some(run) = self.finish(w) else {
            return Ok(());
        };
        let task = run.ready.task;
        self.release_reads(&task)?;
        let finish_tl = run.ready.tl + self.cost(&task);
        self.r.critical_path_s = self.r.critical_path_s.max(finish_tl);
        self.r.makespan_s = self.r.makespan_s.max(self.now);
        self.completed += 1;
        self.release_children(&task, finish_tl)?;
        self.r.max_frontier = self
            .r
            .max_frontier
            .max(self.waiting.len() + self.ready_len());
        self.set_idle(w);
        Ok(())
    }

    /// `task` completed with top level plus cost `finish_tl`: each child
    /// loses a parent, and one whose parents have all completed is ready.
    fn release_children(&mut self, task: &Task, finish_tl: f64) -> Result<(), SimError> {
        let mut children = std::mem::take(&mut self.children);
        children.clear();
        self.engine.for_each_child(task, &mut |stmt, vars, _, _| {
            children.push(Task {
                stmt,
                vars: vars.into(),
            })
        })?;
        for child in children.drain(..) {
            self.r.edges += 1;
            let engine = &mut self.engine;
            let released = self.waiting.parent_done(
                child,
                |c| engine.in_degree(c),
                finish_tl,
                |tl| *tl = tl.max(finish_tl),
            );
            match released {
                Ok(Some((child, tl))) => self.make_ready(child, tl)?,
                Ok(None) => {}
                Err(ReleaseError::Plan(e)) => return Err(e.into()),
                Err(ReleaseError::Frontier(e)) => {
                    return Err(SimError::Inconsistent(format!(
                        "{} reached twice",
                        self.inst.program.task_name(e.task())
                    )))
                }
            }
        }
        self.children = children;
        Ok(())
    }
}

/// What reading tile `t` costs when the model cuts input tiles out of
/// dense inputs (`CostModel::input_cut`) and `t` is an input's tile.
fn input_cut(inst: &Instance<'_>, costs: &CostModel, t: &TileRef) -> Option<StoreCost> {
    costs
        .input_cut
        .filter(|_| inst.program.matrices[t.matrix.index()].role == MatrixRole::Input)
}
