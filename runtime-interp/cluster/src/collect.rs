//! `lpkc collect`: a finished run's outputs, from its store into a
//! directory, exactly as `lpkc run --output-dir` writes them: each output
//! matrix that forms a grid of tiles as `DIR/M.npy`, any other as its
//! tiles with an `index.json`, and `DIR/_SUCCESS` last. It also deletes the
//! dead tiles that workers killed at the wrong moment left in the store.

use crate::conn::Redis;
use crate::error::{store_error, ClusterError};
use crate::record::{Kernels, RunRecord, RunState};
use crate::submit::grid;
use crate::tiles::open_run_store;
use lpk_model::program::{Instance, Program, Role};
use lpk_runtime::dense::{tile_layout, TileLayout};
use lpk_runtime::job::MARKER;
use lpk_runtime::kernels::Tile;
use lpk_runtime::npy::{self, NpyBlockWriter};
use lpk_runtime::outputs::{self, Form, OutputRequest, Written};

use crate::ids::task_id;
use crate::protocol::Keys;
use lpk_model::query::Engine;
use lpk_model::task::TileRef;
use lpk_model::MatrixId;
use lpk_runtime::store::{BlobStore, ObjectStoreTiles, TileStore};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The tiles one reading thread fetched, with their indices.
type Fetched = Vec<(Vec<i64>, Arc<Tile>)>;

/// What a [`Collector`] learnt before the run ended, by matrix (its index
/// in the program) and tile index.
#[derive(Default)]
pub struct Early {
    /// Output tiles fetched.
    tiles: HashMap<(usize, Vec<i64>), Arc<Tile>>,
    /// Output tiles no task writes (by the plans), hence never stored.
    absent: HashSet<(usize, Vec<i64>)>,
    /// The `.npy` files of 2-D outputs being written in place, by matrix.
    files: HashMap<usize, InPlace>,
}

/// A 2-D output's `.npy` written in place while the run goes on, on a
/// guess of its layout (the tile rows' heights and the tile columns'
/// widths, those not seen yet taken as [`tile_layout`] fills them in). At the
/// end the layout of all the tiles must be the guess, else the file is
/// dropped and the matrix assembled as [`collect`] does.
struct InPlace {
    writer: NpyBlockWriter,
    layout: TileLayout,
    /// Tiles written into it.
    written: HashSet<Vec<i64>>,
}

/// The tile grid of a 2-D matrix, `None` for any other.
fn grid_2d(extents: &[i64]) -> Option<(usize, usize)> {
    match *extents {
        [r, c] => Some((r.max(0) as usize, c.max(0) as usize)),
        _ => None,
    }
}

impl Early {
    /// Nothing known yet: [`collect_with`] then reads as [`collect`] does.
    pub fn new() -> Early {
        Early::default()
    }

    /// Output tiles fetched.
    pub fn fetched(&self) -> usize {
        self.tiles.len()
    }
}

/// Writes run `run`'s outputs into `dir`.
pub fn collect(redis: &mut Redis, run: &str, dir: &Path) -> Result<Vec<Written>, ClusterError> {
    collect_with(redis, run, dir, Early::new())
}

/// Writes run `run`'s outputs into `dir`, as [`collect`], taking the
/// tiles in `early` (fetched by a [`Collector`] while the run went on)
/// instead of reading them again.
pub fn collect_with(
    redis: &mut Redis,
    run: &str,
    dir: &Path,
    mut early: Early,
) -> Result<Vec<Written>, ClusterError> {
    let record = RunRecord::read(redis, run)?;
    check_collectable(run, &record)?;
    let program = record.load_program()?;
    let inst = bind_counted(&record, &program)?;
    let target = Target::open(run, &record, &inst, dir)?;
    delete_dead(redis, run, &program, &target.store)?;
    std::fs::create_dir_all(dir).map_err(|e| output_error(dir, &e))?;
    let marker = dir.join(MARKER);
    if marker.exists() {
        std::fs::remove_file(&marker).map_err(|e| output_error(&marker, &e))?;
    }
    let mut written = Vec::new();
    for (m, decl) in program.matrices.iter().enumerate() {
        if decl.role != Role::Output {
            continue;
        }
        written.push(collect_output(redis, &target, &mut early, m)?);
    }
    std::fs::write(&marker, "complete\n").map_err(|e| output_error(&marker, &e))?;
    Ok(written)
}

/// An error writing the outputs: the path and why.
fn output_error(path: &Path, e: &dyn std::fmt::Display) -> ClusterError {
    ClusterError::Output {
        path: path.display().to_string(),
        why: e.to_string(),
    }
}

/// Refuses a run that has no outputs to collect: one still running, one
/// that failed, one that ran with no-op kernels.
fn check_collectable(run: &str, record: &RunRecord) -> Result<(), ClusterError> {
    match record.state {
        RunState::Done => {}
        RunState::Running => {
            return Err(ClusterError::Refused(format!(
                "run {run} is still running ({} of {} tasks done); collect it when it is done (`lpkc submit --wait`, or `lpkc status`)",
                record.done, record.total
            )))
        }
        RunState::Failed => {
            let why = record.error.as_ref().map(|e| e.1.clone()).unwrap_or_default();
            return Err(ClusterError::Refused(format!("run {run} failed, it has no outputs: {why}")));
        }
    }
    if record.kernels == Kernels::Noop {
        return Err(ClusterError::Refused(format!(
            "run {run} ran with no-op kernels, which compute no tiles: there is nothing to collect"
        )));
    }
    Ok(())
}

/// The run's instance, bound from its record; refused when Redis's counts
/// are not the plans' (Redis's counters are not trusted).
fn bind_counted<'p>(
    record: &RunRecord,
    program: &'p Program,
) -> Result<Instance<'p>, ClusterError> {
    let inst = record.bind(program)?;
    let counted = record.count_tasks(&inst)?;
    if record.total != counted || record.done != counted {
        return Err(ClusterError::Refused(format!(
            "run {}: Redis says {} of {} tasks are done, but the program has {counted} tasks; \
             its record was changed by someone else, and nothing was collected",
            record.id, record.done, record.total
        )));
    }
    Ok(inst)
}

/// A finished run whose outputs are collected: its instance and store,
/// the directory they go to and the block size.
struct Target<'a, 'p> {
    run: &'a str,
    inst: &'a Instance<'p>,
    store: ObjectStoreTiles,
    dir: &'a Path,
    block: usize,
}

impl<'a, 'p> Target<'a, 'p> {
    /// Where run `run`'s outputs go, its tile store opened from `record`.
    fn open(
        run: &'a str,
        record: &RunRecord,
        inst: &'a Instance<'p>,
        dir: &'a Path,
    ) -> Result<Self, ClusterError> {
        Ok(Target {
            run,
            inst,
            store: open_run_store(&record.store, run)?,
            dir,
            block: record.block,
        })
    }
}

/// Writes output matrix `m` into the directory: its tiles (those `early`
/// holds, the others read now) checked complete and against their
/// digests, then the file written in place if it is right, else the
/// tiles assembled (or, if they form no grid, written one by one).
fn collect_output(
    redis: &mut Redis,
    target: &Target<'_, '_>,
    early: &mut Early,
    m: usize,
) -> Result<Written, ClusterError> {
    let (run, inst, store) = (target.run, target.inst, &target.store);
    let decl = &inst.program.matrices[m];
    let extents = inst.extents.get(m).cloned().unwrap_or_default();
    let mut indices: Vec<Vec<i64>> = Vec::new();
    grid(&extents, &mut |idx| indices.push(idx.to_vec()));
    // Tiles fetched while the run went on are not read again, nor
    // those no task writes.
    let mut tiles: BTreeMap<Vec<i64>, Arc<Tile>> = BTreeMap::new();
    indices.retain(|idx| {
        let key = (m, idx.clone());
        match early.tiles.remove(&key) {
            Some(t) => {
                tiles.insert(idx.clone(), t);
                false
            }
            None => !early.absent.contains(&key),
        }
    });
    let fetched = fetch_tiles(store, &decl.name, &indices)?;
    tiles.extend(fetched);
    check_complete(run, inst, m, &indices, &tiles, store)?;
    check_digests(redis, run, inst, m, &tiles, store)?;
    let request = OutputRequest::whole(&decl.name);
    // A file written in place while the run went on is kept if the
    // tiles' layout is the one it guessed: then it holds, byte for
    // byte, what assembling them writes (the header, each tile at its
    // place, zeros elsewhere).
    if let Some(file) = early.files.remove(&m) {
        let path = target.dir.join(format!("{}.npy", request.file_stem()));
        if let Some(rows_cols) = finish_in_place(file, &extents, &tiles, target.block, &path) {
            return Ok(Written {
                request,
                path,
                form: Form::Dense {
                    rows: rows_cols.0,
                    cols: rows_cols.1,
                },
            });
        }
    }
    write_output(target, request, &extents, &tiles)
}

/// Writes an output's tiles as one `.npy` if they form a grid, else one by
/// one with an `index.json`.
fn write_output(
    target: &Target<'_, '_>,
    request: OutputRequest,
    extents: &[i64],
    tiles: &BTreeMap<Vec<i64>, Arc<Tile>>,
) -> Result<Written, ClusterError> {
    match outputs::assemble(&request, extents, tiles, target.block) {
        Ok(t) => {
            let path = target.dir.join(format!("{}.npy", request.file_stem()));
            npy::write_file(&path, &t).map_err(|e| output_error(&path, &e))?;
            Ok(Written {
                request,
                path,
                form: Form::Dense {
                    rows: t.nrows(),
                    cols: t.ncols(),
                },
            })
        }
        Err(why) => {
            let (path, count) = outputs::write_tiles(target.dir, &request, tiles)
                .map_err(|(p, e)| output_error(&p, &e))?;
            Ok(Written {
                request,
                path,
                form: Form::Tiles {
                    count,
                    why: Some(why),
                },
            })
        }
    }
}

/// Deletes the dead tiles that a killed worker did not get to delete. Only
/// a temporary matrix has dead tiles: a dead set naming an input or output
/// tile was written by someone else, and nothing is deleted.
fn delete_dead(
    redis: &mut Redis,
    run: &str,
    program: &lpk_model::program::Program,
    store: &ObjectStoreTiles,
) -> Result<(), ClusterError> {
    let keys = crate::protocol::Keys::new(run);
    let dead: Vec<String> = redis.query(
        redis::cmd("SMEMBERS").arg(keys.dead()),
        "reading the dead tiles",
    )?;
    let mut tiles = Vec::with_capacity(dead.len());
    for id in &dead {
        let tile = crate::ids::parse_tile(id).map_err(|source| ClusterError::BadId {
            run: run.to_string(),
            source,
        })?;
        match program.get_matrix(tile.matrix) {
            Some(decl) if decl.role == Role::Temporary => tiles.push((id, decl, tile)),
            Some(_) => {
                return Err(ClusterError::Refused(format!(
                    "run {run}: its dead set names {}, a tile of an input or output, which \
                     no lpk worker puts there; the run was changed by someone else, and \
                     nothing was collected",
                    program.tile_name(&tile)
                )))
            }
            None => {}
        }
    }
    for (id, decl, tile) in tiles {
        store
            .delete(&decl.name, &tile.index)
            .map_err(|e| store_error(store, e))?;
        redis.query::<()>(
            redis::cmd("SREM").arg(keys.dead()).arg(id),
            "forgetting a deleted tile",
        )?;
    }
    delete_gone_again(redis, &keys, program, store)
}

/// Deletes the tiles of temporaries that died and were written again by a
/// late copy of their writer (a task that ran twice) killed before its
/// completion could delete them: a temporary tile still in the store whose
/// id is in the run's `gone` set. Lists each temporary matrix's keys (after
/// a run without `--keep-intermediates` only such leftovers are there) and
/// asks Redis about each; anything that is not a tile key is left alone.
fn delete_gone_again(
    redis: &mut Redis,
    keys: &Keys,
    program: &lpk_model::program::Program,
    store: &ObjectStoreTiles,
) -> Result<(), ClusterError> {
    for (m, decl) in program.matrix_ids() {
        if decl.role != Role::Temporary {
            continue;
        }
        for key in store.list(&decl.name).map_err(|e| store_error(store, e))? {
            let Some(index) = tile_index_of_key(&decl.name, &key) else {
                continue;
            };
            let id = crate::ids::tile_id(m, &index);
            let gone: bool = redis.query(
                redis::cmd("SISMEMBER").arg(keys.gone()).arg(&id),
                "asking whether a tile died",
            )?;
            if gone {
                store
                    .delete(&decl.name, &index)
                    .map_err(|e| store_error(store, e))?;
            }
        }
    }
    Ok(())
}

/// The tile index of a store key `M/i_j.npy` of matrix `M` ([`tile_key`]'s
/// inverse), `None` for any other key (e.g. a staging file).
///
/// [`tile_key`]: lpk_runtime::store::tile_key
fn tile_index_of_key(matrix: &str, key: &str) -> Option<Vec<i64>> {
    let name = key.strip_prefix(matrix)?.strip_prefix('/')?;
    let stem = name.strip_suffix(".npy")?;
    let index: Option<Vec<i64>> = stem.split('_').map(|v| v.parse().ok()).collect();
    let index = index?;
    let canonical = lpk_runtime::store::tile_key(matrix, &index).ok()?;
    (canonical == key).then_some(index)
}

/// Refuses to assemble output matrix `m` when a tile that some task
/// writes is missing from `tiles`: an absent tile is zeros only when no
/// task writes it (a triangle the program leaves out).
fn check_complete(
    run: &str,
    inst: &lpk_model::program::Instance<'_>,
    m: usize,
    indices: &[Vec<i64>],
    tiles: &BTreeMap<Vec<i64>, Arc<Tile>>,
    store: &ObjectStoreTiles,
) -> Result<(), ClusterError> {
    let mut engine = Engine::new(inst);
    for idx in indices {
        if tiles.contains_key(idx) {
            continue;
        }
        let tile = TileRef {
            matrix: MatrixId::from_index(m).map_err(|e| ClusterError::Refused(e.to_string()))?,
            index: idx.clone(),
        };
        let writers = engine.writer(&tile).map_err(|e| {
            ClusterError::Refused(format!(
                "run {run}: cannot find the writer of {}: {e}",
                inst.program.tile_name(&tile)
            ))
        })?;
        if let Some(w) = writers.first() {
            return Err(ClusterError::MissingOutput {
                run: run.to_string(),
                tile: inst.program.tile_name(&tile),
                writer: inst.program.task_name(w).to_string(),
                store: store.describe(),
                marker: MARKER,
            });
        }
    }
    Ok(())
}

/// Refuses to assemble output matrix `m` when a tile in the store is not
/// the one its writer recorded ([`crate::tiles::digest`], in the run's
/// `sums`): changed, truncated or replaced after the run. A run rebuilt by
/// `lpkc resume` lost the digests of the tiles written before Redis was
/// lost; those (and only those, in such a run) are taken on their shape.
fn check_digests(
    redis: &mut Redis,
    run: &str,
    inst: &lpk_model::program::Instance<'_>,
    m: usize,
    tiles: &BTreeMap<Vec<i64>, Arc<Tile>>,
    store: &ObjectStoreTiles,
) -> Result<(), ClusterError> {
    let keys = Keys::new(run);
    let resumed: Option<String> = redis.query(
        redis::cmd("HGET").arg(keys.meta()).arg("resumed"),
        "reading the run record",
    )?;
    let matrix = MatrixId::from_index(m).map_err(|e| ClusterError::Refused(e.to_string()))?;
    let all: Vec<(&Vec<i64>, &Arc<Tile>)> = tiles.iter().collect();
    for part in all.chunks(1000) {
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(keys.sums());
        for (idx, _) in part {
            cmd.arg(crate::ids::tile_id(matrix, idx));
        }
        let sums: Vec<Option<String>> = redis.query(&cmd, "reading the output tiles' digests")?;
        for ((idx, tile), sum) in part.iter().zip(sums) {
            let tile_ref = TileRef {
                matrix,
                index: (*idx).clone(),
            };
            let name = || inst.program.tile_name(&tile_ref);
            let why = match sum {
                Some(sum) if sum == crate::tiles::digest(tile) => continue,
                None if resumed.is_some() => continue,
                Some(_) => "is not the tile its writer stored (its digest differs from the one \
                            recorded in Redis): the store was changed after the run"
                    .to_string(),
                None => "has no digest in Redis: its writer recorded none (a worker of another \
                         version of lpk?), or the run was changed there"
                    .to_string(),
            };
            return Err(ClusterError::Refused(format!(
                "run {run}: output tile {} in the store {} {why}; nothing was collected (no {MARKER})",
                name(),
                store.describe()
            )));
        }
    }
    Ok(())
}

/// Reads tiles `indices` of matrix `name` on a few threads (a store's
/// latency, not its bandwidth, bounds one reader); tiles not in the store
/// are left out.
fn fetch_tiles(
    store: &ObjectStoreTiles,
    name: &str,
    indices: &[Vec<i64>],
) -> Result<Fetched, ClusterError> {
    if indices.is_empty() {
        return Ok(Vec::new());
    }
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(2, 8)
        .min(indices.len());
    let chunk = indices.len().div_ceil(threads).max(1);
    let parts: Vec<Result<Fetched, ClusterError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = indices
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let mut got = Vec::new();
                    for idx in part {
                        match store.get(name, idx) {
                            Ok(Some(t)) => got.push((idx.clone(), t)),
                            Ok(None) => {}
                            Err(source) => return Err(store_error(store, source)),
                        }
                    }
                    Ok(got)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(ClusterError::Refused(
                        "a thread reading the output tiles panicked".into(),
                    ))
                })
            })
            .collect()
    });
    let mut all = Vec::with_capacity(indices.len());
    for part in parts {
        all.extend(part?);
    }
    Ok(all)
}

/// Fetches a run's output tiles while it runs (`lpkc run --redis
/// --output-dir`), so that only the last ones are left to read when it
/// ends: every 5 ms, when the run's done count moved, it asks Redis which
/// writers of the output tiles not fetched yet are in the run's done set,
/// and reads those tiles. A task is in the done set only after its outputs
/// were written (each a single atomic put) and its done marker after them,
/// and a task that runs again writes the same bits, so a tile read then is
/// the tile `collect` reads at the end. It only ever saves work: a tile it
/// did not get (an error, no single writer, not done yet) is read by
/// [`collect_with`] as [`collect`] reads it.
pub struct Collector {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Early>>,
}

impl Collector {
    /// Starts fetching run `run`'s output tiles on a thread of its own,
    /// with its own connection to the Redis at `url`.
    pub fn start(url: &str, run: &str, dir: &Path) -> Collector {
        let stop = Arc::new(AtomicBool::new(false));
        let (url, run, flag) = (url.to_string(), run.to_string(), stop.clone());
        let dir = dir.to_path_buf();
        let handle = std::thread::Builder::new()
            .name("lpk-collector".into())
            .spawn(move || {
                let mut early = Early::new();
                // Errors only end (setting up) or pause (Redis) the early
                // fetching: `collect_with` reads what is missing, and
                // reports the errors it meets.
                let _ = fetch_early(&url, &run, &dir, &flag, &mut early);
                early
            })
            .ok();
        Collector { stop, handle }
    }

    /// Stops fetching (after the batch being read, if any) and returns
    /// what it learnt so far, for [`collect_with`].
    pub fn finish(mut self) -> Early {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The loop of a [`Collector`]: fetches into `early` until `stop` or
/// every output tile with a writer is there.
fn fetch_early(
    url: &str,
    run: &str,
    dir: &Path,
    stop: &AtomicBool,
    early: &mut Early,
) -> Result<(), ClusterError> {
    let mut redis = Redis::open(url)?;
    let record = RunRecord::read(&mut redis, run)?;
    if record.kernels == Kernels::Noop {
        return Ok(());
    }
    let program = record.load_program()?;
    let inst = record.bind(&program)?;
    let target = Target::open(run, &record, &inst, dir)?;
    let keys = Keys::new(run);
    let mut pending = output_writers(&inst, early);
    let mut last_done: Option<u64> = None;
    while !pending.is_empty() && !stop.load(Ordering::Relaxed) {
        // Redis going away (restarted, being resumed) only pauses this.
        let Ok(done) = redis.query::<Option<u64>>(
            redis::cmd("HGET").arg(keys.meta()).arg("done"),
            "reading the run's done count",
        ) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        if done.is_some() && done != last_done {
            last_done = done;
            let ready = take_done(&mut redis, &keys, &mut pending, &mut last_done);
            // The batch that leaves nothing to fetch is not synced
            // here: `collect_with` syncs the file once more at the
            // end anyway, and each sync waits for the disk.
            fetch_ready(&target, early, ready, !pending.is_empty());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// An output tile with one writer, not fetched yet: (writer's id,
/// matrix, index).
type Pending = (String, usize, Vec<i64>);

/// Each output tile with one writer (from the plans); those no task
/// writes go into `early.absent`.
fn output_writers(inst: &Instance<'_>, early: &mut Early) -> Vec<Pending> {
    let mut pending: Vec<Pending> = Vec::new();
    let mut engine = Engine::new(inst);
    for (id, decl) in inst.program.matrix_ids() {
        let m = id.index();
        if decl.role != Role::Output {
            continue;
        }
        let extents = inst.extents.get(m).cloned().unwrap_or_default();
        let mut indices: Vec<Vec<i64>> = Vec::new();
        grid(&extents, &mut |idx| indices.push(idx.to_vec()));
        for index in indices {
            let tile = TileRef { matrix: id, index };
            match engine.writer(&tile).as_deref() {
                Ok([task]) => pending.push((task_id(task), m, tile.index)),
                Ok([]) => {
                    early.absent.insert((m, tile.index));
                }
                _ => {}
            }
        }
    }
    pending
}

/// Takes the tiles whose writers are in the run's done set out of
/// `pending` (asking a thousand at a time), as (matrix, index); a batch
/// Redis does not answer stays, and resets `last_done` so that it is asked
/// again at the next look.
fn take_done(
    redis: &mut Redis,
    keys: &Keys,
    pending: &mut Vec<Pending>,
    last_done: &mut Option<u64>,
) -> Vec<(usize, Vec<i64>)> {
    let mut ready: Vec<(usize, Vec<i64>)> = Vec::new();
    let mut still = Vec::with_capacity(pending.len());
    for part in pending.chunks(1000) {
        let mut cmd = redis::cmd("SMISMEMBER");
        cmd.arg(keys.done());
        for (task, _, _) in part {
            cmd.arg(task);
        }
        let Ok(flags) = redis.query::<Vec<i64>>(&cmd, "asking which tasks are done") else {
            // Asked again at the next look.
            still.extend_from_slice(part);
            *last_done = None;
            continue;
        };
        for (p, flag) in part.iter().zip(flags) {
            if flag == 1 {
                ready.push((p.1, p.2.clone()));
            } else {
                still.push(p.clone());
            }
        }
    }
    *pending = still;
    ready
}

/// Fetches the `ready` tiles into `early`, matrix by matrix, and writes
/// each 2-D output's file in place so far ([`place`]; synced if `sync`).
fn fetch_ready(
    target: &Target<'_, '_>,
    early: &mut Early,
    ready: Vec<(usize, Vec<i64>)>,
    sync: bool,
) {
    let mut by_matrix: BTreeMap<usize, Vec<Vec<i64>>> = BTreeMap::new();
    for (m, idx) in ready {
        by_matrix.entry(m).or_default().push(idx);
    }
    for (m, indices) in by_matrix {
        let Some(decl) = target.inst.program.matrices.get(m) else {
            continue;
        };
        let name = &decl.name;
        // A tile not read here (a store error) is read at the end.
        for (idx, t) in fetch_tiles(&target.store, name, &indices).unwrap_or_default() {
            early.tiles.insert((m, idx), t);
        }
        if std::fs::create_dir_all(target.dir).is_ok() {
            let extents = target.inst.extents.get(m).cloned().unwrap_or_default();
            let stem = OutputRequest::whole(name).file_stem();
            let path = target.dir.join(format!("{stem}.npy"));
            place(early, m, &extents, target.block, &path, sync);
        }
    }
}

/// Writes the tiles of output `m` fetched so far into its `.npy` in
/// place, on the layout they give (the file is started again if a tile
/// changed it; given up if they have none).
fn place(early: &mut Early, m: usize, extents: &[i64], block: usize, path: &Path, sync: bool) {
    let Some((tr, tc)) = grid_2d(extents) else {
        return;
    };
    let mine = early
        .tiles
        .iter()
        .filter(|((mm, _), _)| *mm == m)
        .map(|((_, idx), t)| (idx.as_slice(), &**t));
    let Ok(guess) = tile_layout(tr, tc, mine, block) else {
        early.files.remove(&m);
        return;
    };
    if early.files.get(&m).is_none_or(|f| f.layout != guess) {
        early.files.remove(&m);
        let Ok(writer) = NpyBlockWriter::create(path, guess.rows(), guess.cols()) else {
            return;
        };
        early.files.insert(
            m,
            InPlace {
                writer,
                layout: guess,
                written: HashSet::new(),
            },
        );
    }
    let Some(file) = early.files.get_mut(&m) else {
        return;
    };
    let mut ok = true;
    for ((mm, idx), t) in &early.tiles {
        if *mm == m && !file.written.contains(idx) {
            if write_tile(file, idx, t).is_err() {
                ok = false;
                break;
            }
            file.written.insert(idx.clone());
        }
    }
    // Off the critical path: less for the final sync to do.
    if !ok || (sync && file.writer.sync_data().is_err()) {
        early.files.remove(&m);
    }
}

/// Writes tile `idx` at its place in the file's layout.
fn write_tile(file: &InPlace, idx: &[i64], t: &Tile) -> Result<(), npy::NpyError> {
    let i = usize::try_from(idx.first().copied().unwrap_or(0)).unwrap_or(usize::MAX);
    let j = usize::try_from(idx.get(1).copied().unwrap_or(0)).unwrap_or(usize::MAX);
    let (r0, c0) = if i < file.layout.heights.len() && j < file.layout.widths.len() {
        file.layout.at(i, j)
    } else {
        (usize::MAX, usize::MAX)
    };
    // Out of the array: write_block refuses it.
    file.writer.write_block(r0, c0, t)
}

/// Completes a file written in place with the tiles it lacks, if all the
/// tiles (`tiles`) have the layout it was written on; then syncs it and
/// gives it its name. `None`: the caller assembles the tiles instead (the
/// file is removed).
fn finish_in_place(
    mut file: InPlace,
    extents: &[i64],
    tiles: &BTreeMap<Vec<i64>, Arc<Tile>>,
    block: usize,
    path: &Path,
) -> Option<(usize, usize)> {
    let (tr, tc) = grid_2d(extents)?;
    let all = tile_layout(
        tr,
        tc,
        tiles.iter().map(|(i, t)| (i.as_slice(), &**t)),
        block,
    )
    .ok()?;
    if all != file.layout || file.writer.path() != path {
        return None;
    }
    for (idx, t) in tiles {
        if !file.written.contains(idx) {
            write_tile(&file, idx, t).ok()?;
            file.written.insert(idx.clone());
        }
    }
    let shape = file.writer.shape();
    file.writer.finish().ok()?;
    Some(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of this test's own, removed when dropped (the crate
    /// has no `tempfile` among its dependencies).
    struct Scratch(std::path::PathBuf);
    impl Scratch {
        fn new() -> Scratch {
            static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let p = std::env::temp_dir().join(format!(
                "lpk-collect-test-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&p).expect("a scratch directory");
            Scratch(p)
        }
        fn path(&self) -> &Path {
            &self.0
        }
    }
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn tile(r: usize, c: usize, seed: f64) -> Arc<Tile> {
        Arc::new(Tile::from_fn(r, c, |i, j| {
            seed + (i * 1000 + j) as f64 * 0.25
        }))
    }

    /// Writes `tiles` of a `tr` × `tc` grid in place, in the order and
    /// batches given (as a collector fetches them while the run goes on),
    /// then as `collect` would assemble them; the two files must be the
    /// same bytes, or the in-place file must have been given up.
    fn same_as_assembled(
        tr: i64,
        tc: i64,
        block: usize,
        batches: &[Vec<(Vec<i64>, Arc<Tile>)>],
    ) -> bool {
        let tmp = Scratch::new();
        let extents = vec![tr, tc];
        let in_place = tmp.path().join("in-place.npy");
        let mut early = Early::new();
        let mut all: BTreeMap<Vec<i64>, Arc<Tile>> = BTreeMap::new();
        for batch in batches {
            for (idx, t) in batch {
                early.tiles.insert((0, idx.clone()), t.clone());
                all.insert(idx.clone(), t.clone());
            }
            place(&mut early, 0, &extents, block, &in_place, true);
        }
        let kept = early
            .files
            .remove(&0)
            .and_then(|f| finish_in_place(f, &extents, &all, block, &in_place));
        let request = OutputRequest::whole("M");
        let assembled = outputs::assemble(&request, &extents, &all, block).expect("a grid");
        let reference = tmp.path().join("assembled.npy");
        npy::write_file(&reference, &assembled).expect("write");
        match kept {
            Some(shape) => {
                assert_eq!(shape, (assembled.nrows(), assembled.ncols()));
                assert_eq!(
                    std::fs::read(&in_place).expect("in place"),
                    std::fs::read(&reference).expect("assembled"),
                    "the file written in place differs from the assembled one"
                );
                true
            }
            None => {
                assert!(!in_place.exists(), "a given-up file was left behind");
                false
            }
        }
    }

    #[test]
    fn a_file_written_in_place_is_the_assembled_file() {
        // Cholesky-like: the lower triangle of 3 x 3 tiles, the last row
        // and column shorter, fetched column by column.
        let cols: Vec<Vec<(Vec<i64>, Arc<Tile>)>> = (0..3)
            .map(|j: i64| {
                (j..3)
                    .map(|i: i64| {
                        let h = if i == 2 { 3 } else { 4 };
                        let w = if j == 2 { 3 } else { 4 };
                        (vec![i, j], tile(h, w, (i * 10 + j) as f64))
                    })
                    .collect()
            })
            .collect();
        // The last column's width is guessed wrong until its tile comes:
        // the file is started again, or given up; never wrong.
        same_as_assembled(3, 3, 4, &cols);
        // Uniform tiles, one at a time, last first.
        let mut one: Vec<Vec<(Vec<i64>, Arc<Tile>)>> = Vec::new();
        for i in (0..2i64).rev() {
            for j in (0..3i64).rev() {
                one.push(vec![(vec![i, j], tile(2, 5, (i + j) as f64))]);
            }
        }
        assert!(
            same_as_assembled(2, 3, 5, &one),
            "uniform tiles are written in place"
        );
        // The whole first batch, then nothing more.
        let cols_in_one: Vec<(Vec<i64>, Arc<Tile>)> = cols.concat();
        assert!(same_as_assembled(3, 3, 4, &[cols_in_one]));
        // Tiles that disagree: no file, and assembling refuses them too.
        let bad = [vec![
            (vec![0, 0], tile(2, 2, 0.0)),
            (vec![0, 1], tile(3, 2, 1.0)),
        ]];
        let tmp = Scratch::new();
        let mut early = Early::new();
        for (idx, t) in &bad[0] {
            early.tiles.insert((0, idx.clone()), t.clone());
        }
        place(&mut early, 0, &[1, 2], 2, &tmp.path().join("bad.npy"), true);
        assert!(early.files.is_empty());
    }

    #[test]
    fn the_layout_is_the_one_assembling_gives() {
        let t = tile(3, 2, 0.0);
        let u = tile(4, 2, 0.0);
        let l = tile_layout(2, 2, [(&[0i64, 0][..], &*t)].into_iter(), 7).expect("a layout");
        assert_eq!(l.heights, vec![3, 3]);
        assert_eq!(l.widths, vec![2, 2]);
        let l = tile_layout(
            3,
            1,
            [(&[0i64, 0][..], &*t), (&[1i64, 0][..], &*u)].into_iter(),
            7,
        )
        .expect("a layout");
        assert_eq!(l.heights, vec![3, 4, 7], "rows seen disagree: the block");
        assert_eq!(l.at(2, 0), (7, 0));
        assert_eq!(
            tile_layout(1, 1, [(&[1i64, 0][..], &*t)].into_iter(), 7),
            Err(lpk_runtime::dense::AssembleError::OutsideGrid { index: vec![1, 0] })
        );
    }
}
