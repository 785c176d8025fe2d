//! The timeline of a distributed run: workers add one entry per task
//! execution to the run's `trace` stream, in the same pipeline as the
//! task's completion; `lpkc trace` reads them back
//! ([`lpk_runtime::timeline`] writes them as Chrome trace JSON or SVG).

use crate::conn::Redis;
use crate::error::ClusterError;
use crate::ids::parse_task;
use crate::protocol::Keys;
use crate::reply::{array, text};
use lpk_runtime::timeline::Event;
use redis::Value;

/// The most entries a run's trace keeps (older ones are trimmed).
pub(crate) const TRACE_MAX: u64 = 10_000_000;

/// One execution as a worker records it: the task by its id.
pub(crate) type TraceEvent = Event<String>;

/// Adds the `XADD` of `event` to a pipeline (its reply ignored).
pub(crate) fn add_to(pipe: &mut redis::Pipeline, key: &str, event: &TraceEvent) {
    pipe.cmd("XADD")
        .arg(key)
        .arg("MAXLEN")
        .arg("~")
        .arg(TRACE_MAX)
        .arg("*")
        .arg("t")
        .arg(&event.task)
        .arg("w")
        .arg(&event.worker)
        .arg("s")
        .arg(event.start_us)
        .arg("e")
        .arg(event.end_us)
        .arg("r")
        .arg(event.read_bytes)
        .arg("b")
        .arg(event.written_bytes)
        .arg("x")
        .arg(u8::from(event.retry))
        .ignore();
}

/// Every recorded execution of run `run`, oldest first; entries this
/// version cannot read are counted in the second value and skipped.
pub fn read(redis: &mut Redis, run: &str) -> Result<(Vec<Event>, u64), ClusterError> {
    crate::error::check_run_id(run)?;
    let key = Keys::new(run).trace();
    let mut events = Vec::new();
    let mut skipped = 0u64;
    let mut start = "-".to_string();
    loop {
        let batch: Value = redis.query(
            redis::cmd("XRANGE")
                .arg(&key)
                .arg(&start)
                .arg("+")
                .arg("COUNT")
                .arg(10_000),
            "reading the trace",
        )?;
        let entries = array(&batch);
        if entries.is_empty() {
            break;
        }
        let mut last = None;
        for e in entries {
            let parts = array(e);
            last = parts.first().and_then(text);
            let fields: Vec<Option<String>> = parts
                .get(1)
                .map(array)
                .unwrap_or(&[])
                .iter()
                .map(text)
                .collect();
            let get = |name: &str| -> Option<String> {
                fields
                    .chunks(2)
                    .find(|p| p.first().and_then(|k| k.as_deref()) == Some(name))
                    .and_then(|p| p.get(1).cloned().flatten())
            };
            let num = |name: &str| get(name).and_then(|v| v.parse::<u64>().ok());
            let event = (|| {
                Some(Event {
                    task: parse_task(&get("t")?).ok()?,
                    worker: get("w")?,
                    start_us: num("s")?,
                    end_us: num("e")?,
                    read_bytes: num("r")?,
                    written_bytes: num("b")?,
                    retry: num("x")? == 1,
                })
            })();
            match event {
                Some(ev) => events.push(ev),
                None => skipped += 1,
            }
            if events.len() as u64 + skipped > TRACE_MAX {
                break;
            }
        }
        match last {
            Some(id) if entries.len() == 10_000 => start = format!("({id}"),
            _ => break,
        }
    }
    Ok((events, skipped))
}
