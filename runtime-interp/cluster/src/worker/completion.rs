//! A batch's completion: the completion scripts and the trace events in
//! one pipeline, with the dead tiles deleted since the last one forgotten
//! and the next entries read in the same round trip, retried until Redis
//! takes it; then the dead tiles it names deleted.

use super::lease::{stream_entries, Entry};
use super::{lock, retry, RunCtx, Scripts, Shared};
use crate::conn::Redis;
use crate::error::ClusterError;
use crate::protocol::GROUP;
use crate::record::RunState;
use crate::reply::{array, int, text};
use crate::trace::TraceEvent;
use lpk_runtime::store::TileStore;
use redis::Value;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// A task to complete: the script's arguments, the run's trace key and
/// the task's trace event.
pub(super) type Completion = (Vec<String>, String, TraceEvent);

/// Completes tasks in one pipeline; retried (it is idempotent) until Redis
/// answers or the worker gives up. With `next` (consumer, count), the same
/// round trip then reads up to `count` new entries of the run's stream for
/// that consumer (without blocking), which it returns: a worker that just
/// completed a task usually finds its next one at no extra cost. Redis
/// serves workers blocked on the stream before it reads the pipeline's
/// next command, so an idle worker still gets the first pick of the
/// children just enqueued. Dead tiles deleted after earlier completions
/// leave the run's `dead` set in the same round trip.
pub(super) fn flush(
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
    let mut forget = forgotten(sh, &dead_key);
    let mut read = next;
    let mut prefetched: Vec<Entry> = Vec::new();
    let mut backoff = Backoff::new(sh.cfg.idle.max(Duration::from_secs(10)));
    loop {
        // Sent once (best effort), with the first try.
        let srem = !forget.is_empty();
        let pipe = completion_pipe(
            scripts,
            ctx,
            completions,
            &dead_key,
            std::mem::take(&mut forget),
            read,
        );
        sh.round_trips.fetch_add(1, Ordering::Relaxed);
        let replies = match r.pipe_raw(&pipe, "completing tasks") {
            Ok(v) => v,
            Err(e) if backoff.more() && matches!(e, ClusterError::Redis { .. }) => {
                backoff.pause(sh, completions.len(), &e);
                continue;
            }
            Err(e) => return Err(e),
        };
        let queue = ctx.keys.queue();
        let n = completions.len();
        let results = results_of(
            replies,
            srem,
            n,
            read.take().is_some(),
            &queue,
            &mut prefetched,
        );
        match refusal(&results, n) {
            None => {}
            Some(Refusal::NoScript) => {
                // Redis restarted: load the script, complete again.
                r.query::<String>(
                    redis::cmd("SCRIPT")
                        .arg("LOAD")
                        .arg(scripts.complete.source),
                    "loading a script",
                )?;
                continue;
            }
            Some(Refusal::Why(why)) => {
                if backoff.more() {
                    backoff.pause(sh, n, &why);
                    continue;
                }
                return Err(ClusterError::Refused(format!(
                    "completing {n} task(s) of run {}: {why}",
                    ctx.id
                )));
            }
        }
        count_results(sh, ctx, &dead_key, &results);
        return Ok(prefetched);
    }
}

/// Takes the ids of this run's dead tiles deleted since its last
/// completion, to remove from its `dead` set (`dead_key`).
fn forgotten(sh: &Shared<'_>, dead_key: &str) -> Vec<String> {
    let mut f = lock(&sh.forget);
    let (mine, rest): (Vec<_>, Vec<_>) = f.drain(..).partition(|(k, _)| *k == dead_key);
    *f = rest;
    mine.into_iter().map(|(_, id)| id).collect()
}

/// The tries of a completion: 100 ms apart, doubling to 2 s, until the
/// worker gives up.
struct Backoff {
    wait: Duration,
    give_up: Instant,
}

impl Backoff {
    /// Tries for `patience` from now.
    fn new(patience: Duration) -> Backoff {
        Backoff {
            wait: Duration::from_millis(100),
            give_up: Instant::now() + patience,
        }
    }

    /// Whether there is time for another try.
    fn more(&self) -> bool {
        Instant::now() < self.give_up
    }

    /// Logs why the completion of `tasks` tasks is tried again, then waits
    /// before the next try.
    fn pause(&mut self, sh: &Shared<'_>, tasks: usize, why: &dyn std::fmt::Display) {
        (sh.log)(&format!(
            "{why}; retrying the completion of {tasks} task(s)"
        ));
        std::thread::sleep(self.wait);
        self.wait = (self.wait * 2).min(Duration::from_secs(2));
    }
}

/// The completion pipeline: [SREM dead ...] (when `forget` names tiles),
/// then (EVALSHA, XADD trace) per task, then [XREADGROUP] (with `read`,
/// a consumer and a count); every reply comes back, errors included.
fn completion_pipe(
    scripts: &Scripts<'_>,
    ctx: &RunCtx,
    completions: &[Completion],
    dead_key: &str,
    forget: Vec<String>,
    read: Option<(&str, usize)>,
) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    if !forget.is_empty() {
        pipe.cmd("SREM").arg(dead_key).arg(forget);
    }
    for (args, trace_key, event) in completions {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        scripts.complete.add_to(&mut pipe, &a);
        crate::trace::add_to(&mut pipe, trace_key, event);
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
    pipe
}

/// The `n` completion scripts' results among a pipeline's replies (the
/// SREM's, if `srem`, and the trace XADDs' skipped); with `read`, the
/// entries read from stream `queue` go to `prefetched`.
fn results_of(
    replies: Vec<Value>,
    srem: bool,
    n: usize,
    read: bool,
    queue: &str,
    prefetched: &mut Vec<Entry>,
) -> Vec<Value> {
    let mut replies = replies.into_iter().skip(usize::from(srem));
    let mut results: Vec<Value> = Vec::with_capacity(n);
    for _ in 0..n {
        results.extend(replies.next());
        let _trace = replies.next();
    }
    if read {
        // Entries read are this worker's now, whatever became of the
        // completions (which are simply run again if they failed).
        if let Some(reply) = replies
            .next()
            .filter(|v| !matches!(v, Value::ServerError(_)))
        {
            prefetched.extend(stream_entries(&reply, queue));
        }
    }
    results
}

/// Why Redis did not take every completion of a pipeline.
enum Refusal {
    /// It lost the completion script (it restarted).
    NoScript,
    /// Anything else, said.
    Why(String),
}

/// Why Redis did not take all `n` completions whose `results` it
/// answered, if it did not.
fn refusal(results: &[Value], n: usize) -> Option<Refusal> {
    let failed = results.iter().find_map(|v| match v {
        Value::ServerError(e) => Some(e.clone()),
        _ => None,
    });
    if results.len() >= n && failed.is_none() {
        return None;
    }
    if let Some(e) = &failed {
        if e.code() == "NOSCRIPT" {
            return Some(Refusal::NoScript);
        }
    }
    Some(Refusal::Why(match failed {
        Some(e) => format!(
            "Redis refused a completion: {} {}",
            e.code(),
            e.details().unwrap_or_default()
        ),
        None => "Redis answered fewer replies than it was sent commands".to_string(),
    }))
}

/// Counts the tasks completed (and those completed twice), and deletes
/// the tiles whose last reader each completion was: forgotten by the
/// `dead` set in the next round trip (best effort: what stays in the set
/// is swept by `collect`).
fn count_results(sh: &Shared<'_>, ctx: &RunCtx, dead_key: &str, results: &[Value]) {
    for result in results {
        let result = array(result);
        let fresh = result.first().and_then(int).unwrap_or(0);
        let state = result.get(2).and_then(text).unwrap_or_default();
        if state == RunState::Running.as_str() {
            sh.tasks.fetch_add(1, Ordering::Relaxed);
            if fresh == 0 {
                sh.duplicates.fetch_add(1, Ordering::Relaxed);
            }
        }
        for dead in result.iter().skip(3).filter_map(text) {
            if delete_dead(sh, ctx, &dead) {
                lock(&sh.forget).push((dead_key.to_string(), dead));
            }
        }
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
