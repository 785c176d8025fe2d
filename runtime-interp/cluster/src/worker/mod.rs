//! `lpkc worker`: a stateless worker for every run in one Redis.
//!
//! Each of its threads loops: look at the runs in `lpk:runs`; take over
//! tasks whose lease expired ([`crate::protocol::RECLAIM`], at most every
//! half lease); read new tasks from the runs' streams (`XREADGROUP`,
//! blocking for half a second); run each task — read its tiles (from the
//! worker's cache, else the run's store), call its kernel, write its
//! outputs, list its children and their in-degrees from the plans — and
//! complete it ([`crate::protocol::COMPLETE`], pipelined for a batch). A
//! separate thread renews the leases of the tasks the worker holds every
//! third of the lease. The worker exits after `idle` without work.
//!
//! What can go wrong, and what happens:
//! - the worker dies: its tasks' leases expire and other workers take them
//!   over; a task taken over more than the run's `max_expiries` times
//!   fails the run naming it;
//! - it dies after writing a task's outputs but before completing it: the
//!   task runs again and writes the same bits (kernels are deterministic),
//!   and completing is idempotent;
//! - a kernel fails (a non-SPD tile, a zero pivot): the run fails with the
//!   task and the reason, and every worker stops taking its tasks;
//! - Redis goes away: every thread backs off and reconnects; what it
//!   computed meanwhile is completed once Redis is back (completing is
//!   idempotent, so a completion sent twice counts once); after `idle`
//!   without reaching it, the worker exits with an error;
//! - a tile store error: retried three times, then the run fails naming
//!   the task and the tile.

use crate::conn::{Redis, Script};
use crate::error::ClusterError;
use crate::faults::{Dice, Faults, EXIT_AFTER_WRITE, EXIT_BEFORE_WRITE};
use crate::ids::{parse_task, task_id, tile_id};
use crate::markers::{marker_line, DoneLog};
use crate::protocol::{Keys, COMPLETE, FAIL, GROUP, RECLAIM, RENEW, RUNS, UPLOAD_TTL_MS};
use crate::record::{now_ms, Kernels, RunRecord, RunState};
use crate::reply::{array, int, text};
use crate::tiles::{open_run_store, TileCache};
use crate::trace::TraceEvent;
use model::program::{Instance, Program};
use model::query::Engine;
use model::task::Task;
use redis::Value;
use runtime::exec::call_kernel;
use runtime::kernels::{Kernel, Registry, Tile};
use runtime::store::{ObjectStoreTiles, TileStore};
use runtime::timeline::now_us;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How a worker runs.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// The Redis URL.
    pub redis: String,
    /// Threads taking tasks.
    pub threads: usize,
    /// Exit after this long without work.
    pub idle: Duration,
    /// The lease: a task this worker stops renewing is taken over by
    /// others after this long.
    pub lease: Duration,
    /// Faults to inject (testing aid).
    pub faults: Faults,
    /// Bytes of tiles to cache.
    pub cache_bytes: u64,
    /// The worker's name in Redis (its threads are `NAME-0`, `NAME-1`, ...).
    pub name: String,
}

impl WorkerConfig {
    /// A configuration with the defaults of `lpkc worker`.
    pub fn new(redis: &str) -> WorkerConfig {
        WorkerConfig {
            redis: redis.to_string(),
            threads: 1,
            idle: Duration::from_secs(60),
            lease: Duration::from_secs(30),
            faults: Faults::default(),
            cache_bytes: 1 << 30,
            name: default_name(),
        }
    }
}

/// `HOST-PID`.
pub fn default_name() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "worker".to_string());
    format!("{host}-{}", std::process::id())
}

/// What a worker did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkerReport {
    /// Tasks it ran and completed.
    pub tasks: u64,
    /// Of those, tasks it took over after another worker's lease expired.
    pub taken_over: u64,
    /// Completions that found the task already done (it ran twice).
    pub duplicates: u64,
    /// Runs it failed (a kernel error, a task that kept losing its lease).
    pub failed_runs: u64,
    /// Redis round trips.
    pub round_trips: u64,
}

/// A run as a worker holds it.
struct RunCtx {
    id: Arc<str>,
    keys: Keys,
    program: Program,
    params: Vec<i64>,
    kernels: Vec<Arc<dyn Kernel>>,
    noop: bool,
    store: Option<ObjectStoreTiles>,
    max_expiries: u32,
    /// The block size.
    block: usize,
    /// Keep intermediate tiles (else a dead one is deleted by its last reader).
    keep: bool,
    /// Where this process records the tasks it finished.
    done_log: DoneLog,
}

/// Tasks a worker holds: run → entry id → (consumer, renew?).
type Held = HashMap<Arc<str>, HashMap<String, (String, bool)>>;

struct Shared<'a> {
    cfg: &'a WorkerConfig,
    runs: Mutex<HashMap<String, Option<Arc<RunCtx>>>>,
    cache: TileCache,
    held: Mutex<Held>,
    last_work: Mutex<Instant>,
    stop: AtomicBool,
    tasks: AtomicU64,
    taken_over: AtomicU64,
    duplicates: AtomicU64,
    failed_runs: AtomicU64,
    round_trips: AtomicU64,
    /// Dead tiles deleted from the store, to remove from their run's
    /// `dead` set (key, tile id) in the next completion's round trip.
    forget: Mutex<Vec<(String, String)>>,
    error: Mutex<Option<ClusterError>>,
    log: &'a (dyn Fn(&str) + Sync),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs a worker until it has been idle for `cfg.idle`; `log` receives
/// one line per notable event.
pub fn work(cfg: &WorkerConfig, log: &(dyn Fn(&str) + Sync)) -> Result<WorkerReport, ClusterError> {
    // Fail at once on a bad URL or a Redis that is not there.
    drop(Redis::open(&cfg.redis)?);
    let shared = Shared {
        cfg,
        runs: Mutex::new(HashMap::new()),
        cache: TileCache::new(cfg.cache_bytes),
        held: Mutex::new(HashMap::new()),
        last_work: Mutex::new(Instant::now()),
        stop: AtomicBool::new(false),
        tasks: AtomicU64::new(0),
        taken_over: AtomicU64::new(0),
        duplicates: AtomicU64::new(0),
        failed_runs: AtomicU64::new(0),
        round_trips: AtomicU64::new(0),
        forget: Mutex::new(Vec::new()),
        error: Mutex::new(None),
        log,
    };
    std::thread::scope(|s| {
        let sh = &shared;
        s.spawn(move || renew_loop(sh));
        let threads: Vec<_> = (0..cfg.threads.max(1))
            .map(|k| s.spawn(move || task_loop(sh, k)))
            .collect();
        for t in threads {
            let _ = t.join();
        }
        shared.stop.store(true, Ordering::Relaxed);
    });
    if let Some(e) = lock(&shared.error).take() {
        return Err(e);
    }
    Ok(WorkerReport {
        tasks: shared.tasks.load(Ordering::Relaxed),
        taken_over: shared.taken_over.load(Ordering::Relaxed),
        duplicates: shared.duplicates.load(Ordering::Relaxed),
        failed_runs: shared.failed_runs.load(Ordering::Relaxed),
        round_trips: shared.round_trips.load(Ordering::Relaxed),
    })
}

/// Sleeps in small steps until `d` passed or the worker stops.
fn nap(sh: &Shared<'_>, d: Duration) {
    let until = Instant::now() + d;
    while !sh.stop.load(Ordering::Relaxed) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

fn idle_for(sh: &Shared<'_>) -> Duration {
    lock(&sh.last_work).elapsed()
}

fn worked(sh: &Shared<'_>) {
    *lock(&sh.last_work) = Instant::now();
}

/// Renews the leases of held tasks every third of the lease.
fn renew_loop(sh: &Shared<'_>) {
    let renew = Script::new(RENEW);
    let mut redis: Option<Redis> = None;
    let period = (sh.cfg.lease / 3).max(Duration::from_millis(50));
    while !sh.stop.load(Ordering::Relaxed) {
        nap(sh, period);
        let batches: Vec<(Arc<str>, String, Vec<String>)> = {
            let held = lock(&sh.held);
            let mut out: HashMap<(Arc<str>, String), Vec<String>> = HashMap::new();
            for (run, entries) in held.iter() {
                for (id, (consumer, keep)) in entries {
                    if *keep {
                        out.entry((run.clone(), consumer.clone()))
                            .or_default()
                            .push(id.clone());
                    }
                }
            }
            out.into_iter().map(|((r, c), ids)| (r, c, ids)).collect()
        };
        if batches.is_empty() {
            continue;
        }
        if redis.is_none() {
            redis = Redis::open(&sh.cfg.redis).ok();
        }
        let Some(r) = redis.as_mut() else { continue };
        let mut pipe = redis::pipe();
        for (run, consumer, ids) in &batches {
            let prefix = Keys::new(run).prefix;
            let mut args: Vec<&str> = vec![&prefix, consumer];
            args.extend(ids.iter().map(String::as_str));
            renew.add_to(&mut pipe, &args);
        }
        if r.scripts::<Vec<Vec<String>>>(&pipe, &[&renew], "renewing leases")
            .is_err()
        {
            redis = None;
        }
    }
}

/// One entry of a run's stream, as read or taken over.
struct Entry {
    id: String,
    task: String,
    deliveries: u64,
}

/// One task-taking thread.
fn task_loop(sh: &Shared<'_>, k: usize) {
    let consumer = format!("{}-{k}", sh.cfg.name);
    let complete = Script::new(COMPLETE);
    let fail = Script::new(FAIL);
    let reclaim = Script::new(RECLAIM);
    let scripts = Scripts {
        complete: &complete,
        fail: &fail,
    };
    let mut dice = Dice::new();
    let mut redis: Option<Redis> = None;
    let mut down_since: Option<Instant> = None;
    let mut active: Vec<Arc<RunCtx>> = Vec::new();
    let mut refreshed: Option<Instant> = None;
    let mut reclaimed: Option<Instant> = None;
    // Tasks per read: more for tiny tasks, one for real ones.
    let mut count: usize = 1;
    while !sh.stop.load(Ordering::Relaxed) {
        if idle_for(sh) >= sh.cfg.idle {
            if let Some(since) = down_since {
                let mut e = lock(&sh.error);
                e.get_or_insert(ClusterError::Refused(format!(
                    "Redis at {} unreachable for {:.0} s",
                    crate::conn::redacted(&sh.cfg.redis),
                    since.elapsed().as_secs_f64()
                )));
            }
            sh.stop.store(true, Ordering::Relaxed);
            break;
        }
        let r = match redis.as_mut() {
            Some(r) => r,
            None => match Redis::open(&sh.cfg.redis) {
                Ok(r) => {
                    if down_since.take().is_some() {
                        (sh.log)(&format!("{consumer}: Redis is back"));
                    }
                    redis.insert(r)
                }
                Err(e) => {
                    let since = *down_since.get_or_insert_with(|| {
                        (sh.log)(&format!("{consumer}: {e}; retrying"));
                        Instant::now()
                    });
                    let wait = since.elapsed().as_millis().clamp(100, 2000) as u64;
                    nap(sh, Duration::from_millis(wait));
                    continue;
                }
            },
        };
        let step = (|| -> Result<(), ClusterError> {
            if refreshed.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) || active.is_empty()
            {
                active = active_runs(sh, r)?;
                refreshed = Some(Instant::now());
                sh.round_trips.fetch_add(1, Ordering::Relaxed);
            }
            if active.is_empty() {
                // No run yet: look again soon. A worker that just started
                // or just worked looks every 2 ms (it was likely started
                // for a run being submitted), backing off to every 50 ms
                // after half a second without work.
                nap(
                    sh,
                    (idle_for(sh) / 10).clamp(Duration::from_millis(2), Duration::from_millis(50)),
                );
                return Ok(());
            }
            if reclaimed.is_none_or(|t| t.elapsed() >= sh.cfg.lease / 2) {
                reclaimed = Some(Instant::now());
                for ctx in &active {
                    let entries = take_over(sh, r, &reclaim, ctx, &consumer, count.max(4))?;
                    if !entries.is_empty() {
                        sh.taken_over
                            .fetch_add(entries.len() as u64, Ordering::Relaxed);
                        (sh.log)(&format!(
                            "{consumer}: took over {} task(s) of run {} whose lease expired",
                            entries.len(),
                            ctx.id
                        ));
                        run_chain(
                            sh, r, &scripts, ctx, &consumer, entries, true, &mut dice, &mut count,
                        )?;
                    }
                }
            }
            let read = read_new(sh, r, &mut active, &consumer, count)?;
            for (ctx, entries) in read {
                run_chain(
                    sh, r, &scripts, &ctx, &consumer, entries, false, &mut dice, &mut count,
                )?;
            }
            Ok(())
        })();
        match step {
            Ok(()) => {}
            Err(e @ ClusterError::Redis { .. }) => {
                (sh.log)(&format!("{consumer}: {e}; reconnecting"));
                redis = None;
                down_since.get_or_insert_with(Instant::now);
                nap(sh, Duration::from_millis(200));
            }
            Err(e) => {
                (sh.log)(&format!("{consumer}: {e}"));
                nap(sh, Duration::from_millis(200));
            }
        }
    }
}

/// The runs to work on: those in `lpk:runs` whose record this worker
/// reads (a run it cannot read is reported once and skipped).
fn active_runs(sh: &Shared<'_>, r: &mut Redis) -> Result<Vec<Arc<RunCtx>>, ClusterError> {
    let ids: Vec<String> = r.query(redis::cmd("SMEMBERS").arg(RUNS), "listing runs")?;
    // Runs that finished: forget them and their cached tiles.
    let gone: Vec<String> = lock(&sh.runs)
        .keys()
        .filter(|id| !ids.contains(id))
        .cloned()
        .collect();
    for id in gone {
        lock(&sh.runs).remove(&id);
        sh.cache.forget_run(&id);
    }
    let mut out = Vec::new();
    for id in ids {
        let known = lock(&sh.runs).get(&id).cloned();
        let ctx = match known {
            Some(ctx) => ctx,
            None => {
                let ctx = match load_run(r, &id, &sh.cfg.name) {
                    Ok(ctx) => Some(Arc::new(ctx)),
                    Err(e @ ClusterError::Redis { .. }) => return Err(e),
                    Err(e) => {
                        refuse_run(sh, r, &id, &e)?;
                        None
                    }
                };
                lock(&sh.runs).insert(id.clone(), ctx.clone());
                ctx
            }
        };
        if let Some(ctx) = ctx {
            out.push(ctx);
        }
    }
    Ok(out)
}

/// A run this worker cannot load. Its record, artifact or parameters are
/// wrong for every worker, so the run fails with the error (once; the
/// first worker's error wins) and `status` and `submit --wait` say why. A
/// record of another protocol version, a run id that is none and a store
/// this worker cannot open only make this worker skip it: another worker
/// may serve it.
fn refuse_run(
    sh: &Shared<'_>,
    r: &mut Redis,
    id: &str,
    e: &ClusterError,
) -> Result<(), ClusterError> {
    let shown: String = id.chars().take(80).collect();
    (sh.log)(&format!("skipping run {shown}: {e}"));
    let for_every_worker = match e {
        ClusterError::BadRecord { field, .. } => *field != "protocol",
        ClusterError::Artifact { .. } | ClusterError::Bind { .. } | ClusterError::Refused(_) => {
            true
        }
        _ => false,
    };
    if !for_every_worker {
        return Ok(());
    }
    let now = now_ms().to_string();
    let message = e.to_string();
    sh.round_trips.fetch_add(1, Ordering::Relaxed);
    let first: i64 = r.script(
        &Script::new(FAIL),
        &[&Keys::new(id).prefix, "", &message, &now],
        "failing the run",
    )?;
    if first == 1 {
        sh.failed_runs.fetch_add(1, Ordering::Relaxed);
        (sh.log)(&format!("run {id} failed: {message}"));
    }
    Ok(())
}

fn load_run(r: &mut Redis, id: &str, worker: &str) -> Result<RunCtx, ClusterError> {
    let rec = RunRecord::read(r, id)?;
    let program = rec.load_program()?;
    // Check the binding once; each batch binds again (cheap).
    let inst = program
        .bind_values(rec.params.clone())
        .map_err(|source| ClusterError::Bind {
            run: id.to_string(),
            source: Box::new(source),
        })?;
    // Nothing in Redis is trusted: parameters raised after submission
    // would make tasks (and tiles) the submitter never counted.
    let counted = inst
        .count_tasks(model::task::COUNT_BUDGET)
        .map_err(|e| ClusterError::Refused(format!("run {id}: cannot count its tasks: {e}")))?
        .total();
    if counted != rec.total {
        return Err(ClusterError::Refused(format!(
            "run {id}: its parameters make {counted} tasks, but it was submitted with {}; \
             its record was changed in Redis",
            rec.total
        )));
    }
    if let Some(max) = rec.limits.max_tasks.filter(|&m| counted > m) {
        return Err(ClusterError::Refused(format!(
            "run {id}: {counted} tasks, more than its --max-tasks {max}"
        )));
    }
    let registry = match rec.kernels {
        Kernels::Standard => Registry::standard(),
        Kernels::Noop => runtime::exec::noop_registry(&program),
    };
    let kernels = runtime::exec::resolve_kernels(&program, &registry)?;
    let store = match rec.kernels {
        Kernels::Standard => Some(open_run_store(&rec.store, id)?),
        Kernels::Noop => None,
    };
    Ok(RunCtx {
        id: Arc::from(id),
        keys: Keys::new(id),
        program,
        params: rec.params,
        kernels,
        noop: rec.kernels == Kernels::Noop,
        store,
        max_expiries: rec.max_expiries,
        block: rec.block,
        keep: rec.keep,
        done_log: DoneLog::new(worker),
    })
}

/// Takes over entries of a run whose lease expired.
fn take_over(
    sh: &Shared<'_>,
    r: &mut Redis,
    reclaim: &Script,
    ctx: &RunCtx,
    consumer: &str,
    count: usize,
) -> Result<Vec<Entry>, ClusterError> {
    let lease_ms = sh.cfg.lease.as_millis().max(1).to_string();
    let count = count.to_string();
    sh.round_trips.fetch_add(1, Ordering::Relaxed);
    let got: Result<Value, ClusterError> = r.script(
        reclaim,
        &[&ctx.keys.prefix, consumer, &lease_ms, &count],
        "taking over expired leases",
    );
    let got = match got {
        Ok(v) => v,
        // The run was deleted meanwhile: nothing to take over.
        Err(ClusterError::Redis { source, .. }) if source.code() == Some("NOGROUP") => {
            return Ok(Vec::new())
        }
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for item in array(&got) {
        let parts = array(item);
        if let (Some(id), Some(task), Some(n)) = (
            parts.first().and_then(text),
            parts.get(1).and_then(text),
            parts.get(2).and_then(int),
        ) {
            out.push(Entry {
                id,
                task,
                deliveries: n.max(1) as u64,
            });
        }
    }
    Ok(out)
}

/// Takes the runs whose ready queue has no consumer group any more (the
/// queue or the group was deleted) out of `active`, and marks them to be
/// skipped (as a run that does not load is) until they leave the run set.
fn drop_queueless(
    sh: &Shared<'_>,
    r: &mut Redis,
    active: &mut Vec<Arc<RunCtx>>,
) -> Result<(), ClusterError> {
    let mut kept = Vec::with_capacity(active.len());
    for ctx in active.drain(..) {
        sh.round_trips.fetch_add(1, Ordering::Relaxed);
        let groups: Result<Value, ClusterError> = r.query(
            redis::cmd("XINFO").arg("GROUPS").arg(ctx.keys.queue()),
            "looking for a run's queue",
        );
        let has_group = match groups {
            Ok(v) => array(&v).iter().any(|g| {
                let fields = array(g);
                fields.chunks(2).any(|kv| {
                    kv.first().and_then(text).as_deref() == Some("name")
                        && kv.get(1).and_then(text).as_deref() == Some(GROUP)
                })
            }),
            Err(ClusterError::Redis { source, .. })
                if source.kind() != redis::ErrorKind::IoError =>
            {
                false
            }
            Err(e) => return Err(e),
        };
        if has_group {
            kept.push(ctx);
        } else {
            (sh.log)(&format!(
                "skipping run {}: its ready queue is gone (deleted from Redis)",
                ctx.id
            ));
            lock(&sh.runs).insert(ctx.id.to_string(), None);
        }
    }
    *active = kept;
    Ok(())
}

/// Entries read from one run's stream.
type RunEntries = (Arc<RunCtx>, Vec<Entry>);

/// Reads new entries from every active run's stream.
fn read_new(
    sh: &Shared<'_>,
    r: &mut Redis,
    active: &mut Vec<Arc<RunCtx>>,
    consumer: &str,
    count: usize,
) -> Result<Vec<RunEntries>, ClusterError> {
    let mut cmd = redis::cmd("XREADGROUP");
    cmd.arg("GROUP")
        .arg(GROUP)
        .arg(consumer)
        .arg("COUNT")
        .arg(count)
        .arg("BLOCK")
        .arg(500)
        .arg("STREAMS");
    for ctx in active.iter() {
        cmd.arg(ctx.keys.queue());
    }
    for _ in active.iter() {
        cmd.arg(">");
    }
    sh.round_trips.fetch_add(1, Ordering::Relaxed);
    let reply: Value = match r.query(&cmd, "reading ready tasks") {
        Ok(v) => v,
        Err(ClusterError::Redis { source, .. }) if source.code() == Some("NOGROUP") => {
            // A run's queue or its group vanished (deleted by someone):
            // skip that run from now on, rather than ask again at once.
            drop_queueless(sh, r, active)?;
            return Ok(Vec::new());
        }
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for ctx in active.iter() {
        let list = stream_entries(&reply, &ctx.keys.queue());
        if !list.is_empty() {
            out.push((ctx.clone(), list));
        }
    }
    Ok(out)
}

/// The entries of stream `key` in an `XREADGROUP` reply.
fn stream_entries(reply: &Value, key: &str) -> Vec<Entry> {
    let mut list = Vec::new();
    for (k, entries) in streams(reply) {
        if k.as_deref() != Some(key) {
            continue;
        }
        for e in entries.map(array).unwrap_or(&[]) {
            let parts = array(e);
            let id = parts.first().and_then(text);
            let fields = parts.get(1).map(array).unwrap_or(&[]);
            let task = fields.get(1).and_then(text);
            if let Some(id) = id {
                list.push(Entry {
                    id,
                    task: task.unwrap_or_default(),
                    deliveries: 1,
                });
            }
        }
    }
    list
}

/// The (key, entries) pairs of an `XREADGROUP` reply (RESP2 arrays or a
/// RESP3 map).
fn streams(v: &Value) -> Vec<(Option<String>, Option<&Value>)> {
    match v {
        Value::Map(pairs) => pairs.iter().map(|(k, e)| (text(k), Some(e))).collect(),
        Value::Array(items) => items
            .iter()
            .map(|s| {
                let p = array(s);
                (p.first().and_then(text), p.get(1))
            })
            .collect(),
        _ => Vec::new(),
    }
}

struct Scripts<'a> {
    complete: &'a Script,
    fail: &'a Script,
}

/// Why a task could not be run.
enum TaskFailure {
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
struct Ran {
    args: Vec<String>,
    read: u64,
    written: u64,
}

/// Runs a batch of entries of one run and completes them in one pipeline,
/// then the entries that completion read in the same round trip
/// ([`flush`]), and so on until one reads none. While a batch runs, its
/// entries are in `held` (their leases renewed).
#[allow(clippy::too_many_arguments)]
fn run_chain(
    sh: &Shared<'_>,
    r: &mut Redis,
    scripts: &Scripts<'_>,
    ctx: &Arc<RunCtx>,
    consumer: &str,
    mut entries: Vec<Entry>,
    mut taken_over: bool,
    dice: &mut Dice,
    count: &mut usize,
) -> Result<(), ClusterError> {
    while !entries.is_empty() {
        {
            let mut held = lock(&sh.held);
            let mine = held.entry(ctx.id.clone()).or_default();
            for e in &entries {
                mine.insert(e.id.clone(), (consumer.to_string(), true));
            }
        }
        let result = run_held(
            sh, r, scripts, ctx, consumer, &entries, taken_over, dice, count,
        );
        {
            let mut held = lock(&sh.held);
            if let Some(mine) = held.get_mut(&ctx.id) {
                for e in &entries {
                    mine.remove(&e.id);
                }
                if mine.is_empty() {
                    held.remove(&ctx.id);
                }
            }
        }
        entries = result?;
        taken_over = false;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run_held(
    sh: &Shared<'_>,
    r: &mut Redis,
    scripts: &Scripts<'_>,
    ctx: &Arc<RunCtx>,
    consumer: &str,
    entries: &[Entry],
    taken_over: bool,
    dice: &mut Dice,
    count: &mut usize,
) -> Result<Vec<Entry>, ClusterError> {
    let inst = match ctx.program.bind_values(ctx.params.clone()) {
        Ok(i) => i,
        Err(e) => {
            return fail_run(
                sh,
                r,
                scripts,
                ctx,
                "",
                &format!("the run's parameters make no instance: {e}"),
            )
            .map(|()| Vec::new());
        }
    };
    let mut engine = Engine::new(&inst);
    let mut completions: Vec<Completion> = Vec::with_capacity(entries.len());
    let started = Instant::now();
    for e in entries {
        if sh.stop.load(Ordering::Relaxed) {
            break;
        }
        if taken_over && e.deliveries > u64::from(ctx.max_expiries) {
            let task = describe_task(&ctx.program, &e.task);
            let msg = format!(
                "task {task}: its lease expired {} times (each worker that took it died or stopped renewing its lease); giving up",
                e.deliveries - 1
            );
            return fail_run(sh, r, scripts, ctx, &e.task, &msg).map(|()| Vec::new());
        }
        let task = match parse_task(&e.task) {
            Ok(t) if engine.check_task(&t).is_ok() => t,
            _ => {
                let msg = format!(
                    "the ready queue holds `{}`, which is not a task of this run (written by another version of lpk?)",
                    e.task.chars().take(80).collect::<String>()
                );
                return fail_run(sh, r, scripts, ctx, &e.task, &msg).map(|()| Vec::new());
            }
        };
        if dice.hit(sh.cfg.faults.stall) {
            if let Some(mine) = lock(&sh.held).get_mut(&ctx.id) {
                if let Some(h) = mine.get_mut(&e.id) {
                    h.1 = false;
                }
            }
            (sh.log)(&format!(
                "fault injected: stalling on task {} of run {} without renewing its lease",
                ctx.program.task_name(&task),
                ctx.id
            ));
            nap(sh, sh.cfg.lease * 2 + Duration::from_millis(200));
        }
        let start_us = now_us();
        let ran = loop {
            match run_task(sh, ctx, &inst, &mut engine, &task, dice) {
                Err(TaskFailure::Input(msg, matrix, index)) => {
                    // Its input may still be on its way: wait for it while
                    // the submitter's `uploading` key lives.
                    match wait_for_input(sh, r, ctx, &matrix, &index)? {
                        Ok(true) => {}
                        Ok(false) => break Err(TaskFailure::Run(msg)),
                        Err(e) => {
                            break Err(TaskFailure::Run(format!(
                                "task {}: cannot tell whether input tile {matrix}{index:?} is in the store: {e}",
                                ctx.program.task_name(&task)
                            )))
                        }
                    }
                }
                other => break other,
            }
        };
        match ran {
            Ok(Ran {
                args: rest,
                read,
                written,
            }) => {
                let mut args = vec![
                    ctx.keys.prefix.clone(),
                    e.id.clone(),
                    e.task.clone(),
                    now_ms().to_string(),
                ];
                args.extend(rest);
                let event = TraceEvent {
                    task: e.task.clone(),
                    worker: consumer_of(sh, ctx, &e.id),
                    start_us,
                    end_us: now_us(),
                    read_bytes: read,
                    written_bytes: written,
                    retry: e.deliveries > 1,
                };
                completions.push((args, ctx.keys.trace(), event));
            }
            Err(TaskFailure::Run(msg) | TaskFailure::Input(msg, ..)) => {
                flush(sh, r, scripts, ctx, &completions, None)?;
                return fail_run(sh, r, scripts, ctx, &e.task, &msg).map(|()| Vec::new());
            }
            Err(TaskFailure::Missing(msg)) => {
                flush(sh, r, scripts, ctx, &completions, None)?;
                completions.clear();
                sh.round_trips.fetch_add(1, Ordering::Relaxed);
                let done: i64 = r.query(
                    redis::cmd("SISMEMBER").arg(ctx.keys.done()).arg(&e.task),
                    "checking whether a task is done",
                )?;
                if done == 1 {
                    // Another worker completed it and its last reader
                    // deleted a tile this copy needed: acknowledge it.
                    let args = vec![
                        ctx.keys.prefix.clone(),
                        e.id.clone(),
                        e.task.clone(),
                        now_ms().to_string(),
                        "0".to_string(),
                        "0".to_string(),
                        "0".to_string(),
                    ];
                    let event = TraceEvent {
                        task: e.task.clone(),
                        worker: consumer_of(sh, ctx, &e.id),
                        start_us,
                        end_us: now_us(),
                        read_bytes: 0,
                        written_bytes: 0,
                        retry: true,
                    };
                    completions.push((args, ctx.keys.trace(), event));
                } else {
                    return fail_run(sh, r, scripts, ctx, &e.task, &msg).map(|()| Vec::new());
                }
            }
        }
        worked(sh);
    }
    // Tasks per read: aim at ~5 ms of work per batch.
    let per_task = started.elapsed().as_secs_f64() / entries.len().max(1) as f64;
    *count = if per_task <= 0.0 {
        64
    } else {
        ((0.005 / per_task) as usize).clamp(1, 64)
    };
    let next = (!sh.stop.load(Ordering::Relaxed)).then_some((consumer, *count));
    flush(sh, r, scripts, ctx, &completions, next)
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
fn wait_for_input(
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

/// A task to complete: the script's arguments, the run's trace key and
/// the task's trace event.
type Completion = (Vec<String>, String, TraceEvent);

/// The name of the worker thread that holds an entry.
fn consumer_of(sh: &Shared<'_>, ctx: &RunCtx, id: &str) -> String {
    lock(&sh.held)
        .get(&ctx.id)
        .and_then(|m| m.get(id))
        .map(|(c, _)| c.clone())
        .unwrap_or_else(|| sh.cfg.name.clone())
}

/// Completes tasks in one pipeline; retried (it is idempotent) until Redis
/// answers or the worker gives up. With `next` (consumer, count), the same
/// round trip then reads up to `count` new entries of the run's stream for
/// that consumer (without blocking), which it returns: a worker that just
/// completed a task usually finds its next one at no extra cost. Redis
/// serves workers blocked on the stream before it reads the pipeline's
/// next command, so an idle worker still gets the first pick of the
/// children just enqueued. Dead tiles deleted after earlier completions
/// leave the run's `dead` set in the same round trip.
fn flush(
    sh: &Shared<'_>,
    r: &mut Redis,
    scripts: &Scripts<'_>,
    ctx: &RunCtx,
    completions: &[Completion],
    next: Option<(&str, usize)>,
) -> Result<Vec<Entry>, ClusterError> {
    if completions.is_empty() {
        return Ok(Vec::new());
    }
    let dead_key = ctx.keys.dead();
    let mut forget: Vec<String> = {
        let mut f = lock(&sh.forget);
        let (mine, rest): (Vec<_>, Vec<_>) = f.drain(..).partition(|(k, _)| *k == dead_key);
        *f = rest;
        mine.into_iter().map(|(_, id)| id).collect()
    };
    let mut read = next;
    let mut prefetched: Vec<Entry> = Vec::new();
    let mut wait = Duration::from_millis(100);
    let give_up = Instant::now() + sh.cfg.idle.max(Duration::from_secs(10));
    // Logs why, then waits before the next try (100 ms doubling to 2 s).
    let mut pause = |why: &dyn std::fmt::Display| {
        (sh.log)(&format!(
            "{why}; retrying the completion of {} task(s)",
            completions.len()
        ));
        std::thread::sleep(wait);
        wait = (wait * 2).min(Duration::from_secs(2));
    };
    loop {
        // [SREM dead ...] then (EVALSHA, XADD trace) per task, then
        // [XREADGROUP]; every reply comes back, errors included.
        let mut pipe = redis::pipe();
        // Sent once (best effort), with the first try.
        let srem = !forget.is_empty();
        if srem {
            pipe.cmd("SREM")
                .arg(&dead_key)
                .arg(std::mem::take(&mut forget));
        }
        for (args, trace_key, event) in completions {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            scripts.complete.add_to(&mut pipe, &a);
            event.add_to(&mut pipe, trace_key);
        }
        if let Some((consumer, count)) = read {
            pipe.cmd("XREADGROUP")
                .arg("GROUP")
                .arg(GROUP)
                .arg(consumer)
                .arg("COUNT")
                .arg(count.max(1))
                .arg("STREAMS")
                .arg(ctx.keys.queue())
                .arg(">");
        }
        sh.round_trips.fetch_add(1, Ordering::Relaxed);
        let replies = match r.pipe_raw(&pipe, "completing tasks") {
            Ok(v) => v,
            Err(e) if Instant::now() < give_up && matches!(e, ClusterError::Redis { .. }) => {
                pause(&e);
                continue;
            }
            Err(e) => return Err(e),
        };
        let mut replies = replies.into_iter().skip(usize::from(srem));
        let mut results: Vec<Value> = Vec::with_capacity(completions.len());
        for _ in completions {
            results.extend(replies.next());
            let _trace = replies.next();
        }
        if read.take().is_some() {
            // Entries read are this worker's now, whatever became of the
            // completions (which are simply run again if they failed).
            if let Some(reply) = replies
                .next()
                .filter(|v| !matches!(v, Value::ServerError(_)))
            {
                prefetched.extend(stream_entries(&reply, &ctx.keys.queue()));
            }
        }
        let failed = results.iter().find_map(|v| match v {
            Value::ServerError(e) => Some(e.clone()),
            _ => None,
        });
        if results.len() < completions.len() || failed.is_some() {
            if let Some(e) = &failed {
                if e.code() == "NOSCRIPT" {
                    // Redis restarted: load the script, complete again.
                    r.query::<String>(
                        redis::cmd("SCRIPT")
                            .arg("LOAD")
                            .arg(scripts.complete.source),
                        "loading a script",
                    )?;
                    continue;
                }
            }
            let why = match failed {
                Some(e) => format!(
                    "Redis refused a completion: {} {}",
                    e.code(),
                    e.details().unwrap_or_default()
                ),
                None => "Redis answered fewer replies than it was sent commands".to_string(),
            };
            if Instant::now() < give_up {
                pause(&why);
                continue;
            }
            return Err(ClusterError::Refused(format!(
                "completing {} task(s) of run {}: {why}",
                completions.len(),
                ctx.id
            )));
        }
        for result in &results {
            let result = array(result);
            let fresh = result.first().and_then(int).unwrap_or(0);
            let state = result.get(2).and_then(text).unwrap_or_default();
            if state == RunState::Running.as_str() {
                sh.tasks.fetch_add(1, Ordering::Relaxed);
                if fresh == 0 {
                    sh.duplicates.fetch_add(1, Ordering::Relaxed);
                }
            }
            // Tiles whose last reader this was: deleted now, forgotten by
            // the `dead` set in the next round trip (best effort: what
            // stays in the set is swept by `collect`).
            for dead in result.iter().skip(3).filter_map(text) {
                if delete_dead(sh, ctx, &dead) {
                    lock(&sh.forget).push((dead_key.clone(), dead));
                }
            }
        }
        return Ok(prefetched);
    }
}

/// Deletes a dead tile from the run's store and the cache; false if it
/// could not (it stays in the run's `dead` set, for `collect` to sweep).
fn delete_dead(sh: &Shared<'_>, ctx: &RunCtx, id: &str) -> bool {
    let (Ok(tile), Some(store)) = (crate::ids::parse_tile(id), ctx.store.as_ref()) else {
        return false;
    };
    let Some(decl) = ctx.program.get_matrix(tile.matrix) else {
        return false;
    };
    sh.cache.remove(&ctx.id, tile.matrix, &tile.index);
    match retry(|| store.delete(&decl.name, &tile.index)) {
        Ok(()) => true,
        Err(e) => {
            (sh.log)(&format!(
                "could not delete dead tile {}: {e}",
                ctx.program.tile_name(&tile)
            ));
            false
        }
    }
}

fn fail_run(
    sh: &Shared<'_>,
    r: &mut Redis,
    scripts: &Scripts<'_>,
    ctx: &RunCtx,
    task: &str,
    message: &str,
) -> Result<(), ClusterError> {
    let now = now_ms().to_string();
    sh.round_trips.fetch_add(1, Ordering::Relaxed);
    let first: i64 = r.script(
        scripts.fail,
        &[&ctx.keys.prefix, task, message, &now],
        "failing the run",
    )?;
    if first == 1 {
        sh.failed_runs.fetch_add(1, Ordering::Relaxed);
        (sh.log)(&format!("run {} failed: {message}", ctx.id));
    }
    sh.cache.forget_run(&ctx.id);
    Ok(())
}

/// `kernel@LINE(vars)` for a task id, or the id itself if it is not one.
fn describe_task(program: &Program, id: &str) -> String {
    match parse_task(id) {
        Ok(t) if program.get_statement(t.stmt).is_some() => program.task_name(&t).to_string(),
        _ => id.to_string(),
    }
}

/// Tries a store operation three times.
fn retry<T>(
    mut op: impl FnMut() -> Result<T, runtime::store::StoreError>,
) -> Result<T, runtime::store::StoreError> {
    let mut wait = Duration::from_millis(100);
    let mut attempt = 0;
    loop {
        match op() {
            Ok(v) => return Ok(v),
            Err(e) if attempt >= 2 => return Err(e),
            Err(_) => {
                attempt += 1;
                std::thread::sleep(wait);
                wait *= 4;
            }
        }
    }
}

/// Whether a tile is worth caching: it has two readers or more (a tile
/// read once is read by one task, on whichever worker takes it; keeping it
/// only evicts tiles read many times, such as a panel's factor).
fn read_again(sh: &Shared<'_>, engine: &mut Engine<'_, '_>, t: &model::task::TileRef) -> bool {
    sh.cfg.cache_bytes > 0 && engine.readers(t).is_ok_and(|r| r.len() >= 2)
}

/// Checks an input tile read from the store against its place in the
/// grid: with block `B` every tile is `B` long in each cut dimension but
/// the last one's, which is 1 to `B` long (a 1-D matrix's columns are not
/// cut). `submit` uploaded exactly that; anything else was written by
/// someone else, and a kernel would compute on it without noticing.
fn check_input_tile(
    inst: &Instance<'_>,
    t: &model::task::TileRef,
    tile: &Tile,
    block: usize,
) -> Result<(), String> {
    let extents = inst
        .extents
        .get(t.matrix.0 as usize)
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

/// Runs one task; returns its edges as (child, tile, child's in-degree)
/// triples for [`COMPLETE`].
fn run_task(
    sh: &Shared<'_>,
    ctx: &RunCtx,
    inst: &Instance<'_>,
    engine: &mut Engine<'_, '_>,
    task: &Task,
    dice: &mut Dice,
) -> Result<Ran, TaskFailure> {
    let program = &ctx.program;
    let mut read_bytes = 0u64;
    let mut written_bytes = 0u64;
    let mut dead_candidates: Vec<(model::task::TileRef, u64)> = Vec::new();
    let mut written_intermediates: Vec<String> = Vec::new();
    let mut output_sums: Vec<(String, String)> = Vec::new();
    let name = || program.task_name(task).to_string();
    let query = |e: model::query::QueryError| TaskFailure::Run(format!("task {}: {e}", name()));
    if !ctx.noop {
        let store = ctx
            .store
            .as_ref()
            .ok_or_else(|| TaskFailure::Run("no tile store".into()))?;
        let reads = engine.reads(task).map_err(query)?;
        let writes = engine.writes(task).map_err(query)?;
        let mut loaded: Vec<Option<Arc<Tile>>> = Vec::with_capacity(reads.len());
        dead_candidates.reserve(reads.len());
        for t in &reads {
            // A tile of a zero matrix that no task writes is made, never
            // stored.
            if program.is_zero(t.matrix) && runtime::zero::is_zero_tile(engine, t).map_err(query)? {
                loaded.push(None);
                continue;
            }
            let mname = &program.matrix(t.matrix).name;
            let tile = match sh.cache.get(&ctx.id, t.matrix, &t.index) {
                Some(tile) => tile,
                None => {
                    let got = retry(|| store.get(mname, &t.index)).map_err(|e| {
                        TaskFailure::Run(format!(
                            "task {}: cannot read tile {}: {e}",
                            name(),
                            program.tile_name(t)
                        ))
                    })?;
                    let tile = got.ok_or_else(|| {
                        if program.matrix(t.matrix).role == model::program::Role::Input {
                            TaskFailure::Input(format!(
                                "task {}: input tile {} is not in the store ({}): the upload of the run's inputs ended without it (was `lpkc submit` killed, or the store cleared?)",
                                name(),
                                program.tile_name(t),
                                store.describe()
                            ), mname.clone(), t.index.to_vec())
                        } else {
                            TaskFailure::Missing(format!(
                                "task {}: tile {} is not in the store ({}); was the store cleared while the run ran?",
                                name(),
                                program.tile_name(t),
                                store.describe()
                            ))
                        }
                    })?;
                    if program.matrix(t.matrix).role == model::program::Role::Input {
                        check_input_tile(inst, t, &tile, ctx.block).map_err(|why| {
                            TaskFailure::Run(format!(
                                "task {}: input tile {} in the store ({}) {why}",
                                name(),
                                program.tile_name(t),
                                store.describe()
                            ))
                        })?;
                    }
                    if read_again(sh, engine, t) {
                        sh.cache.put(&ctx.id, t.matrix, &t.index, tile.clone());
                    }
                    tile
                }
            };
            let bytes = (tile.nrows() * tile.ncols() * 8) as u64;
            read_bytes += bytes;
            // Intermediates only: inputs and outputs stay in the store.
            if program.matrix(t.matrix).role == model::program::Role::Temporary {
                dead_candidates.push((t.clone(), bytes));
            }
            loaded.push(Some(tile));
        }
        let loaded = runtime::zero::zero_tiles(inst, &ctx.kernels, task, loaded, Some(ctx.block))
            .map_err(|e| TaskFailure::Run(format!("task {}: {e}", name())))?;
        let called = call_kernel(inst, &ctx.kernels, task, &reads, &loaded, false)
            .map_err(|e| TaskFailure::Run(e.to_string()))?;
        if dice.hit(sh.cfg.faults.crash_before_write) {
            (sh.log)(&format!(
                "fault injected: crashing before writing the outputs of {}",
                name()
            ));
            std::process::exit(EXIT_BEFORE_WRITE);
        }
        for (t, tile) in writes.iter().zip(called.tiles) {
            written_bytes += (tile.nrows() * tile.ncols() * 8) as u64;
            match program.matrix(t.matrix).role {
                model::program::Role::Temporary => {
                    written_intermediates.push(tile_id(t.matrix, &t.index));
                }
                model::program::Role::Output => {
                    output_sums.push((tile_id(t.matrix, &t.index), crate::tiles::digest(&tile)));
                }
                model::program::Role::Input => {}
            }
            let tile = Arc::new(tile);
            let mname = &program.matrix(t.matrix).name;
            retry(|| store.put(mname, &t.index, tile.clone())).map_err(|e| {
                TaskFailure::Run(format!(
                    "task {}: cannot write tile {}: {e}",
                    name(),
                    program.tile_name(t)
                ))
            })?;
            if read_again(sh, engine, t) {
                sh.cache.put(&ctx.id, t.matrix, &t.index, tile);
            }
        }
        // Then the done marker (the run's state can be rebuilt from them).
        let marker = marker_line(task, &sh.cfg.name, now_ms());
        retry(|| ctx.done_log.record(store, task, &marker)).map_err(|e| {
            TaskFailure::Run(format!(
                "task {}: cannot write its done marker: {e}",
                name()
            ))
        })?;
    }
    if dice.hit(sh.cfg.faults.crash_after_write) {
        (sh.log)(&format!(
            "fault injected: crashing after writing the outputs of {}",
            name()
        ));
        std::process::exit(EXIT_AFTER_WRITE);
    }
    // The completion carries every edge in one script call: a task with
    // millions of children (one tile read by a whole block row of a
    // 20-million-column matrix) would exhaust the worker's memory, so the
    // run fails naming it instead.
    let mut edges: Vec<(Task, String)> = Vec::new();
    engine
        .try_for_each_child(task, &mut |stmt, vars, matrix, tile| {
            edges.push((
                Task {
                    stmt,
                    vars: vars.into(),
                },
                tile_id(matrix, tile),
            ));
            edges.len() <= MAX_CHILDREN
        })
        .map_err(query)?;
    if edges.len() > MAX_CHILDREN {
        return Err(TaskFailure::Run(format!(
            "task {} has more than {MAX_CHILDREN} children; a distributed run takes at most \
             that many per task (use a larger --block)",
            name()
        )));
    }
    let mut degrees: HashMap<Task, usize> = HashMap::new();
    let mut out = Vec::with_capacity(edges.len() * 3 + 1);
    out.push(written_bytes.to_string());
    out.push(edges.len().to_string());
    for (child, tile) in edges {
        let d = match degrees.get(&child) {
            Some(&d) => d,
            None => {
                let d = engine.in_degree(&child).map_err(query)?;
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
        let mut seen: Vec<&model::task::TileRef> = Vec::new();
        for (t, bytes) in &dead_candidates {
            if seen.contains(&t) {
                continue;
            }
            seen.push(t);
            let readers = engine.readers(t).map_err(query)?.len();
            out.push(tile_id(t.matrix, &t.index));
            out.push(readers.to_string());
            out.push(bytes.to_string());
        }
    }
    Ok(Ran {
        args: out,
        read: read_bytes,
        written: written_bytes,
    })
}

/// The most children (edges out of one task) a worker completes: their
/// ids go to Redis in one script call.
pub const MAX_CHILDREN: usize = 1 << 20;

/// The longest lease, idle time or other wait a command takes, in seconds
/// (a year): longer ones overflow the millisecond arithmetic of Redis
/// leases, and mean "forever" anyway.
pub const MAX_SECONDS: f64 = 86_400.0 * 365.0;

/// A number of seconds as a [`Duration`]: above 0 and at most
/// [`MAX_SECONDS`] (`None` for anything else: 0, negative, NaN, infinite,
/// `1e20`).
pub fn seconds(value: f64) -> Option<Duration> {
    (value > 0.0 && value <= MAX_SECONDS).then(|| Duration::from_secs_f64(value))
}
