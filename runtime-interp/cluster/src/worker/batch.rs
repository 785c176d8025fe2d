//! A batch of one run's entries: held (their leases renewed) while its
//! tasks run in turn, completed in one round trip with the next batch read
//! in it, and the run failed when a task cannot run.

use super::completion::{flush, Completion};
use super::lease::Entry;
use super::task::{run_task, wait_for_input, Ran, TaskFailure};
use super::{describe_task, lock, nap, worked, RunCtx, Scripts, Shared, Thread};
use crate::conn::Redis;
use crate::error::ClusterError;
use crate::faults::Dice;
use crate::ids::parse_task;
use crate::record::now_ms;
use crate::trace::TraceEvent;
use lpk_model::program::Instance;
use lpk_model::query::Engine;
use lpk_model::task::Task;
use lpk_runtime::timeline::now_us;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs a batch of entries of one run and completes them in one pipeline,
/// then the entries that completion read in the same round trip
/// ([`flush`]), and so on until one reads none. While a batch runs, its
/// entries are in `held` (their leases renewed).
pub(super) fn run_chain(
    sh: &Shared<'_>,
    r: &mut Redis,
    th: &mut Thread<'_>,
    ctx: &Arc<RunCtx>,
    mut entries: Vec<Entry>,
    mut taken_over: bool,
) -> Result<(), ClusterError> {
    while !entries.is_empty() {
        {
            let mut held = lock(&sh.held);
            let mine = held.entry(ctx.id.clone()).or_default();
            for e in &entries {
                mine.insert(e.id.clone(), (th.consumer.to_string(), true));
            }
        }
        let result = run_held(sh, r, th, ctx, &entries, taken_over);
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

/// Runs held entries of one run in turn and completes them ([`flush`]),
/// returning the entries the completion read; fails the run, and returns
/// none, when a task cannot run.
fn run_held(
    sh: &Shared<'_>,
    r: &mut Redis,
    th: &mut Thread<'_>,
    ctx: &Arc<RunCtx>,
    entries: &[Entry],
    taken_over: bool,
) -> Result<Vec<Entry>, ClusterError> {
    let inst = match ctx.program.bind_values(ctx.params.clone()) {
        Ok(i) => i,
        Err(e) => {
            return fail_run(
                sh,
                r,
                &th.scripts,
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
        let task = match checked_task(ctx, &mut engine, e, taken_over) {
            Ok(task) => task,
            Err(msg) => {
                return fail_run(sh, r, &th.scripts, ctx, &e.task, &msg).map(|()| Vec::new())
            }
        };
        if th.dice.hit(sh.cfg.faults.stall) {
            stall(sh, ctx, e, &task);
        }
        let start_us = now_us();
        let ran = run_with_inputs(sh, r, ctx, &inst, &mut engine, &task, &mut th.dice)?;
        let finished = match ran {
            Ok(ran) => completion(sh, ctx, e, start_us, ran),
            Err(TaskFailure::Run(msg) | TaskFailure::Input(msg, ..)) => {
                flush(sh, r, &th.scripts, ctx, &completions, None)?;
                return fail_run(sh, r, &th.scripts, ctx, &e.task, &msg).map(|()| Vec::new());
            }
            Err(TaskFailure::Missing(msg)) => {
                flush(sh, r, &th.scripts, ctx, &completions, None)?;
                completions.clear();
                if !done_elsewhere(sh, r, ctx, e)? {
                    return fail_run(sh, r, &th.scripts, ctx, &e.task, &msg).map(|()| Vec::new());
                }
                acknowledgement(sh, ctx, e, start_us)
            }
        };
        completions.push(finished);
        worked(sh);
    }
    th.count = batch_size(started, entries.len());
    let next = (!sh.stop.load(Ordering::Relaxed)).then_some((th.consumer, th.count));
    flush(sh, r, &th.scripts, ctx, &completions, next)
}

/// The entry's task, or why the run fails: an entry whose lease expired
/// more than the run's `max_expiries` times, or one that names no task of
/// the run.
fn checked_task(
    ctx: &RunCtx,
    engine: &mut Engine<'_, '_>,
    e: &Entry,
    taken_over: bool,
) -> Result<Task, String> {
    if taken_over && e.deliveries > u64::from(ctx.max_expiries) {
        let task = describe_task(&ctx.program, &e.task);
        return Err(format!(
            "task {task}: its lease expired {} times (each worker that took it died or stopped renewing its lease); giving up",
            e.deliveries - 1
        ));
    }
    match parse_task(&e.task) {
        Ok(t) if engine.check_task(&t).is_ok() => Ok(t),
        _ => Err(format!(
            "the ready queue holds `{}`, which is not a task of this run (written by another version of lpk?)",
            e.task.chars().take(80).collect::<String>()
        )),
    }
}

/// The injected stall: stops renewing the entry's lease, then sleeps past
/// its expiry.
fn stall(sh: &Shared<'_>, ctx: &RunCtx, e: &Entry, task: &Task) {
    if let Some(mine) = lock(&sh.held).get_mut(&ctx.id) {
        if let Some(h) = mine.get_mut(&e.id) {
            h.1 = false;
        }
    }
    (sh.log)(&format!(
        "fault injected: stalling on task {} of run {} without renewing its lease",
        ctx.program.task_name(task),
        ctx.id
    ));
    nap(sh, sh.cfg.lease * 2 + Duration::from_millis(200));
}

/// Runs a task ([`run_task`]); while an input tile it reads is missing,
/// waits for it as long as the inputs are being uploaded, and runs the
/// task again once it is there.
fn run_with_inputs(
    sh: &Shared<'_>,
    r: &mut Redis,
    ctx: &RunCtx,
    inst: &Instance<'_>,
    engine: &mut Engine<'_, '_>,
    task: &Task,
    dice: &mut Dice,
) -> Result<Result<Ran, TaskFailure>, ClusterError> {
    loop {
        match run_task(sh, ctx, inst, engine, task, dice) {
            Err(TaskFailure::Input(msg, matrix, index)) => {
                // Its input may still be on its way: wait for it while
                // the submitter's `uploading` key lives.
                match wait_for_input(sh, r, ctx, &matrix, &index)? {
                    Ok(true) => {}
                    Ok(false) => return Ok(Err(TaskFailure::Run(msg))),
                    Err(e) => {
                        return Ok(Err(TaskFailure::Run(format!(
                            "task {}: cannot tell whether input tile {matrix}{index:?} is in the store: {e}",
                            ctx.program.task_name(task)
                        ))))
                    }
                }
            }
            other => return Ok(other),
        }
    }
}

/// The completion of an entry whose task ran: the script's arguments, the
/// run's trace key and the task's trace event.
fn completion(sh: &Shared<'_>, ctx: &RunCtx, e: &Entry, start_us: u64, ran: Ran) -> Completion {
    let Ran {
        args: rest,
        read,
        written,
    } = ran;
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
    (args, ctx.keys.trace(), event)
}

/// Whether the entry's task is in the run's done set (another worker
/// completed it).
fn done_elsewhere(
    sh: &Shared<'_>,
    r: &mut Redis,
    ctx: &RunCtx,
    e: &Entry,
) -> Result<bool, ClusterError> {
    sh.round_trips.fetch_add(1, Ordering::Relaxed);
    let done: i64 = r.query(
        redis::cmd("SISMEMBER").arg(ctx.keys.done()).arg(&e.task),
        "checking whether a task is done",
    )?;
    Ok(done == 1)
}

/// The completion that acknowledges an entry whose task another worker
/// completed, its last reader having deleted a tile this copy needed.
fn acknowledgement(sh: &Shared<'_>, ctx: &RunCtx, e: &Entry, start_us: u64) -> Completion {
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
    (args, ctx.keys.trace(), event)
}

/// Tasks per read: aim at ~5 ms of work per batch, from the time the
/// batch of `n` entries took.
fn batch_size(started: Instant, n: usize) -> usize {
    let per_task = started.elapsed().as_secs_f64() / n.max(1) as f64;
    if per_task <= 0.0 {
        64
    } else {
        ((0.005 / per_task) as usize).clamp(1, 64)
    }
}

/// The name of the worker thread that holds an entry.
fn consumer_of(sh: &Shared<'_>, ctx: &RunCtx, id: &str) -> String {
    lock(&sh.held)
        .get(&ctx.id)
        .and_then(|m| m.get(id))
        .map(|(c, _)| c.clone())
        .unwrap_or_else(|| sh.cfg.name.clone())
}

/// Fails the run (once: the first failure wins), naming `task` and
/// `message`, and forgets its cached tiles.
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
