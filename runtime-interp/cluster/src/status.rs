//! `lpkc status`: what a run is doing, and for a run that does not
//! progress, what it waits for.

use crate::conn::Redis;
use crate::error::ClusterError;
use crate::ids::parse_task;
use crate::protocol::{Keys, GROUP};
use crate::record::{now_ms, Kernels, RunRecord, RunState};
use crate::reply::{array, text};
use crate::workers::LiveWorker;
use lpk_model::program::Program;
use lpk_model::task::Task;
use redis::Value;
use std::time::Duration;

/// A task as the status shows it: its id, and the task if the id reads.
#[derive(Clone, Debug)]
pub struct ShownTask {
    /// The id in Redis.
    pub id: String,
    /// The task.
    pub task: Option<Task>,
}

impl ShownTask {
    /// Whether it names no task at all: the error of a run that failed as
    /// a whole (a worker refused it at load), not in a task.
    pub fn is_none(&self) -> bool {
        self.task.is_none() && self.id.is_empty()
    }
}

/// A claimed task whose lease expired.
#[derive(Clone, Debug)]
pub struct Expired {
    /// The task.
    pub task: ShownTask,
    /// The worker thread that holds it.
    pub consumer: String,
    /// Time since its holder last renewed it.
    pub idle: Duration,
    /// Times it was handed out.
    pub deliveries: u64,
}

/// A task waiting for parents, and the parents it still waits for.
#[derive(Clone, Debug)]
pub struct Waiting {
    /// The task.
    pub task: ShownTask,
    /// Parent edges counted so far.
    pub counted: usize,
    /// Its in-degree (from the plans).
    pub in_degree: usize,
    /// The parents not yet counted, with the tile each one writes.
    pub missing: Vec<(ShownTask, String)>,
}

/// The state of one run.
#[derive(Clone, Debug)]
pub struct Status {
    /// The record.
    pub record: RunRecord,
    /// The run's program (for task names).
    pub program: Program,
    /// Ready tasks no worker has taken yet.
    pub unclaimed: u64,
    /// Tasks workers hold.
    pub claimed: u64,
    /// A few unclaimed tasks, oldest first.
    pub unclaimed_tasks: Vec<ShownTask>,
    /// Claimed tasks whose lease expired (at most `limit`).
    pub expired: Vec<Expired>,
    /// With `blocked`: a few tasks that wait for parents, and which.
    pub waiting: Vec<Waiting>,
    /// The failed task and the error.
    pub error: Option<(ShownTask, String)>,
    /// Tasks completed per second since submission (until it finished).
    pub rate: f64,
    /// Workers alive in this Redis now (registered, not expired).
    pub live_workers: usize,
    /// For a running run: the kernels it calls that no live worker has,
    /// each with the line of its first call (its tasks wait until a
    /// worker that has them comes).
    pub missing_kernels: Vec<(String, u32)>,
}

fn shown(id: &str) -> ShownTask {
    ShownTask {
        id: id.to_string(),
        task: parse_task(id).ok(),
    }
}

/// Reads run `run`'s state; leases idle longer than `lease` count as
/// expired; lists at most `limit` tasks of each kind, and with `blocked`
/// also waiting tasks with the parents they still wait for.
pub fn status(
    redis: &mut Redis,
    run: &str,
    lease: Duration,
    limit: usize,
    blocked: bool,
) -> Result<Status, ClusterError> {
    let record = RunRecord::read(redis, run)?;
    let program = record.load_program()?;
    let keys = Keys::new(run);
    let queue = keys.queue();
    let len: u64 = redis.query(redis::cmd("XLEN").arg(&queue), "reading the ready stream")?;
    let summary: Value = redis.query(
        redis::cmd("XPENDING").arg(&queue).arg(GROUP),
        "reading the claimed tasks",
    )?;
    let claimed = array(&summary)
        .first()
        .and_then(text)
        .and_then(|t| t.parse::<u64>().ok())
        .unwrap_or(0);
    let unclaimed = len.saturating_sub(claimed);
    let limit = limit.max(1);
    let unclaimed_tasks = if unclaimed > 0 {
        unclaimed_tasks(redis, &queue, limit)?
    } else {
        Vec::new()
    };
    let expired = if claimed > 0 {
        expired_leases(redis, &queue, lease, limit)?
    } else {
        Vec::new()
    };
    let waiting = if blocked && record.state == RunState::Running {
        waiting_tasks(redis, &keys, &record, &program, limit)?
    } else {
        Vec::new()
    };
    let rate = rate(&record);
    let live = crate::workers::live_workers(redis)?;
    let missing_kernels =
        if record.state == RunState::Running && record.kernels == Kernels::Standard {
            missing_kernels(&program, &live)
        } else {
            Vec::new()
        };
    let error = record
        .error
        .as_ref()
        .map(|(task, message)| (shown(task), message.clone()));
    Ok(Status {
        record,
        program,
        unclaimed,
        claimed,
        unclaimed_tasks,
        expired,
        waiting,
        error,
        rate,
        live_workers: live.len(),
        missing_kernels,
    })
}

/// The kernels `program` calls that none of `live` has, each with the
/// line of its first call, in the order of the statements.
fn missing_kernels(program: &Program, live: &[LiveWorker]) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = Vec::new();
    for st in &program.statements {
        let Some(k) = program.get_kernel(st.kernel) else {
            continue;
        };
        let had = live.iter().any(|w| w.kernels.contains(&k.name));
        if !had && !out.iter().any(|(n, _)| *n == k.name) {
            out.push((k.name.clone(), st.line));
        }
    }
    out
}

/// Up to `limit` unclaimed tasks, oldest first: the entries of stream
/// `queue` after the group's last delivered id.
fn unclaimed_tasks(
    redis: &mut Redis,
    queue: &str,
    limit: usize,
) -> Result<Vec<ShownTask>, ClusterError> {
    let groups: Value = redis.query(
        redis::cmd("XINFO").arg("GROUPS").arg(queue),
        "reading the consumer group",
    )?;
    let start = match last_delivered(&groups) {
        Some(id) => format!("({id}"),
        None => "-".to_string(),
    };
    let entries: Value = redis.query(
        redis::cmd("XRANGE")
            .arg(queue)
            .arg(start)
            .arg("+")
            .arg("COUNT")
            .arg(limit),
        "reading unclaimed tasks",
    )?;
    let mut out = Vec::new();
    for e in array(&entries) {
        let fields = array(e).get(1).map(array).unwrap_or(&[]);
        if let Some(id) = fields.get(1).and_then(text) {
            out.push(shown(&id));
        }
    }
    Ok(out)
}

/// The last id delivered to the workers' group, from an `XINFO GROUPS`
/// reply.
fn last_delivered(groups: &Value) -> Option<String> {
    let mut last = None;
    for g in array(groups) {
        let fields = array(g);
        let mut name = None;
        let mut delivered = None;
        for pair in fields.chunks(2) {
            match (pair.first().and_then(text).as_deref(), pair.get(1)) {
                (Some("name"), Some(v)) => name = text(v),
                (Some("last-delivered-id"), Some(v)) => delivered = text(v),
                _ => {}
            }
        }
        if name.as_deref() == Some(GROUP) {
            last = delivered;
        }
    }
    last
}

/// Up to `limit` claimed tasks of stream `queue` whose holder has not
/// renewed them for `lease`.
fn expired_leases(
    redis: &mut Redis,
    queue: &str,
    lease: Duration,
    limit: usize,
) -> Result<Vec<Expired>, ClusterError> {
    let idle_ms = lease.as_millis().max(1) as u64;
    let pending: Value = redis.query(
        redis::cmd("XPENDING")
            .arg(queue)
            .arg(GROUP)
            .arg("IDLE")
            .arg(idle_ms)
            .arg("-")
            .arg("+")
            .arg(limit),
        "reading expired leases",
    )?;
    let mut expired = Vec::new();
    for p in array(&pending) {
        let f = array(p);
        let (Some(id), Some(consumer), Some(idle), Some(n)) = (
            f.first().and_then(text),
            f.get(1).and_then(text),
            f.get(2).and_then(text).and_then(|t| t.parse::<u64>().ok()),
            f.get(3).and_then(text).and_then(|t| t.parse::<u64>().ok()),
        ) else {
            continue;
        };
        let entry: Value = redis.query(
            redis::cmd("XRANGE").arg(queue).arg(&id).arg(&id),
            "reading an expired task",
        )?;
        let task = array(&entry)
            .first()
            .map(array)
            .and_then(|e| e.get(1))
            .map(array)
            .and_then(|f| f.get(1))
            .and_then(text)
            .unwrap_or(id);
        expired.push(Expired {
            task: shown(&task),
            consumer,
            idle: Duration::from_millis(idle),
            deliveries: n,
        });
    }
    Ok(expired)
}

/// Tasks completed per second since submission (until the run finished).
fn rate(record: &RunRecord) -> f64 {
    let end = if record.state == RunState::Running {
        now_ms()
    } else {
        record.finished_ms.unwrap_or_else(now_ms)
    };
    let secs = end.saturating_sub(record.created_ms) as f64 / 1000.0;
    if secs > 0.0 {
        record.done as f64 / secs
    } else {
        0.0
    }
}

/// A few waiting tasks (those with some parent edges counted), and from
/// the parents plans which parents they still wait for.
fn waiting_tasks(
    redis: &mut Redis,
    keys: &Keys,
    record: &RunRecord,
    program: &Program,
    limit: usize,
) -> Result<Vec<Waiting>, ClusterError> {
    let pattern = keys.edges_pattern();
    let mut found: Vec<String> = Vec::new();
    let mut cursor = "0".to_string();
    // A bounded scan: at most 100 rounds.
    for _ in 0..100 {
        let (next, batch) = redis.scan(&cursor, &pattern, "listing waiting tasks")?;
        found.extend(batch);
        cursor = next;
        if cursor == "0" || found.len() >= limit {
            break;
        }
    }
    found.truncate(limit);
    let inst = record.bind(program)?;
    let mut engine = lpk_model::query::Engine::new(&inst);
    let mut out = Vec::new();
    for key in found {
        let id = keys.task_of_edges(&key).unwrap_or(&key).to_string();
        let counted: Vec<String> =
            redis.query(redis::cmd("SMEMBERS").arg(&key), "reading a waiting task")?;
        let task = shown(&id);
        let mut missing = Vec::new();
        let mut in_degree = 0;
        if let Some(t) = task.task.as_ref().filter(|t| engine.check_task(t).is_ok()) {
            for (parent, tile) in engine.parents(t)? {
                in_degree += 1;
                let tid = crate::ids::tile_id(tile.matrix, &tile.index);
                if !counted.contains(&tid) {
                    missing.push((
                        ShownTask {
                            id: crate::ids::task_id(&parent),
                            task: Some(parent),
                        },
                        program.tile_name(&tile),
                    ));
                }
            }
        }
        out.push(Waiting {
            task,
            counted: counted.len(),
            in_degree,
            missing,
        });
    }
    Ok(out)
}

fn task_value(program: &Program, t: &ShownTask, names: bool) -> serde_json::Value {
    match &t.task {
        Some(task) if program.get_statement(task.stmt).is_some() => {
            let mut v = lpk_model::task::task_json(program, task);
            if names {
                v["name"] = program.task_name(task).to_string().into();
            }
            v
        }
        _ => serde_json::json!({ "id": t.id }),
    }
}

/// The status object of `lpkc status --format json` (the JSON contract,
/// `docs/cli.md`); with `names`, each task also carries its `name`
/// (`chol@37(k=0)`), as the Python package gives it.
pub fn to_json(s: &Status, names: bool) -> serde_json::Value {
    let r = &s.record;
    serde_json::json!({
        "run": r.id,
        "state": r.state.as_str(),
        "program": r.program,
        "tasks_total": r.total,
        "tasks_done": r.done,
        "tasks_per_second": s.rate,
        "ready_unclaimed": s.unclaimed,
        "claimed": s.claimed,
        "store_bytes": r.stored_bytes,
        "store_peak_bytes": r.peak_bytes,
        "live_workers": s.live_workers,
        "missing_kernels": s.missing_kernels.iter().map(|(k, line)| serde_json::json!({
            "kernel": k,
            "line": line,
        })).collect::<Vec<_>>(),
        "error": s.error.as_ref().map(|(t, m)| serde_json::json!({
            "task": (!t.is_none()).then(|| task_value(&s.program, t, names)),
            "message": m,
        })),
        "unclaimed_tasks": s.unclaimed_tasks.iter().map(|t| task_value(&s.program, t, names)).collect::<Vec<_>>(),
        "waiting": s.waiting.iter().map(|w| serde_json::json!({
            "task": task_value(&s.program, &w.task, names),
            "counted": w.counted,
            "in_degree": w.in_degree,
            "waits_for": w.missing.iter().map(|(p, tile)| serde_json::json!({
                "task": task_value(&s.program, p, names),
                "tile": tile,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "expired_leases": s.expired.iter().map(|e| serde_json::json!({
            "task": task_value(&s.program, &e.task, names),
            "worker": e.consumer,
            "idle_seconds": e.idle.as_secs_f64(),
            "deliveries": e.deliveries,
        })).collect::<Vec<_>>(),
    })
}
