//! `lpkc submit`: records a run in Redis and makes it ready for workers.
//!
//! In order: the inputs are opened and checked and the instance bound
//! exactly as `lpkc run` does ([`lpk_runtime::job::prepare`]); the instance is
//! counted (a run of more than [`MAX_TASKS`] tasks is refused before
//! anything is uploaded); the manifest and artifact go to the store; the
//! run record is written and the run's `uploading` key set; the roots
//! (tasks without parents, found by the parents plans in one pass) are put
//! into the ready stream; the run is added to the set workers poll, so no
//! worker sees a half-made run; then the input tiles some task reads are
//! uploaded to the store under the run's id as `.npy`, in the order of
//! their first reader, while workers start (one that misses an input tile
//! waits while `uploading` lives), and `uploading` is deleted.

use crate::conn::Redis;
use crate::error::{store_error, ClusterError};
use crate::ids::task_id;
use crate::protocol::{self, Keys};
use crate::record::{now_ms, Kernels, RunLimits, RunRecord, RunState};
use crate::tiles::{check_store_url, open_run_store};
use lpk_model::artifact::{self, Artifact, SourceInfo};
use lpk_model::program::{Instance, Program, Role};
use lpk_model::query::Engine;
use lpk_model::MatrixId;
use lpk_runtime::dense::InputSpec;
use lpk_runtime::exec::TileSource;
use lpk_runtime::job::{self, InputSource, Prepared};
use lpk_runtime::store::{BlobStore, ObjectStoreTiles, TileStore};
use std::collections::BTreeMap;
use std::ops::ControlFlow;

/// The largest run `submit` accepts, in tasks.
pub const MAX_TASKS: u64 = 1 << 26;

/// What to submit.
pub struct Submission<'a> {
    /// The program.
    pub program: &'a Program,
    /// The file it came from (for the artifact's source map).
    pub file: &'a str,
    /// Parameters given; the others are inferred from the input shapes.
    pub params: &'a [(String, i64)],
    /// The data of every input matrix, by matrix index.
    pub inputs: &'a BTreeMap<MatrixId, InputSpec>,
    /// Seed of generated inputs (as `lpkc run --seed`).
    pub seed: u64,
    /// The block size.
    pub block: usize,
    /// The tile store's URL.
    pub store: &'a str,
    /// The kernels.
    pub kernels: Kernels,
    /// Lease expiries allowed per task before the run fails.
    pub max_expiries: u32,
    /// Keep intermediate tiles after their last reader.
    pub keep_intermediates: bool,
    /// The run's limits.
    pub limits: RunLimits,
}

/// A submitted run.
#[derive(Debug)]
pub struct Submitted {
    /// The run id.
    pub run: String,
    /// Tasks in the instance.
    pub tasks: u64,
    /// Root tasks seeded.
    pub roots: u64,
    /// Input tiles uploaded.
    pub input_tiles: u64,
    /// Parameters inferred from the input shapes.
    pub inferred: Vec<(String, i64)>,
}

/// A fresh run id: the submission time and a random part, in hex.
pub fn new_run_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    format!("{:x}-{:08x}", now_ms() / 1000, h.finish() as u32)
}

/// Submits a run (see the module documentation); `note` receives progress
/// messages.
pub fn submit(
    redis: &mut Redis,
    s: &Submission<'_>,
    note: &mut dyn FnMut(&str),
) -> Result<Submitted, ClusterError> {
    if s.block == 0 {
        return Err(ClusterError::Refused("--block must be at least 1".into()));
    }
    check_store_url(s.store)?;
    let program = s.program;
    // The standard kernels' shape rules, whichever kernels run it (no-op
    // kernels measure the scheduler on the same instance). Kernels outside
    // them (a user's, which only its workers have) are not checked here:
    // each worker that has them checks them when it loads the run.
    let registry = lpk_runtime::kernels::Registry::standard();
    let prepared = job::prepare(program, &registry, s.params, s.inputs, s.seed, s.block)?;
    let inst = &prepared.instance;
    let total = count_tasks(inst, s)?;
    check_fan_out(inst)?;
    let run = new_run_id();
    let keys = Keys::new(&run);
    let artifact_bytes = encode_program(program, s.file)?;
    // Input tiles, unless the kernels read nothing: those some task reads,
    // in the order of their first reader in sequential order, so that
    // tasks find theirs uploaded. They are uploaded after the roots are
    // seeded, while the workers start (a worker that misses one waits
    // while the run's `uploading` key lives).
    let mut uploads = Uploads::default();
    let store = match s.kernels {
        Kernels::Standard => Some(open_run_store(s.store, &run)?),
        Kernels::Noop => None,
    };
    if let Some(store) = &store {
        uploads = input_tiles(s, &prepared)?;
        // The run's manifest and program beside its tiles (`lpkc resume`
        // reads them).
        save_manifest(store, s, &run, inst, total, &artifact_bytes)?;
    }
    let roots = roots(inst)?;
    let mut record = new_record(s, &run, inst, total, artifact_bytes, uploads.bytes);
    record.input_shapes = prepared
        .shapes
        .iter()
        .map(|(&m, &shape)| (program.matrix(m).name.clone(), shape))
        .collect();
    record.write(redis)?;
    let uploading = !uploads.jobs.is_empty() && total > 0;
    if uploading {
        renew_upload(redis, &keys)?;
    }
    protocol::create_queue(redis, &keys)?;
    note(&format!("seeding {} root tasks of {total}", roots.len()));
    protocol::enqueue(redis, &keys, &roots, "seeding the root tasks")?;
    if total > 0 {
        protocol::announce(redis, &run)?;
    }
    if let (Some(store), true) = (&store, uploading) {
        note(&format!(
            "uploading {} input tiles to {}",
            uploads.jobs.len(),
            store.describe()
        ));
        let source = InputSource::new(program, &prepared.inputs, s.block);
        let uploaded = upload(redis, &keys, store, program, &source, &uploads.jobs);
        end_upload(redis, &keys, uploaded)?;
    }
    Ok(Submitted {
        run,
        tasks: total,
        roots: roots.len() as u64,
        input_tiles: uploads.jobs.len() as u64,
        inferred: prepared.inferred,
    })
}

/// The instance's task count, refused past [`MAX_TASKS`] or the run's
/// `--max-tasks`.
fn count_tasks(inst: &Instance<'_>, s: &Submission<'_>) -> Result<u64, ClusterError> {
    let counts = inst
        .count_tasks(lpk_model::task::COUNT_BUDGET)
        .map_err(|e| ClusterError::Refused(format!("cannot count the run's tasks: {e}")))?;
    let total = counts.total();
    if total > MAX_TASKS {
        return Err(ClusterError::Refused(format!(
            "the run has {total} tasks; a distributed run takes at most {MAX_TASKS} (use a larger --block)"
        )));
    }
    if let Some(max) = s.limits.max_tasks.filter(|&m| total > m) {
        return Err(ClusterError::Refused(format!(
            "the run has {total} tasks, more than its --max-tasks {max}"
        )));
    }
    Ok(total)
}

/// The program's artifact, as the run record and the store keep it.
fn encode_program(program: &Program, file: &str) -> Result<Vec<u8>, ClusterError> {
    let art = Artifact {
        compiler: format!("lpk-cluster {}", env!("CARGO_PKG_VERSION")),
        source: SourceInfo::of_program(program, file, None),
        program: program.clone(),
        lint: None,
    };
    artifact::encode(&art)
        .map_err(|e| ClusterError::Refused(format!("cannot encode the program: {e}")))
}

/// The input tiles to upload.
#[derive(Default)]
struct Uploads {
    /// The tiles, in the order of their first reader.
    jobs: Vec<(MatrixId, Vec<i64>)>,
    /// Their bytes in the store.
    bytes: i64,
}

/// The input tiles some task reads, in the order of their first reader in
/// sequential order, and their bytes (refused past `--max-store-bytes`).
fn input_tiles(s: &Submission<'_>, prepared: &Prepared<'_>) -> Result<Uploads, ClusterError> {
    let program = s.program;
    let mut readers_engine = Engine::new(&prepared.instance);
    let mut found = FirstReaders::default();
    for (m, decl) in program.matrix_ids() {
        if decl.role != Role::Input {
            continue;
        }
        first_readers(s, prepared, &mut readers_engine, m, &mut found)?;
    }
    let input_bytes = found.bytes;
    if let Some(max) = s.limits.max_store_bytes {
        if input_bytes as u64 > max {
            return Err(ClusterError::Refused(format!(
                "the run's input tiles alone take {input_bytes} bytes in the store, more than \
                 its --max-store-bytes {max}"
            )));
        }
    }
    let mut firsts = found.firsts;
    firsts.sort_by(|a, b| program.sequential_cmp(&a.0, &b.0));
    Ok(Uploads {
        jobs: firsts.into_iter().map(|(_, m, idx)| (m, idx)).collect(),
        bytes: input_bytes,
    })
}

/// The input tiles with a reader found so far.
#[derive(Default)]
struct FirstReaders {
    /// Each tile with its first reader: (reader, matrix, index).
    firsts: Vec<(lpk_model::task::Task, MatrixId, Vec<i64>)>,
    /// Their bytes in the store.
    bytes: i64,
}

/// Adds the tiles of input matrix `m` that some task reads to `found`,
/// each with its first reader.
fn first_readers(
    s: &Submission<'_>,
    prepared: &Prepared<'_>,
    readers_engine: &mut Engine<'_, '_>,
    m: MatrixId,
    found: &mut FirstReaders,
) -> Result<(), ClusterError> {
    let program = s.program;
    let decl = program.matrix(m);
    let extents = prepared
        .instance
        .extents
        .get(m.index())
        .cloned()
        .unwrap_or_default();
    let shape = prepared.inputs.get(&m).map(|d| d.shape());
    let one_d = decl.extents.len() == 1;
    let mut failure = None;
    grid(&extents, &mut |idx| {
        let tile = lpk_model::task::TileRef {
            matrix: m,
            index: idx.to_vec(),
        };
        match readers_engine.readers(&tile) {
            Ok(r) => {
                let first = r.into_iter().min_by(|a, b| program.sequential_cmp(a, b));
                if let Some(first) = first {
                    if let Some((rows, cols)) = shape {
                        if let Ok((_, nr, _, nc)) =
                            lpk_runtime::dense::tile_rect(s.block, idx, rows, cols, one_d)
                        {
                            found.bytes += (nr * nc * 8) as i64;
                        }
                    }
                    found.firsts.push((first, m, idx.to_vec()));
                }
            }
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    });
    match failure {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// Writes the run's manifest and its program (`artifact`) beside its
/// tiles.
fn save_manifest(
    store: &ObjectStoreTiles,
    s: &Submission<'_>,
    run: &str,
    inst: &Instance<'_>,
    total: u64,
    artifact: &[u8],
) -> Result<(), ClusterError> {
    let manifest = crate::manifest::Manifest {
        run: run.to_string(),
        program: s.program.name.clone(),
        params: s
            .program
            .params
            .iter()
            .zip(&inst.params)
            .map(|(p, v)| (p.name.clone(), *v))
            .collect(),
        block: s.block,
        kernels: s.kernels,
        tasks: total,
        max_expiries: s.max_expiries,
        limits: s.limits,
        keep_intermediates: s.keep_intermediates,
        created_ms: now_ms(),
    };
    let put = |key: &str, bytes: Vec<u8>| {
        store
            .put_bytes(key, bytes)
            .map_err(|e| store_error(store, e))
    };
    put("manifest.json", manifest.to_json().into_bytes())?;
    put("program.lpka", artifact.to_vec())
}

/// The ids of the root tasks, in sequential order.
fn roots(inst: &Instance<'_>) -> Result<Vec<String>, ClusterError> {
    let mut engine = Engine::new(inst);
    let mut roots: Vec<String> = Vec::new();
    engine.for_each_task_rooted(&mut |t, root| {
        if root {
            roots.push(task_id(t));
        }
        ControlFlow::Continue(())
    })?;
    Ok(roots)
}

/// The record of a new run of `total` tasks, whose input tiles take
/// `input_bytes` in the store.
fn new_record(
    s: &Submission<'_>,
    run: &str,
    inst: &Instance<'_>,
    total: u64,
    artifact: Vec<u8>,
    input_bytes: i64,
) -> RunRecord {
    RunRecord {
        id: run.to_string(),
        artifact,
        program: s.program.name.clone(),
        params: inst.params.clone(),
        block: s.block,
        store: s.store.to_string(),
        kernels: s.kernels,
        total,
        done: 0,
        state: if total == 0 {
            RunState::Done
        } else {
            RunState::Running
        },
        max_expiries: s.max_expiries,
        created_ms: now_ms(),
        finished_ms: None,
        error: None,
        keep: s.keep_intermediates,
        stored_bytes: input_bytes,
        peak_bytes: input_bytes,
        limits: s.limits,
        input_shapes: Vec::new(),
    }
}

/// Ends the upload of the input tiles ([`upload`]) that gave `uploaded`:
/// fails the run if it failed (the workers stop taking its tasks; the
/// error names the tile), then deletes the `uploading` key.
fn end_upload(
    redis: &mut Redis,
    keys: &Keys,
    uploaded: Result<(), ClusterError>,
) -> Result<(), ClusterError> {
    if let Err(e) = &uploaded {
        // The workers stop taking its tasks; the error names the tile.
        let _ = redis.script::<i64>(
            &crate::conn::Script::new(protocol::FAIL),
            &[&keys.prefix, "", &e.to_string(), &now_ms().to_string()],
            "failing the run",
        );
    }
    let ended = redis.query::<()>(redis::cmd("DEL").arg(keys.uploading()), "ending the upload");
    uploaded.and(ended)
}

/// Refuses a run whose statements' first tasks have more children than a
/// worker completes ([`crate::worker::MAX_CHILDREN`]): one tile read by
/// every column block of a very wide matrix, say. Later tasks of a
/// statement may have more; the worker fails the run naming such a task.
fn check_fan_out(inst: &Instance<'_>) -> Result<(), ClusterError> {
    let limit = crate::worker::MAX_CHILDREN;
    let mut engine = Engine::new(inst);
    for (id, _) in inst.program.statement_ids() {
        let mut first = None;
        inst.for_each_task_of(Some(id), &mut |t| {
            first = Some(t.clone());
            ControlFlow::Break(())
        })
        .map_err(|e| ClusterError::Refused(format!("cannot walk the run's tasks: {e}")))?;
        let Some(task) = first else { continue };
        let mut n = 0usize;
        engine
            .try_for_each_child(&task, &mut |_, _, _, _| {
                n += 1;
                n <= limit
            })
            .map_err(|e| ClusterError::Refused(format!("cannot count children: {e}")))?;
        if n > limit {
            return Err(ClusterError::Refused(format!(
                "task {} has more than {limit} children; a distributed run takes at most that \
                 many per task (use a larger --block)",
                inst.program.task_name(&task)
            )));
        }
    }
    Ok(())
}

/// Sets (or renews) the run's `uploading` key for [`protocol::UPLOAD_TTL_MS`].
fn renew_upload(redis: &mut Redis, keys: &Keys) -> Result<(), ClusterError> {
    redis.query(
        redis::cmd("SET")
            .arg(keys.uploading())
            .arg(1)
            .arg("PX")
            .arg(protocol::UPLOAD_TTL_MS),
        "marking the upload of the inputs",
    )
}

/// Uploads the input tiles `jobs`, in order, on four threads, renewing
/// the run's `uploading` key every second meanwhile.
fn upload(
    redis: &mut Redis,
    keys: &Keys,
    store: &ObjectStoreTiles,
    program: &Program,
    source: &InputSource<'_, '_>,
    jobs: &[(MatrixId, Vec<i64>)],
) -> Result<(), ClusterError> {
    let failed = std::sync::Mutex::new(None);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let finished = std::sync::atomic::AtomicUsize::new(0);
    const THREADS: usize = 4;
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((m, idx)) = jobs.get(k) else { break };
                    let name = &program.matrix(*m).name;
                    let r = source
                        .input(*m, idx)
                        .map_err(|e| {
                            ClusterError::Refused(format!("input tile {name}{idx:?}: {e}"))
                        })
                        .and_then(|tile| {
                            store
                                .put(name, idx, tile)
                                .map_err(|e| store_error(store, e))
                        });
                    if let Err(e) = r {
                        let mut f = failed.lock().unwrap_or_else(|e| e.into_inner());
                        f.get_or_insert(e);
                        // The other threads stop at their next tile.
                        next.store(jobs.len(), std::sync::atomic::Ordering::Relaxed);
                        break;
                    }
                }
                finished.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            });
        }
        // Renew the key while the threads work (a renewal that fails is
        // retried at the next second; the key outlives a few misses).
        let mut renewed = std::time::Instant::now();
        while finished.load(std::sync::atomic::Ordering::Relaxed) < THREADS {
            std::thread::sleep(std::time::Duration::from_millis(5));
            if renewed.elapsed() >= std::time::Duration::from_secs(1) {
                renewed = std::time::Instant::now();
                let _ = renew_upload(redis, keys);
            }
        }
    });
    match failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Calls `f` for every index of a grid with these extents (row-major).
pub fn grid(extents: &[i64], f: &mut dyn FnMut(&[i64])) {
    if extents.iter().any(|&e| e <= 0) {
        return;
    }
    let mut idx = vec![0i64; extents.len()];
    loop {
        f(&idx);
        let mut d = extents.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < extents[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}
