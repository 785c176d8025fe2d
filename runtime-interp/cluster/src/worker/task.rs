//! One task's execution: its tiles read (from the cache, else the run's
//! store, an input tile waited for while the inputs are uploaded), its
//! kernel called, its outputs and done marker written, and the arguments
//! of its completion listed from the plans.

use super::{retry, RunCtx, Shared, MAX_CHILDREN};
use crate::conn::Redis;
use crate::error::ClusterError;
use crate::faults::{Dice, EXIT_AFTER_WRITE, EXIT_BEFORE_WRITE};
use crate::ids::{task_id, tile_id};
use crate::markers::marker_line;
use crate::protocol::UPLOAD_TTL_MS;
use crate::record::now_ms;
use lpk_model::program::{Instance, Role};
use lpk_model::query::{Engine, QueryError};
use lpk_model::task::{Task, TileRef};
use lpk_runtime::exec::call_kernel;
use lpk_runtime::kernels::Tile;
use lpk_runtime::store::{ObjectStoreTiles, TileStore};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why a task could not be run.
pub(super) enum TaskFailure {
    /// The run must fail: the task and why.
    Run(String),
    /// A tile it reads is gone from the store: right if another worker
    /// completed the task meanwhile (its last reader deleted the tile),
    /// else the run fails with this message.
    Missing(String),
    /// An input tile is not in the store: right while `submit` still
    /// uploads the inputs (the task runs again when it is there), else the
    /// run fails with this message. With the tile's matrix and index.
    Input(String, String, Vec<i64>),
}

/// What running a task gives: the arguments of its completion after the
/// fixed ones, and the bytes it read and wrote.
pub(super) struct Ran {
    pub(super) args: Vec<String>,
    pub(super) read: u64,
    pub(super) written: u64,
}

/// A task being run, and where: the worker, its run and the run's
/// instance.
struct Job<'a, 's, 'i> {
    sh: &'a Shared<'s>,
    ctx: &'a RunCtx,
    inst: &'a Instance<'i>,
    task: &'a Task,
}

impl Job<'_, '_, '_> {
    /// The task's name, `kernel@LINE(vars)`.
    fn name(&self) -> String {
        self.ctx.program.task_name(self.task).to_string()
    }

    /// A plan query's error, as the run's failure naming the task.
    fn query(&self, e: QueryError) -> TaskFailure {
        TaskFailure::Run(format!("task {}: {e}", self.name()))
    }
}

/// What a task read and wrote, for its completion.
#[derive(Default)]
struct Traffic {
    /// Bytes of tiles read.
    read: u64,
    /// Bytes of tiles written.
    written: u64,
    /// The intermediate tiles it read, with their sizes (inputs and
    /// outputs stay in the store).
    dead_candidates: Vec<(TileRef, u64)>,
    /// The ids of the intermediate tiles it wrote.
    written_intermediates: Vec<String>,
    /// The output tiles it wrote: (id, digest).
    output_sums: Vec<(String, String)>,
}

/// Runs one task: reads its tiles, calls its kernel, writes its outputs
/// and its done marker (none of it with no-op kernels); returns the
/// arguments of its completion ([`completion_args`]: its edges as (child,
/// tile, child's in-degree) triples for [`crate::protocol::COMPLETE`], and
/// more) and the bytes it read and wrote.
pub(super) fn run_task(
    sh: &Shared<'_>,
    ctx: &RunCtx,
    inst: &Instance<'_>,
    engine: &mut Engine<'_, '_>,
    task: &Task,
    dice: &mut Dice,
) -> Result<Ran, TaskFailure> {
    let job = Job {
        sh,
        ctx,
        inst,
        task,
    };
    let mut traffic = Traffic::default();
    if !ctx.noop {
        let store = ctx
            .store
            .as_ref()
            .ok_or_else(|| TaskFailure::Run("no tile store".into()))?;
        traffic = compute(&job, engine, store, dice)?;
    }
    if dice.hit(sh.cfg.faults.crash_after_write) {
        (sh.log)(&format!(
            "fault injected: crashing after writing the outputs of {}",
            job.name()
        ));
        std::process::exit(EXIT_AFTER_WRITE);
    }
    let edges = children(&job, engine)?;
    let (read, written) = (traffic.read, traffic.written);
    let args = completion_args(&job, engine, edges, traffic)?;
    Ok(Ran {
        args,
        read,
        written,
    })
}

/// Reads the task's tiles, calls its kernel, writes its outputs, then its
/// done marker (the run's state can be rebuilt from them).
fn compute(
    job: &Job<'_, '_, '_>,
    engine: &mut Engine<'_, '_>,
    store: &ObjectStoreTiles,
    dice: &mut Dice,
) -> Result<Traffic, TaskFailure> {
    let (sh, ctx, task) = (job.sh, job.ctx, job.task);
    let reads = engine.reads(task).map_err(|e| job.query(e))?;
    let writes = engine.writes(task).map_err(|e| job.query(e))?;
    let mut traffic = Traffic::default();
    let loaded = read_inputs(job, engine, store, &reads, &mut traffic)?;
    let loaded =
        lpk_runtime::zero::zero_tiles(job.inst, &ctx.kernels, task, loaded, Some(ctx.block))
            .map_err(|e| TaskFailure::Run(format!("task {}: {e}", job.name())))?;
    let called = call_kernel(job.inst, &ctx.kernels, task, &reads, &loaded, false)
        .map_err(|e| TaskFailure::Run(e.to_string()))?;
    if dice.hit(sh.cfg.faults.crash_before_write) {
        (sh.log)(&format!(
            "fault injected: crashing before writing the outputs of {}",
            job.name()
        ));
        std::process::exit(EXIT_BEFORE_WRITE);
    }
    write_outputs(job, engine, store, &writes, called.tiles, &mut traffic)?;
    // Then the done marker (the run's state can be rebuilt from them).
    let marker = marker_line(task, &sh.cfg.name, now_ms());
    retry(|| ctx.done_log.record(store, task, &marker)).map_err(|e| {
        TaskFailure::Run(format!(
            "task {}: cannot write its done marker: {e}",
            job.name()
        ))
    })?;
    Ok(traffic)
}

/// The task's input tiles in the order it reads them, counted in
/// `traffic` (`None` for a tile of a zero matrix that no task writes: it
/// is made, never stored).
fn read_inputs(
    job: &Job<'_, '_, '_>,
    engine: &mut Engine<'_, '_>,
    store: &ObjectStoreTiles,
    reads: &[TileRef],
    traffic: &mut Traffic,
) -> Result<Vec<Option<Arc<Tile>>>, TaskFailure> {
    let program = &job.ctx.program;
    let mut loaded: Vec<Option<Arc<Tile>>> = Vec::with_capacity(reads.len());
    traffic.dead_candidates.reserve(reads.len());
    for t in reads {
        // A tile of a zero matrix that no task writes is made, never
        // stored.
        if program.is_zero(t.matrix)
            && lpk_runtime::zero::is_zero_tile(engine, t).map_err(|e| job.query(e))?
        {
            loaded.push(None);
            continue;
        }
        let tile = match job.sh.cache.get(&job.ctx.id, t.matrix, &t.index) {
            Some(tile) => tile,
            None => fetch_tile(job, engine, store, t)?,
        };
        let bytes = (tile.nrows() * tile.ncols() * 8) as u64;
        traffic.read += bytes;
        // Intermediates only: inputs and outputs stay in the store.
        if program.matrix(t.matrix).role == Role::Temporary {
            traffic.dead_candidates.push((t.clone(), bytes));
        }
        loaded.push(Some(tile));
    }
    Ok(loaded)
}

/// Reads a tile the cache does not hold from the store (an input tile is
/// checked against its place in the grid), and caches it if it is read
/// again.
fn fetch_tile(
    job: &Job<'_, '_, '_>,
    engine: &mut Engine<'_, '_>,
    store: &ObjectStoreTiles,
    t: &TileRef,
) -> Result<Arc<Tile>, TaskFailure> {
    let program = &job.ctx.program;
    let mname = &program.matrix(t.matrix).name;
    let got = retry(|| store.get(mname, &t.index)).map_err(|e| {
        TaskFailure::Run(format!(
            "task {}: cannot read tile {}: {e}",
            job.name(),
            program.tile_name(t)
        ))
    })?;
    let tile = got.ok_or_else(|| not_in_store(job, store, t))?;
    if program.matrix(t.matrix).role == Role::Input {
        check_input_tile(job.inst, t, &tile, job.ctx.block).map_err(|why| {
            TaskFailure::Run(format!(
                "task {}: input tile {} in the store ({}) {why}",
                job.name(),
                program.tile_name(t),
                store.describe()
            ))
        })?;
    }
    if read_again(job.sh, engine, t) {
        job.sh
            .cache
            .put(&job.ctx.id, t.matrix, &t.index, tile.clone());
    }
    Ok(tile)
}

/// Why a tile the task reads is not in the store: an input tile may still
/// be on its way ([`TaskFailure::Input`]); any other was deleted
/// ([`TaskFailure::Missing`]).
fn not_in_store(job: &Job<'_, '_, '_>, store: &ObjectStoreTiles, t: &TileRef) -> TaskFailure {
    let program = &job.ctx.program;
    let mname = &program.matrix(t.matrix).name;
    if program.matrix(t.matrix).role == Role::Input {
        TaskFailure::Input(format!(
            "task {}: input tile {} is not in the store ({}): the upload of the run's inputs ended without it (was `lpkc submit` killed, or the store cleared?)",
            job.name(),
            program.tile_name(t),
            store.describe()
        ), mname.clone(), t.index.to_vec())
    } else {
        TaskFailure::Missing(format!(
            "task {}: tile {} is not in the store ({}); was the store cleared while the run ran?",
            job.name(),
            program.tile_name(t),
            store.describe()
        ))
    }
}

/// Writes the task's output tiles to the store (caching those read
/// again), counted in `traffic`.
fn write_outputs(
    job: &Job<'_, '_, '_>,
    engine: &mut Engine<'_, '_>,
    store: &ObjectStoreTiles,
    writes: &[TileRef],
    tiles: Vec<Tile>,
    traffic: &mut Traffic,
) -> Result<(), TaskFailure> {
    let program = &job.ctx.program;
    for (t, tile) in writes.iter().zip(tiles) {
        traffic.written += (tile.nrows() * tile.ncols() * 8) as u64;
        match program.matrix(t.matrix).role {
            Role::Temporary => {
                traffic
                    .written_intermediates
                    .push(tile_id(t.matrix, &t.index));
            }
            Role::Output => {
                traffic
                    .output_sums
                    .push((tile_id(t.matrix, &t.index), crate::tiles::digest(&tile)));
            }
            Role::Input => {}
        }
        let tile = Arc::new(tile);
        let mname = &program.matrix(t.matrix).name;
        retry(|| store.put(mname, &t.index, tile.clone())).map_err(|e| {
            TaskFailure::Run(format!(
                "task {}: cannot write tile {}: {e}",
                job.name(),
                program.tile_name(t)
            ))
        })?;
        if read_again(job.sh, engine, t) {
            job.sh.cache.put(&job.ctx.id, t.matrix, &t.index, tile);
        }
    }
    Ok(())
}

/// The task's edges out, as (child, tile) pairs. The completion carries
/// every edge in one script call: a task with millions of children (one
/// tile read by a whole block row of a 20-million-column matrix) would
/// exhaust the worker's memory, so more than [`MAX_CHILDREN`] fail the run
/// naming it instead.
fn children(
    job: &Job<'_, '_, '_>,
    engine: &mut Engine<'_, '_>,
) -> Result<Vec<(Task, String)>, TaskFailure> {
    let mut edges: Vec<(Task, String)> = Vec::new();
    engine
        .try_for_each_child(job.task, &mut |stmt, vars, matrix, tile| {
            edges.push((
                Task {
                    stmt,
                    vars: vars.into(),
                },
                tile_id(matrix, tile),
            ));
            edges.len() <= MAX_CHILDREN
        })
        .map_err(|e| job.query(e))?;
    if edges.len() > MAX_CHILDREN {
        return Err(TaskFailure::Run(format!(
            "task {} has more than {MAX_CHILDREN} children; a distributed run takes at most \
             that many per task (use a larger --block)",
            job.name()
        )));
    }
    Ok(edges)
}

/// The arguments of the task's completion after the fixed ones: the bytes
/// written, the edges with each child's in-degree (from the plans), the
/// intermediate tiles written, the output tiles' digests, and the
/// intermediate tiles read with their reader counts.
fn completion_args(
    job: &Job<'_, '_, '_>,
    engine: &mut Engine<'_, '_>,
    edges: Vec<(Task, String)>,
    traffic: Traffic,
) -> Result<Vec<String>, TaskFailure> {
    let ctx = job.ctx;
    let Traffic {
        written,
        dead_candidates,
        mut written_intermediates,
        output_sums,
        ..
    } = traffic;
    let mut degrees: HashMap<Task, usize> = HashMap::new();
    let mut out = Vec::with_capacity(edges.len() * 3 + 1);
    out.push(written.to_string());
    out.push(edges.len().to_string());
    for (child, tile) in edges {
        let d = match degrees.get(&child) {
            Some(&d) => d,
            None => {
                let d = engine.in_degree(&child).map_err(|e| job.query(e))?;
                degrees.insert(child.clone(), d);
                d
            }
        };
        out.push(task_id(&child));
        out.push(tile);
        out.push(d.to_string());
    }
    // The intermediate tiles it wrote (unless kept), then those it read.
    if ctx.keep {
        written_intermediates.clear();
    }
    out.push(written_intermediates.len().to_string());
    out.extend(written_intermediates);
    // The digests of the output tiles it wrote, for `collect`.
    out.push(output_sums.len().to_string());
    for (tile, sum) in output_sums {
        out.push(tile);
        out.push(sum);
    }
    // The intermediate tiles it read (unless kept): each is deleted by the
    // completion that makes its reader count complete.
    if !ctx.noop && !ctx.keep {
        let mut seen: Vec<&TileRef> = Vec::new();
        for (t, bytes) in &dead_candidates {
            if seen.contains(&t) {
                continue;
            }
            seen.push(t);
            let readers = engine.readers(t).map_err(|e| job.query(e))?.len();
            out.push(tile_id(t.matrix, &t.index));
            out.push(readers.to_string());
            out.push(bytes.to_string());
        }
    }
    Ok(out)
}

/// Waits for input tile (`matrix`, `index`) while the run's `uploading`
/// key lives: `Ok(true)` once the tile is in the store, `Ok(false)` if the
/// upload ended (or its submitter died, letting the key run out) without
/// it, `Err` with the store's error if, the upload over, the store cannot
/// say. The tile is looked for every 2 ms for the first quarter second (an
/// upload under way brings it soon), then less and less often, up to every
/// 100 ms; the key every 50 ms. Only the tile is looked at (a file's
/// metadata or an object's `HEAD`), not the task's other tiles; a store
/// error while the upload goes on counts as not there yet.
pub(super) fn wait_for_input(
    sh: &Shared<'_>,
    r: &mut Redis,
    ctx: &RunCtx,
    matrix: &str,
    index: &[i64],
) -> Result<Result<bool, String>, ClusterError> {
    let Some(store) = ctx.store.as_ref() else {
        return Ok(Ok(false));
    };
    let look = || retry(|| store.contains(matrix, index)).map_err(|e| e.to_string());
    let here = || look().unwrap_or(false);
    let began = Instant::now();
    let mut pause = Duration::from_millis(2);
    let mut key_seen: Option<Instant> = None;
    loop {
        if key_seen.is_none_or(|t| t.elapsed() >= Duration::from_millis(50)) {
            sh.round_trips.fetch_add(1, Ordering::Relaxed);
            let ttl_ms: i64 = r.query(
                redis::cmd("PTTL").arg(ctx.keys.uploading()),
                "checking whether the inputs are being uploaded",
            )?;
            // A submitter sets the key with a time to live of at most
            // UPLOAD_TTL_MS and renews it: a key without one (PTTL -1), or
            // with a much longer one, was set by someone else and would
            // make the workers wait forever (or for years).
            let uploading = ttl_ms > 0 && ttl_ms <= 2 * UPLOAD_TTL_MS as i64;
            if !uploading || sh.stop.load(Ordering::Relaxed) {
                // The upload puts every tile before it deletes the key:
                // a tile not here now never comes.
                return Ok(look());
            }
            key_seen = Some(Instant::now());
        }
        std::thread::sleep(pause);
        if began.elapsed() >= Duration::from_millis(250) {
            pause = (pause * 2).min(Duration::from_millis(100));
        }
        if here() {
            return Ok(Ok(true));
        }
    }
}

/// Whether a tile is worth caching: it has two readers or more (a tile
/// read once is read by one task, on whichever worker takes it; keeping it
/// only evicts tiles read many times, such as a panel's factor).
fn read_again(sh: &Shared<'_>, engine: &mut Engine<'_, '_>, t: &TileRef) -> bool {
    sh.cfg.cache_bytes > 0 && engine.readers(t).is_ok_and(|r| r.len() >= 2)
}

/// Checks an input tile read from the store against its place in the
/// grid: with block `B` every tile is `B` long in each cut dimension but
/// the last one's, which is 1 to `B` long (a 1-D matrix's columns are not
/// cut). `submit` uploaded exactly that; anything else was written by
/// someone else, and a kernel would compute on it without noticing.
fn check_input_tile(
    inst: &Instance<'_>,
    t: &TileRef,
    tile: &Tile,
    block: usize,
) -> Result<(), String> {
    let extents = inst
        .extents
        .get(t.matrix.index())
        .map_or(&[][..], |e| &e[..]);
    let fits = |len: usize, d: usize| -> bool {
        let last = extents
            .get(d)
            .is_some_and(|&n| t.index.get(d) == Some(&(n - 1)));
        if last {
            (1..=block).contains(&len)
        } else {
            len == block
        }
    };
    let (rows, cols) = (tile.nrows(), tile.ncols());
    let ok = fits(rows, 0) && (extents.len() < 2 || fits(cols, 1)) && cols > 0;
    if ok {
        Ok(())
    } else {
        Err(format!(
            "is {rows} x {cols}, which no tile at that place in a grid of block {block} is \
             (was it written by something other than `lpkc submit`?)"
        ))
    }
}
