//! Which workers live, and which kernels each has.
//!
//! A worker registers when it starts and every third of its lease while
//! it runs: `lpk:worker:NAME` ([`Keys::worker`]) holds the names of the
//! kernels of its registry, with its lease as time to live, and
//! `lpk:workers` ([`Keys::workers`]) names it. A worker that dies stops
//! renewing, and its key expires one lease later, as its tasks' leases
//! do; one that exits deletes it. `lpkc status` reads the live workers'
//! kernels to tell which kernels of a run no live worker has.

use crate::conn::Redis;
use crate::error::ClusterError;
use crate::protocol::Keys;
use std::time::Duration;

/// A live worker, as it registered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveWorker {
    /// Its name.
    pub name: String,
    /// The names of its kernels.
    pub kernels: Vec<String>,
}

/// The shortest time to live of a registration (Redis counts in ms, and
/// a renewal must be able to arrive before it ends).
const MIN_TTL: Duration = Duration::from_millis(150);

/// Registers (or renews) worker `name` with `kernels` for `ttl`.
pub(crate) fn register(
    r: &mut Redis,
    name: &str,
    kernels: &str,
    ttl: Duration,
) -> Result<(), ClusterError> {
    let ttl_ms = ttl.max(MIN_TTL).as_millis().to_string();
    let mut pipe = redis::pipe();
    pipe.cmd("SET")
        .arg(Keys::worker(name))
        .arg(kernels)
        .arg("PX")
        .arg(&ttl_ms)
        .ignore()
        .cmd("SADD")
        .arg(Keys::workers())
        .arg(name)
        .ignore();
    r.pipe::<()>(&pipe, "registering the worker")
}

/// Deletes worker `name`'s registration (it exits).
pub(crate) fn unregister(r: &mut Redis, name: &str) -> Result<(), ClusterError> {
    let mut pipe = redis::pipe();
    pipe.cmd("DEL")
        .arg(Keys::worker(name))
        .ignore()
        .cmd("SREM")
        .arg(Keys::workers())
        .arg(name)
        .ignore();
    r.pipe::<()>(&pipe, "unregistering the worker")
}

/// The workers registered in this Redis whose registration has not
/// expired, by name; the names of those gone are removed from
/// `lpk:workers` on the way.
pub fn live_workers(r: &mut Redis) -> Result<Vec<LiveWorker>, ClusterError> {
    let mut names: Vec<String> = r.query(
        redis::cmd("SMEMBERS").arg(Keys::workers()),
        "listing the workers",
    )?;
    names.sort();
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let mut pipe = redis::pipe();
    for n in &names {
        pipe.cmd("GET").arg(Keys::worker(n));
    }
    let values: Vec<Option<String>> = r.pipe(&pipe, "reading the workers' kernels")?;
    let mut live = Vec::new();
    let mut gone = Vec::new();
    for (name, value) in names.into_iter().zip(values) {
        match value {
            Some(v) => live.push(LiveWorker {
                name,
                kernels: v
                    .split(',')
                    .filter(|k| !k.is_empty())
                    .map(str::to_string)
                    .collect(),
            }),
            None => gone.push(name),
        }
    }
    if !gone.is_empty() {
        // A worker renewing meanwhile adds itself again.
        r.query::<()>(
            redis::cmd("SREM").arg(Keys::workers()).arg(&gone),
            "forgetting the workers gone",
        )?;
    }
    Ok(live)
}
