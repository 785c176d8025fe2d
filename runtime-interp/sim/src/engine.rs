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

use crate::cost::{statement_costs, CostModel, StatementCost, StoreCost};
use crate::partition::{self, Partition};
use model::program::{Instance, Role as MatrixRole};
use model::query::Engine;
use model::rng::SplitMix64;
use model::task::{Task, TileRef};
use rustc_hash::FxHashMap;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeSet, BinaryHeap, VecDeque};
use std::num::NonZeroUsize;
use std::ops::ControlFlow;

/// A scheduling policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// One queue in the order tasks became ready (numpywren).
    Fifo,
    /// The ready task with the largest upper bound on its bottom level
    /// first. The bound is `CP - tl(t)` (the critical path minus the task's
    /// top level, both by compute cost): exact for every task on a critical
    /// path, and computable in the forward walk itself, with no reverse pass
    /// and no memory per task. Ordering by it is ordering by the smallest
    /// top level; ties go to the larger task cost, then to ready order.
    CriticalPath,
    /// Earliest finish time, placed when a task becomes ready.
    Heft,
    /// Owner computes by a METIS partition of the coarsened graph.
    Locality,
}

impl Policy {
    /// The name on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Fifo => "fifo",
            Policy::CriticalPath => "critical-path",
            Policy::Heft => "heft",
            Policy::Locality => "locality",
        }
    }

    /// Every policy.
    pub const ALL: [Policy; 4] = [
        Policy::Fifo,
        Policy::CriticalPath,
        Policy::Heft,
        Policy::Locality,
    ];
}

/// How many workers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Workers {
    /// This many, for the whole run (a dead one is replaced).
    Fixed(usize),
    /// numpywren's policy.
    Autoscale {
        /// Workers per ready task.
        sf: f64,
        /// At most this many.
        max: usize,
        /// Seconds idle before a worker exits.
        idle: f64,
    },
}

/// Worker failures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Failures {
    /// Probability that a worker dies during one execution.
    pub rate: f64,
    /// The lease of every execution.
    pub lease: Lease,
}

/// The lease of an execution: it runs from the execution's start. When it
/// expires before the execution ends, the task is queued again if the
/// worker died, and a copy is started beside it (the first to finish
/// wins) if the worker is alive.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lease {
    /// This many seconds for every execution.
    Fixed(f64),
    /// Per kernel, from the durations observed so far.
    Auto(AutoLease),
}

/// A lease from a quantile bound: `factor` times the upper bound of the
/// `q`-quantile at confidence `c` of the kernel's observed durations, once
/// it has at least `min` of them and they suffice for the bound;
/// `fallback_s` before.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AutoLease {
    /// The quantile.
    pub q: f64,
    /// The confidence.
    pub c: f64,
    /// The safety factor (at least 1).
    pub factor: f64,
    /// Observations needed before the bound is used.
    pub min: usize,
    /// The lease before that.
    pub fallback_s: f64,
}

impl AutoLease {
    /// `q = 0.99`, `c = 0.9`, `factor = 2`, `min = 20`, `fallback = 30 s`
    /// (the bound needs 230 observations of a kernel: `1 - 0.99^n >= 0.9`).
    /// A quantile above the share of stragglers keeps healthy slow
    /// executions under the lease (docs/simulation.md).
    pub const DEFAULT: AutoLease = AutoLease {
        q: 0.99,
        c: 0.9,
        factor: 2.0,
        min: 20,
        fallback_s: 30.0,
    };
}

/// Stragglers: each execution independently takes `slow` times its
/// modelled time (reads, compute and writes) with probability `rate`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stragglers {
    /// Probability that an execution straggles.
    pub rate: f64,
    /// Its slow-down factor (at least 1).
    pub slow: f64,
}

/// Speculative re-execution: once a kernel has `min` completed
/// executions, its threshold is the upper bound of the `q`-quantile at
/// confidence `c` of their durations; an execution running longer than its
/// kernel's threshold gets one backup copy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Speculation {
    /// The quantile.
    pub q: f64,
    /// The confidence.
    pub c: f64,
    /// Observations needed before any backup.
    pub min: usize,
}

impl Speculation {
    /// `q = 0.9`, `c = 0.95`, `min = 20`.
    pub const DEFAULT: Speculation = Speculation {
        q: 0.9,
        c: 0.95,
        min: 20,
    };
}

/// A simulation's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Tile side in elements.
    pub block: u64,
    /// The cost model.
    pub costs: CostModel,
    /// The workers.
    pub workers: Workers,
    /// The policy.
    pub policy: Policy,
    /// Observed start-up delays, drawn from for every worker (none: 0).
    pub startup: Vec<f64>,
    /// The start-up bound `D`: request the first workers `D` before the
    /// run and keep idle workers at least `D`.
    pub ahead: Option<f64>,
    /// Tiles each worker keeps (LRU); 0 keeps none.
    pub cache_tiles: usize,
    /// Failures, if any.
    pub failures: Option<Failures>,
    /// Stragglers, if any.
    pub stragglers: Option<Stragglers>,
    /// Speculative re-execution, if any.
    pub speculation: Option<Speculation>,
    /// Seed of the random draws (delays, failures).
    pub seed: u64,
    /// The most nodes of the coarsened graph (`locality`).
    pub partition_nodes: usize,
}

impl Config {
    /// Defaults for `block` and `workers`.
    pub fn new(block: u64, workers: Workers) -> Self {
        Config {
            block,
            costs: CostModel::default(),
            workers,
            policy: Policy::Fifo,
            startup: Vec::new(),
            ahead: None,
            cache_tiles: 64,
            failures: None,
            stragglers: None,
            speculation: None,
            seed: 1,
            partition_nodes: 4096,
        }
    }
}

pub use crate::error::SimError;

/// Utilisation over time: busy and live workers, averaged per bin.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// Time of the first bin's start (negative when workers were requested
    /// before the run).
    pub start: f64,
    /// Seconds per bin.
    pub width: f64,
    /// Busy worker-seconds per bin.
    pub busy: Vec<f64>,
    /// Live (requested, not yet gone) worker-seconds per bin.
    pub live: Vec<f64>,
}

const BINS: usize = 400;

struct Histogram {
    t: Timeline,
    last: f64,
    busy_now: usize,
    live_now: usize,
}

impl Histogram {
    fn new(start: f64) -> Self {
        Histogram {
            t: Timeline {
                start,
                width: 1e-6,
                busy: vec![0.0; BINS],
                live: vec![0.0; BINS],
            },
            last: start,
            busy_now: 0,
            live_now: 0,
        }
    }

    /// Accounts for the time up to `now` at the current counts.
    fn advance(&mut self, now: f64) {
        if now <= self.last {
            return;
        }
        while now - self.t.start > self.t.width * BINS as f64 {
            // Merge bins pairwise, doubling their width.
            for v in [&mut self.t.busy, &mut self.t.live] {
                for i in 0..BINS / 2 {
                    v[i] = v[2 * i] + v[2 * i + 1];
                }
                for x in &mut v[BINS / 2..] {
                    *x = 0.0;
                }
            }
            self.t.width *= 2.0;
        }
        let (b, l) = (self.busy_now as f64, self.live_now as f64);
        let mut a = self.last;
        while a < now {
            let i = (((a - self.t.start) / self.t.width) as usize).min(BINS - 1);
            let end = (self.t.start + (i + 1) as f64 * self.t.width).min(now);
            let end = if end <= a { now } else { end };
            self.t.busy[i] += b * (end - a);
            self.t.live[i] += l * (end - a);
            a = end;
        }
        self.last = now;
    }
}

/// What a simulation found.
#[derive(Clone, Debug)]
pub struct Report {
    /// The policy.
    pub policy: Policy,
    /// Tasks of the instance.
    pub tasks: u64,
    /// Edges followed.
    pub edges: u64,
    /// Task executions (tasks plus re-runs after failures).
    pub executions: u64,
    /// Workers that died.
    pub failures: u64,
    /// The last task's end (the run is submitted at 0).
    pub makespan_s: f64,
    /// Sum over workers of the time from request to exit (or the end).
    pub worker_seconds: f64,
    /// Sum over workers of the time spent running tasks.
    pub busy_seconds: f64,
    /// The longest path by compute cost (a lower bound of the makespan).
    pub critical_path_s: f64,
    /// Total compute cost (divided by the workers: a lower bound).
    pub work_s: f64,
    /// Bytes read by tasks (from their cache or the store).
    pub read_bytes: u64,
    /// Bytes read from the store.
    pub remote_read_bytes: u64,
    /// Bytes written to the store.
    pub written_bytes: u64,
    /// The most workers alive (starting or up) at once.
    pub peak_workers: usize,
    /// The most tasks running at once.
    pub peak_busy: usize,
    /// The most tasks waiting or ready at once.
    pub max_frontier: usize,
    /// Workers requested.
    pub workers_started: u64,
    /// Kernels without a calibrated time or a flop model (cost 0).
    pub unmodelled: Vec<String>,
    /// Utilisation over time.
    pub timeline: Timeline,
    /// Nodes of the coarsened graph, and the tiles' index shift (`locality`).
    pub partition: Option<(usize, u32)>,
    /// The peak of live tile bytes (results not yet read by all their
    /// readers), with a fresh-memory cost in the model.
    pub peak_live_bytes: Option<u64>,
    /// Executions slowed down as stragglers.
    pub stragglers: u64,
    /// Backup copies started by speculation.
    pub backups: u64,
    /// Of those, copies that finished first.
    pub backups_won: u64,
    /// Copies started because a live execution's lease expired.
    pub lease_reruns: u64,
    /// Of those, copies that finished first.
    pub lease_reruns_won: u64,
    /// Executions cancelled because the other copy finished first.
    pub cancelled: u64,
    /// Per kernel, with speculation or an automatic lease: what was
    /// observed and the bounds in force at the end.
    pub kernels: Vec<KernelStats>,
}

/// One kernel's observations and bounds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelStats {
    /// The kernel.
    pub kernel: String,
    /// Durations of its completed executions and, for a cancelled copy,
    /// its time until cancelled; in the order observed.
    pub samples: Vec<f64>,
    /// The speculation threshold at the end (none before enough samples).
    pub threshold_s: Option<f64>,
    /// The bound was computed from the first this many samples.
    pub threshold_from: usize,
    /// The automatic lease at the end (none: the fallback).
    pub lease_s: Option<f64>,
    /// The bound was computed from the first this many samples.
    pub lease_from: usize,
    /// Backups started for its executions.
    pub backups: u64,
    /// Of those, copies that finished first.
    pub backups_won: u64,
    /// The sample count at which the bounds are next recomputed.
    next_update: usize,
}

impl Report {
    /// The report as JSON (docs/cli.md, "Simulation").
    pub fn to_json(&self) -> serde_json::Value {
        let share = if self.read_bytes > 0 {
            self.remote_read_bytes as f64 / self.read_bytes as f64
        } else {
            0.0
        };
        let util = if self.worker_seconds > 0.0 {
            self.busy_seconds / self.worker_seconds
        } else {
            0.0
        };
        serde_json::json!({
            "policy": self.policy.name(),
            "tasks": self.tasks,
            "edges": self.edges,
            "executions": self.executions,
            "failures": self.failures,
            "makespan_s": self.makespan_s,
            "worker_seconds": self.worker_seconds,
            "busy_seconds": self.busy_seconds,
            "utilisation": util,
            "critical_path_s": self.critical_path_s,
            "work_s": self.work_s,
            "read_bytes": self.read_bytes,
            "remote_read_bytes": self.remote_read_bytes,
            "remote_read_share": share,
            "written_bytes": self.written_bytes,
            "peak_workers": self.peak_workers,
            "peak_busy": self.peak_busy,
            "max_frontier": self.max_frontier,
            "workers_started": self.workers_started,
            "unmodelled_kernels": self.unmodelled,
            "partition_nodes": self.partition.map(|p| p.0),
            "peak_live_bytes": self.peak_live_bytes,
            "stragglers": self.stragglers,
            "backups": self.backups,
            "backups_won": self.backups_won,
            "lease_reruns": self.lease_reruns,
            "lease_reruns_won": self.lease_reruns_won,
            "cancelled": self.cancelled,
            "kernels": self.kernels.iter().map(|k| serde_json::json!({
                "kernel": k.kernel,
                "observed": k.samples.len(),
                "threshold_s": k.threshold_s,
                "threshold_samples": k.threshold_from,
                "lease_s": k.lease_s,
                "lease_samples": k.lease_from,
                "backups": k.backups,
                "backups_won": k.backups_won,
            })).collect::<Vec<_>>(),
        })
    }
}

/// A ready task.
#[derive(Clone, Debug)]
struct Ready {
    task: Task,
    /// Top level (compute cost of the longest path to it).
    tl: f64,
    /// Order it became ready in.
    seq: u64,
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

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Starting,
    Idle { since: f64 },
    Busy,
    Gone,
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

/// The most executions a simulation of `tasks` tasks runs before it gives
/// up: a thousand per task (a failure rate of 0.999 on average), so a rate
/// near 1 ends with an error instead of running for hours.
fn max_executions(tasks: u64) -> u64 {
    tasks.saturating_mul(1000).saturating_add(100_000)
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

struct Worker {
    state: State,
    requested: f64,
    ended: Option<f64>,
    slot: usize,
    cache: Option<TileCache>,
    running: Option<Running>,
    /// HEFT: when the tasks placed on it are estimated to be done.
    est_free: f64,
}

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
    check_config(cfg)?;
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
    let mut unmodelled: Vec<String> = costs
        .iter()
        .filter(|c| c.unmodelled)
        .map(|c| c.kernel.clone())
        .collect();
    unmodelled.sort();
    unmodelled.dedup();
    let observe = cfg.speculation.is_some()
        || matches!(
            cfg.failures,
            Some(Failures {
                lease: Lease::Auto(_),
                ..
            })
        );
    let mut kernels: Vec<KernelStats> = Vec::new();
    let mut kernel_of = Vec::with_capacity(costs.len());
    for c in &costs {
        let i = match kernels.iter().position(|k| k.kernel == c.kernel) {
            Some(i) => i,
            None => {
                kernels.push(KernelStats {
                    kernel: c.kernel.clone(),
                    next_update: 1,
                    ..KernelStats::default()
                });
                kernels.len() - 1
            }
        };
        kernel_of.push(i);
    }
    if !observe {
        kernels.clear();
    }
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
        r: Report {
            policy: cfg.policy,
            tasks: 0,
            edges: 0,
            executions: 0,
            failures: 0,
            makespan_s: 0.0,
            worker_seconds: 0.0,
            busy_seconds: 0.0,
            critical_path_s: 0.0,
            work_s: 0.0,
            read_bytes: 0,
            remote_read_bytes: 0,
            written_bytes: 0,
            peak_workers: 0,
            peak_busy: 0,
            max_frontier: 0,
            workers_started: 0,
            unmodelled,
            timeline: Timeline::default(),
            partition: partition.as_ref().map(|p| (p.nodes, p.shift)),
            peak_live_bytes: None,
            stragglers: 0,
            backups: 0,
            backups_won: 0,
            lease_reruns: 0,
            lease_reruns_won: 0,
            cancelled: 0,
            kernels,
        },
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

fn check_config(cfg: &Config) -> Result<(), SimError> {
    let bad = |m: String| Err(SimError::Config(m));
    if cfg.block == 0 {
        return bad("the block size must be at least 1".into());
    }
    match cfg.workers {
        Workers::Fixed(n) if n == 0 || n > 1 << 16 => {
            return bad(format!("workers must be between 1 and 65536, found {n}"))
        }
        Workers::Autoscale { sf, max, idle }
            if !(sf > 0.0 && sf.is_finite())
                || max == 0
                || max > 1 << 16
                || !(idle > 0.0 && idle.is_finite()) =>
        {
            return bad("autoscale needs sf above 0, max from 1 to 65536, idle above 0".into());
        }
        _ => {}
    }
    if cfg.startup.iter().any(|d| !(d.is_finite() && *d >= 0.0)) {
        return bad("start-up delays must be finite and not negative".into());
    }
    if let Some(d) = cfg.ahead {
        if !(d.is_finite() && d >= 0.0) {
            return bad(format!(
                "the start-up bound must be finite and not negative, found {d}"
            ));
        }
    }
    let positive = |x: f64| x.is_finite() && x > 0.0;
    let unit = |x: f64| x > 0.0 && x < 1.0;
    if let Some(f) = cfg.failures {
        if !(0.0..1.0).contains(&f.rate) {
            return bad(format!(
                "the failure rate must be at least 0 and below 1, found {}",
                f.rate
            ));
        }
        match f.lease {
            Lease::Fixed(s) if !positive(s) => {
                return bad(format!("the lease must be above 0 seconds, found {s}"))
            }
            Lease::Auto(a)
                if !(unit(a.q)
                    && unit(a.c)
                    && a.factor.is_finite()
                    && a.factor >= 1.0
                    && positive(a.fallback_s)) =>
            {
                return bad(format!(
                    "an automatic lease needs q and c strictly between 0 and 1, a factor of at \
                     least 1 and a fallback above 0 seconds, found q = {}, c = {}, factor = {}, \
                     fallback = {}",
                    a.q, a.c, a.factor, a.fallback_s
                ));
            }
            _ => {}
        }
    }
    if let Some(s) = cfg.stragglers {
        if !((0.0..=1.0).contains(&s.rate) && s.slow.is_finite() && s.slow >= 1.0) {
            return bad(format!(
                "stragglers need a rate from 0 to 1 and a slow-down of at least 1, found rate = \
                 {}, slow = {}",
                s.rate, s.slow
            ));
        }
    }
    if let Some(s) = cfg.speculation {
        if !(unit(s.q) && unit(s.c)) {
            return bad(format!(
                "speculation needs q and c strictly between 0 and 1, found q = {}, c = {}",
                s.q, s.c
            ));
        }
    }
    cfg.costs
        .check()
        .map_err(|e| SimError::Config(e.to_string()))?;
    Ok(())
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

    fn run(&mut self) -> Result<(), SimError> {
        // Roots, in sequential order; every task counted.
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
            match ev.kind {
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
            self.dispatch()?;
            self.autoscale();
            if self.completed == self.r.tasks {
                break;
            }
        }
        if self.completed != self.r.tasks || !self.waiting.is_empty() {
            return Err(SimError::Inconsistent(format!(
                "{} of {} tasks completed, {} still waiting",
                self.completed,
                self.r.tasks,
                self.waiting.len()
            )));
        }
        // Workers still alive end with the run.
        let end = self.r.makespan_s;
        self.hist.advance(end);
        for w in &mut self.workers {
            let until = w.ended.unwrap_or(end).max(w.requested);
            self.r.worker_seconds += until - w.requested;
        }
        self.r.timeline = std::mem::take(&mut self.hist.t);
        Ok(())
    }

    /// Workers the autoscaling policy wants now.
    fn wanted(&self) -> usize {
        match self.cfg.workers {
            Workers::Fixed(n) => n,
            Workers::Autoscale { sf, max, .. } => {
                ((sf * self.ready_len() as f64).ceil() as usize).min(max)
            }
        }
    }

    fn autoscale(&mut self) {
        if let Workers::Autoscale { .. } = self.cfg.workers {
            let want = self.wanted();
            while self.live < want {
                self.request_worker();
            }
        }
    }

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

    fn dispatch(&mut self) -> Result<(), SimError> {
        // Copies first (speculative backups, lease re-runs of live
        // executions): each on the next free worker.
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

    fn start(&mut self, w: usize, r: Ready) -> Result<(), SimError> {
        let reads = self.read_tiles(&r.task)?;
        let store = self.cfg.costs.store;
        let writes = self.inst.program.statements[r.task.stmt.index()]
            .writes
            .len();
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
        let outs = self.engine.writes(&r.task)?;
        debug_assert_eq!(outs.len(), writes);
        let st = &self.costs[r.task.stmt.index()];
        let compute = st.seconds;
        for (i, t) in outs.into_iter().enumerate() {
            let b = st.write_bytes.get(i).copied().unwrap_or(0);
            self.r.written_bytes += b;
            io += store.transfer(b);
            if let Some(c) = self.workers[w].cache.as_mut() {
                c.put(t, ());
            }
        }
        io += self.grow_memory(&r.task)?;
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

    /// Whether worker `w` runs execution `exec`.
    fn runs(&self, w: usize, exec: u64) -> bool {
        self.workers[w]
            .running
            .as_ref()
            .is_some_and(|r| r.exec == exec)
    }

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

    fn stop_running(&mut self, w: usize) -> Option<Running> {
        let run = self.workers[w].running.take()?;
        self.hist.advance(self.now);
        self.r.busy_seconds += self.now - run.start;
        self.busy -= 1;
        self.hist.busy_now = self.busy;
        Some(run)
    }

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

    fn complete(&mut self, w: usize) -> Result<(), SimError> {
        let Some(run) = self.stop_running(w) else {
            return Ok(());
        };
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
        let task = run.ready.task;
        self.release_reads(&task)?;
        let finish_tl = run.ready.tl + self.cost(&task);
        self.r.critical_path_s = self.r.critical_path_s.max(finish_tl);
        self.r.makespan_s = self.r.makespan_s.max(self.now);
        self.completed += 1;
        let mut children = std::mem::take(&mut self.children);
        children.clear();
        self.engine.for_each_child(&task, &mut |stmt, vars, _, _| {
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
        self.r.max_frontier = self
            .r
            .max_frontier
            .max(self.waiting.len() + self.ready_len());
        self.set_idle(w);
        Ok(())
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_keeps_the_integral() {
        let mut h = Histogram::new(0.0);
        h.busy_now = 2;
        h.live_now = 3;
        h.advance(10.0);
        h.busy_now = 1;
        h.advance(1000.0);
        let busy: f64 = h.t.busy.iter().sum();
        let live: f64 = h.t.live.iter().sum();
        assert!((busy - (20.0 + 990.0)).abs() < 1e-6, "{busy}");
        assert!((live - 3000.0).abs() < 1e-6, "{live}");
        assert!(h.t.width * BINS as f64 >= 1000.0);
    }
}
