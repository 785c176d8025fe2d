//! `lpk.submit` and `lpk.status`: the distributed back end (crate
//! `lpk-cluster`) from Python, as `lpkc submit` and `lpkc status --format
//! json` do it. Workers are `lpkc worker --redis URL` processes.

use crate::{json_to_py, BindError, LpkError};
use lpk_cluster::conn::Redis;
use lpk_cluster::record::Kernels;
use lpk_cluster::ClusterError;
use lpk_model::program::Program;
use lpk_model::MatrixId;
use lpk_runtime::dense::InputSpec;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::BTreeMap;

/// A back-end error as a Python exception: a bad URL or run id is a
/// `ValueError`, anything else an `LpkError`.
pub(crate) fn error(e: ClusterError) -> PyErr {
    match e {
        ClusterError::BadUrl { .. } | ClusterError::BadRunId(_) => {
            PyValueError::new_err(e.to_string())
        }
        ClusterError::Job(j) => match *j {
            lpk_runtime::job::JobError::Bind { error, .. } => BindError::new_err(error.to_string()),
            other => PyValueError::new_err(other.to_string()),
        },
        ClusterError::Refused(m) => PyValueError::new_err(m),
        other => LpkError::new_err(other.to_string()),
    }
}

/// Submits a run of ``program`` to the Redis at ``redis`` with its tiles
/// in ``store`` (a shared directory's absolute path, ``file:///...`` or
/// ``s3://bucket/prefix``), and returns the run id; ``lpkc worker --redis
/// URL`` processes run it. ``inputs`` maps each input matrix to a ``.npy``
/// path or a spec string (``"spd:4096"``), or a float64 NumPy array (saved
/// to a temporary ``.npy`` file while its tiles are uploaded). Parameters
/// as in :func:`run`.
#[pyfunction]
#[pyo3(signature = (program, inputs, *, redis, store, params=None, block=512, seed=0,
                    keep_intermediates=false, max_expiries=3, max_tasks=None,
                    max_store_bytes=None))]
#[allow(clippy::too_many_arguments)]
pub fn submit(
    py: Python<'_>,
    program: &Bound<'_, PyAny>,
    inputs: &Bound<'_, PyDict>,
    redis: &str,
    store: &str,
    params: Option<&Bound<'_, PyDict>>,
    block: i64,
    seed: u64,
    keep_intermediates: bool,
    max_expiries: u32,
    max_tasks: Option<u64>,
    max_store_bytes: Option<u64>,
) -> PyResult<String> {
    let crate::run::Chosen {
        program: prog,
        params: given,
    } = crate::run::program_of(py, "lpk.submit", program, params)?;
    let block = usize::try_from(block)
        .ok()
        .filter(|&b| b >= 1)
        .ok_or_else(|| PyValueError::new_err(format!("block must be at least 1, found {block}")))?;
    let tmp =
        std::env::temp_dir().join(format!("lpk-submit-{}", lpk_cluster::submit::new_run_id()));
    let result = (|| -> PyResult<String> {
        let specs = input_specs(py, &prog, inputs, &tmp)?;
        let name = format!("{}.lpk", prog.name);
        py.allow_threads(|| {
            let mut conn = Redis::open(redis).map_err(error)?;
            lpk_cluster::submit::submit(
                &mut conn,
                &lpk_cluster::submit::Submission {
                    program: &prog,
                    file: &name,
                    params: &given,
                    inputs: &specs,
                    seed,
                    block,
                    store,
                    kernels: Kernels::Standard,
                    max_expiries,
                    keep_intermediates,
                    limits: lpk_cluster::record::RunLimits {
                        max_tasks,
                        max_store_bytes,
                    },
                },
                &mut |_| {},
            )
            .map(|s| s.run)
            .map_err(error)
        })
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

/// The state of distributed run ``run`` as a dict, as ``lpkc status RUN
/// --format json`` prints it: ``state`` (``running``, ``done``,
/// ``failed``), ``tasks_done`` of ``tasks_total``, the failed task and
/// message, expired leases; with ``blocked=True`` also waiting tasks and
/// the parents they wait for.
#[pyfunction]
#[pyo3(signature = (run, *, redis, lease=10.0, limit=5, blocked=false))]
pub fn status(
    py: Python<'_>,
    run: &str,
    redis: &str,
    lease: f64,
    limit: usize,
    blocked: bool,
) -> PyResult<PyObject> {
    let Some(lease) = lpk_cluster::worker::seconds(lease) else {
        return Err(PyValueError::new_err(format!(
            "lease must be a number of seconds above 0 and at most {} (a year), found {lease}",
            lpk_cluster::worker::MAX_SECONDS
        )));
    };
    let value = py.allow_threads(|| {
        let mut conn = Redis::open(redis).map_err(error)?;
        lpk_cluster::status::status(&mut conn, run, lease, limit, blocked)
            .map(|s| lpk_cluster::status::to_json(&s, true))
            .map_err(error)
    })?;
    json_to_py(py, &value)
}

/// The inputs as specs, by matrix: a spec string or a path as it is, an
/// array through `numpy.save` into `tmp`; every input matrix needs one.
fn input_specs(
    py: Python<'_>,
    prog: &Program,
    inputs: &Bound<'_, PyDict>,
    tmp: &std::path::Path,
) -> PyResult<BTreeMap<MatrixId, InputSpec>> {
    let mut specs: BTreeMap<MatrixId, InputSpec> = BTreeMap::new();
    for (k, v) in inputs.iter() {
        let name: String = k
            .extract()
            .map_err(|_| PyTypeError::new_err("input names must be strings"))?;
        let m = crate::run::input_matrix(prog, &name)?;
        let spec = if let Ok(s) = v.extract::<String>() {
            InputSpec::parse(&s).map_err(|e| PyValueError::new_err(e.to_string()))?
        } else if let Ok(p) = v.extract::<std::path::PathBuf>() {
            InputSpec::File(p)
        } else {
            // An array: through numpy.save into a temporary file.
            std::fs::create_dir_all(tmp)
                .map_err(|e| LpkError::new_err(format!("cannot create {}: {e}", tmp.display())))?;
            let path = tmp.join(format!("{name}.npy"));
            let np = py.import("numpy")?;
            let arr = np.call_method1("ascontiguousarray", (v,))?;
            let dtype = arr.getattr("dtype")?.str()?.to_string();
            if dtype != "float64" {
                return Err(PyTypeError::new_err(format!(
                    "input `{name}` has dtype {dtype}; lpk runs on float64"
                )));
            }
            np.call_method1("save", (path.display().to_string(), arr))?;
            InputSpec::File(path)
        };
        specs.insert(m, spec);
    }
    let missing = lpk_runtime::pipeline::missing_inputs(prog, &specs);
    if !missing.is_empty() {
        return Err(PyValueError::new_err(format!(
            "program `{}` needs data for its input(s) {}",
            prog.name,
            missing.join(", ")
        )));
    }
    Ok(specs)
}
