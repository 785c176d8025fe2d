//! `lpk.run`: the run pipeline on NumPy arrays. Input tiles are cut
//! straight from each array's buffer (C-contiguous float64, borrowed for
//! the run, never copied whole: `job::Input::Borrowed`, by the same
//! `InputSource` as `lpkc run`); every 2-D output whose shape is known
//! before the run is written tile by tile into one row-major buffer that
//! becomes the returned array without a copy; other outputs are
//! assembled from their tiles at the end, as `lpkc run` does. The GIL is
//! released while the run runs, and Ctrl-C cancels it through the
//! executor's cancel flag.

use crate::kernels::PyKernel;
use crate::objects::PyInstance;
use crate::{json_to_py, params_of, BindError, PyProgram, PyTile, RunError};
use faer::{MatMut, MatRef};
use lpk_model::program::Program;
use lpk_model::MatrixId;
use lpk_runtime::dense::{AssembleError, InputSpec};
use lpk_runtime::exec::{self, ExecConfig, ExecError, Progress, TileError, TileSink};
use lpk_runtime::job::{Input, InputSource};
use lpk_runtime::kernels::{Registry, Tile};
use lpk_runtime::pipeline::{self, PrepareError, TilesOf};
use numpy::{
    PyArray1, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An output written in place into a row-major buffer.
struct Placed {
    name: String,
    rows: usize,
    cols: usize,
    buf: Mutex<Vec<f64>>,
}

/// Where output tiles go.
struct Sink {
    block: usize,
    placed: BTreeMap<MatrixId, Placed>,
    collected: BTreeMap<MatrixId, Mutex<TilesOf>>,
}

impl TileSink for Sink {
    fn output(&self, matrix: MatrixId, index: &[i64], tile: Arc<Tile>) -> Result<(), TileError> {
        if let Some(p) = self.placed.get(&matrix) {
            let shape = (p.rows, p.cols);
            let (r0, c0) = pipeline::place_tile(self.block, &p.name, index, shape, &tile)?;
            let mut buf = p.buf.lock().unwrap_or_else(|e| e.into_inner());
            MatMut::from_row_major_slice_mut(&mut buf, p.rows, p.cols)
                .submatrix_mut(r0, c0, tile.nrows(), tile.ncols())
                .copy_from(tile.as_ref());
            return Ok(());
        }
        if let Some(c) = self.collected.get(&matrix) {
            let mut c = c.lock().unwrap_or_else(|e| e.into_inner());
            if c.insert(index.to_vec(), tile).is_some() {
                return Err(TileError::WrittenTwice {
                    matrix,
                    index: index.to_vec(),
                });
            }
        }
        Ok(())
    }
}

/// A tile as a row-major buffer.
fn row_major(t: &Tile) -> Vec<f64> {
    let (r, c) = (t.nrows(), t.ncols());
    let mut v = vec![0.0; r * c];
    MatMut::from_row_major_slice_mut(&mut v, r, c).copy_from(t.as_ref());
    v
}

/// One output of a finished run.
enum Out {
    /// A whole matrix, row-major.
    Dense {
        rows: usize,
        cols: usize,
        data: Vec<f64>,
    },
    /// Tiles that form no grid: each tile, row-major.
    Tiles {
        tiles: Vec<(lpk_runtime::kernels::Tile, Vec<i64>)>,
    },
}

/// A finished run.
struct Done {
    outputs: Vec<(String, Out)>,
    report: serde_json::Value,
}

/// The sink of a run's outputs: each 2-D output whose shape the
/// pipeline predicts gets a row-major buffer, the others are collected as
/// tiles.
fn output_sink(
    program: &Program,
    shapes: &BTreeMap<MatrixId, Option<pipeline::Shape>>,
    block: usize,
) -> PyResult<Sink> {
    let mut placed = BTreeMap::new();
    let mut collected = BTreeMap::new();
    for (&m, &shape) in shapes {
        let name = program.matrix(m).name.clone();
        let Some((rows, cols)) = shape else {
            collected.insert(m, Mutex::new(TilesOf::new()));
            continue;
        };
        let len = rows
            .checked_mul(cols)
            .filter(|&n| n <= isize::MAX as usize / 8);
        let Some(len) = len else {
            return Err(PyValueError::new_err(format!(
                "output `{name}` would be {rows}×{cols}: too large"
            )));
        };
        let buf = Mutex::new(vec![0.0; len]);
        placed.insert(
            m,
            Placed {
                name,
                rows,
                cols,
                buf,
            },
        );
    }
    Ok(Sink {
        block,
        placed,
        collected,
    })
}

/// The pipeline's prepare stage on the arrays' shapes; its errors as
/// Python exceptions.
fn prepare<'p>(
    program: &'p Program,
    registry: &Registry,
    given: &[(String, i64)],
    shapes: &BTreeMap<MatrixId, pipeline::Shape>,
    block: usize,
) -> PyResult<pipeline::Bound<'p>> {
    pipeline::bind(program, registry, given, shapes, block).map_err(|e| match e {
        PrepareError::Shape(e) => PyValueError::new_err(e.to_string()),
        PrepareError::Bind { error, .. } => BindError::new_err(error.to_string()),
    })
}

/// Runs `program` on `inputs`: the run pipeline with NumPy buffers as its
/// source and sink; called without the GIL.
#[allow(clippy::too_many_arguments)]
fn execute(
    program: &Program,
    registry: &Registry,
    user: &[Arc<PyKernel>],
    given: &[(String, i64)],
    inputs: &BTreeMap<MatrixId, Input<'_>>,
    block: usize,
    workers: usize,
    verify: bool,
    progress: &Progress,
) -> PyResult<Done> {
    let shapes: BTreeMap<MatrixId, pipeline::Shape> =
        inputs.iter().map(|(&m, d)| (m, d.shape())).collect();
    let bound = prepare(program, registry, given, &shapes, block)?;
    let inst = &bound.instance;
    let predicted = pipeline::output_shapes(inst, registry, &shapes, block);
    // A Python shape rule that failed during the shape check: before any task.
    if let Some(e) = user.iter().find_map(|k| k.take_shape_error()) {
        return Err(PyValueError::new_err(e));
    }
    let sink = output_sink(program, &predicted, block)?;
    let source = InputSource::new(program, inputs, block);
    let config = ExecConfig { workers };
    let report = exec::execute(inst, registry, &source, &sink, true, &config, progress).map_err(
        |e| match e {
            ExecError::Cancelled(n) => pyo3::exceptions::PyKeyboardInterrupt::new_err(format!(
                "run cancelled after {n} tasks"
            )),
            other => RunError::new_err(other.to_string()),
        },
    )?;
    let Sink {
        placed, collected, ..
    } = sink;
    let collected: BTreeMap<MatrixId, TilesOf> = collected
        .into_iter()
        .map(|(m, c)| (m, c.into_inner().unwrap_or_else(|e| e.into_inner())))
        .collect();
    let assembled = pipeline::assemble_whole(inst, &collected, block);
    let residual = if verify {
        Some(residual(inst, inputs, &placed, &assembled, &collected)?)
    } else {
        None
    };
    let outputs = into_outputs(program, placed, assembled, &collected);
    Ok(Done {
        outputs,
        report: report_json(inst, block, &report, residual.as_ref()),
    })
}

/// The residual of `verify=True` on the inputs and the outputs as
/// returned.
fn residual(
    inst: &lpk_model::program::Instance<'_>,
    inputs: &BTreeMap<MatrixId, Input<'_>>,
    placed: &BTreeMap<MatrixId, Placed>,
    assembled: &BTreeMap<MatrixId, Result<Tile, AssembleError>>,
    collected: &BTreeMap<MatrixId, TilesOf>,
) -> PyResult<lpk_runtime::verify::Residual> {
    let mut dense_inputs = BTreeMap::new();
    for (&m, d) in inputs {
        let dense = d.dense().map_err(|e| RunError::new_err(e.to_string()))?;
        dense_inputs.insert(m, dense.into_owned());
    }
    let mut dense_outputs: BTreeMap<MatrixId, Tile> = assembled
        .iter()
        .filter_map(|(&m, t)| Some((m, t.as_ref().ok()?.clone())))
        .collect();
    for (&m, p) in placed {
        let buf = p.buf.lock().unwrap_or_else(|e| e.into_inner());
        let t = MatRef::from_row_major_slice(&buf, p.rows, p.cols).to_owned();
        dense_outputs.insert(m, t);
    }
    pipeline::residual(inst, &dense_inputs, &dense_outputs, collected)
        .map_err(|e| RunError::new_err(format!("verify=True: {e}")))
}

/// The run's report, as `lpkc run --format json` gives it.
fn report_json(
    inst: &lpk_model::program::Instance<'_>,
    block: usize,
    report: &exec::RunReport,
    residual: Option<&lpk_runtime::verify::Residual>,
) -> serde_json::Value {
    let mut value = pipeline::report_json(inst, block, report);
    if let Some(r) = residual {
        value["residual"] = pipeline::residual_json(r);
    }
    value
}

/// The outputs as returned: the placed buffers as they are, the others
/// assembled, or their tiles when they form no grid.
fn into_outputs(
    program: &Program,
    placed: BTreeMap<MatrixId, Placed>,
    assembled: BTreeMap<MatrixId, Result<Tile, AssembleError>>,
    collected: &BTreeMap<MatrixId, TilesOf>,
) -> Vec<(String, Out)> {
    let mut outs = Vec::new();
    for p in placed.into_values() {
        let data = p.buf.into_inner().unwrap_or_else(|e| e.into_inner());
        let (rows, cols) = (p.rows, p.cols);
        outs.push((p.name, Out::Dense { rows, cols, data }));
    }
    for (m, r) in assembled {
        let out = match r {
            Ok(t) => Out::Dense {
                rows: t.nrows(),
                cols: t.ncols(),
                data: row_major(&t),
            },
            Err(_) => Out::Tiles {
                tiles: collected
                    .get(&m)
                    .map(|ts| ts.iter().map(|(k, t)| ((**t).clone(), k.clone())).collect())
                    .unwrap_or_default(),
            },
        };
        outs.push((program.matrix(m).name.clone(), out));
    }
    outs
}

/// A readable type name of a Python value.
fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// What was given for one input.
enum Given<'py> {
    Array(PyReadonlyArrayDyn<'py, f64>),
    Spec(InputSpec),
}

/// Runs a program on NumPy arrays (the native half of ``lpk.run``; see
/// its documentation). Returns ``(outputs, report)``.
#[pyfunction]
#[pyo3(signature = (program, inputs, *, params=None, block=512, workers=None, verify=false, seed=0, kernels=None))]
#[allow(clippy::too_many_arguments)]
pub fn run(
    py: Python<'_>,
    program: &Bound<'_, PyAny>,
    inputs: &Bound<'_, PyDict>,
    params: Option<&Bound<'_, PyDict>>,
    block: i64,
    workers: Option<i64>,
    verify: bool,
    seed: u64,
    kernels: Option<&Bound<'_, PyDict>>,
) -> PyResult<(PyObject, PyObject)> {
    let Chosen {
        program: prog,
        params: given,
    } = program_of(py, "lpk.run", program, params)?;
    let block = usize::try_from(block)
        .ok()
        .filter(|&b| b >= 1)
        .ok_or_else(|| PyValueError::new_err(format!("block must be at least 1, found {block}")))?;
    let workers = match workers {
        None => ExecConfig::default().workers,
        Some(w) => usize::try_from(w)
            .ok()
            .filter(|w| (1..=4096).contains(w))
            .ok_or_else(|| {
                PyValueError::new_err(format!("workers must be 1 to 4096, found {w}"))
            })?,
    };
    let mut user = match kernels {
        Some(k) => crate::kernels::user_kernels(k)?,
        None => Vec::new(),
    };
    crate::kernels::bind_to_program(py, &prog, &mut user)?;
    let user: Vec<Arc<PyKernel>> = user.into_iter().map(Arc::new).collect();
    let registry = crate::kernels::registry(user.clone());
    let givens = givens(py, &prog, inputs)?;
    let data = input_data(&givens, seed)?;
    let progress = Progress::default();
    let done = py.allow_threads(|| {
        cancellable(&progress, || {
            execute(
                &prog, &registry, &user, &given, &data, block, workers, verify, &progress,
            )
        })
    })?;
    drop(data);
    drop(givens);
    let outputs = outputs_to_py(py, &prog, done.outputs)?;
    let report = json_to_py(py, &done.report)?;
    Ok((outputs.into_any().unbind(), report))
}

/// What `lpk.run` and `lpk.submit` run: a program and the parameters
/// given.
pub(crate) struct Chosen {
    /// The program.
    pub(crate) program: Arc<Program>,
    /// The parameters given (`params=`, or an `Instance`'s).
    pub(crate) params: Vec<(String, i64)>,
}

/// The program of an `lpk.Program` (with `params`) or an `lpk.Instance`
/// (its bound parameters; `params=` beside one is an error), refused if it
/// breaks a rule; `function` names the caller in errors.
pub(crate) fn program_of(
    py: Python<'_>,
    function: &str,
    program: &Bound<'_, PyAny>,
    params: Option<&Bound<'_, PyDict>>,
) -> PyResult<Chosen> {
    if let Ok(p) = program.downcast::<PyProgram>() {
        p.get().check_rules(py)?;
        let params = params_of(params)?;
        return Ok(Chosen {
            program: p.get().program.clone(),
            params,
        });
    }
    if let Ok(i) = program.downcast::<PyInstance>() {
        if params.is_some_and(|p| !p.is_empty()) {
            return Err(PyValueError::new_err(
                "params= given with an Instance, whose parameters are bound already; pass the Program instead",
            ));
        }
        let i = i.get();
        i.owner().check_rules(py)?;
        return Ok(Chosen {
            program: i.program.clone(),
            params: i.given(),
        });
    }
    Err(PyTypeError::new_err(format!(
        "{function} takes an lpk.Program or lpk.Instance, found {}",
        type_name(program)
    )))
}

/// The inputs given, by matrix: every key must name an input matrix, and
/// every input matrix needs data.
fn givens<'py>(
    py: Python<'py>,
    prog: &Program,
    inputs: &Bound<'py, PyDict>,
) -> PyResult<BTreeMap<MatrixId, (String, Given<'py>)>> {
    let mut givens: BTreeMap<MatrixId, (String, Given<'py>)> = BTreeMap::new();
    for (k, v) in inputs.iter() {
        let name: String = k
            .extract()
            .map_err(|_| PyTypeError::new_err("input names must be strings"))?;
        let m = input_matrix(prog, &name)?;
        let g = given(py, &name, &v)?;
        if givens.insert(m, (name.clone(), g)).is_some() {
            return Err(PyValueError::new_err(format!(
                "input `{name}` is given twice"
            )));
        }
    }
    let missing = pipeline::missing_inputs(prog, &givens);
    if !missing.is_empty() {
        return Err(PyValueError::new_err(format!(
            "program `{}` needs data for its input(s) {}: pass them as inputs={{'{}': array, ...}} (float64, C-contiguous)",
            prog.name,
            missing.join(", "),
            missing[0]
        )));
    }
    Ok(givens)
}

/// The index of the input matrix `name` (`lpk.run`'s and `lpk.submit`'s
/// inputs): a name that is no matrix, or no input, is a `ValueError`.
pub(crate) fn input_matrix(prog: &Program, name: &str) -> PyResult<MatrixId> {
    pipeline::input_matrix(prog, name).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// One input's value: a spec string, a path, or a float64 C-contiguous
/// 1-D or 2-D array (borrowed read-only for the run).
fn given<'py>(py: Python<'py>, name: &str, v: &Bound<'py, PyAny>) -> PyResult<Given<'py>> {
    if let Ok(s) = v.extract::<String>() {
        return Ok(Given::Spec(
            InputSpec::parse(&s).map_err(|e| PyValueError::new_err(e.to_string()))?,
        ));
    }
    if let Ok(p) = v.extract::<std::path::PathBuf>() {
        return Ok(Given::Spec(InputSpec::File(p)));
    }
    let arr = v.downcast::<PyUntypedArray>().map_err(|_| {
        PyTypeError::new_err(format!(
            "input `{name}` must be a NumPy float64 array (or a spec string such as 'spd:1024' or a .npy path), found {}",
            type_name(v)
        ))
    })?;
    let dtype = arr.dtype();
    if !dtype.is_equiv_to(&numpy::dtype::<f64>(py)) {
        return Err(PyTypeError::new_err(format!(
            "input `{name}` has dtype {dtype}; lpk runs on float64: pass {name}.astype(numpy.float64)"
        )));
    }
    let ndim = arr.ndim();
    if ndim != 1 && ndim != 2 {
        return Err(PyValueError::new_err(format!(
            "input `{name}` has {ndim} dimensions; lpk takes 1-D or 2-D arrays"
        )));
    }
    if !arr.is_c_contiguous() {
        return Err(PyValueError::new_err(format!(
            "input `{name}` is not C-contiguous (Fortran order or a strided view); pass numpy.ascontiguousarray({name})"
        )));
    }
    let arr = v
        .downcast::<PyArrayDyn<f64>>()
        .map_err(|_| PyTypeError::new_err(format!("input `{name}` is not a float64 array")))?;
    let ro = arr
        .try_readonly()
        .map_err(|e| PyValueError::new_err(format!("input `{name}` cannot be read: {e}")))?;
    Ok(Given::Array(ro))
}

/// The data of each input: arrays borrowed, files opened (header only),
/// specs generated with seed + k for the k-th input in matrix order, as
/// `lpkc run --seed` does.
fn input_data<'a>(
    givens: &'a BTreeMap<MatrixId, (String, Given<'_>)>,
    seed: u64,
) -> PyResult<BTreeMap<MatrixId, Input<'a>>> {
    let mut data: BTreeMap<MatrixId, Input<'a>> = BTreeMap::new();
    for (k, (&m, (name, g))) in givens.iter().enumerate() {
        let d = match g {
            Given::Array(ro) => {
                let (rows, cols) = match *ro.shape() {
                    [n] => (n, 1),
                    [r, c] => (r, c),
                    _ => (0, 0),
                };
                let slice = ro
                    .as_slice()
                    .map_err(|e| PyValueError::new_err(format!("input `{name}`: {e}")))?;
                Input::Borrowed {
                    data: slice,
                    rows,
                    cols,
                }
            }
            Given::Spec(InputSpec::File(path)) => Input::File(
                lpk_runtime::npy::NpyTiles::open(path)
                    .map_err(|e| PyValueError::new_err(format!("input `{name}`: {e}")))?,
            ),
            Given::Spec(spec) => {
                Input::Dense(spec.generate(seed.wrapping_add(k as u64)).ok_or_else(|| {
                    PyValueError::new_err(format!("input `{name}`: cannot generate"))
                })?)
            }
        };
        data.insert(m, d);
    }
    Ok(data)
}

/// Runs `run` on a thread while this one polls Python's signals: Ctrl-C
/// (Python's handler only sets a flag) cancels the run through the
/// executor's flag, and the `KeyboardInterrupt` is what the caller gets.
fn cancellable<T: Send>(
    progress: &Progress,
    run: impl FnOnce() -> PyResult<T> + Send,
) -> PyResult<T> {
    let finished = AtomicBool::new(false);
    std::thread::scope(|s| {
        let handle = s.spawn(|| {
            let r = run();
            finished.store(true, Ordering::Release);
            r
        });
        let mut interrupted: Option<PyErr> = None;
        while !finished.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(20));
            if interrupted.is_none() {
                if let Err(e) = Python::with_gil(|py| py.check_signals()) {
                    progress.cancel.store(true, Ordering::Relaxed);
                    interrupted = Some(e);
                }
            }
        }
        let r = handle
            .join()
            .unwrap_or_else(|_| Err(RunError::new_err("the run panicked")));
        match (r, interrupted) {
            (Err(_), Some(e)) => Err(e),
            (r, _) => r,
        }
    })
}

/// The outputs as a dict of NumPy arrays; an output whose tiles form no
/// grid as a dict of its tiles (`lpk.Tile` keys).
fn outputs_to_py<'py>(
    py: Python<'py>,
    prog: &Arc<Program>,
    outputs: Vec<(String, Out)>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (name, out) in outputs {
        match out {
            Out::Dense { rows, cols, data } => {
                let a = PyArray1::from_vec(py, data).reshape([rows, cols])?;
                dict.set_item(name, a)?;
            }
            Out::Tiles { tiles } => {
                let matrix = prog.matrix_named(&name).ok_or_else(|| {
                    RunError::new_err(format!(
                        "internal error: output `{name}` is no matrix of the program"
                    ))
                })?;
                let d = PyDict::new(py);
                for (t, index) in tiles {
                    let tile = lpk_model::task::TileRef { matrix, index };
                    let key = Py::new(
                        py,
                        PyTile {
                            program: prog.clone(),
                            tile,
                        },
                    )?;
                    let a =
                        PyArray1::from_vec(py, row_major(&t)).reshape([t.nrows(), t.ncols()])?;
                    d.set_item(key, a)?;
                }
                dict.set_item(name, d)?;
            }
        }
    }
    Ok(dict)
}
