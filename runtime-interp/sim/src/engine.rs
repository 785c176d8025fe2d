//! The event loop: the real DAG of an instance, walked from the plans as a
//! runtime schedules it, on simulated workers.
//!
//! *Tasks.* Roots come from the parents plans (`has_parent`), in
//! sequential order. A task seen for the first time as a child gets a
//! counter from `in_degree` (the parents plans) and waits in a hash map
//! until its last parent completes; then it is ready. Nothing else about
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
//! partition of the coarsened task/tile graph, idle workers steal from the
//! longest queue).
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
//! The settings, the report and the timeline are the crate's `config`,
//! `faults`, `policy`, `report` and `timeline`, re-exported here.

use crate::cost::{statement_costs, CostModel, StatementCost, StoreCost};
use crate::partition::{self, Partition};
use crate::timeline::Histogram;
use model::program::{Instance, Role as MatrixRole};
use model::query::Engine;
use model::rng::SplitMix64;
use model::task::{Task, TileRef};
use rustc_hash::FxHashMap;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeSet, BinaryHeap, VecDeque};
use std::num::NonZeroUsize;
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

/// An event, in time order (ties in the order they were pushed).
struct Event {
    time: f64,
    seq: u64,
    kind: Kind,
}
impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Event {
    fn cmp(&self, o: &Self) -> Ordering {
        self.time.total_cmp(&o.time).then(self.seq.cmp(&o.seq))
    }
}

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
    /// The slots no live worker holds, lowest first: a set, so that
    /// starting a worker or stealing from the gone ones' queues costs a
    /// logarithm, not a scan of every slot (quadratic at 65,536 workers).
    free_slots: BTreeSet<usize>,
    workers: Vec<Worker>,
    idle: Vec<usize>,
    waiting: FxHashMap<Task, (usize, f64)>,
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
    let costs = statement_costs(inst, &cfg.costs, cfg.block);
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
        free_slots: (0..slots).collect(),
        workers: Vec::new(),
        idle: Vec::new(),
        waiting: FxHashMap::default(),
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
        self.events.push(Reverse(Event {
            time,
            seq: self.event_seq,
            kind,
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
            self.hist.advance(ev.time);
            self.now = ev.time;
            self.handle(ev.kind)?;
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
            use std::collections::hash_map::Entry;
            match self.waiting.entry(child) {
                Entry::Occupied(mut e) => {
                    let (left, tl) = e.get_mut();
                    *tl = tl.max(finish_tl);
                    *left -= 1;
                    if *left == 0 {
                        let (child, (_, tl)) = e.remove_entry();
                        self.make_ready(child, tl)?;
                    }
                }
                Entry::Vacant(v) => match self.engine.in_degree(v.key())? {
                    0 => {
                        return Err(SimError::Inconsistent(format!(
                            "{} reached twice",
                            self.inst.program.task_name(v.key())
                        )))
                    }
                    1 => {
                        let child = v.into_key();
                        self.make_ready(child, finish_tl)?;
                    }
                    d => {
                        v.insert((d - 1, finish_tl));
                    }
                },
            }
        }
        self.children = children;
        Ok(())
    }
}

/// `Ready` ordered for the critical-path heap: smallest top level, then
/// largest cost, then earliest.
struct ByPriority {
    r: Ready,
    cost: f64,
}

impl PartialEq for ByPriority {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for ByPriority {}
impl PartialOrd for ByPriority {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for ByPriority {
    fn cmp(&self, o: &Self) -> Ordering {
        // BinaryHeap pops the greatest: greatest = smallest tl.
        o.r.tl
            .total_cmp(&self.r.tl)
            .then(self.cost.total_cmp(&o.cost))
            .then(o.r.seq.cmp(&self.r.seq))
    }
}

impl Sim<'_, '_> {
    /// Queues a ready task as the policy does: in ready order (fifo), by
    /// priority (critical-path), or on a worker's queue (HEFT, locality).
    fn enqueue(&mut self, r: Ready) -> Result<(), SimError> {
        match self.cfg.policy {
            Policy::Fifo => self.fifo.push_back(r),
            Policy::CriticalPath => {
                let cost = self.cost(&r.task);
                self.heap.push(ByPriority { r, cost });
            }
            Policy::Heft => {
                let slot = self.heft_place(&r)?;
                self.queues[slot].push_back(r);
                self.queued += 1;
            }
            Policy::Locality => {
                let slot = match &self.partition {
                    Some(p) => p.part_of(&self.engine, &r.task)? % self.queues.len(),
                    None => 0,
                };
                self.queues[slot].push_back(r);
                self.queued += 1;
            }
        }
        Ok(())
    }

    /// The tiles a task reads from the store or a cache: each distinct
    /// tile once, without zero tiles that no task writes.
    fn read_tiles(&mut self, task: &Task) -> Result<Vec<(TileRef, u64)>, SimError> {
        let tiles = self.engine.reads(task)?;
        let mut out: Vec<(TileRef, u64)> = Vec::with_capacity(tiles.len());
        let cost = &self.costs[task.stmt.index()];
        for (i, t) in tiles.into_iter().enumerate() {
            if out.iter().any(|(o, _)| *o == t) {
                continue;
            }
            if self.inst.program.is_zero(t.matrix) && self.engine.writer(&t)?.is_empty() {
                continue;
            }
            let b = cost.read_bytes.get(i).copied().unwrap_or(0);
            out.push((t, b));
        }
        Ok(out)
    }

    /// HEFT: the live worker with the earliest estimated finish time.
    fn heft_place(&mut self, r: &Ready) -> Result<usize, SimError> {
        let reads = self.read_tiles(&r.task)?;
        let st = &self.costs[r.task.stmt.index()];
        let store = self.cfg.costs.store;
        let writes: f64 = st.write_bytes.iter().map(|&b| store.transfer(b)).sum();
        let base = st.seconds + writes;
        let mut best: Option<(f64, usize)> = None;
        for (w, worker) in self.workers.iter().enumerate() {
            if worker.state == State::Gone {
                continue;
            }
            let transfer: f64 = reads
                .iter()
                .map(|(t, b)| match input_cut(self.inst, &self.cfg.costs, t) {
                    Some(cut) => cut.transfer(*b),
                    None if worker.cache.as_ref().is_some_and(|c| c.contains(t)) => 0.0,
                    None => store.transfer(*b),
                })
                .sum();
            let eft = worker.est_free.max(self.now) + transfer + base;
            if best.is_none_or(|(e, _)| eft < e) {
                best = Some((eft, w));
            }
        }
        match best {
            Some((eft, w)) => {
                self.workers[w].est_free = eft;
                Ok(self.workers[w].slot)
            }
            // No worker yet: the first slot (a worker will take it).
            None => Ok(0),
        }
    }

    /// The next task for worker `w`, by the policy.
    fn pick(&mut self, w: usize) -> Option<Ready> {
        match self.cfg.policy {
            Policy::Fifo => self.fifo.pop_front(),
            Policy::CriticalPath => self.heap.pop().map(|b| b.r),
            Policy::Heft | Policy::Locality => {
                let slot = self.workers[w].slot;
                let mut got = self.queues.get_mut(slot).and_then(VecDeque::pop_front);
                if got.is_none() && self.queued > 0 {
                    // Steal from the longest queue: any queue under
                    // `locality`; under HEFT only a queue whose worker is
                    // gone (a placement is final otherwise).
                    let longest = |slots: &mut dyn Iterator<Item = usize>| {
                        slots
                            .max_by_key(|&s| self.queues[s].len())
                            .filter(|&s| !self.queues[s].is_empty())
                    };
                    let victim = if self.cfg.policy == Policy::Heft {
                        longest(&mut self.free_slots.iter().copied())
                    } else {
                        longest(&mut (0..self.queues.len()))
                    };
                    got = victim.and_then(|s| self.queues[s].pop_front());
                }
                if got.is_some() {
                    self.queued -= 1;
                }
                got
            }
        }
    }

    /// Idle workers take work: copies first, then ready tasks as the
    /// policy picks them.
    fn dispatch(&mut self) -> Result<(), SimError> {
        self.dispatch_copies()?;
        if self.ready_len() == 0 {
            return Ok(());
        }
        let mut still_idle = Vec::new();
        while let Some(w) = self.idle.pop() {
            if !matches!(self.workers[w].state, State::Idle { .. }) {
                continue;
            }
            if self.ready_len() == 0 {
                still_idle.push(w);
                break;
            }
            match self.pick(w) {
                Some(r) => self.start(w, r)?,
                None => still_idle.push(w),
            }
        }
        self.idle.extend(still_idle);
        Ok(())
    }

    /// Copies (speculative backups, lease re-runs of live executions), each
    /// on the next free worker.
    fn dispatch_copies(&mut self) -> Result<(), SimError> {
        while !self.copies.is_empty() {
            let Some(&w) = self.idle.last() else { break };
            if !matches!(self.workers[w].state, State::Idle { .. }) {
                self.idle.pop();
                continue;
            }
            let Some((of, e, copy)) = self.copies.pop_front() else {
                break;
            };
            if !self.runs(of, e) || self.twin(of).is_some() {
                continue;
            }
            self.idle.pop();
            let ready = match &self.workers[of].running {
                Some(run) => run.ready.clone(),
                None => continue,
            };
            match copy {
                Role::Backup => {
                    self.r.backups += 1;
                    let k = self.kernel_of[ready.task.stmt.index()];
                    if let Some(ks) = self.r.kernels.get_mut(k) {
                        ks.backups += 1;
                    }
                }
                Role::LeaseRerun => self.r.lease_reruns += 1,
                Role::First => {}
            }
            self.start(w, ready)?;
            if let Some(run) = self.workers[w].running.as_mut() {
                run.copy = copy;
                run.twin = Some(of);
            }
            if let Some(run) = self.workers[of].running.as_mut() {
                run.twin = Some(w);
            }
        }
        Ok(())
    }
}

/// Where a worker is in its life.
#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Starting,
    Idle { since: f64 },
    Busy,
    Gone,
}

/// A worker's LRU tile cache of at most `cap` tiles. It grows as tiles
/// come (an `lru::LruCache::new(cap)` allocates its whole capacity up
/// front, which `--cache-tiles 100000000` on many workers turns into
/// gigabytes).
struct TileCache {
    lru: lru::LruCache<TileRef, ()>,
    cap: usize,
}

impl TileCache {
    fn new(cap: NonZeroUsize) -> TileCache {
        TileCache {
            lru: lru::LruCache::unbounded(),
            cap: cap.get(),
        }
    }

    fn contains(&self, t: &TileRef) -> bool {
        self.lru.contains(t)
    }

    /// Whether `t` is held, marking it most recently used.
    fn get(&mut self, t: &TileRef) -> Option<&()> {
        self.lru.get(t)
    }

    fn put(&mut self, t: TileRef, v: ()) {
        self.lru.put(t, v);
        if self.lru.len() > self.cap {
            self.lru.pop_lru();
        }
    }
}

/// A simulated worker.
struct Worker {
    state: State,
    /// When it was requested.
    requested: f64,
    /// When it died or exited, if it did.
    ended: Option<f64>,
    /// Its queue (HEFT, locality) and its part (locality).
    slot: usize,
    cache: Option<TileCache>,
    running: Option<Running>,
    /// HEFT: when the tasks placed on it are estimated to be done.
    est_free: f64,
}

impl Sim<'_, '_> {
    /// Workers the autoscaling policy wants now.
    fn wanted(&self) -> usize {
        match self.cfg.workers {
            Workers::Fixed(n) => n,
            Workers::Autoscale { sf, max, .. } => {
                ((sf * self.ready_len() as f64).ceil() as usize).min(max)
            }
        }
    }

    /// Autoscaling: requests workers until as many are live as it wants.
    fn autoscale(&mut self) {
        if let Workers::Autoscale { .. } = self.cfg.workers {
            let want = self.wanted();
            while self.live < want {
                self.request_worker();
            }
        }
    }

    /// Requests a worker, up after a start-up delay drawn from the observed
    /// ones (never before the run is submitted, at 0).
    fn request_worker(&mut self) {
        let delay = if self.cfg.startup.is_empty() {
            0.0
        } else {
            let i = (self.rng.next_u64() % self.cfg.startup.len() as u64) as usize;
            self.cfg.startup[i]
        };
        let slot = self.free_slots.pop_first().unwrap_or(0);
        let w = self.workers.len();
        self.workers.push(Worker {
            state: State::Starting,
            requested: self.now,
            ended: None,
            slot,
            cache: NonZeroUsize::new(self.cfg.cache_tiles).map(TileCache::new),
            running: None,
            est_free: (self.now + delay).max(0.0),
        });
        self.r.workers_started += 1;
        self.hist.advance(self.now);
        self.live += 1;
        self.hist.live_now = self.live;
        self.r.peak_workers = self.r.peak_workers.max(self.live);
        // The run is submitted at 0: a worker requested ahead that is up
        // before then waits for it.
        self.push_event((self.now + delay).max(0.0), Kind::Up(w));
    }

    /// Worker `w` is idle from now (autoscaling: until its idle check).
    fn set_idle(&mut self, w: usize) {
        self.workers[w].state = State::Idle { since: self.now };
        // HEFT's estimate: now when nothing is placed on it, else what is
        // placed is still to run.
        let slot = self.workers[w].slot;
        let empty = self.queues.get(slot).is_none_or(VecDeque::is_empty);
        let est = &mut self.workers[w].est_free;
        *est = if empty { self.now } else { est.max(self.now) };
        self.idle.push(w);
        if let Workers::Autoscale { idle, .. } = self.cfg.workers {
            let keep = idle.max(self.cfg.ahead.unwrap_or(0.0));
            self.push_event(self.now + keep, Kind::IdleCheck(w));
        }
    }

    /// Worker `w` is gone (dead or let go): its slot is free again.
    fn retire(&mut self, w: usize) {
        let worker = &mut self.workers[w];
        worker.state = State::Gone;
        worker.ended = Some(self.now);
        worker.cache = None;
        let slot = worker.slot;
        if slot < self.queues.len() {
            self.free_slots.insert(slot);
        }
        self.live -= 1;
        self.hist.live_now = self.live;
    }

    /// Autoscaling: worker `w` exits if it has been idle long enough.
    fn idle_check(&mut self, w: usize) {
        let Workers::Autoscale { idle, .. } = self.cfg.workers else {
            return;
        };
        let keep = idle.max(self.cfg.ahead.unwrap_or(0.0));
        if let State::Idle { since } = self.workers[w].state {
            if self.now - since >= keep - 1e-12 {
                self.retire(w);
            }
        }
    }
}

/// The most executions a simulation of `tasks` tasks runs before it gives
/// up: a thousand per task (a failure rate of 0.999 on average), so a rate
/// near 1 ends with an error instead of running for hours.
fn max_executions(tasks: u64) -> u64 {
    tasks.saturating_mul(1000).saturating_add(100_000)
}

impl Sim<'_, '_> {
    /// Starts an execution of `r` on worker `w`: its duration (reads,
    /// compute, writes, times a straggler's slow-down), its end or its
    /// worker's crash as an event, and the checks that watch it.
    fn start(&mut self, w: usize, r: Ready) -> Result<(), SimError> {
        let io = self.io_seconds(w, &r.task)?;
        let compute = self.costs[r.task.stmt.index()].seconds;
        let dur = (io + compute) * self.straggle();
        self.hist.advance(self.now);
        self.busy += 1;
        self.hist.busy_now = self.busy;
        self.r.peak_busy = self.r.peak_busy.max(self.busy);
        self.r.executions += 1;
        if self.r.executions > max_executions(self.r.tasks) {
            return Err(SimError::Config(format!(
                "{} executions for {} tasks: with this --fail-rate the run does not finish \
                 (each task runs 1 / (1 - rate) times on average; a real run fails a task \
                 after --max-expiries tries)",
                self.r.executions, self.r.tasks
            )));
        }
        self.exec_seq += 1;
        let exec = self.exec_seq;
        let kernel = self.kernel_of[r.task.stmt.index()];
        let lease_s = self.lease_for(kernel);
        let worker = &mut self.workers[w];
        worker.state = State::Busy;
        worker.running = Some(Running {
            ready: r,
            start: self.now,
            exec,
            twin: None,
            copy: Role::First,
            lease_s,
            dur,
        });
        let fail = self
            .cfg
            .failures
            .filter(|f| f.rate > 0.0)
            .is_some_and(|f| self.rng.unit() < f.rate);
        if fail {
            let at = self.now + self.rng.unit() * dur;
            self.push_event(at, Kind::Crash(w, exec));
        } else {
            self.push_event(self.now + dur, Kind::Done(w, exec));
        }
        self.watch(w, kernel);
        Ok(())
    }

    /// The seconds worker `w` spends moving `task`'s tiles: each read from
    /// its cache (free), a dense input or the store, each result written to
    /// the store and kept in its cache, and the memory its results first
    /// touch. The bytes are counted as they go.
    fn io_seconds(&mut self, w: usize, task: &Task) -> Result<f64, SimError> {
        let reads = self.read_tiles(task)?;
        let store = self.cfg.costs.store;
        let writes = self.inst.program.statements[task.stmt.index()].writes.len();
        let mut io = 0.0;
        {
            let worker = &mut self.workers[w];
            for (t, b) in reads {
                self.r.read_bytes += b;
                if let Some(cut) = input_cut(self.inst, &self.cfg.costs, &t) {
                    io += cut.transfer(b);
                    continue;
                }
                let local = worker.cache.as_mut().is_some_and(|c| c.get(&t).is_some());
                if !local {
                    self.r.remote_read_bytes += b;
                    io += store.transfer(b);
                    if let Some(c) = worker.cache.as_mut() {
                        c.put(t, ());
                    }
                }
            }
        }
        let outs = self.engine.writes(task)?;
        debug_assert_eq!(outs.len(), writes);
        let st = &self.costs[task.stmt.index()];
        for (i, t) in outs.into_iter().enumerate() {
            let b = st.write_bytes.get(i).copied().unwrap_or(0);
            self.r.written_bytes += b;
            io += store.transfer(b);
            if let Some(c) = self.workers[w].cache.as_mut() {
                c.put(t, ());
            }
        }
        io += self.grow_memory(task)?;
        Ok(io)
    }

    /// Whether worker `w` runs execution `exec`.
    fn runs(&self, w: usize, exec: u64) -> bool {
        self.workers[w]
            .running
            .as_ref()
            .is_some_and(|r| r.exec == exec)
    }

    /// The worker running the other copy of worker `w`'s execution.
    fn twin(&self, w: usize) -> Option<usize> {
        self.workers[w].running.as_ref().and_then(|r| r.twin)
    }

    /// The slow-down of an execution: `slow` with probability `rate`, else
    /// 1 (no draw without stragglers, so a rate of 0 changes nothing).
    fn straggle(&mut self) -> f64 {
        match self.cfg.stragglers {
            Some(s) if s.rate > 0.0 && self.rng.unit() < s.rate => {
                self.r.stragglers += 1;
                s.slow
            }
            _ => 1.0,
        }
    }

    /// The lease of an execution of `kernel` started now.
    fn lease_for(&self, kernel: usize) -> f64 {
        match self.cfg.failures.map(|f| f.lease) {
            None => f64::INFINITY,
            Some(Lease::Fixed(s)) => s,
            Some(Lease::Auto(a)) => self
                .r
                .kernels
                .get(kernel)
                .and_then(|k| k.lease_s)
                .unwrap_or(a.fallback_s),
        }
    }

    /// The events that watch worker `w`'s new execution: its speculation
    /// check (when its kernel has a threshold) and, with failures, its
    /// lease's expiry.
    fn watch(&mut self, w: usize, kernel: usize) {
        let Some(run) = self.workers[w].running.as_ref() else {
            return;
        };
        let (exec, start, lease) = (run.exec, run.start, run.lease_s);
        if let Some(t) = self.r.kernels.get(kernel).and_then(|k| k.threshold_s) {
            self.push_event(start + t, Kind::Speculate(w, exec));
        }
        if lease.is_finite() {
            self.push_event(start + lease, Kind::LeaseCheck(w, exec));
        }
    }

    /// A speculation check: a backup for an execution past its kernel's
    /// threshold that has no other copy.
    fn speculate(&mut self, w: usize, exec: u64) {
        if !self.runs(w, exec) || self.twin(w).is_some() {
            return;
        }
        let Some(run) = self.workers[w].running.as_ref() else {
            return;
        };
        let start = run.start;
        let kernel = self.kernel_of[run.ready.task.stmt.index()];
        let Some(t) = self.r.kernels.get(kernel).and_then(|k| k.threshold_s) else {
            return;
        };
        if self.now < start + t {
            // The threshold rose since the check was set.
            self.push_event(start + t, Kind::Speculate(w, exec));
            return;
        }
        if !self.copies.iter().any(|&(o, e, _)| o == w && e == exec) {
            self.copies.push_back((w, exec, Role::Backup));
        }
    }

    /// Records an observed duration and, at the update points (each new
    /// observation while there are fewer than 16, then whenever they have
    /// grown by an eighth, and at the `min` of speculation or the lease),
    /// recomputes the kernel's bounds from all observations so far.
    fn observe(&mut self, kernel: usize, dur: f64) {
        if !self.observe {
            return;
        }
        let Some(k) = self.r.kernels.get_mut(kernel) else {
            return;
        };
        k.samples.push(dur);
        let n = k.samples.len();
        // The first observation that reaches a `min` is an update point.
        let at_min = self.cfg.speculation.is_some_and(|s| s.min == n)
            || matches!(self.cfg.failures, Some(Failures { lease: Lease::Auto(a), .. }) if a.min == n);
        if n < k.next_update && !at_min {
            return;
        }
        k.next_update = n + (n / 8).max(1);
        if let Some(s) = self.cfg.speculation {
            if n >= s.min.max(1) {
                if let Ok(t) = crate::quantile::upper_bound(&k.samples, s.q, s.c) {
                    k.threshold_s = Some(t);
                    k.threshold_from = n;
                }
            }
        }
        if let Some(Failures {
            lease: Lease::Auto(a),
            ..
        }) = self.cfg.failures
        {
            if n >= a.min.max(1) {
                if let Ok(t) = crate::quantile::upper_bound(&k.samples, a.q, a.c) {
                    k.lease_s = Some(a.factor * t);
                    k.lease_from = n;
                }
            }
        }
        // Running executions of the kernel get a check at the new
        // threshold (a stale or repeated check does nothing).
        if self.cfg.speculation.is_some() {
            if let Some(t) = self.r.kernels[kernel].threshold_s {
                let mut checks = Vec::new();
                for (w, worker) in self.workers.iter().enumerate() {
                    if let Some(run) = &worker.running {
                        if run.twin.is_none()
                            && self.kernel_of[run.ready.task.stmt.index()] == kernel
                        {
                            checks.push(((run.start + t).max(self.now), w, run.exec));
                        }
                    }
                }
                for (at, w, e) in checks {
                    self.push_event(at, Kind::Speculate(w, e));
                }
            }
        }
    }

    /// Ends worker `w`'s execution, if it runs one, counting its busy time.
    fn stop_running(&mut self, w: usize) -> Option<Running> {
        let run = self.workers[w].running.take()?;
        self.hist.advance(self.now);
        self.r.busy_seconds += self.now - run.start;
        self.busy -= 1;
        self.hist.busy_now = self.busy;
        Some(run)
    }

    /// Worker `w` dies: its task waits for its lease (unless another copy
    /// holds it), HEFT's tasks placed on it go to the living, and a fixed
    /// pool requests a replacement.
    fn crash(&mut self, w: usize) {
        let Some(run) = self.stop_running(w) else {
            return;
        };
        self.r.failures += 1;
        self.retire(w);
        match run.twin {
            // The other copy runs on: it holds the task.
            Some(o) => {
                if let Some(other) = self.workers[o].running.as_mut() {
                    other.twin = None;
                }
            }
            None => {
                let at = (run.start + run.lease_s).max(self.now);
                self.lost.insert(w, run.ready);
                self.push_event(at, Kind::Lease(w));
            }
        }
        if self.cfg.policy == Policy::Heft {
            // Its placed tasks go to the living.
            let slot = self.workers[w].slot;
            let orphans: Vec<Ready> = self.queues[slot].drain(..).collect();
            self.queued -= orphans.len();
            for r in orphans {
                // Placement needs a live worker; with none, slot 0.
                let s = self.heft_place(&r).unwrap_or(0);
                self.queues[s].push_back(r);
                self.queued += 1;
            }
        }
        if let Workers::Fixed(_) = self.cfg.workers {
            self.request_worker();
        }
    }

    /// Worker `w`'s execution finished first: the other copy, if any, is
    /// cancelled, a winning copy counted, and the durations observed. The
    /// execution, or `None` if `w` runs none.
    fn finish(&mut self, w: usize) -> Option<Running> {
        let run = self.stop_running(w)?;
        let kernel = self.kernel_of[run.ready.task.stmt.index()];
        if let Some(o) = run.twin {
            // The other copy loses: cancelled, its worker freed. Its time so
            // far is observed too (a lower bound of its duration): observing
            // only the winners would hide the slow executions that copies
            // beat, and the bounds would never learn the tail.
            if let Some(other) = self.stop_running(o) {
                self.r.cancelled += 1;
                self.set_idle(o);
                self.observe(kernel, self.now - other.start);
            }
        }
        match run.copy {
            Role::Backup => {
                self.r.backups_won += 1;
                if let Some(ks) = self.r.kernels.get_mut(kernel) {
                    ks.backups_won += 1;
                }
            }
            Role::LeaseRerun => self.r.lease_reruns_won += 1,
            Role::First => {}
        }
        // The modelled duration, `now - start` but for rounding (so that a
        // threshold equal to a duration lets that execution finish first).
        self.observe(kernel, run.dur);
        Some(run)
    }
}

impl Sim<'_, '_> {
    /// With `fresh_memory_bytes_per_s`: the seconds task `task` spends
    /// first touching memory, for the result bytes that raise the peak of
    /// live tile bytes; its results become live (each tile once, however
    /// often it is written).
    fn grow_memory(&mut self, task: &Task) -> Result<f64, SimError> {
        let Some(rate) = self.cfg.costs.fresh_memory_bytes_per_s else {
            return Ok(0.0);
        };
        let outs = self.engine.writes(task)?;
        let st = &self.costs[task.stmt.index()];
        let bytes: Vec<u64> = st.write_bytes.clone();
        for (i, t) in outs.into_iter().enumerate() {
            if self.live_tiles.contains_key(&t) {
                continue;
            }
            let b = bytes.get(i).copied().unwrap_or(0);
            // A tile lives until its last reader ran; outputs too (the
            // executor hands them to the sink, which writes them to their
            // file in place and keeps none), so one nobody reads dies at
            // once.
            let left = u32::try_from(self.engine.readers(&t)?.len()).unwrap_or(u32::MAX);
            if left > 0 {
                self.live_tiles.insert(t, (left, b));
                self.live_bytes += b;
            }
        }
        let fresh = self.live_bytes.saturating_sub(self.peak_live);
        self.peak_live = self.peak_live.max(self.live_bytes);
        Ok(fresh as f64 / rate)
    }

    /// With `fresh_memory_bytes_per_s`: the tiles `task` read lose a
    /// reader; a tile whose readers all ran is freed.
    fn release_reads(&mut self, task: &Task) -> Result<(), SimError> {
        if self.cfg.costs.fresh_memory_bytes_per_s.is_none() {
            return Ok(());
        }
        let reads = self.engine.reads(task)?;
        for (i, t) in reads.iter().enumerate() {
            if reads[..i].contains(t) {
                continue;
            }
            if let Some((left, b)) = self.live_tiles.get_mut(t) {
                *left -= 1;
                if *left == 0 {
                    let b = *b;
                    self.live_tiles.remove(t);
                    self.live_bytes -= b;
                }
            }
        }
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
