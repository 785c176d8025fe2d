//! `lpk.worker`: a distributed worker (`lpk_cluster::worker::work`, the
//! loop of `lpkc worker`) whose registry holds Python user kernels on top
//! of the standard ones, so runs that call them can be served
//! (`python -m lpk worker --kernels MODULE` wraps it).
//!
//! Kernels come as `{name: lpk.Kernel}`: a worker serves runs of many
//! programs, so nothing binds a kernel to one program's declaration; what
//! the embedded run takes from the declaration (the result count) must
//! be declared by `@lpk.kernel(results=..., shape=...)`, and a plain
//! callable is refused. The worker loop runs on its own thread without
//! the GIL (each kernel call attaches it); the calling thread polls for
//! signals every 100 ms and, on Ctrl-C or any exception a signal handler
//! raises, sets the worker's stop flag, waits for it to finish the tasks
//! it holds, and raises that exception.

use crate::kernels::{registry, user_kernels};
use lpk_cluster::faults::Faults;
use lpk_cluster::worker::{default_name, seconds, work, WorkerConfig, WorkerReport, MAX_SECONDS};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Checks that every entry of `kernels` is an `lpk.kernel(...)`: a worker
/// cannot take the result count from a program's declaration.
fn declared_only(kernels: &Bound<'_, PyDict>) -> PyResult<()> {
    for (k, v) in kernels.iter() {
        if v.hasattr("__lpk_kernel__")? {
            continue;
        }
        let name = k.str().map(|s| s.to_string()).unwrap_or_default();
        let what = if v.is_callable() {
            "a plain callable".to_string()
        } else {
            format!("a {}", v.get_type().name()?)
        };
        return Err(PyTypeError::new_err(format!(
            "kernel `{name}` is {what}; a worker serves runs of any program, so its kernels \
             declare what they return: decorate the function with \
             @lpk.kernel(results=..., shape=...) (docs/python.md, \"User kernels\")"
        )));
    }
    Ok(())
}

/// A number of seconds argument, checked.
fn secs(what: &str, value: f64) -> PyResult<Duration> {
    seconds(value).ok_or_else(|| {
        PyValueError::new_err(format!(
            "{what} must be a number of seconds above 0 and at most {MAX_SECONDS} (a year), \
             found {value}"
        ))
    })
}

/// The report as a dict.
fn report_dict<'py>(py: Python<'py>, r: &WorkerReport, name: &str) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", name)?;
    d.set_item("tasks", r.tasks)?;
    d.set_item("taken_over", r.taken_over)?;
    d.set_item("duplicates", r.duplicates)?;
    d.set_item("failed_runs", r.failed_runs)?;
    d.set_item("round_trips", r.round_trips)?;
    Ok(d)
}

/// Runs a distributed worker on the Redis at ``redis`` until it has been
/// idle for ``idle`` seconds, with ``kernels`` (``{name: lpk.Kernel}``)
/// added to the standard kernels; returns what it did as a dict. Use
/// :func:`lpk.worker`, which also reads kernels from modules.
#[pyfunction]
#[pyo3(signature = (redis, *, kernels=None, name=None, threads=1, lease=30.0, idle=60.0,
                    cache_mb=1024, quiet=false, inject_faults=None))]
#[allow(clippy::too_many_arguments)]
pub fn worker(
    py: Python<'_>,
    redis: &str,
    kernels: Option<&Bound<'_, PyDict>>,
    name: Option<String>,
    threads: i64,
    lease: f64,
    idle: f64,
    cache_mb: u64,
    quiet: bool,
    inject_faults: Option<&str>,
) -> PyResult<PyObject> {
    let mut cfg = WorkerConfig::new(redis);
    let mut own: Vec<String> = Vec::new();
    if let Some(k) = kernels {
        declared_only(k)?;
        own = k.keys().iter().map(|n| n.to_string()).collect();
        cfg.kernels = registry(user_kernels(k)?.into_iter().map(Arc::new).collect());
    }
    cfg.threads = usize::try_from(threads)
        .ok()
        .filter(|t| (1..=1024).contains(t))
        .ok_or_else(|| {
            PyValueError::new_err(format!("threads must be 1 to 1024, found {threads}"))
        })?;
    cfg.lease = secs("lease", lease)?;
    cfg.idle = secs("idle", idle)?;
    cfg.cache_bytes = cache_mb.saturating_mul(1 << 20);
    if let Some(spec) = inject_faults {
        cfg.faults = Faults::parse(spec).map_err(|e| PyValueError::new_err(e.to_string()))?;
    }
    cfg.name = match name {
        Some(n) if n.is_empty() || n.chars().any(char::is_whitespace) => {
            return Err(PyValueError::new_err(format!(
                "name must be non-empty without spaces, found {n:?}"
            )))
        }
        Some(n) => n,
        None => default_name(),
    };
    let stop = Arc::new(AtomicBool::new(false));
    cfg.stop = Some(stop.clone());
    let label = cfg.name.clone();
    let log = move |m: &str| {
        if !quiet {
            eprintln!("worker {label}: {m}");
        }
    };
    if !quiet {
        eprintln!(
            "worker {}: {} thread(s), lease {lease:.1} s, idle {idle:.1} s, Redis {}, kernels: \
             the standard ones{}",
            cfg.name,
            cfg.threads,
            lpk_cluster::conn::redacted(&cfg.redis),
            if own.is_empty() {
                String::new()
            } else {
                format!(" and {}", own.join(", "))
            }
        );
    }
    let (report, interrupted) = serve(py, &cfg, &log, &stop);
    if let Some(e) = interrupted {
        return Err(e);
    }
    let report = report.map_err(crate::distributed::error)?;
    Ok(report_dict(py, &report, &cfg.name)?.into_any().unbind())
}

/// Runs `work` on a thread of its own (without the GIL) while this thread
/// polls for signals; a signal's exception stops the worker (it finishes
/// its tasks) and is returned beside the worker's result.
fn serve(
    py: Python<'_>,
    cfg: &WorkerConfig,
    log: &(dyn Fn(&str) + Sync),
    stop: &AtomicBool,
) -> (
    Result<WorkerReport, lpk_cluster::ClusterError>,
    Option<PyErr>,
) {
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(move || {
            // A panic (a bug) becomes an error, not a crash of Python.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(cfg, log)))
                .unwrap_or_else(|_| {
                    Err(lpk_cluster::ClusterError::Refused(
                        "the worker panicked (a bug: please report it)".into(),
                    ))
                });
            let _ = tx.send(result);
        });
        let mut interrupted = None;
        let mut rx = rx;
        loop {
            let (back, got) = py.allow_threads(move || {
                let got = rx.recv_timeout(Duration::from_millis(100));
                (rx, got)
            });
            rx = back;
            match got {
                Ok(result) => return (result, interrupted),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return (
                        Err(lpk_cluster::ClusterError::Refused(
                            "the worker thread ended without a result".into(),
                        )),
                        interrupted,
                    )
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if interrupted.is_none() {
                if let Err(e) = py.check_signals() {
                    stop.store(true, Ordering::Relaxed);
                    interrupted = Some(e);
                }
            }
        }
    })
}
