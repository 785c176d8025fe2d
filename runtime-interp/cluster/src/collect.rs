//! `lpkc collect`: a finished run's outputs, from its store into a
//! directory, exactly as `lpkc run --output-dir` writes them: each output
//! matrix that forms a grid of tiles as `DIR/M.npy`, any other as its
//! tiles with an `index.json`, and `DIR/_SUCCESS` last. It also deletes the
//! dead tiles that workers killed at the wrong moment left in the store.

use crate::conn::Redis;
use crate::error::ClusterError;
use crate::record::{Kernels, RunRecord, RunState};
use crate::submit::grid;
use crate::tiles::open_run_store;
use model::program::Role;
use runtime::job::MARKER;
use runtime::kernels::Tile;
use runtime::npy;
use runtime::outputs::{self, Form, OutputRequest, Written};

/// The tiles one reading thread fetched, with their indices.
type Fetched = Vec<(Vec<i64>, Arc<Tile>)>;
use runtime::store::TileStore;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Writes run `run`'s outputs into `dir`.
pub fn collect(redis: &mut Redis, run: &str, dir: &Path) -> Result<Vec<Written>, ClusterError> {
    let record = RunRecord::read(redis, run)?;
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
    let program = record.load_program()?;
    let inst = program
        .bind_values(record.params.clone())
        .map_err(|source| ClusterError::Bind {
            run: run.to_string(),
            source: Box::new(source),
        })?;
    let store = open_run_store(&record.store, run)?;
    // Dead tiles a killed worker did not get to delete.
    let keys = crate::protocol::Keys::new(run);
    let dead: Vec<String> = redis.query(
        redis::cmd("SMEMBERS").arg(keys.dead()),
        "reading the dead tiles",
    )?;
    for id in &dead {
        let tile = crate::ids::parse_tile(id).map_err(|source| ClusterError::BadId {
            run: run.to_string(),
            source,
        })?;
        if let Some(decl) = program.get_matrix(tile.matrix) {
            store
                .delete(&decl.name, &tile.index)
                .map_err(|source| ClusterError::Store {
                    store: store.describe(),
                    source: Box::new(source),
                })?;
        }
        redis.query::<()>(
            redis::cmd("SREM").arg(keys.dead()).arg(id),
            "forgetting a deleted tile",
        )?;
    }
    let io = |path: &Path, e: &dyn std::fmt::Display| ClusterError::Output {
        path: path.display().to_string(),
        why: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, &e))?;
    let marker = dir.join(MARKER);
    if marker.exists() {
        std::fs::remove_file(&marker).map_err(|e| io(&marker, &e))?;
    }
    let mut written = Vec::new();
    for (m, decl) in program.matrices.iter().enumerate() {
        if decl.role != Role::Output {
            continue;
        }
        let extents = inst.extents.get(m).cloned().unwrap_or_default();
        let mut indices: Vec<Vec<i64>> = Vec::new();
        grid(&extents, &mut |idx| indices.push(idx.to_vec()));
        // Read the tiles on a few threads: a store's latency, not its
        // bandwidth, bounds one reader.
        let threads = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(2, 8)
            .min(indices.len().max(1));
        let chunk = indices.len().div_ceil(threads).max(1);
        let store_ref = &store;
        let name = decl.name.as_str();
        let fetched: Vec<Result<Fetched, ClusterError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = indices
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        let mut got = Vec::new();
                        for idx in part {
                            match store_ref.get(name, idx) {
                                Ok(Some(t)) => got.push((idx.clone(), t)),
                                Ok(None) => {}
                                Err(source) => {
                                    return Err(ClusterError::Store {
                                        store: store_ref.describe(),
                                        source: Box::new(source),
                                    })
                                }
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
        let mut tiles: BTreeMap<Vec<i64>, Arc<Tile>> = BTreeMap::new();
        for part in fetched {
            tiles.extend(part?);
        }
        let request = OutputRequest::whole(&decl.name);
        match outputs::assemble(&request, &extents, &tiles, record.block) {
            Ok(t) => {
                let path = dir.join(format!("{}.npy", request.file_stem()));
                npy::write_file(&path, &t).map_err(|e| io(&path, &e))?;
                written.push(Written {
                    request,
                    path,
                    form: Form::Dense {
                        rows: t.nrows(),
                        cols: t.ncols(),
                    },
                });
            }
            Err(why) => {
                let (path, count) =
                    outputs::write_tiles(dir, &request, &tiles).map_err(|(p, e)| io(&p, &e))?;
                written.push(Written {
                    request,
                    path,
                    form: Form::Tiles {
                        count,
                        why: Some(why),
                    },
                });
            }
        }
    }
    std::fs::write(&marker, "complete\n").map_err(|e| io(&marker, &e))?;
    Ok(written)
}
