//! `lpkc resume`: rebuilds a run's state in Redis from its store alone,
//! after Redis lost it (restarted without persistence, flushed, replaced).
//!
//! The store holds the run's manifest and artifact (written by `submit`)
//! and a done marker per completed task (written by the worker after the
//! task's outputs, before completing it; [`crate::markers`]). From the
//! markers alone:
//! - the finished set is the markers;
//! - every waiting task's counter is the set of tiles its finished parents
//!   wrote: the children of the finished tasks, from the children plans
//!   (only the frontier is visited, never the whole DAG's edges);
//! - the ready queue is the tasks whose counter reaches their in-degree
//!   (from the parents plans), plus the roots not finished (one pass over
//!   the iteration domain asking the parents plans, as `submit` does).
//!
//! A task whose outputs were written but whose marker was not runs again
//! and writes the same bits; a marker whose completion never reached Redis
//! counts as done, which is right since its outputs came first.

use crate::conn::Redis;
use crate::error::{store_error, ClusterError};
use crate::ids::{task_id, tile_id};
use crate::manifest::Manifest;
use crate::protocol::{self, Keys};
use crate::record::{RunRecord, RunState};
use crate::tiles::{check_store_url, open_run_store};
use lpk_model::program::Program;
use lpk_model::query::Engine;
use lpk_model::task::{Task, TileRef};
use lpk_runtime::store::{BlobStore, ObjectStoreTiles, TileStore};
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

/// What a resumption rebuilt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resumed {
    /// Tasks found done.
    pub done: u64,
    /// Tasks in the run.
    pub total: u64,
    /// Tasks put into the ready queue.
    pub ready: u64,
    /// Waiting tasks with some parents counted.
    pub waiting: u64,
}

/// Rebuilds run `run` in Redis from store `store`; refuses when Redis
/// still holds the run (unless `force`).
pub fn resume(
    redis: &mut Redis,
    run: &str,
    store_url: &str,
    force: bool,
    note: &mut dyn FnMut(&str),
) -> Result<Resumed, ClusterError> {
    crate::error::check_run_id(run)?;
    check_store_url(store_url)?;
    let keys = Keys::new(run);
    refuse_if_present(redis, &keys, run, force)?;
    let store = open_run_store(store_url, run)?;
    let saved = read_saved(&store, run)?;
    let inst = saved
        .program
        .bind(&saved.manifest.params)
        .map_err(|source| ClusterError::Bind {
            run: run.to_string(),
            source: Box::new(source),
        })?;
    let total = inst
        .count_tasks(lpk_model::task::COUNT_BUDGET)
        .map_err(|e| ClusterError::Refused(format!("cannot count the run's tasks: {e}")))?
        .total();
    let mut engine = Engine::new(&inst);
    let done = finished_tasks(&store, total, &mut engine, note)?;
    let frontier = frontier(&mut engine, &saved.program, &done)?;
    let keep = saved.manifest.keep_intermediates;
    let tiles = read_tiles(&mut engine, &saved.program, &done, keep)?;
    let undeleted = delete_dead_tiles(&store, &saved.program, &tiles.dead_now, note);
    let stored_bytes = stored_tile_bytes(&store)?;

    // Write the state: the finished set and the counters, the record, then
    // the ready queue, and the run's announcement last.
    clear_run_keys(redis, &keys)?;
    let state = State {
        done: &done,
        frontier: &frontier,
        tiles: &tiles,
        undeleted: &undeleted,
    };
    restore_sets(redis, &keys, &state)?;
    let finished = done.len() as u64 >= total;
    let counts = Counts {
        total,
        done: done.len() as u64,
        stored_bytes,
    };
    let record = rebuilt_record(run, store_url, &saved, inst.params.clone(), &counts);
    record.write(redis)?;
    // The output tiles' digests were lost with Redis: `collect` checks
    // those it has and takes the others on their shape.
    redis.query::<()>(
        redis::cmd("HSET").arg(keys.meta()).arg("resumed").arg("1"),
        "writing the run record",
    )?;
    // The queue last: a worker may read it at once, and completing a task
    // needs the record.
    protocol::create_queue(redis, &keys)?;
    let ready_ids: Vec<String> = frontier.ready.iter().map(task_id).collect();
    protocol::enqueue(redis, &keys, &ready_ids, "restoring the ready tasks")?;
    if !finished {
        protocol::announce(redis, run)?;
    }
    Ok(Resumed {
        done: done.len() as u64,
        total,
        ready: ready_ids.len() as u64,
        waiting: frontier.waiting.len() as u64,
    })
}

/// Refuses to rebuild a run whose record Redis still holds, unless `force`.
fn refuse_if_present(
    redis: &mut Redis,
    keys: &Keys,
    run: &str,
    force: bool,
) -> Result<(), ClusterError> {
    let exists: i64 = redis.query(redis::cmd("EXISTS").arg(keys.meta()), "looking for the run")?;
    if exists == 1 && !force {
        return Err(ClusterError::Refused(format!(
            "run {run} is still in Redis at {}: resume rebuilds a run Redis lost (give --force to rebuild it anyway)",
            redis.url()
        )));
    }
    Ok(())
}

/// What `submit` left in the run's store: its manifest, its artifact's
/// bytes and the program the artifact holds.
struct Saved {
    manifest: Manifest,
    artifact: Vec<u8>,
    program: Program,
}

/// Reads the manifest, then the artifact, from the run's store, and
/// decodes the program (a missing object is refused, naming it).
fn read_saved(store: &ObjectStoreTiles, run: &str) -> Result<Saved, ClusterError> {
    let missing = |what: &str| {
        ClusterError::Refused(format!(
            "{}/{what} is missing: is {run} a run submitted to this store?",
            store.describe()
        ))
    };
    let manifest = store
        .get_bytes("manifest.json", crate::manifest::MAX_BYTES as u64)
        .map_err(|e| store_error(store, e))?
        .ok_or_else(|| missing("manifest.json"))?;
    let manifest = Manifest::parse(run, &manifest)?;
    let artifact = store
        .get_bytes(
            "program.lpka",
            lpk_model::artifact::HEADER_LEN as u64 + u64::from(lpk_model::artifact::MAX_PAYLOAD),
        )
        .map_err(|e| store_error(store, e))?
        .ok_or_else(|| missing("program.lpka"))?;
    let program = lpk_model::artifact::decode(&artifact)
        .map(|l| l.artifact.program)
        .map_err(|source| ClusterError::Artifact {
            run: run.to_string(),
            source: Box::new(source),
        })?;
    Ok(Saved {
        manifest,
        artifact,
        program,
    })
}

/// The finished set: the tasks with done markers in the store (what is
/// under `done/` but names no task of the run is noted and skipped).
fn finished_tasks(
    store: &ObjectStoreTiles,
    total: u64,
    engine: &mut Engine<'_, '_>,
    note: &mut dyn FnMut(&str),
) -> Result<HashSet<Task>, ClusterError> {
    let found = crate::markers::read_done(store, total, &mut |t| engine.check_task(t).is_ok())
        .map_err(|e| store_error(store, e))?;
    if found.skipped_count > 0 {
        note(&format!(
            "ignored {} object(s) or log line(s) under done/ that are not done markers of this run's tasks, e.g. {}",
            found.skipped_count,
            found.skipped.join("; ")
        ));
    }
    let done = found.done;
    note(&format!(
        "{} of {total} tasks have done markers",
        done.len()
    ));
    Ok(done)
}

/// The unfinished tasks next to the finished ones.
struct Frontier {
    /// Tasks whose parents are all finished, and roots not finished, in
    /// sequential order.
    ready: Vec<Task>,
    /// Tasks with some parents finished: the edge tiles counted so far.
    waiting: Vec<(Task, Vec<String>)>,
}

/// The frontier: the children of finished tasks that are not finished,
/// counted from the children plans and split by their in-degree, plus the
/// roots not finished.
fn frontier(
    engine: &mut Engine<'_, '_>,
    program: &Program,
    done: &HashSet<Task>,
) -> Result<Frontier, ClusterError> {
    let mut counted: HashMap<Task, HashSet<String>> = HashMap::new();
    for t in done {
        let mut edges = Vec::new();
        engine.for_each_child(t, &mut |stmt, vars, matrix, tile| {
            edges.push((
                Task {
                    stmt,
                    vars: vars.into(),
                },
                tile_id(matrix, tile),
            ));
        })?;
        for (child, tile) in edges {
            if !done.contains(&child) {
                counted.entry(child).or_default().insert(tile);
            }
        }
    }
    let mut ready: Vec<Task> = Vec::new();
    let mut waiting: Vec<(Task, Vec<String>)> = Vec::new();
    for (child, tiles) in counted {
        let d = engine.in_degree(&child)?;
        if tiles.len() >= d {
            ready.push(child);
        } else {
            waiting.push((child, tiles.into_iter().collect()));
        }
    }
    // Roots not finished.
    engine.for_each_task_rooted(&mut |t, root| {
        if root && !done.contains(t) {
            ready.push(t.clone());
        }
        ControlFlow::Continue(())
    })?;
    ready.sort_by(|a, b| program.sequential_cmp(a, b));
    Ok(Frontier { ready, waiting })
}

/// The intermediate tiles finished tasks read, split by whether all
/// their readers are finished.
struct ReadTiles {
    /// Tiles some of whose readers are finished: (tile id, finished
    /// readers' ids).
    partly_read: Vec<(String, Vec<String>)>,
    /// Tiles whose readers are all finished: dead, to delete now.
    dead_now: Vec<(TileRef, String)>,
}

/// Dead tiles: each intermediate tile a finished task read counts its
/// finished readers again, as the completions had; a tile whose readers
/// are all finished is dead (none with `keep`).
fn read_tiles(
    engine: &mut Engine<'_, '_>,
    program: &Program,
    done: &HashSet<Task>,
    keep: bool,
) -> Result<ReadTiles, ClusterError> {
    let mut read_by: HashMap<TileRef, Vec<String>> = HashMap::new();
    if !keep {
        for t in done {
            for tile in engine.reads(t)? {
                let m = program.matrix(tile.matrix);
                if m.role != lpk_model::program::Role::Temporary
                    || (m.zero && lpk_runtime::zero::is_zero_tile(engine, &tile)?)
                {
                    continue;
                }
                let readers = read_by.entry(tile).or_default();
                let id = task_id(t);
                if !readers.contains(&id) {
                    readers.push(id);
                }
            }
        }
    }
    let mut partly_read: Vec<(String, Vec<String>)> = Vec::new();
    let mut dead_now: Vec<(TileRef, String)> = Vec::new();
    for (tile, finished) in read_by {
        let id = tile_id(tile.matrix, &tile.index);
        if finished.len() >= engine.readers(&tile)?.len() {
            dead_now.push((tile, id));
        } else {
            partly_read.push((id, finished));
        }
    }
    Ok(ReadTiles {
        partly_read,
        dead_now,
    })
}

/// Deletes the dead tiles from the store (one may be gone already);
/// returns the ids of those it could not delete, each noted.
fn delete_dead_tiles(
    store: &ObjectStoreTiles,
    program: &Program,
    dead_now: &[(TileRef, String)],
    note: &mut dyn FnMut(&str),
) -> Vec<String> {
    let mut undeleted: Vec<String> = Vec::new();
    for (tile, id) in dead_now {
        let m = program.matrix(tile.matrix);
        if let Err(e) = store.delete(&m.name, &tile.index) {
            note(&format!(
                "could not delete dead tile {}: {e}; `lpkc collect` deletes it",
                program.tile_name(tile)
            ));
            undeleted.push(id.clone());
        }
    }
    undeleted
}

/// The store's bytes, re-counted from its objects (tiles only; each size
/// includes its .npy header).
fn stored_tile_bytes(store: &ObjectStoreTiles) -> Result<u64, ClusterError> {
    Ok(store
        .list_sized("")
        .map_err(|e| store_error(store, e))?
        .iter()
        .filter(|(k, _)| k.ends_with(".npy") && !k.starts_with("done/"))
        .map(|(_, size)| size)
        .sum())
}

/// Deletes every key of the run left in Redis ([`Redis::scan`]).
fn clear_run_keys(redis: &mut Redis, keys: &Keys) -> Result<(), ClusterError> {
    let pattern = keys.pattern();
    let mut cursor = "0".to_string();
    loop {
        let (next, old) = redis.scan(&cursor, &pattern, "clearing the run's old keys")?;
        for chunk in old.chunks(1000) {
            redis.query::<()>(redis::cmd("DEL").arg(chunk), "clearing the run's old keys")?;
        }
        cursor = next;
        if cursor == "0" {
            return Ok(());
        }
    }
}

/// The run's state as rebuilt from the store, to write into Redis.
struct State<'a> {
    done: &'a HashSet<Task>,
    frontier: &'a Frontier,
    tiles: &'a ReadTiles,
    undeleted: &'a [String],
}

/// Writes the run's sets: the finished (and enqueued) tasks, the waiting
/// tasks' counters, the tiles' finished readers, the deleted tiles and the
/// dead tiles not deleted.
fn restore_sets(redis: &mut Redis, keys: &Keys, state: &State<'_>) -> Result<(), ClusterError> {
    let done_ids: Vec<String> = state.done.iter().map(task_id).collect();
    for chunk in done_ids.chunks(1000) {
        let mut pipe = redis::pipe();
        pipe.cmd("SADD").arg(keys.done()).arg(chunk).ignore();
        pipe.cmd("SADD").arg(keys.enqueued()).arg(chunk).ignore();
        redis.pipe::<()>(&pipe, "restoring the finished tasks")?;
    }
    for chunk in state.frontier.waiting.chunks(1000) {
        let mut pipe = redis::pipe();
        for (t, tiles) in chunk {
            pipe.cmd("SADD")
                .arg(keys.edges(&task_id(t)))
                .arg(tiles)
                .ignore();
        }
        redis.pipe::<()>(&pipe, "restoring the waiting tasks' counters")?;
    }
    for chunk in state.tiles.partly_read.chunks(1000) {
        let mut pipe = redis::pipe();
        for (tile, readers) in chunk {
            pipe.cmd("SADD")
                .arg(keys.readers(tile))
                .arg(readers)
                .ignore();
        }
        redis.pipe::<()>(&pipe, "restoring the tiles' finished readers")?;
    }
    for chunk in state.tiles.dead_now.chunks(1000) {
        let ids: Vec<&String> = chunk.iter().map(|(_, id)| id).collect();
        redis.query::<()>(
            redis::cmd("SADD").arg(keys.gone()).arg(ids),
            "restoring the deleted tiles",
        )?;
    }
    if !state.undeleted.is_empty() {
        redis.query::<()>(
            redis::cmd("SADD").arg(keys.dead()).arg(state.undeleted),
            "restoring the dead tiles",
        )?;
    }
    Ok(())
}

/// The counts a rebuilt record carries.
struct Counts {
    /// Tasks in the run.
    total: u64,
    /// Tasks found done.
    done: u64,
    /// Bytes of tiles in the store.
    stored_bytes: u64,
}

/// The run record rebuilt from the manifest, the artifact and the counts.
fn rebuilt_record(
    run: &str,
    store_url: &str,
    saved: &Saved,
    params: Vec<i64>,
    counts: &Counts,
) -> RunRecord {
    let manifest = &saved.manifest;
    let finished = counts.done >= counts.total;
    RunRecord {
        id: run.to_string(),
        artifact: saved.artifact.clone(),
        program: saved.program.name.clone(),
        params,
        block: manifest.block,
        store: store_url.to_string(),
        kernels: manifest.kernels,
        total: counts.total,
        done: counts.done,
        state: if finished {
            RunState::Done
        } else {
            RunState::Running
        },
        max_expiries: manifest.max_expiries,
        created_ms: manifest.created_ms,
        finished_ms: None,
        error: None,
        keep: manifest.keep_intermediates,
        // The peak before the resumption is lost with Redis.
        stored_bytes: i64::try_from(counts.stored_bytes).unwrap_or(i64::MAX),
        peak_bytes: i64::try_from(counts.stored_bytes).unwrap_or(i64::MAX),
        limits: manifest.limits,
        // The manifest has no input shapes: workers that load the resumed
        // run do not check user kernels' shape rules again.
        input_shapes: Vec::new(),
    }
}
