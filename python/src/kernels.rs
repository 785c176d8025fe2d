//! User kernels written in Python: [`PyKernel`] wraps a Python callable
//! as an `lpk_runtime::kernels::Kernel`, so the executor runs it like any
//! standard kernel (the pipeline does not know the difference).
//!
//! A call copies its input tiles (outside the GIL) into fresh read-only
//! Fortran-ordered float64 NumPy arrays, attaches the GIL for the Python
//! call only, and copies the returned arrays back into tiles after
//! checking their count, dtype, dimensions and shape (against the
//! kernel's declared shape rule). A Python exception becomes a
//! `KernelError` carrying its type, message and traceback; the executor
//! adds the task and its tiles.
//!
//! The shape rule is declared in `lpk.kernel(shape=...)`: unknown (a plain
//! callable), "like tile argument k" (a static `ShapeRule` copying that
//! argument's dimensions, so output shapes are predicted before the run),
//! or a Python callable from the tile shapes to the result shapes (asked
//! at bind time by the shape check, with its answers cached; its errors
//! are kept and reported before any task by [`PyKernel::take_shape_error`]).
//!
//! [`user_kernels`] reads `kernels={...}`, [`bind_to_program`] checks it
//! against a program's declarations before any task, and [`registry`]
//! builds the standard registry plus these kernels: the three pieces a
//! Python driver (an embedded run today, a distributed worker later)
//! composes.

use faer::MatRef;
use lpk_model::program::{KernelDecl, ParamKind, Program};
use lpk_runtime::kernels::rules::{ArgDim, Dim};
use lpk_runtime::kernels::{Kernel, KernelArg, KernelError, Registry, ShapeRule, Signature, Tile};
use numpy::ndarray::{Array2, ShapeBuilder};
use numpy::{PyArray2, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Tile shapes (rows, columns), one per tile argument.
type Shapes = Vec<(usize, usize)>;

/// A declared shape rule.
enum ShapeSpec {
    /// Not declared: results are not checked against a shape and outputs
    /// they fill are assembled from their tiles after the run.
    Unknown,
    /// Every result shaped like tile argument k (scalars not counted).
    LikeAll(usize),
    /// Result i shaped like tile argument `per[i]`.
    Like(Vec<usize>),
    /// A Python callable from the tile shapes to the result shapes.
    Callable(Py<PyAny>),
    /// The standard kernel's rule, for a kernel that replaces one and
    /// declares none of its own.
    Standard(Arc<dyn Kernel>),
}

/// A kernel implemented by a Python callable.
pub(crate) struct PyKernel {
    name: String,
    function: Py<PyAny>,
    /// Results it returns; `None` (a plain callable not yet bound to a
    /// program): whatever it returns, which the executor counts.
    results: Option<usize>,
    shape: ShapeSpec,
    flops: Option<Py<PyAny>>,
    /// The standard kernel it replaces (`override=True`), if any.
    replaces: Option<Arc<dyn Kernel>>,
    shape_cache: Mutex<HashMap<Shapes, Result<Shapes, String>>>,
    flops_cache: Mutex<HashMap<Shapes, Option<f64>>>,
    /// The first error of the shape callable met outside a call (the bind
    /// time shape check), reported before any task.
    shape_error: Mutex<Option<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// "3×4, 4×4".
fn shape_list(shapes: &[(usize, usize)]) -> String {
    shapes
        .iter()
        .map(|(r, c)| format!("{r}×{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A Python exception as a message: its type and message, then its
/// traceback as Python prints it.
fn describe(py: Python<'_>, err: &PyErr) -> String {
    let kind = err
        .get_type(py)
        .qualname()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    let value = err.value(py);
    let message = value.str().map(|s| s.to_string()).unwrap_or_default();
    let traceback = py
        .import("traceback")
        .and_then(|m| {
            m.call_method1(
                "format_exception",
                (err.get_type(py), value, err.traceback(py)),
            )
        })
        .and_then(|lines| lines.extract::<Vec<String>>())
        .map(|lines| lines.concat())
        .unwrap_or_default();
    format!("{kind}: {message}\n{}", traceback.trim_end())
}

impl PyKernel {
    /// The first error its shape callable raised during the bind-time
    /// shape check, taken (a driver raises it before any task).
    pub(crate) fn take_shape_error(&self) -> Option<String> {
        lock(&self.shape_error).take()
    }

    /// The tile argument each result copies its shape from, when the rule
    /// is "like argument k" and the result count is known.
    fn like(&self) -> Option<Vec<usize>> {
        match &self.shape {
            ShapeSpec::LikeAll(k) => Some(vec![*k; self.results?]),
            ShapeSpec::Like(per) => Some(per.clone()),
            _ => None,
        }
    }

    /// The result shapes for these tile shapes, from the declared rule
    /// (`Ok(None)`: no rule). Calls the shape callable (with the GIL)
    /// once per distinct shapes.
    fn expected(&self, py: Python<'_>, tiles: &[(usize, usize)]) -> Result<Option<Shapes>, String> {
        if let Some(per) = self.like() {
            return per
                .iter()
                .map(|&k| {
                    tiles.get(k).copied().ok_or_else(|| {
                        format!(
                            "its shape rule copies tile argument {k}, but the call has {} tile argument(s)",
                            tiles.len()
                        )
                    })
                })
                .collect::<Result<Shapes, String>>()
                .map(Some);
        }
        match &self.shape {
            ShapeSpec::Callable(f) => {
                if let Some(r) = lock(&self.shape_cache).get(tiles) {
                    return r.clone().map(Some);
                }
                let r = self.ask_shape(py, f, tiles);
                lock(&self.shape_cache).insert(tiles.to_vec(), r.clone());
                r.map(Some)
            }
            ShapeSpec::Standard(k) => Ok(k.result_shapes(tiles)),
            _ => Ok(None),
        }
    }

    /// One answer of the shape callable, checked.
    fn ask_shape(
        &self,
        py: Python<'_>,
        f: &Py<PyAny>,
        tiles: &[(usize, usize)],
    ) -> Result<Shapes, String> {
        let args =
            PyTuple::new(py, tiles.iter().map(|&(r, c)| (r, c))).map_err(|e| describe(py, &e))?;
        let got = f.call1(py, args).map_err(|e| {
            format!(
                "its shape rule raised on tiles {}: {}",
                shape_list(tiles),
                describe(py, &e)
            )
        })?;
        let got = got.bind(py);
        let bad = || {
            format!(
                "its shape rule returned {} on tiles {}; it must return a (rows, columns) \
                 pair, or a list of them, one per result",
                got.repr().map(|r| r.to_string()).unwrap_or_default(),
                shape_list(tiles)
            )
        };
        let shapes: Shapes = if let Ok(one) = got.extract::<(usize, usize)>() {
            vec![one]
        } else {
            got.extract::<Vec<(usize, usize)>>().map_err(|_| bad())?
        };
        match self.results {
            Some(n) if n != shapes.len() => Err(format!(
                "its shape rule gave {} shape(s) on tiles {}, but it declares {n} result(s)",
                shapes.len(),
                shape_list(tiles)
            )),
            _ => Ok(shapes),
        }
    }

    /// The Python arguments of a call: tiles as read-only float64 arrays
    /// (copied column by column, Fortran order), scalars as int/float.
    fn arguments<'py>(py: Python<'py>, copies: Vec<Copied>) -> PyResult<Bound<'py, PyTuple>> {
        let mut items: Vec<Bound<'py, PyAny>> = Vec::with_capacity(copies.len());
        for c in copies {
            items.push(match c {
                Copied::Tile(a) => {
                    let arr = PyArray2::from_owned_array(py, a).into_any();
                    arr.call_method1(intern!(py, "setflags"), (false,))?;
                    arr
                }
                Copied::Int(i) => i.into_pyobject(py)?.into_any(),
                Copied::Real(x) => x.into_pyobject(py)?.into_any(),
            });
        }
        PyTuple::new(py, items)
    }

    /// The returned value as tiles: the count, dtype, dimensions and
    /// shapes checked.
    fn results_of(
        &self,
        py: Python<'_>,
        out: &Bound<'_, PyAny>,
        expected: Option<&Shapes>,
    ) -> Result<Vec<Tile>, String> {
        let items: Vec<Bound<'_, PyAny>> = if out.downcast::<PyUntypedArray>().is_ok() {
            vec![out.clone()]
        } else if let Ok(t) = out.downcast::<PyTuple>() {
            t.iter().collect()
        } else if let Ok(l) = out.downcast::<PyList>() {
            l.iter().collect()
        } else {
            return Err(format!(
                "it returned {}; a kernel returns a NumPy array, or a tuple of arrays, one per result",
                type_name(out)
            ));
        };
        let want = self.results.or(expected.map(Vec::len));
        if let Some(n) = want {
            if items.len() != n {
                return Err(format!(
                    "it returned {} array(s), but it declares {n} result(s)",
                    items.len()
                ));
            }
        }
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let shape = expected.and_then(|e| e.get(i).copied());
                to_tile(py, i, item, shape)
            })
            .collect()
    }
}

/// A Python value's type name.
fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Result `i` as a tile: a 2-D NumPy array of float64 (float16 and
/// float32 converted, which is exact), of the `expected` shape if known.
fn to_tile(
    py: Python<'_>,
    i: usize,
    item: &Bound<'_, PyAny>,
    expected: Option<(usize, usize)>,
) -> Result<Tile, String> {
    let which = format!("result {i}");
    let arr = item.downcast::<PyUntypedArray>().map_err(|_| {
        format!(
            "{which} is a {}, not a NumPy array (return numpy arrays, e.g. numpy.asarray(x))",
            type_name(item)
        )
    })?;
    let dtype = arr.dtype();
    if dtype.kind() != b'f' || dtype.itemsize() > 8 {
        return Err(format!(
            "{which} has dtype {dtype}; a kernel returns float64 arrays (float16 and float32 \
             are converted exactly; integer, bool, complex, object and long double are refused: \
             convert with .astype(numpy.float64))"
        ));
    }
    if arr.ndim() != 2 {
        return Err(format!(
            "{which} has {} dimension(s) (shape {:?}); a tile is a 2-D array",
            arr.ndim(),
            arr.shape()
        ));
    }
    let (rows, cols) = (arr.shape()[0], arr.shape()[1]);
    if let Some((r, c)) = expected {
        if (rows, cols) != (r, c) {
            return Err(format!(
                "{which} is {rows}×{cols}, but the kernel's shape rule says {r}×{c}"
            ));
        }
    }
    let converted;
    let arr64 = if dtype.is_equiv_to(&numpy::dtype::<f64>(py)) {
        item.downcast::<PyArray2<f64>>()
    } else {
        converted = item
            .call_method1("astype", ("float64",))
            .map_err(|e| format!("{which}: {}", describe(py, &e)))?;
        converted.downcast::<PyArray2<f64>>()
    }
    .map_err(|_| format!("{which} is not a float64 array"))?;
    let ro = arr64
        .try_readonly()
        .map_err(|e| format!("{which} cannot be read: {e}"))?;
    let view = ro.as_array();
    // A large contiguous result is copied without the GIL, so that the
    // other workers' Python calls go on meanwhile (the array is this
    // call's return value, kept alive and borrowed read-only meanwhile).
    let copy = |s: &[f64], rowwise: bool| {
        let m = if rowwise {
            MatRef::from_row_major_slice(s, rows, cols)
        } else {
            MatRef::from_column_major_slice(s, rows, cols)
        };
        if s.len() >= COPY_WITHOUT_GIL {
            py.allow_threads(|| m.to_owned())
        } else {
            m.to_owned()
        }
    };
    if let Some(s) = view.as_slice() {
        return Ok(copy(s, true));
    }
    if let Some(s) = view.t().as_slice() {
        return Ok(copy(s, false));
    }
    Ok(Tile::from_fn(rows, cols, |r, c| view[[r, c]]))
}

/// Values of a result from which on it is copied back without the GIL
/// (512 KiB: below, releasing and taking the GIL back costs more than the
/// copy it frees).
const COPY_WITHOUT_GIL: usize = 1 << 16;

/// One argument copied out of the executor's tiles, ready for Python.
enum Copied {
    Tile(Array2<f64>),
    Int(i64),
    Real(f64),
}

/// The arguments copied (no GIL needed): tiles column by column into
/// Fortran-ordered arrays (a plain copy; a row-major copy transposes,
/// which costs several times as much).
fn copy_args(args: &[KernelArg<'_>]) -> (Vec<Copied>, Shapes) {
    let mut shapes = Vec::new();
    let copies = args
        .iter()
        .map(|a| match a {
            KernelArg::Tile(t) => {
                let (r, c) = (t.nrows(), t.ncols());
                shapes.push((r, c));
                let mut v = Vec::with_capacity(r * c);
                for j in 0..c {
                    v.extend_from_slice(t.col_as_slice(j));
                }
                // A (r, c) shape in Fortran order holds exactly r·c values.
                Copied::Tile(
                    Array2::from_shape_vec((r, c).f(), v)
                        .unwrap_or_else(|_| Array2::zeros((r, c).f())),
                )
            }
            KernelArg::Int(i) => Copied::Int(*i),
            KernelArg::Real(x) => Copied::Real(*x),
        })
        .collect();
    (copies, shapes)
}

impl Kernel for PyKernel {
    fn name(&self) -> &str {
        &self.name
    }

    fn call(&self, args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
        let (copies, shapes) = copy_args(args);
        let fail = |m: String| KernelError::new(format!("Python kernel `{}`: {m}", self.name));
        Python::with_gil(|py| {
            let expected = self.expected(py, &shapes).map_err(fail)?;
            let pyargs = Self::arguments(py, copies).map_err(|e| fail(describe(py, &e)))?;
            let out = self
                .function
                .call1(py, pyargs)
                .map_err(|e| fail(format!("raised {}", describe(py, &e))))?;
            self.results_of(py, out.bind(py), expected.as_ref())
                .map_err(fail)
        })
    }

    fn fits(&self, decl: &KernelDecl) -> Result<(), String> {
        match Python::with_gil(|py| self.mismatch(py, decl)) {
            Some(m) => Err(format!("Python kernel does not fit it: {m}")),
            None => Ok(()),
        }
    }

    fn signature(&self) -> Option<Signature> {
        match &self.shape {
            ShapeSpec::Standard(k) => k.signature(),
            _ => None,
        }
    }

    fn shape_rule(&self) -> Option<ShapeRule> {
        if let Some(per) = self.like() {
            return Some(ShapeRule {
                ties: &[],
                results: interned(&per.iter().map(|&k| Some(k)).collect::<Vec<_>>()),
            });
        }
        match &self.shape {
            ShapeSpec::Callable(_) => Some(ShapeRule {
                ties: &[],
                results: interned(&vec![None; self.results?]),
            }),
            ShapeSpec::Standard(k) => k.shape_rule(),
            _ => None,
        }
    }

    fn result_shapes(&self, tiles: &[(usize, usize)]) -> Option<Vec<(usize, usize)>> {
        Python::with_gil(|py| match self.expected(py, tiles) {
            Ok(s) => s,
            Err(e) => {
                lock(&self.shape_error).get_or_insert(format!("kernel `{}`: {e}", self.name));
                None
            }
        })
    }

    fn flops(&self, tiles: &[(usize, usize)]) -> Option<f64> {
        let Some(f) = &self.flops else {
            return self.replaces.as_ref().and_then(|k| k.flops(tiles));
        };
        if let Some(v) = lock(&self.flops_cache).get(tiles) {
            return *v;
        }
        let v = Python::with_gil(|py| {
            let args = PyTuple::new(py, tiles.iter().map(|&(r, c)| (r, c))).ok()?;
            f.call1(py, args)
                .ok()?
                .extract::<f64>(py)
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
        });
        lock(&self.flops_cache).insert(tiles.to_vec(), v);
        v
    }
}

/// The static result table of a shape rule whose result `i` copies tile
/// argument `per[i]` (`None`: computed by `result_shapes`). Interned: one
/// leaked table per distinct pattern, so memory stays bounded however
/// many runs build kernels.
fn interned(per: &[Option<usize>]) -> &'static [[Option<ArgDim>; 2]] {
    type Table = &'static [[Option<ArgDim>; 2]];
    static TABLES: OnceLock<Mutex<HashMap<Vec<Option<usize>>, Table>>> = OnceLock::new();
    let mut tables = lock(TABLES.get_or_init(Default::default));
    if let Some(t) = tables.get(per) {
        return t;
    }
    let dims = |k: Option<usize>| {
        k.map_or([None, None], |arg| {
            [
                Some(ArgDim {
                    arg,
                    dim: Dim::Rows,
                }),
                Some(ArgDim {
                    arg,
                    dim: Dim::Cols,
                }),
            ]
        })
    };
    let table: Table = Box::leak(
        per.iter()
            .map(|&k| dims(k))
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    );
    tables.insert(per.to_vec(), table);
    table
}

/// Reads `kernels={name: fn_or_kernel}`: a plain callable (results from
/// the program's declaration, no shape rule) or an `lpk.kernel(...)`
/// object. A standard kernel's name is refused unless the kernel says
/// `override=True`.
pub(crate) fn user_kernels(dict: &Bound<'_, PyDict>) -> PyResult<Vec<PyKernel>> {
    let standard = Registry::standard();
    let mut out = Vec::with_capacity(dict.len());
    for (k, v) in dict.iter() {
        let name: String = k
            .extract()
            .map_err(|_| PyTypeError::new_err("kernels= keys must be kernel names (str)"))?;
        out.push(py_kernel(&standard, name, &v)?);
    }
    Ok(out)
}

/// One entry of `kernels=`.
fn py_kernel(standard: &Registry, name: String, v: &Bound<'_, PyAny>) -> PyResult<PyKernel> {
    let declared = v.hasattr("__lpk_kernel__")?;
    if !declared && !v.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "kernels[{name:?}] must be a callable or an lpk.kernel(...), found {}",
            type_name(v)
        )));
    }
    let (function, results, shape, flops, override_) = if declared {
        let results: usize = v.getattr("results")?.extract()?;
        let shape = shape_spec(&name, &v.getattr("shape")?)?;
        let flops = v.getattr("flops")?;
        let flops = (!flops.is_none()).then(|| flops.unbind());
        let override_: bool = v.getattr("override")?.extract()?;
        (
            v.getattr("function")?.unbind(),
            Some(results),
            shape,
            flops,
            override_,
        )
    } else {
        (v.clone().unbind(), None, ShapeSpec::Unknown, None, false)
    };
    let replaces = standard.get(&name).cloned();
    let shape = match (&replaces, override_, shape) {
        (Some(_), false, _) => {
            return Err(PyValueError::new_err(format!(
                "`{name}` is a standard kernel; a Python kernel replaces it only when asked: \
                 kernels={{{name:?}: lpk.kernel(fn, override=True)}} (or give yours another name)"
            )))
        }
        (Some(k), true, ShapeSpec::Unknown) => ShapeSpec::Standard(k.clone()),
        (None, true, _) => {
            return Err(PyValueError::new_err(format!(
                "kernel `{name}` says override=True, but no standard kernel is called `{name}`"
            )))
        }
        (_, _, s) => s,
    };
    Ok(PyKernel {
        name,
        function,
        results,
        shape,
        flops,
        replaces,
        shape_cache: Mutex::default(),
        flops_cache: Mutex::default(),
        shape_error: Mutex::default(),
    })
}

/// `shape=`: None, an int k (every result like tile argument k), a
/// sequence of ints (one per result) or a callable.
fn shape_spec(name: &str, s: &Bound<'_, PyAny>) -> PyResult<ShapeSpec> {
    if s.is_none() {
        return Ok(ShapeSpec::Unknown);
    }
    if let Ok(k) = s.extract::<usize>() {
        return Ok(ShapeSpec::LikeAll(k));
    }
    if let Ok(per) = s.extract::<Vec<usize>>() {
        return Ok(ShapeSpec::Like(per));
    }
    if s.is_callable() {
        return Ok(ShapeSpec::Callable(s.clone().unbind()));
    }
    Err(PyTypeError::new_err(format!(
        "kernel `{name}`: shape= must be None, a tile argument index, a list of them (one per \
         result) or a callable from tile shapes to result shapes, found {}",
        type_name(s)
    )))
}

/// Checks the kernels against the program's declarations, before any
/// task: each must be declared, and must fit its declaration
/// ([`PyKernel::mismatch`]; a plain callable takes the declared result
/// count).
pub(crate) fn bind_to_program(
    py: Python<'_>,
    program: &Program,
    kernels: &mut [PyKernel],
) -> PyResult<()> {
    for k in kernels.iter_mut() {
        let Some(decl) = program.kernels.iter().find(|d| d.name == k.name) else {
            let declared: Vec<&str> = program.kernels.iter().map(|d| d.name.as_str()).collect();
            return Err(PyValueError::new_err(format!(
                "kernels= gives `{}`, which program `{}` does not declare (its kernels: {})",
                k.name,
                program.name,
                declared.join(", ")
            )));
        };
        if let Some(m) = k.mismatch(py, decl) {
            return Err(PyValueError::new_err(format!("kernel `{}`: {m}", k.name)));
        }
        k.results = Some(decl.results.len());
    }
    Ok(())
}

impl PyKernel {
    /// What keeps it from serving calls declared as `decl`: its result
    /// count (when declared), its "like argument k" naming a tile
    /// parameter, and its function accepting the declared parameters
    /// (checked with `inspect.signature` where Python can tell).
    fn mismatch(&self, py: Python<'_>, decl: &KernelDecl) -> Option<String> {
        let header = decl.declaration();
        let want = decl.results.len();
        if let Some(n) = self.results.filter(|&n| n != want) {
            return Some(format!(
                "lpk.kernel(results={n}), but the program declares `{header}` with {want} result(s)"
            ));
        }
        if let ShapeSpec::Like(per) = &self.shape {
            if per.len() != want {
                return Some(format!(
                    "shape= lists {} argument(s), one per result, but `{header}` has {want} result(s)",
                    per.len()
                ));
            }
        }
        let tiles = decl
            .params
            .iter()
            .filter(|(_, p)| *p == ParamKind::Tile)
            .count();
        let like = match &self.shape {
            ShapeSpec::LikeAll(k) => Some(vec![*k]),
            _ => self.like(),
        };
        if let Some(bad) = like.and_then(|per| per.into_iter().find(|&i| i >= tiles)) {
            return Some(format!(
                "shape={bad} names tile argument {bad}, but `{header}` has {tiles} tile \
                 argument(s) (counted from 0, scalars skipped)"
            ));
        }
        self.arity_mismatch(py, &header, decl.params.len())
    }

    /// Why the function cannot take `n` positional arguments, if Python's
    /// `inspect.signature` can tell.
    fn arity_mismatch(&self, py: Python<'_>, header: &str, n: usize) -> Option<String> {
        let sig = py
            .import("inspect")
            .and_then(|m| m.call_method1("signature", (self.function.bind(py),)))
            .ok()?;
        let dummies = PyTuple::new(py, (0..n).map(|_| py.None())).ok()?;
        let e = sig.call_method1("bind", dummies).err()?;
        Some(format!(
            "the program declares `{header}`, so it is called with {n} argument(s), but its \
             function, with signature {}, cannot take them: {}",
            sig.str().map(|s| s.to_string()).unwrap_or_default(),
            e.value(py)
        ))
    }
}

/// The standard kernels plus `kernels` (which replace standard ones of the
/// same name: [`user_kernels`] allowed only those that asked).
pub(crate) fn registry(kernels: Vec<Arc<PyKernel>>) -> Registry {
    let mut registry = Registry::standard();
    if !kernels.is_empty() {
        // One Python thread state per executor thread, for its whole loop
        // (the GIL released), so that a call only takes the GIL: without
        // it each call makes and drops a thread state.
        registry.set_thread_context(Arc::new(|body| {
            Python::with_gil(|py| py.allow_threads(body));
        }));
    }
    for k in kernels {
        registry.register(k);
    }
    registry
}
