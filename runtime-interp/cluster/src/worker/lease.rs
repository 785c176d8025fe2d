//! The run streams and their leases: reading new entries, taking over
//! those whose lease expired, renewing the leases of held ones, and
//! skipping a run whose queue is gone.

use super::{lock, nap, RunCtx, Shared};
use crate::conn::{Redis, Script};
use crate::error::ClusterError;
use crate::protocol::{Keys, GROUP, RENEW};
use crate::reply::{array, int, text};
use redis::Value;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Renews the worker's registration and the leases of held tasks every
/// third of the lease.
pub(super) fn renew_loop(sh: &Shared<'_>) {
    let renew = Script::new(RENEW);
    let mut redis: Option<Redis> = None;
    let period = (sh.cfg.lease / 3).max(Duration::from_millis(50));
    let kernels = super::kernel_names(sh.cfg);
    while !sh.stop.load(Ordering::Relaxed) {
        nap(sh, period);
        if sh.stop.load(Ordering::Relaxed) {
            break;
        }
        if redis.is_none() {
            redis = Redis::open(&sh.cfg.redis).ok();
        }
        if let Some(r) = redis.as_mut() {
            if crate::workers::register(r, &sh.cfg.name, &kernels, sh.cfg.lease).is_err() {
                redis = None;
            }
        }
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
pub(super) struct Entry {
    pub(super) id: String,
    pub(super) task: String,
    pub(super) deliveries: u64,
}

/// Takes over entries of a run whose lease expired.
pub(super) fn take_over(
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
pub(super) type RunEntries = (Arc<RunCtx>, Vec<Entry>);

/// Reads new entries from every active run's stream.
pub(super) fn read_new(
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
pub(super) fn stream_entries(reply: &Value, key: &str) -> Vec<Entry> {
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
