//! The embedded executor: runs one program instance on real tiles with a
//! pool of worker threads, without ever materialising the DAG.
//!
//! - The roots (tasks with no parents) are found by one sequential pass over
//!   the iteration domains, asking the parents plans whether a task has a
//!   parent.
//! - Each waiting task has a counter, created the first time one of its
//!   parents completes (initialised from the parents plan) and removed when
//!   it reaches zero (`lpk_model::frontier::Waiting`, the counters every DAG
//!   walk shares): memory holds only the frontier, not the DAG.
//! - A completed task stores the tiles it wrote together with their number
//!   of readers (its outgoing edges per tile, from the children plans); a
//!   tile that is not an output is freed after its last reader ran, so the
//!   tiles in memory stay near the live working set.
//! - Ready tasks run in sequential program order (a priority queue), which
//!   keeps the working set small and follows the critical path of the usual
//!   right-looking factorisations.
//!
//! Every kernel is deterministic and every tile is computed by exactly one
//! task from the same inputs, so results do not depend on the number of
//! workers or the order in which ready tasks run.

use crate::kernels::{Kernel, KernelArg, Registry, Tile};
use crate::timeline::now_us;
use lpk_model::expr::{Env, Value};
use lpk_model::frontier::{Queued, Waiting};
use lpk_model::program::{Arg, Instance, ParamKind, Role};
use lpk_model::query::{Engine, QueryError};
use lpk_model::task::{Task, TileRef, Vars, WalkError};
use lpk_model::MatrixId;
use rustc_hash::{FxHashMap, FxHashSet};
use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::hash_map::Entry;
use std::collections::BinaryHeap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Supplies the tiles of `input` matrices.
pub trait TileSource: Sync {
    /// Tile `index` of input matrix `matrix` (an index into
    /// `Program::matrices`).
    fn input(&self, matrix: MatrixId, index: &[i64]) -> Result<Arc<Tile>, TileError>;

    /// The block size the inputs are cut with, if the source has one: the
    /// size of a zero tile that no kernel argument gives
    /// ([`crate::zero::zero_tiles`]).
    fn block(&self) -> Option<usize> {
        None
    }
}

/// Receives every tile written to an `output` matrix, once, as soon as it
/// is computed.
pub trait TileSink: Sync {
    /// Stores output tile `index` of matrix `matrix`.
    fn output(&self, matrix: MatrixId, index: &[i64], tile: Arc<Tile>) -> Result<(), TileError>;
}

/// `M[i, j]`, for messages.
pub(crate) fn tile_text(matrix: &str, index: &[i64]) -> String {
    let idx: Vec<String> = index.iter().map(i64::to_string).collect();
    format!("{matrix}[{}]", idx.join(", "))
}

/// Why a [`TileSource`] could not supply a tile or a [`TileSink`] could not
/// store one. The executor adds the task and the tile's name
/// ([`ExecError::Input`], [`ExecError::Output`]).
#[derive(Debug, thiserror::Error)]
pub enum TileError {
    /// The source holds no data for this matrix.
    #[error("no data for this matrix")]
    NoData {
        /// The matrix (an index into `Program::matrices`).
        matrix: MatrixId,
    },
    /// A tile index beyond the data of its dimension.
    #[error("tile index {index} is outside the data ({len} elements)")]
    OutsideData {
        /// The tile index.
        index: i64,
        /// Elements of the data in that dimension.
        len: usize,
    },
    /// A sink received the same tile twice.
    #[error("tile written twice")]
    WrittenTwice {
        /// The matrix.
        matrix: MatrixId,
        /// The tile index.
        index: Vec<i64>,
    },
    /// A matrix index the program does not have.
    #[error("matrix {0} is not in the program")]
    UnknownMatrix(MatrixId),
    /// A tile store that does not hold the tile.
    #[error("tile {} is not in the tile store ({store})", tile_text(matrix, index))]
    NotInStore {
        /// The matrix's name.
        matrix: String,
        /// The tile index.
        index: Vec<i64>,
        /// The store, as [`crate::store::TileStore::describe`] gives it.
        store: String,
    },
    /// Reading a tile of a `.npy` file failed.
    #[error(transparent)]
    Npy(Box<crate::npy::NpyError>),
    /// A tile whose shape is not the one its place in an output file
    /// expects.
    #[error("tile {} is {}×{} but its place in the output file is {}×{}", tile_text(matrix, index), have.0, have.1, want.0, want.1)]
    UnexpectedShape {
        /// The matrix's name.
        matrix: String,
        /// The tile index.
        index: Vec<i64>,
        /// The tile's shape.
        have: (usize, usize),
        /// The shape of its place.
        want: (usize, usize),
    },
    /// Reading from a tile store failed (the store's error: the executor
    /// knows no store, so that stores can build on it).
    #[error(transparent)]
    Store(Box<dyn std::error::Error + Send + Sync>),
    /// Writing to a tile store failed.
    #[error("storing {}: {source}", tile_text(matrix, index))]
    Storing {
        /// The matrix's name.
        matrix: String,
        /// The tile index.
        index: Vec<i64>,
        /// The store's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Executor settings.
#[derive(Clone, Debug)]
pub struct ExecConfig {
    /// Worker threads (at least 1).
    pub workers: usize,
}

impl Default for ExecConfig {
    fn default() -> Self {
        ExecConfig {
            workers: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        }
    }
}

/// Live counters a caller may poll (e.g. for a progress bar) while a run
/// goes on, and a flag to cancel it.
#[derive(Debug, Default)]
pub struct Progress {
    /// Tasks completed.
    pub done: AtomicU64,
    /// Tasks in the instance (set once the roots pass has counted them).
    pub total: AtomicU64,
    /// Floating-point operations of completed tasks (when a flop model is
    /// known), as f64 bits.
    pub flops_bits: AtomicU64,
    /// Set to stop the run early; it then fails with [`ExecError::Cancelled`].
    pub cancel: AtomicBool,
    /// The timeline of the run (one event per task), when asked for with
    /// [`Progress::with_timeline`].
    timeline: Mutex<Option<Vec<crate::timeline::Event>>>,
    /// What a run on files ([`crate::job`]) is doing, as a [`Stage`]: its
    /// work after the last task (`--verify`, writing outputs) can take
    /// long, and a progress display says what it waits for.
    stage: AtomicU8,
}

/// The stages of a run on files, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Opening inputs and running tasks.
    Tasks,
    /// `--verify`: reading the inputs and outputs back whole.
    VerifyRead,
    /// `--verify`: computing the residual.
    VerifyCompute,
    /// Syncing and writing the output files and the marker.
    Finish,
}

impl Stage {
    /// What the stage does, for a progress display: `verifying: reading
    /// the inputs and outputs back`.
    pub fn describe(self) -> &'static str {
        match self {
            Stage::Tasks => "running tasks",
            Stage::VerifyRead => "verifying: reading the inputs and outputs back",
            Stage::VerifyCompute => "verifying: computing the residual",
            Stage::Finish => "writing outputs",
        }
    }
}

impl Progress {
    /// A progress that also records the timeline of the run
    /// ([`Progress::take_timeline`] after it).
    pub fn with_timeline() -> Progress {
        let p = Progress::default();
        *lock(&p.timeline) = Some(Vec::new());
        p
    }

    fn timeline_enabled(&self) -> bool {
        lock(&self.timeline).is_some()
    }

    fn record(&self, event: crate::timeline::Event) {
        if let Some(events) = lock(&self.timeline).as_mut() {
            events.push(event);
        }
    }

    /// The events recorded so far (empty unless made with
    /// [`Progress::with_timeline`]).
    pub fn take_timeline(&self) -> Vec<crate::timeline::Event> {
        lock(&self.timeline)
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The stage a run on files is in.
    pub fn stage(&self) -> Stage {
        match self.stage.load(Ordering::Relaxed) {
            1 => Stage::VerifyRead,
            2 => Stage::VerifyCompute,
            3 => Stage::Finish,
            _ => Stage::Tasks,
        }
    }

    /// Enters a stage.
    pub fn set_stage(&self, stage: Stage) {
        let v = match stage {
            Stage::Tasks => 0,
            Stage::VerifyRead => 1,
            Stage::VerifyCompute => 2,
            Stage::Finish => 3,
        };
        self.stage.store(v, Ordering::Relaxed);
    }

    /// Floating-point operations of completed tasks so far.
    pub fn flops(&self) -> f64 {
        f64::from_bits(self.flops_bits.load(Ordering::Relaxed))
    }

    fn add_flops(&self, f: f64) {
        let _ = self
            .flops_bits
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some((f64::from_bits(b) + f).to_bits())
            });
    }
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunReport {
    /// Tasks executed.
    pub tasks: u64,
    /// Root tasks (no parents).
    pub roots: u64,
    /// Dependence edges followed.
    pub edges: u64,
    /// Wall time of the whole run, including the roots pass.
    pub wall: Duration,
    /// Time spent inside kernels, summed over workers.
    pub kernel_time: Duration,
    /// Time spent loading input tiles from the [`TileSource`], summed over
    /// workers.
    pub input_time: Duration,
    /// Time spent handing output tiles to the [`TileSink`], summed over
    /// workers.
    pub output_time: Duration,
    /// Floating-point operations (0 where the flop model is unknown).
    pub flops: f64,
    /// Whether every kernel had a flop model.
    pub flops_complete: bool,
    /// The most bytes of tiles held by the executor at one time (tiles
    /// written and not yet freed, plus the input tiles of running tasks).
    pub peak_tile_bytes: u64,
    /// The most tasks waiting for parents at one time.
    pub max_waiting: usize,
    /// Worker threads used.
    pub workers: usize,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// A kernel that the program calls has no implementation.
    #[error(
        "kernel `{name}` has no implementation ({} {}); supply one: from Python \
         `lpk.run(..., kernels={{\"{name}\": fn}})`, from Rust a `Kernel` registered \
         in the runtime's `Registry` (docs/kernels.md, \"User kernels\"); the runtime \
         knows: {known}",
        if .lines.len() == 1 { "called on line" } else { "called on lines" },
        line_list(.lines)
    )]
    MissingKernel {
        /// The kernel's name.
        name: String,
        /// The source lines of the statements that call it, ascending.
        lines: Vec<u32>,
        /// The kernels the registry holds, comma-separated.
        known: String,
    },
    /// A kernel failed on a task.
    #[error("task {task} failed{tiles}: {reason}")]
    Kernel {
        /// The task, e.g. `chol@33(k=2)`.
        task: String,
        /// " reading S[2, 2, 2], ..." (empty when the task reads nothing).
        tiles: String,
        /// The kernel's reason.
        reason: String,
    },
    /// A kernel returned the wrong number of tiles.
    #[error("task {task}: kernel `{kernel}` returned {got} tiles, the program expects {want}")]
    ResultCount {
        /// The task.
        task: String,
        /// The kernel.
        kernel: String,
        /// Tiles returned.
        got: usize,
        /// Tiles expected.
        want: usize,
    },
    /// A task read a tile no task has written.
    #[error("task {task} reads {tile}, which no earlier task wrote")]
    Unwritten {
        /// The task.
        task: String,
        /// The tile.
        tile: String,
    },
    /// Two tasks wrote one tile: the program breaks single assignment
    /// (E0501) for this instance. The run stops rather than let the last
    /// writer win.
    #[error(
        "tile {tile} is written twice, by {first} and by {second}: every tile is written \
         at most once (E0501; `lpkc lint -p ...` shows it for this instance)"
    )]
    WrittenTwice {
        /// The tile.
        tile: String,
        /// The task that wrote it first in this run (or "another task").
        first: String,
        /// The task that wrote it again.
        second: String,
    },
    /// A task reads a tile that a later task (in sequential order) writes:
    /// the program breaks the read-before-write rule (E0504).
    #[error(
        "task {reader} reads {tile}, which {writer} writes after it in program order \
         (E0504; `lpkc lint -p ...` shows it for this instance)"
    )]
    ReadBeforeWrite {
        /// The reading task.
        reader: String,
        /// The tile.
        tile: String,
        /// The writing task.
        writer: String,
    },
    /// A zero tile could not be made (no size for it).
    #[error(transparent)]
    ZeroTile(#[from] crate::zero::ZeroTileError),
    /// Loading an input tile failed.
    #[error("task {task}: cannot load input tile {tile}: {source}")]
    Input {
        /// The task.
        task: String,
        /// The tile.
        tile: String,
        /// Why.
        source: Box<TileError>,
    },
    /// Storing an output tile failed.
    #[error("task {task}: cannot store output tile {tile}: {source}")]
    Output {
        /// The task.
        task: String,
        /// The tile.
        tile: String,
        /// Why.
        source: Box<TileError>,
    },
    /// A dependence query failed (a bad plan or an evaluation error).
    #[error("dependence query failed: {0}")]
    Query(#[from] QueryError),
    /// Enumerating the tasks failed.
    #[error("{0}")]
    Walk(#[from] WalkError),
    /// A scalar argument could not be evaluated.
    #[error("task {task}: cannot evaluate scalar argument {arg}: {reason}")]
    Scalar {
        /// The task.
        task: String,
        /// 1-based argument position.
        arg: usize,
        /// Why.
        reason: String,
    },
    /// The DAG is inconsistent (a plan bug): a task became ready twice or
    /// never.
    #[error("inconsistent dependences: {0}")]
    Inconsistent(String),
    /// The run was cancelled.
    #[error("cancelled after {0} tasks")]
    Cancelled(u64),
}

/// A tile key: matrix and index.
type TileKey = (MatrixId, Vars);

/// A stored tile and how many reader tasks have not run yet.
struct Stored {
    tile: Arc<Tile>,
    readers: u64,
    bytes: u64,
}

/// A ready task keyed by its sequential order, smaller first (reversed, as
/// `BinaryHeap` pops the greatest).
type Ready = Queued<Reverse<Vec<i64>>, Task>;

struct Sched {
    ready: BinaryHeap<Ready>,
    waiting: Waiting,
    running: usize,
    failed: Option<ExecError>,
    max_waiting: usize,
}

struct Shared<'a, 'p> {
    inst: &'a Instance<'p>,
    kernels: Vec<Arc<dyn Kernel>>,
    sched: Mutex<Sched>,
    wake: Condvar,
    tiles: Vec<Mutex<FxHashMap<TileKey, Stored>>>,
    /// The output tiles written so far (their keys only): a second write of
    /// one is an error, not a last-writer-wins.
    outputs_written: Vec<Mutex<FxHashSet<TileKey>>>,
    bytes: AtomicU64,
    peak: AtomicU64,
    edges: AtomicU64,
    kernel_nanos: AtomicU64,
    input_nanos: AtomicU64,
    output_nanos: AtomicU64,
    flops_unknown: AtomicBool,
    source: &'a dyn TileSource,
    sink: &'a dyn TileSink,
    count_flops: bool,
    progress: &'a Progress,
}

const SHARDS: usize = 64;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A worker that panicked cannot leave the data half-updated in a way
    // that matters more than the panic itself, which is reported anyway.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn tile_bytes(t: &Tile) -> u64 {
    (t.nrows() * t.ncols() * std::mem::size_of::<f64>()) as u64
}

fn shard(key: &TileKey) -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    key.hash(&mut h);
    (h.finish() as usize) % SHARDS
}

/// The sequential-order key of a task: pre-order numbers of its enclosing
/// loops interleaved with the loop values (see `Program::sequential_cmp`).
fn order_key(inst: &Instance<'_>, task: &Task) -> Vec<i64> {
    let mut key = Vec::new();
    if let Some(st) = inst.program.get_statement(task.stmt) {
        for (k, &o) in st.order.iter().enumerate() {
            key.push(o as i64);
            if let Some(&v) = task.vars.get(k) {
                key.push(v);
            }
        }
    }
    key
}

/// The root tasks, in sequential order, and the task count, in one
/// sequential pass (stopped by the cancel flag).
fn roots(inst: &Instance<'_>, progress: &Progress) -> Result<(BinaryHeap<Ready>, u64), ExecError> {
    let mut engine = Engine::new(inst);
    let mut roots = BinaryHeap::new();
    let mut total = 0u64;
    engine.for_each_task_rooted(&mut |t, root| {
        total += 1;
        if root {
            roots.push(Queued {
                key: Reverse(order_key(inst, t)),
                item: t.clone(),
            });
        }
        if progress.cancel.load(Ordering::Relaxed) {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    })?;
    if progress.cancel.load(Ordering::Relaxed) {
        return Err(ExecError::Cancelled(0));
    }
    Ok((roots, total))
}

/// Runs an instance to completion. `source` provides input tiles, `sink`
/// receives output tiles; with `count_flops`, the kernels' flop counts
/// ([`Kernel::flops`]) give GFLOP/s figures.
pub fn execute(
    inst: &Instance<'_>,
    registry: &Registry,
    source: &dyn TileSource,
    sink: &dyn TileSink,
    count_flops: bool,
    config: &ExecConfig,
    progress: &Progress,
) -> Result<RunReport, ExecError> {
    let start = Instant::now();
    let kernels = resolve_kernels(inst.program, registry)?;
    let (roots, total) = roots(inst, progress)?;
    progress.total.store(total, Ordering::Relaxed);
    let root_count = roots.len() as u64;

    let workers = config.workers.max(1);
    let shared = Shared {
        inst,
        kernels,
        sched: Mutex::new(Sched {
            ready: roots,
            waiting: Waiting::new(),
            running: 0,
            failed: None,
            max_waiting: 0,
        }),
        wake: Condvar::new(),
        tiles: (0..SHARDS)
            .map(|_| Mutex::new(FxHashMap::default()))
            .collect(),
        outputs_written: (0..SHARDS)
            .map(|_| Mutex::new(FxHashSet::default()))
            .collect(),
        bytes: AtomicU64::new(0),
        peak: AtomicU64::new(0),
        edges: AtomicU64::new(0),
        kernel_nanos: AtomicU64::new(0),
        input_nanos: AtomicU64::new(0),
        output_nanos: AtomicU64::new(0),
        flops_unknown: AtomicBool::new(!count_flops),
        source,
        sink,
        count_flops,
        progress,
    };
    std::thread::scope(|s| {
        for w in 0..workers {
            let shared = &shared;
            let spawned = std::thread::Builder::new()
                .name(format!("lpk-worker-{w}"))
                .spawn_scoped(s, move || registry.run_in_thread_context(|| worker(shared)));
            if let Err(e) = spawned {
                let mut sc = lock(&shared.sched);
                sc.failed.get_or_insert(ExecError::Inconsistent(format!(
                    "cannot start worker thread: {e}"
                )));
                shared.wake.notify_all();
            }
        }
    });
    let mut sc = lock(&shared.sched);
    if let Some(e) = sc.failed.take() {
        return Err(e);
    }
    let done = progress.done.load(Ordering::Relaxed);
    if done != total || !sc.waiting.is_empty() {
        return Err(ExecError::Inconsistent(format!(
            "{done} of {total} tasks ran; {} never became ready",
            sc.waiting.len()
        )));
    }
    Ok(RunReport {
        tasks: done,
        roots: root_count,
        edges: shared.edges.load(Ordering::Relaxed),
        wall: start.elapsed(),
        kernel_time: Duration::from_nanos(shared.kernel_nanos.load(Ordering::Relaxed)),
        input_time: Duration::from_nanos(shared.input_nanos.load(Ordering::Relaxed)),
        output_time: Duration::from_nanos(shared.output_nanos.load(Ordering::Relaxed)),
        flops: progress.flops(),
        flops_complete: !shared.flops_unknown.load(Ordering::Relaxed),
        peak_tile_bytes: shared.peak.load(Ordering::Relaxed),
        max_waiting: sc.max_waiting,
        workers,
    })
}

/// The implementation of every kernel the program declares, indexed like
/// `Program::kernels`. A kernel that some statement calls must be in the
/// registry; an uncalled one without an implementation fails if called.
pub fn resolve_kernels(
    program: &lpk_model::program::Program,
    registry: &Registry,
) -> Result<Vec<Arc<dyn Kernel>>, ExecError> {
    let mut kernels = Vec::with_capacity(program.kernels.len());
    let mut missing = Vec::new();
    for k in &program.kernels {
        match registry.get(&k.name) {
            Some(imp) => kernels.push(imp.clone()),
            None => missing.push(k.name.clone()),
        }
    }
    // Only kernels that some statement calls must exist: the first such
    // kernel (in statement order) is named with every line calling it.
    let first_missing = program.statements.iter().find_map(|st| {
        program
            .get_kernel(st.kernel)
            .filter(|k| missing.contains(&k.name))
    });
    if let Some(k) = first_missing {
        let mut lines: Vec<u32> = program
            .statements
            .iter()
            .filter(|st| {
                program
                    .get_kernel(st.kernel)
                    .is_some_and(|d| d.name == k.name)
            })
            .map(|st| st.line)
            .collect();
        lines.sort_unstable();
        lines.dedup();
        return Err(ExecError::MissingKernel {
            name: k.name.clone(),
            lines,
            known: registry.names().collect::<Vec<_>>().join(", "),
        });
    }
    if !missing.is_empty() {
        // Uncalled kernels without an implementation: keep indices aligned.
        kernels.clear();
        for k in &program.kernels {
            kernels.push(
                registry
                    .get(&k.name)
                    .cloned()
                    .unwrap_or_else(|| Arc::new(Unimplemented)),
            );
        }
    }

    Ok(kernels)
}

/// "7", "7 and 9", "7, 9 and 12".
fn line_list(lines: &[u32]) -> String {
    match lines {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!(
            "{} and {last}",
            rest.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

struct Unimplemented;
impl Kernel for Unimplemented {
    fn name(&self) -> &str {
        "<unimplemented>"
    }
    fn call(&self, _: &[KernelArg<'_>]) -> Result<Vec<Tile>, crate::kernels::KernelError> {
        Err(crate::kernels::KernelError::new("no implementation"))
    }
}

fn worker(shared: &Shared<'_, '_>) {
    let mut engine = Engine::new(shared.inst);
    let mut children: Vec<(Task, MatrixId, Vars)> = Vec::new();
    loop {
        // Take a ready task, or stop when nothing runs and nothing is ready.
        let task = {
            let mut sc = lock(&shared.sched);
            loop {
                if sc.failed.is_some() {
                    return;
                }
                if shared.progress.cancel.load(Ordering::Relaxed) {
                    let done = shared.progress.done.load(Ordering::Relaxed);
                    sc.failed = Some(ExecError::Cancelled(done));
                    shared.wake.notify_all();
                    return;
                }
                if let Some(r) = sc.ready.pop() {
                    sc.running += 1;
                    break r.item;
                }
                if sc.running == 0 {
                    shared.wake.notify_all();
                    return;
                }
                sc = shared
                    .wake
                    .wait_timeout(sc, Duration::from_millis(100))
                    .map(|(g, _)| g)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
        };
        let start_us = shared.progress.timeline_enabled().then(now_us);
        let mut io = (0, 0);
        let result = run_task(shared, &mut engine, &task, &mut children, &mut io);
        if let (Some(start_us), Ok(_)) = (start_us, &result) {
            shared.progress.record(crate::timeline::Event {
                task: task.clone(),
                worker: std::thread::current()
                    .name()
                    .unwrap_or("lpk-worker")
                    .to_string(),
                start_us,
                end_us: now_us(),
                read_bytes: io.0,
                written_bytes: io.1,
                retry: false,
            });
        }
        let mut sc = lock(&shared.sched);
        sc.running -= 1;
        match result {
            Ok(newly) => {
                for (t, d) in newly {
                    release(shared, &mut sc, t, d);
                }
                for (child, _, _) in children.drain(..) {
                    match sc.waiting.finish_parent(&child) {
                        Ok(Some((child, ()))) => {
                            let key = Reverse(order_key(shared.inst, &child));
                            sc.ready.push(Queued { key, item: child });
                        }
                        Ok(None) => {}
                        Err(_) => {
                            sc.failed.get_or_insert(ExecError::Inconsistent(format!(
                                "{} lost its counter",
                                shared.inst.program.task_name(&child)
                            )));
                        }
                    }
                }
                sc.max_waiting = sc.max_waiting.max(sc.waiting.len());
                shared.progress.done.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                sc.failed.get_or_insert(e);
            }
        }
        shared.wake.notify_all();
    }
}

/// Registers a child's counter on first sight (`d` = its in-degree).
fn release(shared: &Shared<'_, '_>, sc: &mut Sched, child: Task, d: u64) {
    let degree = usize::try_from(d).unwrap_or(usize::MAX);
    if let Err(e) = sc.waiting.register(child, degree, ()) {
        sc.failed.get_or_insert(ExecError::Inconsistent(format!(
            "{} has a parent but an in-degree of 0",
            shared.inst.program.task_name(e.task())
        )));
    }
}

/// Runs one task: loads its tiles, calls the kernel, stores what it wrote,
/// frees tiles whose last reader it was, and lists its children (in
/// `children`). Returns the children that had no counter yet, with their
/// in-degrees, so the caller registers them before decrementing.
fn run_task(
    shared: &Shared<'_, '_>,
    engine: &mut Engine<'_, '_>,
    task: &Task,
    children: &mut Vec<(Task, MatrixId, Vars)>,
    io: &mut (u64, u64),
) -> Result<Vec<(Task, u64)>, ExecError> {
    let reads = engine.reads(task)?;
    let writes = engine.writes(task)?;
    let (loaded, input_bytes) = load_reads(shared, engine, task, &reads)?;
    io.0 = loaded.iter().map(|t| tile_bytes(t)).sum();
    let outputs = call(shared, task, &reads, &loaded)?;
    io.1 = outputs.iter().map(tile_bytes).sum();

    // The children, and how many readers each written tile has.
    children.clear();
    engine.for_each_child(task, &mut |stmt, vars, matrix, tile| {
        children.push((
            Task {
                stmt,
                vars: vars.into(),
            },
            matrix,
            Vars::from(tile),
        ));
    })?;
    shared
        .edges
        .fetch_add(children.len() as u64, Ordering::Relaxed);
    check_order(engine, task, children)?;
    for (t, tile) in writes.iter().zip(outputs) {
        store_write(shared, engine, task, t, Arc::new(tile), children)?;
    }
    shared.bytes.fetch_sub(input_bytes, Ordering::Relaxed);
    drop(loaded);
    free_reads(shared, &reads);
    new_children(shared, engine, children)
}

/// The role of matrix `m` of the running program.
fn role_of(shared: &Shared<'_, '_>, m: MatrixId) -> Option<Role> {
    shared.inst.program.get_matrix(m).map(|m| m.role)
}

/// Loads the tiles `task` reads — inputs from the source, the others from
/// the held tiles, zero tiles made — and counts them as held; returns them
/// with their bytes.
fn load_reads(
    shared: &Shared<'_, '_>,
    engine: &mut Engine<'_, '_>,
    task: &Task,
    reads: &[TileRef],
) -> Result<(Vec<Arc<Tile>>, u64), ExecError> {
    let inst = shared.inst;
    let program = inst.program;
    let name = || program.task_name(task).to_string();
    // A zero tile is left `None` and made below.
    let mut loaded: Vec<Option<Arc<Tile>>> = Vec::with_capacity(reads.len());
    let mut input_bytes = 0u64;
    for t in reads {
        let tile = if role_of(shared, t.matrix) == Some(Role::Input) {
            let started = Instant::now();
            let loaded = shared.source.input(t.matrix, &t.index);
            shared
                .input_nanos
                .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
            let tile = loaded.map_err(|source| ExecError::Input {
                task: name(),
                tile: program.tile_name(t),
                source: Box::new(source),
            })?;
            input_bytes += tile_bytes(&tile);
            tile
        } else {
            let key: TileKey = (t.matrix, Vars::from(&t.index[..]));
            let held = lock(&shared.tiles[shard(&key)])
                .get(&key)
                .map(|s| s.tile.clone());
            match held {
                Some(tile) => tile,
                None if crate::zero::is_zero_tile(engine, t)? => {
                    loaded.push(None);
                    continue;
                }
                None => {
                    return Err(ExecError::Unwritten {
                        task: name(),
                        tile: program.tile_name(t),
                    })
                }
            }
        };
        loaded.push(Some(tile));
    }
    let zeros: Vec<usize> = (0..loaded.len())
        .filter(|&i| loaded.get(i).is_some_and(Option::is_none))
        .collect();
    let loaded =
        crate::zero::zero_tiles(inst, &shared.kernels, task, loaded, shared.source.block())?;
    // Zero tiles are held while the task runs, like the inputs it loaded.
    input_bytes += zeros
        .iter()
        .filter_map(|&i| loaded.get(i))
        .map(|t| tile_bytes(t))
        .sum::<u64>();
    let now = shared.bytes.fetch_add(input_bytes, Ordering::Relaxed) + input_bytes;
    shared.peak.fetch_max(now, Ordering::Relaxed);
    Ok((loaded, input_bytes))
}

/// Calls `task`'s kernel on its loaded tiles, counting its time and flops;
/// returns the tiles it wrote.
fn call(
    shared: &Shared<'_, '_>,
    task: &Task,
    reads: &[TileRef],
    loaded: &[Arc<Tile>],
) -> Result<Vec<Tile>, ExecError> {
    let called = call_kernel(
        shared.inst,
        &shared.kernels,
        task,
        reads,
        loaded,
        shared.count_flops,
    )?;
    shared
        .kernel_nanos
        .fetch_add(called.kernel_time.as_nanos() as u64, Ordering::Relaxed);
    if shared.count_flops {
        match called.flops {
            Some(f) => shared.progress.add_flops(f),
            None => shared.flops_unknown.store(true, Ordering::Relaxed),
        }
    }
    Ok(called.tiles)
}

/// Stores tile `t` that `task` wrote: an output goes to the sink (once:
/// a second write is an error), a tile with readers among `children` is
/// held until its last reader.
fn store_write(
    shared: &Shared<'_, '_>,
    engine: &mut Engine<'_, '_>,
    task: &Task,
    t: &TileRef,
    tile: Arc<Tile>,
    children: &[(Task, MatrixId, Vars)],
) -> Result<(), ExecError> {
    let program = shared.inst.program;
    let key: TileKey = (t.matrix, Vars::from(&t.index[..]));
    let readers = children
        .iter()
        .filter(|(_, m, i)| *m == key.0 && *i == key.1)
        .count() as u64;
    if role_of(shared, t.matrix) == Some(Role::Output) {
        if !lock(&shared.outputs_written[shard(&key)]).insert(key.clone()) {
            return Err(written_twice(engine, task, t));
        }
        let started = Instant::now();
        let stored = shared.sink.output(t.matrix, &t.index, tile.clone());
        shared
            .output_nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        stored.map_err(|source| ExecError::Output {
            task: program.task_name(task).to_string(),
            tile: program.tile_name(t),
            source: Box::new(source),
        })?;
    }
    if readers == 0 {
        return Ok(());
    }
    // A reader of a tile waits for every writer of it (each is its
    // parent), so a second writer finds the first one's tile here.
    let bytes = tile_bytes(&tile);
    let mut map = lock(&shared.tiles[shard(&key)]);
    match map.entry(key) {
        Entry::Occupied(_) => return Err(written_twice(engine, task, t)),
        Entry::Vacant(v) => {
            v.insert(Stored {
                tile,
                readers,
                bytes,
            });
        }
    }
    drop(map);
    let now = shared.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
    shared.peak.fetch_max(now, Ordering::Relaxed);
    Ok(())
}

/// Frees the held tiles a task was the last reader of.
fn free_reads(shared: &Shared<'_, '_>, reads: &[TileRef]) {
    let mut seen: Vec<&TileRef> = Vec::with_capacity(reads.len());
    for t in reads {
        if role_of(shared, t.matrix) == Some(Role::Input) || seen.contains(&t) {
            continue;
        }
        seen.push(t);
        let key: TileKey = (t.matrix, Vars::from(&t.index[..]));
        let mut map = lock(&shared.tiles[shard(&key)]);
        if let Some(s) = map.get_mut(&key) {
            s.readers = s.readers.saturating_sub(1);
            if s.readers == 0 {
                if let Some(s) = map.remove(&key) {
                    shared.bytes.fetch_sub(s.bytes, Ordering::Relaxed);
                }
            }
        }
    }
}

/// The in-degrees of the children seen for the first time (computed
/// outside the scheduler's lock; a child seen by two workers at once is
/// counted by whichever registers it first, with the same value).
fn new_children(
    shared: &Shared<'_, '_>,
    engine: &mut Engine<'_, '_>,
    children: &[(Task, MatrixId, Vars)],
) -> Result<Vec<(Task, u64)>, ExecError> {
    let sc = lock(&shared.sched);
    let unknown: Vec<Task> = children
        .iter()
        .filter(|(c, _, _)| !sc.waiting.contains(c))
        .map(|(c, _, _)| c.clone())
        .collect();
    drop(sc);
    let mut newly: Vec<(Task, u64)> = Vec::new();
    for c in unknown {
        if newly.iter().any(|(t, _)| *t == c) {
            continue;
        }
        let d = engine.in_degree(&c)? as u64;
        newly.push((c, d));
    }
    Ok(newly)
}

/// The read-before-write rule where it costs one comparison per edge: a
/// task's children come after it in sequential order (a task that reads a
/// tile it writes is its own child, and breaks it too).
fn check_order(
    engine: &Engine<'_, '_>,
    task: &Task,
    children: &[(Task, MatrixId, Vars)],
) -> Result<(), ExecError> {
    let program = engine.instance().program;
    let early = children
        .iter()
        .find(|(c, _, _)| program.sequential_cmp(c, task) != CmpOrdering::Greater);
    match early {
        None => Ok(()),
        Some((c, m, i)) => Err(ExecError::ReadBeforeWrite {
            reader: program.task_name(c).to_string(),
            tile: program.tile_name(&TileRef {
                matrix: *m,
                index: i.to_vec(),
            }),
            writer: program.task_name(task).to_string(),
        }),
    }
}

/// The error of a second write of `tile` by `task`, naming the other writer
/// when the plans find it.
fn written_twice(engine: &mut Engine<'_, '_>, task: &Task, tile: &TileRef) -> ExecError {
    let program = engine.instance().program;
    let first = engine
        .writer(tile)
        .ok()
        .and_then(|ws| ws.into_iter().find(|w| w != task))
        .map_or_else(
            || "another task".to_string(),
            |w| program.task_name(&w).to_string(),
        );
    ExecError::WrittenTwice {
        tile: program.tile_name(tile),
        first,
        second: program.task_name(task).to_string(),
    }
}

/// What [`call_kernel`] returns.
pub struct Called {
    /// The tiles the kernel returned, one per write of the statement.
    pub tiles: Vec<Tile>,
    /// The call's floating-point operations, where the flop model knows
    /// the kernel.
    pub flops: Option<f64>,
    /// Time inside the kernel.
    pub kernel_time: Duration,
}

/// Calls `task`'s kernel on the tiles it reads (`loaded`, in the order of
/// `reads`, as [`Engine::reads`] lists them): the arguments in
/// kernel-parameter order with scalars evaluated, the flops counted by the
/// kernel's model (with `count_flops`), and the number of results checked
/// against the statement's writes. The embedded executor and the
/// distributed worker both run tasks through it.
pub fn call_kernel(
    inst: &Instance<'_>,
    kernels: &[Arc<dyn Kernel>],
    task: &Task,
    reads: &[lpk_model::task::TileRef],
    loaded: &[Arc<Tile>],
    count_flops: bool,
) -> Result<Called, ExecError> {
    let program = inst.program;
    let name = || program.task_name(task).to_string();
    let st = program
        .get_statement(task.stmt)
        .ok_or_else(|| ExecError::Inconsistent(format!("no statement {}", task.stmt)))?;
    let writes = st.writes.len();
    // Arguments in kernel-parameter order.
    let kernel = kernels
        .get(st.kernel.index())
        .ok_or_else(|| ExecError::Inconsistent(format!("no kernel {}", st.kernel)))?;
    let decl = program.get_kernel(st.kernel);
    let mut args = Vec::with_capacity(st.args.len());
    let mut shapes = Vec::new();
    let env = Env {
        params: &inst.params,
        slots: &task.vars,
    };
    for (pos, a) in st.args.iter().enumerate() {
        match a {
            Arg::Tile(i) => {
                let t = loaded.get(*i as usize).ok_or_else(|| {
                    ExecError::Inconsistent(format!("argument {i} of {}", name()))
                })?;
                shapes.push((t.nrows(), t.ncols()));
                args.push(KernelArg::Tile(t));
            }
            Arg::Scalar(e) => {
                let want = decl
                    .and_then(|d| d.params.get(pos))
                    .map(|p| p.1)
                    .unwrap_or(ParamKind::Real);
                let v = program
                    .exprs
                    .eval(*e, env)
                    .map_err(|err| ExecError::Scalar {
                        task: name(),
                        arg: pos + 1,
                        reason: err.to_string(),
                    })?;
                args.push(match (want, v) {
                    (ParamKind::Int, Value::Int(v)) => KernelArg::Int(v),
                    (_, Value::Int(v)) => KernelArg::Real(v as f64),
                    (_, Value::Real(v)) => KernelArg::Real(v),
                    (_, Value::Bool(_)) => {
                        return Err(ExecError::Scalar {
                            task: name(),
                            arg: pos + 1,
                            reason: "a boolean is not a kernel argument".into(),
                        })
                    }
                });
            }
        }
    }
    let kernel_start = Instant::now();
    let outputs = kernel.call(&args).map_err(|e| ExecError::Kernel {
        task: name(),
        tiles: if reads.is_empty() {
            String::new()
        } else {
            format!(
                " reading {}",
                reads
                    .iter()
                    .map(|t| program.tile_name(t))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
        reason: e.reason,
    })?;
    let kernel_time = kernel_start.elapsed();
    drop(args);
    if outputs.len() != writes {
        return Err(ExecError::ResultCount {
            task: name(),
            kernel: decl.map(|d| d.name.clone()).unwrap_or_default(),
            got: outputs.len(),
            want: writes,
        });
    }
    Ok(Called {
        flops: if count_flops {
            kernel.flops(&shapes)
        } else {
            None
        },
        tiles: outputs,
        kernel_time,
    })
}

/// A kernel that does nothing and returns empty tiles: for measuring the
/// scheduler alone (`lpkc run --kernels noop`).
struct Noop {
    name: String,
    results: usize,
}

impl Kernel for Noop {
    fn name(&self) -> &str {
        &self.name
    }
    fn call(&self, _: &[KernelArg<'_>]) -> Result<Vec<Tile>, crate::kernels::KernelError> {
        Ok((0..self.results).map(|_| Tile::zeros(0, 0)).collect())
    }
}

/// A registry with a no-op kernel for every kernel the program declares.
pub fn noop_registry(program: &lpk_model::program::Program) -> Registry {
    let mut r = Registry::new();
    for k in &program.kernels {
        r.register(Arc::new(Noop {
            name: k.name.clone(),
            results: k.results.len(),
        }));
    }
    r
}
