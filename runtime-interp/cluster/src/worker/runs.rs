//! The runs a worker serves: those in `lpk:runs` whose record it loads,
//! and the refusal of a run no worker can serve.

use super::{lock, RunCtx, Shared, WorkerConfig};
use crate::conn::{Redis, Script};
use crate::error::ClusterError;
use crate::markers::DoneLog;
use crate::protocol::{Keys, FAIL, RUNS};
use crate::record::{now_ms, Kernels, RunRecord};
use crate::tiles::open_run_store;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The runs to work on: those in `lpk:runs` whose record this worker
/// reads (a run it cannot read is reported once and skipped).
pub(super) fn active_runs(
    sh: &Shared<'_>,
    r: &mut Redis,
) -> Result<Vec<Arc<RunCtx>>, ClusterError> {
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
                let ctx = match load_run(r, &id, sh.cfg) {
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

/// Loads a run from its record: its program, bound and counted (the count
/// checked against the record's and its limit), its kernels (from the
/// worker's registry, checked: [`super::kernels`]) and its store.
fn load_run(r: &mut Redis, id: &str, cfg: &WorkerConfig) -> Result<RunCtx, ClusterError> {
    let rec = RunRecord::read(r, id)?;
    let program = rec.load_program()?;
    // Check the binding once; each batch binds again (cheap).
    let inst = rec.bind(&program)?;
    // Nothing in Redis is trusted: parameters raised after submission
    // would make tasks (and tiles) the submitter never counted.
    let counted = rec.count_tasks(&inst)?;
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
    let kernels = match rec.kernels {
        Kernels::Standard => {
            super::kernels::check(&rec, &inst, &cfg.kernels)?;
            lpk_runtime::exec::resolve_kernels(&program, &cfg.kernels)?
        }
        Kernels::Noop => lpk_runtime::exec::resolve_kernels(
            &program,
            &lpk_runtime::exec::noop_registry(&program),
        )?,
    };
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
        done_log: DoneLog::new(&cfg.name),
    })
}
