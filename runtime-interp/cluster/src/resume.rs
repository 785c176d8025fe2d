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
use crate::error::ClusterError;
use crate::ids::{task_id, tile_id};
use crate::manifest::Manifest;
use crate::protocol::{self, Keys};
use crate::record::{RunRecord, RunState};
use crate::tiles::{check_store_url, open_run_store};
use model::query::Engine;
use model::task::Task;
use runtime::store::{BlobStore, TileStore};
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
    let exists: i64 = redis.query(redis::cmd("EXISTS").arg(keys.meta()), "looking for the run")?;
    if exists == 1 && !force {
        return Err(ClusterError::Refused(format!(
            "run {run} is still in Redis at {}: resume rebuilds a run Redis lost (give --force to rebuild it anyway)",
            redis.url()
        )));
    }
    let store = open_run_store(store_url, run)?;
    let store_err = |source| ClusterError::Store {
        store: store.describe(),
        source: Box::new(source),
    };
    let missing = |what: &str| {
        ClusterError::Refused(format!(
            "{}/{what} is missing: is {run} a run submitted to this store?",
            store.describe()
        ))
    };
    let manifest = store
        .get_bytes("manifest.json", crate::manifest::MAX_BYTES as u64)
        .map_err(store_err)?
        .ok_or_else(|| missing("manifest.json"))?;
    let manifest = Manifest::parse(run, &manifest)?;
    let artifact = store
        .get_bytes(
            "program.lpka",
            model::artifact::HEADER_LEN as u64 + u64::from(model::artifact::MAX_PAYLOAD),
        )
        .map_err(store_err)?
        .ok_or_else(|| missing("program.lpka"))?;
    let (block, kernels, max_expiries) = (manifest.block, manifest.kernels, manifest.max_expiries);
    let params = manifest.params.clone();
    let program = model::artifact::decode(&artifact)
        .map(|l| l.artifact.program)
        .map_err(|source| ClusterError::Artifact {
            run: run.to_string(),
            source: Box::new(source),
        })?;
    let inst = program.bind(&params).map_err(|source| ClusterError::Bind {
        run: run.to_string(),
        source: Box::new(source),
    })?;
    let total = inst
        .count_tasks(model::task::COUNT_BUDGET)
        .map_err(|e| ClusterError::Refused(format!("cannot count the run's tasks: {e}")))?
        .total();
    let mut engine = Engine::new(&inst);

    // The finished set.
    let found = crate::markers::read_done(&store, total, &mut |t| engine.check_task(t).is_ok())
        .map_err(store_err)?;
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

    // The frontier: children of finished tasks that are not finished.
    let mut counted: HashMap<Task, HashSet<String>> = HashMap::new();
    for t in &done {
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

    // Dead tiles: each intermediate tile a finished task read counts its
    // finished readers again, as the completions had; a tile whose readers
    // are all finished is deleted now (it may be gone already).
    let keep = manifest.keep_intermediates;
    let mut read_by: HashMap<model::task::TileRef, Vec<String>> = HashMap::new();
    if !keep {
        for t in &done {
            for tile in engine.reads(t)? {
                let m = program.matrix(tile.matrix);
                if m.role != model::program::Role::Temporary
                    || (m.zero && runtime::zero::is_zero_tile(&mut engine, &tile)?)
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
    let mut dead_now: Vec<(model::task::TileRef, String)> = Vec::new();
    for (tile, finished) in read_by {
        let id = tile_id(tile.matrix, &tile.index);
        if finished.len() >= engine.readers(&tile)?.len() {
            dead_now.push((tile, id));
        } else {
            partly_read.push((id, finished));
        }
    }
    let mut undeleted: Vec<String> = Vec::new();
    for (tile, id) in &dead_now {
        let m = program.matrix(tile.matrix);
        if let Err(e) = store.delete(&m.name, &tile.index) {
            note(&format!(
                "could not delete dead tile {}: {e}; `lpkc collect` deletes it",
                program.tile_name(tile)
            ));
            undeleted.push(id.clone());
        }
    }
    // The store's bytes, re-counted from its objects (tiles only; each
    // size includes its .npy header).
    let stored_bytes: u64 = store
        .list_sized("")
        .map_err(store_err)?
        .iter()
        .filter(|(k, _)| k.ends_with(".npy") && !k.starts_with("done/"))
        .map(|(_, size)| size)
        .sum();

    // Write the state: the finished set and the counters, the record, then
    // the ready queue, and the run's announcement last.
    // SCAN, not KEYS: KEYS blocks the server for every other run while it
    // walks the whole key space.
    let pattern = keys.pattern();
    let mut cursor = "0".to_string();
    loop {
        let (next, old): (String, Vec<String>) = redis.query(
            redis::cmd("SCAN")
                .arg(&cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000),
            "clearing the run's old keys",
        )?;
        for chunk in old.chunks(1000) {
            redis.query::<()>(redis::cmd("DEL").arg(chunk), "clearing the run's old keys")?;
        }
        cursor = next;
        if cursor == "0" {
            break;
        }
    }
    let done_ids: Vec<String> = done.iter().map(task_id).collect();
    for chunk in done_ids.chunks(1000) {
        let mut pipe = redis::pipe();
        pipe.cmd("SADD").arg(keys.done()).arg(chunk).ignore();
        pipe.cmd("SADD").arg(keys.enqueued()).arg(chunk).ignore();
        redis.pipe::<()>(&pipe, "restoring the finished tasks")?;
    }
    for chunk in waiting.chunks(1000) {
        let mut pipe = redis::pipe();
        for (t, tiles) in chunk {
            pipe.cmd("SADD")
                .arg(keys.edges(&task_id(t)))
                .arg(tiles)
                .ignore();
        }
        redis.pipe::<()>(&pipe, "restoring the waiting tasks' counters")?;
    }
    for chunk in partly_read.chunks(1000) {
        let mut pipe = redis::pipe();
        for (tile, readers) in chunk {
            pipe.cmd("SADD")
                .arg(keys.readers(tile))
                .arg(readers)
                .ignore();
        }
        redis.pipe::<()>(&pipe, "restoring the tiles' finished readers")?;
    }
    for chunk in dead_now.chunks(1000) {
        let ids: Vec<&String> = chunk.iter().map(|(_, id)| id).collect();
        redis.query::<()>(
            redis::cmd("SADD").arg(keys.gone()).arg(ids),
            "restoring the deleted tiles",
        )?;
    }
    if !undeleted.is_empty() {
        redis.query::<()>(
            redis::cmd("SADD").arg(keys.dead()).arg(&undeleted),
            "restoring the dead tiles",
        )?;
    }
    let finished = done.len() as u64 >= total;
    let record = RunRecord {
        id: run.to_string(),
        artifact,
        program: program.name.clone(),
        params: inst.params.clone(),
        block,
        store: store_url.to_string(),
        kernels,
        total,
        done: done.len() as u64,
        state: if finished {
            RunState::Done
        } else {
            RunState::Running
        },
        max_expiries,
        created_ms: manifest.created_ms,
        finished_ms: None,
        error: None,
        keep,
        // The peak before the resumption is lost with Redis.
        stored_bytes: i64::try_from(stored_bytes).unwrap_or(i64::MAX),
        peak_bytes: i64::try_from(stored_bytes).unwrap_or(i64::MAX),
        limits: manifest.limits,
    };
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
    let ready_ids: Vec<String> = ready.iter().map(task_id).collect();
    protocol::enqueue(redis, &keys, &ready_ids, "restoring the ready tasks")?;
    if !finished {
        protocol::announce(redis, run)?;
    }
    Ok(Resumed {
        done: done.len() as u64,
        total,
        ready: ready_ids.len() as u64,
        waiting: waiting.len() as u64,
    })
}
