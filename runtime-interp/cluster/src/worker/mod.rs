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
//!
//! The module's parts: [`runs`] (the runs a worker serves, loaded from
//! their records), [`kernels`] (a run's kernels against the worker's
//! registry: a run calling one it lacks is left to other workers), [`lease`] (the run streams: reading entries, taking
//! over expired leases, renewing held ones), [`batch`] (a batch of one
//! run's entries, held while its tasks run, and the run failed when one
//! cannot), [`task`] (one task's execution: its tiles read, its kernel
//! called, its outputs and done marker written, its completion's
//! arguments) and [`completion`] (a batch completed in one pipeline).

mod batch;
mod completion;
mod kernels;
mod lease;
mod runs;
mod task;

use crate::conn::{Redis, Script};
use crate::error::ClusterError;
use crate::faults::{Dice, Faults};
use crate::ids::parse_task;
use crate::markers::DoneLog;
use crate::protocol::{Keys, COMPLETE, FAIL, RECLAIM};
use crate::tiles::TileCache;
use batch::run_chain;
use lease::{read_new, renew_loop, take_over};
use lpk_model::program::Program;
use lpk_runtime::kernels::{Kernel, Registry};
use lpk_runtime::store::ObjectStoreTiles;
use runs::active_runs;
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
    /// The kernels it runs (default: the standard ones). It takes tasks
    /// only of runs whose called kernels are all here, and tells Redis
    /// their names while it lives ([`crate::workers`]).
    pub kernels: Registry,
    /// Set from outside to stop the worker (checked every 50 ms): its
    /// threads finish and complete the tasks they hold, then [`work`]
    /// returns as after `idle` without work. `None`: it stops only when
    /// idle.
    pub stop: Option<Arc<AtomicBool>>,
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
            kernels: Registry::standard(),
            stop: None,
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
/// one line per notable event. Its kernels are `cfg.kernels`: a program
/// in Rust runs this same loop with kernels of its own added to the
/// standard registry (`docs/kernels.md`).
pub fn work(cfg: &WorkerConfig, log: &(dyn Fn(&str) + Sync)) -> Result<WorkerReport, ClusterError> {
    // Fail at once on a bad URL or a Redis that is not there; tell it
    // which kernels this worker has (renewed with the leases).
    let mut redis = Redis::open(&cfg.redis)?;
    crate::workers::register(&mut redis, &cfg.name, &kernel_names(cfg), cfg.lease)?;
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
        if let Some(outside) = &cfg.stop {
            s.spawn(move || watch_stop(sh, outside));
        }
        let threads: Vec<_> = (0..cfg.threads.max(1))
            .map(|k| s.spawn(move || cfg.kernels.run_in_thread_context(|| task_loop(sh, k))))
            .collect();
        for t in threads {
            let _ = t.join();
        }
        shared.stop.store(true, Ordering::Relaxed);
    });
    // Best effort: a registration left behind expires after a lease.
    if crate::workers::unregister(&mut redis, &cfg.name).is_err() {
        if let Ok(mut r) = Redis::open(&cfg.redis) {
            let _ = crate::workers::unregister(&mut r, &cfg.name);
        }
    }
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

/// Stops the worker once `outside` is set (or returns when it stops).
fn watch_stop(sh: &Shared<'_>, outside: &AtomicBool) {
    while !sh.stop.load(Ordering::Relaxed) {
        if outside.load(Ordering::Relaxed) {
            (sh.log)("asked to stop: finishing the tasks it holds");
            sh.stop.store(true, Ordering::Relaxed);
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The names of the worker's kernels, as it registers them.
fn kernel_names(cfg: &WorkerConfig) -> String {
    cfg.kernels.names().collect::<Vec<_>>().join(",")
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

/// The scripts a task-taking thread completes and fails tasks with.
struct Scripts<'a> {
    complete: &'a Script,
    fail: &'a Script,
}

/// What a task-taking thread carries from batch to batch.
struct Thread<'a> {
    /// Its name in the runs' consumer groups (`NAME-K`).
    consumer: &'a str,
    scripts: Scripts<'a>,
    /// The dice of injected faults.
    dice: Dice,
    /// Tasks per read: more for tiny tasks, one for real ones.
    count: usize,
}

/// The runs a task-taking thread works on, when it last listed them and
/// when it last took over expired leases.
struct ActiveRuns {
    active: Vec<Arc<RunCtx>>,
    refreshed: Option<Instant>,
    reclaimed: Option<Instant>,
}

/// A task-taking thread's connection to Redis, and since when Redis has
/// been out of its reach.
struct Link {
    redis: Option<Redis>,
    down_since: Option<Instant>,
}

/// One task-taking thread: takes [`step`]s until the worker stops,
/// reconnecting to Redis whenever it went away; stops the worker after
/// `idle` without work.
fn task_loop(sh: &Shared<'_>, k: usize) {
    let consumer = format!("{}-{k}", sh.cfg.name);
    let complete = Script::new(COMPLETE);
    let fail = Script::new(FAIL);
    let reclaim = Script::new(RECLAIM);
    let mut thread = Thread {
        consumer: &consumer,
        scripts: Scripts {
            complete: &complete,
            fail: &fail,
        },
        dice: Dice::new(),
        count: 1,
    };
    let mut runs = ActiveRuns {
        active: Vec::new(),
        refreshed: None,
        reclaimed: None,
    };
    let mut link = Link {
        redis: None,
        down_since: None,
    };
    while !sh.stop.load(Ordering::Relaxed) {
        if idle_for(sh) >= sh.cfg.idle {
            stop_idle(sh, link.down_since);
            break;
        }
        let Some(r) = connect(sh, &consumer, &mut link) else {
            continue;
        };
        if let Err(e) = step(sh, r, &reclaim, &mut thread, &mut runs) {
            step_failed(sh, &consumer, &mut link, e);
        }
    }
}

/// Stops the worker, idle for long enough; if Redis is out of reach, that
/// is the worker's error.
fn stop_idle(sh: &Shared<'_>, down_since: Option<Instant>) {
    if let Some(since) = down_since {
        let mut e = lock(&sh.error);
        e.get_or_insert(ClusterError::Refused(format!(
            "Redis at {} unreachable for {:.0} s",
            crate::conn::redacted(&sh.cfg.redis),
            since.elapsed().as_secs_f64()
        )));
    }
    sh.stop.store(true, Ordering::Relaxed);
}

/// The thread's connection to Redis, opened if it has none; `None`, after
/// a pause that grows the longer Redis is away, if Redis cannot be reached.
fn connect<'l>(sh: &Shared<'_>, consumer: &str, link: &'l mut Link) -> Option<&'l mut Redis> {
    if link.redis.is_none() {
        match Redis::open(&sh.cfg.redis) {
            Ok(r) => {
                if link.down_since.take().is_some() {
                    (sh.log)(&format!("{consumer}: Redis is back"));
                }
                link.redis = Some(r);
            }
            Err(e) => {
                let since = *link.down_since.get_or_insert_with(|| {
                    (sh.log)(&format!("{consumer}: {e}; retrying"));
                    Instant::now()
                });
                let wait = since.elapsed().as_millis().clamp(100, 2000) as u64;
                nap(sh, Duration::from_millis(wait));
                return None;
            }
        }
    }
    link.redis.as_mut()
}

/// Logs a step's error and pauses; after a Redis error the connection is
/// dropped (the next step reconnects).
fn step_failed(sh: &Shared<'_>, consumer: &str, link: &mut Link, e: ClusterError) {
    match e {
        e @ ClusterError::Redis { .. } => {
            (sh.log)(&format!("{consumer}: {e}; reconnecting"));
            link.redis = None;
            link.down_since.get_or_insert_with(Instant::now);
            nap(sh, Duration::from_millis(200));
        }
        e => {
            (sh.log)(&format!("{consumer}: {e}"));
            nap(sh, Duration::from_millis(200));
        }
    }
}

/// One step of a task-taking thread: lists the runs (every second, and
/// while there are none), takes over expired leases (every half lease),
/// then reads new tasks and runs them.
fn step(
    sh: &Shared<'_>,
    r: &mut Redis,
    reclaim: &Script,
    th: &mut Thread<'_>,
    runs: &mut ActiveRuns,
) -> Result<(), ClusterError> {
    if runs
        .refreshed
        .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
        || runs.active.is_empty()
    {
        runs.active = active_runs(sh, r)?;
        runs.refreshed = Some(Instant::now());
        sh.round_trips.fetch_add(1, Ordering::Relaxed);
    }
    if runs.active.is_empty() {
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
    if runs
        .reclaimed
        .is_none_or(|t| t.elapsed() >= sh.cfg.lease / 2)
    {
        runs.reclaimed = Some(Instant::now());
        take_over_expired(sh, r, reclaim, th, &runs.active)?;
    }
    let read = read_new(sh, r, &mut runs.active, th.consumer, th.count)?;
    for (ctx, entries) in read {
        run_chain(sh, r, th, &ctx, entries, false)?;
    }
    Ok(())
}

/// Takes over the tasks of the active runs whose lease expired, and runs
/// them.
fn take_over_expired(
    sh: &Shared<'_>,
    r: &mut Redis,
    reclaim: &Script,
    th: &mut Thread<'_>,
    active: &[Arc<RunCtx>],
) -> Result<(), ClusterError> {
    for ctx in active {
        let entries = take_over(sh, r, reclaim, ctx, th.consumer, th.count.max(4))?;
        if !entries.is_empty() {
            sh.taken_over
                .fetch_add(entries.len() as u64, Ordering::Relaxed);
            (sh.log)(&format!(
                "{}: took over {} task(s) of run {} whose lease expired",
                th.consumer,
                entries.len(),
                ctx.id
            ));
            run_chain(sh, r, th, ctx, entries, true)?;
        }
    }
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
    mut op: impl FnMut() -> Result<T, lpk_runtime::store::StoreError>,
) -> Result<T, lpk_runtime::store::StoreError> {
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

/// The most children (edges out of one task) a worker completes: their
/// ids go to Redis in one script call.
pub(crate) const MAX_CHILDREN: usize = 1 << 20;

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
