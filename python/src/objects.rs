//! Instances, tasks, tiles and DAGs as Python objects. A task or tile
//! keeps its program (an `Arc`), so that `str()` gives `lpkc`'s name
//! (`chol@21(i=0)`, `L[2, 1]`); equality and hashing go through that
//! name, so a task equals its name as a string and `"chol@21(i=0)" in
//! tasks` works.

use crate::{check_limit, json_to_py, BindError, PyProgram, QueryError, DEFAULT_MAX_TASKS};
use lpk_compiler::explore::query::{parse_task, parse_tile};
use lpk_model::program::{Instance, Program};
use lpk_model::query::Engine;
use lpk_model::task::{Task, TileRef};
use pyo3::basic::CompareOp;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use std::cmp::Ordering;

/// A failed query or a bad task or tile name, as `lpk.QueryError`.
fn query_error(e: impl std::fmt::Display) -> PyErr {
    QueryError::new_err(e.to_string())
}
use std::sync::Arc;

/// One task: a statement's iteration, e.g. ``chol@21(i=0)``.
#[pyclass(module = "lpk", frozen, name = "Task")]
pub struct PyTask {
    pub(crate) program: Arc<Program>,
    pub(crate) task: Task,
}

/// One tile of a matrix, e.g. ``L[2, 1]``.
#[pyclass(module = "lpk", frozen, name = "Tile")]
pub struct PyTile {
    pub(crate) program: Arc<Program>,
    pub(crate) tile: TileRef,
}

/// Compares by `op` given an ordering.
fn compare(op: CompareOp, o: Ordering) -> bool {
    op.matches(o)
}

/// A Python bool.
fn py_bool(py: Python<'_>, b: bool) -> PyResult<PyObject> {
    Ok(b.into_pyobject(py)?.to_owned().into_any().unbind())
}

/// The answer of `==` or `!=` between two objects that are the same or
/// not; they have no order, so any other comparison is not implemented.
fn equality(py: Python<'_>, op: CompareOp, same: bool) -> PyResult<PyObject> {
    match op {
        CompareOp::Eq => py_bool(py, same),
        CompareOp::Ne => py_bool(py, !same),
        _ => Ok(py.NotImplemented()),
    }
}

/// Whether a string a user wrote names what `lpkc` calls `name`, white
/// space aside.
fn names(s: &str, name: &str) -> bool {
    let squash = |x: &str| x.split_whitespace().collect::<String>();
    squash(s) == squash(name)
}

/// The hash of a name, as Python's `hash(str)`.
fn str_hash(py: Python<'_>, s: &str) -> PyResult<isize> {
    PyString::new(py, s).hash()
}

#[pymethods]
impl PyTask {
    /// The task's name, as ``lpkc`` writes it.
    fn __str__(&self) -> String {
        self.name()
    }

    fn __repr__(&self) -> String {
        format!("Task('{}')", self.name())
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        str_hash(py, &self.name())
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<PyObject> {
        let py = other.py();
        if let Ok(t) = other.downcast::<PyTask>() {
            let t = t.get();
            if Arc::ptr_eq(&self.program, &t.program) {
                let o = self.program.sequential_cmp(&self.task, &t.task);
                // Sequential order ties only for one task.
                let o = if o == Ordering::Equal {
                    (self.task.stmt, &*self.task.vars).cmp(&(t.task.stmt, &*t.task.vars))
                } else {
                    o
                };
                return py_bool(py, compare(op, o));
            }
            return equality(py, op, self.name() == t.name());
        }
        if let Ok(s) = other.extract::<String>() {
            return equality(py, op, names(&s, &self.name()));
        }
        Ok(py.NotImplemented())
    }

    /// The kernel the task calls.
    #[getter]
    fn kernel(&self) -> String {
        self.stmt_decl()
            .and_then(|s| self.program.get_kernel(s.kernel))
            .map(|k| k.name.clone())
            .unwrap_or_default()
    }

    /// The source line of the task's kernel call.
    #[getter]
    fn line(&self) -> u32 {
        self.stmt_decl().map_or(0, |s| s.line)
    }

    /// The source column of the task's kernel call.
    #[getter]
    fn column(&self) -> u32 {
        self.stmt_decl().map_or(0, |s| s.column)
    }

    /// The statement's index in the program.
    #[getter]
    fn statement(&self) -> u32 {
        u32::from(self.task.stmt)
    }

    /// The loop variables' values, outermost first.
    #[getter]
    fn vars<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let names = self.stmt_decl().map(|s| s.vars.clone()).unwrap_or_default();
        for (k, v) in self.task.vars.iter().enumerate() {
            match names.get(k) {
                Some(n) => d.set_item(n, v)?,
                None => d.set_item(format!("t{k}"), v)?,
            }
        }
        Ok(d)
    }
}

impl PyTask {
    fn name(&self) -> String {
        self.program.task_name(&self.task).to_string()
    }

    fn stmt_decl(&self) -> Option<&lpk_model::program::Statement> {
        self.program.get_statement(self.task.stmt)
    }
}

#[pymethods]
impl PyTile {
    /// The tile's name, as ``lpkc`` writes it.
    fn __str__(&self) -> String {
        self.program.tile_name(&self.tile)
    }

    fn __repr__(&self) -> String {
        format!("Tile('{}')", self.program.tile_name(&self.tile))
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        str_hash(py, &self.program.tile_name(&self.tile))
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<PyObject> {
        let py = other.py();
        let key = |t: &PyTile| (t.matrix(), t.tile.index.clone());
        if let Ok(t) = other.downcast::<PyTile>() {
            let o = key(self).cmp(&key(t.get()));
            return py_bool(py, compare(op, o));
        }
        if let Ok(s) = other.extract::<String>() {
            return equality(py, op, names(&s, &self.program.tile_name(&self.tile)));
        }
        Ok(py.NotImplemented())
    }

    /// The matrix's name.
    #[getter]
    fn matrix(&self) -> String {
        self.program
            .get_matrix(self.tile.matrix)
            .map(|m| m.name.clone())
            .unwrap_or_default()
    }

    /// The tile's index.
    #[getter]
    fn index<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.tile.index)
    }
}

/// An expanded DAG: every task in sequential order and one edge per
/// (writer, reader, tile).
#[pyclass(module = "lpk", frozen, name = "Dag")]
pub struct PyDag {
    tasks: Vec<Py<PyTask>>,
    edges: Vec<(usize, usize, Py<PyTile>)>,
}

#[pymethods]
impl PyDag {
    /// Every task, in sequential order.
    #[getter]
    fn tasks(&self, py: Python<'_>) -> Vec<Py<PyTask>> {
        self.tasks.iter().map(|t| t.clone_ref(py)).collect()
    }

    /// Every edge as ``(writer, reader, tile)``, sorted.
    #[getter]
    fn edges(&self, py: Python<'_>) -> Vec<(Py<PyTask>, Py<PyTask>, Py<PyTile>)> {
        self.edges
            .iter()
            .filter_map(|(a, b, t)| {
                Some((
                    self.tasks.get(*a)?.clone_ref(py),
                    self.tasks.get(*b)?.clone_ref(py),
                    t.clone_ref(py),
                ))
            })
            .collect()
    }

    fn __len__(&self) -> usize {
        self.tasks.len()
    }

    /// The DAG as a ``networkx.DiGraph`` (nodes: tasks; each edge's
    /// ``tiles`` attribute lists the tiles it carries). Needs networkx.
    fn to_networkx(&self, py: Python<'_>) -> PyResult<PyObject> {
        let nx = py.import("networkx").map_err(|_| {
            pyo3::exceptions::PyImportError::new_err(
                "to_networkx needs networkx: pip install networkx",
            )
        })?;
        let g = nx.call_method0("DiGraph")?;
        for t in &self.tasks {
            g.call_method1("add_node", (t.clone_ref(py),))?;
        }
        let mut last: Option<(usize, usize)> = None;
        let mut tiles: Vec<Py<PyTile>> = Vec::new();
        let flush =
            |g: &Bound<'_, PyAny>, e: (usize, usize), tiles: Vec<Py<PyTile>>| -> PyResult<()> {
                let kw = PyDict::new(py);
                kw.set_item("tiles", tiles)?;
                if let (Some(a), Some(b)) = (self.tasks.get(e.0), self.tasks.get(e.1)) {
                    g.call_method("add_edge", (a.clone_ref(py), b.clone_ref(py)), Some(&kw))?;
                }
                Ok(())
            };
        for (a, b, t) in &self.edges {
            if last.is_some_and(|l| l != (*a, *b)) {
                if let Some(l) = last {
                    flush(&g, l, std::mem::take(&mut tiles))?;
                }
            }
            last = Some((*a, *b));
            tiles.push(t.clone_ref(py));
        }
        if let Some(l) = last {
            flush(&g, l, tiles)?;
        }
        Ok(g.unbind())
    }

    fn __repr__(&self) -> String {
        format!(
            "<lpk.Dag {} tasks, {} edges>",
            self.tasks.len(),
            self.edges.len()
        )
    }
}

/// A program with its parameters bound: the object that answers queries.
#[pyclass(module = "lpk", frozen, name = "Instance")]
pub struct PyInstance {
    owner: Py<PyProgram>,
    pub(crate) program: Arc<Program>,
    pub(crate) params: Vec<i64>,
    extents: Vec<Vec<i64>>,
}

impl PyInstance {
    /// The program this instance binds.
    pub(crate) fn owner(&self) -> &PyProgram {
        self.owner.get()
    }

    /// Binds `given` to the program of `owner`.
    pub(crate) fn new(owner: &Bound<'_, PyProgram>, given: &[(String, i64)]) -> PyResult<Self> {
        let program = owner.get().program.clone();
        let inst = program
            .bind(given)
            .map_err(|e| BindError::new_err(e.to_string()))?;
        let (params, extents) = (inst.params, inst.extents);
        Ok(PyInstance {
            owner: owner.clone().unbind(),
            program,
            params,
            extents,
        })
    }

    /// The model's instance (cheap: two small vectors).
    pub(crate) fn instance(&self) -> Instance<'_> {
        Instance {
            program: &self.program,
            params: self.params.clone(),
            extents: self.extents.clone(),
        }
    }

    /// `(name, value)` of every parameter.
    pub(crate) fn given(&self) -> Vec<(String, i64)> {
        self.program
            .params
            .iter()
            .zip(&self.params)
            .map(|(p, v)| (p.name.clone(), *v))
            .collect()
    }

    fn task_obj(&self, task: Task) -> PyTask {
        PyTask {
            program: self.program.clone(),
            task,
        }
    }

    fn tile_obj(&self, tile: TileRef) -> PyTile {
        PyTile {
            program: self.program.clone(),
            tile,
        }
    }

    /// A task given as a `Task` or its name.
    fn task_arg(&self, obj: &Bound<'_, PyAny>) -> PyResult<Task> {
        if let Ok(t) = obj.downcast::<PyTask>() {
            let t = t.get();
            if Arc::ptr_eq(&t.program, &self.program) {
                return Ok(t.task.clone());
            }
            return parse_task(&self.program, &t.name()).map_err(query_error);
        }
        match obj.downcast::<PyString>() {
            Ok(s) => parse_task(&self.program, &s.to_cow()?).map_err(query_error),
            Err(_) => Err(PyTypeError::new_err(
                "a task is an lpk.Task or its name as a string, e.g. 'chol@21(i=0)'",
            )),
        }
    }

    /// A tile given as a `Tile` or its name.
    fn tile_arg(&self, obj: &Bound<'_, PyAny>) -> PyResult<TileRef> {
        if let Ok(t) = obj.downcast::<PyTile>() {
            let t = t.get();
            if Arc::ptr_eq(&t.program, &self.program) {
                return Ok(t.tile.clone());
            }
            return parse_tile(&self.program, &t.program.tile_name(&t.tile)).map_err(query_error);
        }
        match obj.downcast::<PyString>() {
            Ok(s) => parse_tile(&self.program, &s.to_cow()?).map_err(query_error),
            Err(_) => Err(PyTypeError::new_err(
                "a tile is an lpk.Tile or its name as a string, e.g. 'L[2, 1]'",
            )),
        }
    }

    /// Children or parents of `task`, grouped by task in sequential order.
    fn edges_of(
        &self,
        py: Python<'_>,
        task: &Bound<'_, PyAny>,
        children: bool,
        tiles: bool,
    ) -> PyResult<PyObject> {
        let task = self.task_arg(task)?;
        let inst = self.instance();
        let mut engine = Engine::new(&inst);
        engine.check_task(&task).map_err(query_error)?;
        let mut found: Vec<(Task, TileRef)> = if children {
            engine.children(&task)
        } else {
            engine.parents(&task)
        }
        .map_err(query_error)?;
        let p = &*self.program;
        found.sort_by(|a, b| {
            p.sequential_cmp(&a.0, &b.0)
                .then_with(|| (a.0.stmt, &*a.0.vars).cmp(&(b.0.stmt, &*b.0.vars)))
                .then_with(|| (a.1.matrix, &a.1.index).cmp(&(b.1.matrix, &b.1.index)))
        });
        found.dedup();
        let mut groups: Vec<(Task, Vec<TileRef>)> = Vec::new();
        for (t, tile) in found {
            match groups.last_mut() {
                Some((last, ts)) if *last == t => ts.push(tile),
                _ => groups.push((t, vec![tile])),
            }
        }
        if tiles {
            let mut out: Vec<(Py<PyTask>, Vec<Py<PyTile>>)> = Vec::with_capacity(groups.len());
            for (t, ts) in groups {
                let ts = ts
                    .into_iter()
                    .map(|x| Py::new(py, self.tile_obj(x)))
                    .collect::<PyResult<Vec<_>>>()?;
                out.push((Py::new(py, self.task_obj(t))?, ts));
            }
            Ok(out.into_pyobject(py)?.into_any().unbind())
        } else {
            let out = groups
                .into_iter()
                .map(|(t, _)| Py::new(py, self.task_obj(t)))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(out.into_pyobject(py)?.into_any().unbind())
        }
    }

    fn touching(
        &self,
        py: Python<'_>,
        tile: &Bound<'_, PyAny>,
        write: bool,
    ) -> PyResult<Vec<Py<PyTask>>> {
        let tile = self.tile_arg(tile)?;
        let inst = self.instance();
        let mut engine = Engine::new(&inst);
        engine.check_tile(&tile).map_err(query_error)?;
        let found = if write {
            engine.writer(&tile)
        } else {
            engine.readers(&tile)
        }
        .map_err(query_error)?;
        found
            .into_iter()
            .map(|t| Py::new(py, self.task_obj(t)))
            .collect()
    }
}

#[pymethods]
impl PyInstance {
    /// The program.
    #[getter]
    fn program(&self, py: Python<'_>) -> Py<PyProgram> {
        self.owner.clone_ref(py)
    }

    /// Every parameter's value.
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (n, v) in self.given() {
            d.set_item(n, v)?;
        }
        Ok(d)
    }

    /// The number of tasks, counted without listing them.
    fn count_tasks(&self, py: Python<'_>) -> PyResult<u64> {
        let inst = self.instance();
        py.allow_threads(|| inst.count_tasks(u64::MAX / 2))
            .map(|c| c.total())
            .map_err(|e| crate::LpkError::new_err(e.to_string()))
    }

    /// Every task in sequential order. Refused (:class:`TaskLimitError`,
    /// naming the count) above ``max_tasks``, before any is listed.
    #[pyo3(signature = (max_tasks=DEFAULT_MAX_TASKS))]
    fn tasks(&self, py: Python<'_>, max_tasks: u64) -> PyResult<Vec<Py<PyTask>>> {
        let inst = self.instance();
        let tasks = py.allow_threads(|| -> PyResult<Vec<Task>> {
            check_limit(&inst, max_tasks)?;
            inst.tasks()
                .map_err(|e| crate::LpkError::new_err(e.to_string()))
        })?;
        tasks
            .into_iter()
            .map(|t| Py::new(py, self.task_obj(t)))
            .collect()
    }

    /// The tasks that read what ``task`` writes, in sequential order; with
    /// ``tiles=True`` pairs ``(task, [tiles])`` naming the tiles.
    #[pyo3(signature = (task, *, tiles=false))]
    fn children(&self, py: Python<'_>, task: &Bound<'_, PyAny>, tiles: bool) -> PyResult<PyObject> {
        self.edges_of(py, task, true, tiles)
    }

    /// The tasks whose writes ``task`` reads, in sequential order; with
    /// ``tiles=True`` pairs ``(task, [tiles])``.
    #[pyo3(signature = (task, *, tiles=false))]
    fn parents(&self, py: Python<'_>, task: &Bound<'_, PyAny>, tiles: bool) -> PyResult<PyObject> {
        self.edges_of(py, task, false, tiles)
    }

    /// The tasks that write ``tile`` (one in a valid program).
    fn writer(&self, py: Python<'_>, tile: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyTask>>> {
        self.touching(py, tile, true)
    }

    /// The tasks that read ``tile``, in sequential order.
    fn readers(&self, py: Python<'_>, tile: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyTask>>> {
        self.touching(py, tile, false)
    }

    /// Parses a task name (``"chol@21(i=0)"``) into a :class:`Task` of
    /// this instance.
    fn task(&self, name: &Bound<'_, PyAny>) -> PyResult<PyTask> {
        let t = self.task_arg(name)?;
        let inst = self.instance();
        Engine::new(&inst).check_task(&t).map_err(query_error)?;
        Ok(self.task_obj(t))
    }

    /// Parses a tile name (``"L[2, 1]"``) into a :class:`Tile`.
    fn tile(&self, name: &Bound<'_, PyAny>) -> PyResult<PyTile> {
        let t = self.tile_arg(name)?;
        let inst = self.instance();
        Engine::new(&inst).check_tile(&t).map_err(query_error)?;
        Ok(self.tile_obj(t))
    }

    /// Statistics as ``lpkc stats --format json`` gives them: tasks, flops
    /// and bytes per kernel at tile side ``block``; within ``max_tasks``
    /// also edges, critical paths and the parallelism profile.
    #[pyo3(signature = (block=256, max_tasks=2_000_000))]
    fn stats(&self, py: Python<'_>, block: u64, max_tasks: u64) -> PyResult<PyObject> {
        if block == 0 || block > 1 << 20 {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "block must be between 1 and 1048576, found {block}"
            )));
        }
        let inst = self.instance();
        let value = py.allow_threads(|| -> Result<serde_json::Value, String> {
            use lpk_compiler::explore::stats::{
                analyse, counts, counts_json, stats_json, StatsOptions,
            };
            let c = counts(&inst, block).map_err(|e| e.to_string())?;
            if c.tasks > max_tasks {
                return Ok(counts_json(&c));
            }
            let opts = StatsOptions {
                max_tasks,
                block,
                ..Default::default()
            };
            let s = analyse(&inst, &opts).map_err(|e| e.to_string())?.stats;
            Ok(stats_json(&s))
        });
        let value = value.map_err(crate::LpkError::new_err)?;
        json_to_py(py, &value)
    }

    /// The expanded DAG from the plans. Refused (:class:`TaskLimitError`)
    /// above ``max_tasks`` tasks, counted first.
    #[pyo3(signature = (max_tasks=DEFAULT_MAX_TASKS))]
    fn dag(&self, py: Python<'_>, max_tasks: u64) -> PyResult<PyDag> {
        let inst = self.instance();
        let dag = py.allow_threads(|| -> PyResult<lpk_model::dag::Dag> {
            check_limit(&inst, max_tasks)?;
            lpk_model::dag::from_plans(&inst, usize::try_from(max_tasks).unwrap_or(usize::MAX))
                .map_err(|e| crate::LpkError::new_err(e.to_string()))
        })?;
        let tasks = dag
            .tasks
            .into_iter()
            .map(|t| Py::new(py, self.task_obj(t)))
            .collect::<PyResult<Vec<_>>>()?;
        let edges = dag
            .edges
            .into_iter()
            .map(|e| Ok((e.from, e.to, Py::new(py, self.tile_obj(e.tile))?)))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyDag { tasks, edges })
    }

    /// The expanded DAG in Graphviz DOT, as ``lpkc dot FILE -p ...``
    /// prints it (refused above ``max_tasks`` tasks).
    #[pyo3(signature = (max_tasks=2000, cluster=None))]
    fn to_dot(&self, py: Python<'_>, max_tasks: u64, cluster: Option<String>) -> PyResult<String> {
        let inst = self.instance();
        py.allow_threads(|| {
            check_limit(&inst, max_tasks)?;
            let dag =
                lpk_model::dag::from_plans(&inst, usize::try_from(max_tasks).unwrap_or(usize::MAX))
                    .map_err(|e| crate::LpkError::new_err(e.to_string()))?;
            lpk_compiler::explore::dot::expanded_dot(&inst, &dag, cluster.as_deref())
                .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
        })
    }

    fn __repr__(&self) -> String {
        let params: Vec<String> = self
            .given()
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        format!(
            "<lpk.Instance {}({})>",
            self.program.name,
            params.join(", ")
        )
    }
}
