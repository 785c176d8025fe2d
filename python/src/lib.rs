//! `import lpk`: the Python bindings (PyO3) of the compiler, the program
//! model and the embedded runtime. This crate is the native module
//! `lpk._lpk`; the package `python/lpk/__init__.py` re-exports it and
//! adds the Python-only conveniences (`lpk.run`'s keyword inputs, the
//! result dict). See docs/python.md.
//!
//! Nothing here trusts its arguments: every Python value is checked and a
//! bad one raises a Python exception (`TypeError`, `ValueError` or one of
//! `lpk`'s errors), never a panic.

mod distributed;
mod kernels;
mod objects;
mod run;
mod worker;

use lpk_compiler::diag::{Diagnostic as RustDiagnostic, SourceMap};
use lpk_compiler::explore::limit::TaskLimit;
use lpk_compiler::pipeline::{compile_source, CompileError as RustCompileError, LintGate};
use lpk_model::artifact::{self, Artifact, SourceInfo};
use lpk_model::program::Program;
use objects::{PyTask, PyTile};
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::sync::Arc;

pyo3::create_exception!(
    _lpk,
    LpkError,
    PyException,
    "The base class of every error lpk raises."
);
pyo3::create_exception!(
    _lpk,
    CompileError,
    LpkError,
    "The source has errors (or a file is no valid artifact). `str()` is the \
     rustc-style rendering `lpkc check` prints; `.diagnostics` lists them."
);
pyo3::create_exception!(
    _lpk,
    BindError,
    PyValueError,
    "The parameters make no instance: unknown or missing parameters, an unmet \
     `require`, an extent that cannot be evaluated."
);
pyo3::create_exception!(
    _lpk,
    QueryError,
    PyValueError,
    "A task or tile that cannot be parsed or is not in the instance."
);
pyo3::create_exception!(
    _lpk,
    TaskLimitError,
    LpkError,
    "The answer would hold more tasks than allowed (`max_tasks=`); refused \
     before any work was spent."
);
pyo3::create_exception!(
    _lpk,
    RunError,
    LpkError,
    "A run failed: a kernel on a task (the message names it), an input tile, \
     or a residual above its bound with `verify=True`."
);

/// The version of the tool written into artifacts.
const COMPILER: &str = concat!("lpk-python ", env!("CARGO_PKG_VERSION"));

/// The default task limit of `tasks()` and `dag()` (as `lpkc query`/`dag`).
const DEFAULT_MAX_TASKS: u64 = 1_000_000;

/// One diagnostic of the compiler.
#[pyclass(module = "lpk", frozen, get_all, name = "Diagnostic")]
#[derive(Clone)]
pub struct PyDiagnostic {
    /// `E0101`, `W0503`, ...
    code: String,
    /// `"error"` or `"warning"`.
    severity: String,
    /// The one-line message.
    message: String,
    /// The file the diagnostic points into (empty when none).
    file: String,
    /// 1-based line (0 when it points nowhere).
    line: u32,
    /// 1-based column (0 when it points nowhere).
    column: u32,
    /// Notes and help lines.
    notes: Vec<String>,
}

#[pymethods]
impl PyDiagnostic {
    fn __repr__(&self) -> String {
        format!(
            "Diagnostic({} {} at {}:{}:{}: {:?})",
            self.severity, self.code, self.file, self.line, self.column, self.message
        )
    }

    fn __str__(&self) -> String {
        format!("{}[{}]: {}", self.severity, self.code, self.message)
    }
}

/// The diagnostics as objects, through the JSON form of `lpkc check`.
fn diagnostics_of(sources: &SourceMap, diagnostics: &[RustDiagnostic]) -> Vec<PyDiagnostic> {
    let json = sources.to_json(diagnostics);
    let items = json
        .get("diagnostics")
        .and_then(|d| d.as_array())
        .cloned()
        .unwrap_or_default();
    let text = |v: &serde_json::Value, k: &str| {
        v.get(k)
            .and_then(|x| x.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let num = |v: &serde_json::Value, k: &str| {
        v.get(k)
            .and_then(|x| x.as_u64())
            .and_then(|x| u32::try_from(x).ok())
            .unwrap_or(0)
    };
    items
        .iter()
        .map(|d| PyDiagnostic {
            code: text(d, "code"),
            severity: text(d, "severity"),
            message: text(d, "message"),
            file: text(d, "file"),
            line: num(d, "line"),
            column: num(d, "column"),
            notes: d
                .get("notes")
                .and_then(|n| n.as_array())
                .map(|n| {
                    n.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect()
}

/// A `CompileError` with its rendering and its diagnostics.
fn compile_error(py: Python<'_>, text: String, diagnostics: Vec<PyDiagnostic>) -> PyErr {
    let err = CompileError::new_err(text);
    let list: Vec<Py<PyDiagnostic>> = diagnostics
        .into_iter()
        .filter_map(|d| Py::new(py, d).ok())
        .collect();
    if let Ok(list) = PyList::new(py, list) {
        // Setting an attribute on a fresh exception cannot fail in
        // practice; if it did, the error still carries its text.
        let _ = err.value(py).setattr("diagnostics", list);
    }
    err
}

/// Where a program came from, kept for `lint()` and `save()`.
#[derive(Clone)]
struct Source {
    /// The file name diagnostics give.
    name: String,
    /// The text, when known.
    text: Option<String>,
    /// The program chosen in the file, if one was named.
    program: Option<String>,
}

/// A compiled program: its dependence plans, ready to bind.
#[pyclass(module = "lpk", frozen, name = "Program")]
pub struct PyProgram {
    pub(crate) program: Arc<Program>,
    source: Source,
    warnings: Vec<PyDiagnostic>,
    /// Whether it came from an artifact that records its lint result
    /// (`lpkc compile` lints before writing): then it is not linted again.
    lint_recorded: bool,
    /// Lint's verdict on the language's rules, computed on the first run
    /// or submit: the rendered errors of a program that breaks one.
    rules: std::sync::OnceLock<Result<(), (String, Vec<PyDiagnostic>)>>,
}

/// Compiles `text` (named `name` in diagnostics).
fn compile_text(
    py: Python<'_>,
    name: &str,
    text: &str,
    program: Option<&str>,
) -> PyResult<PyProgram> {
    let mut sources = SourceMap::new();
    let result =
        py.allow_threads(|| compile_source(&mut sources, name, text, program, LintGate::Off));
    match result {
        Ok(compiled) => Ok(PyProgram {
            warnings: diagnostics_of(&sources, &compiled.checked.diagnostics),
            lint_recorded: false,
            rules: std::sync::OnceLock::new(),
            program: Arc::new(compiled.program),
            source: Source {
                name: name.to_string(),
                text: Some(text.to_string()),
                program: program.map(str::to_string),
            },
        }),
        Err(RustCompileError::Diagnostics(d)) => Err(compile_error(
            py,
            sources.render_plain(&d),
            diagnostics_of(&sources, &d),
        )),
        Err(RustCompileError::Select(e @ lpk_compiler::pipeline::SelectError::NoProgram)) => {
            Err(compile_error(py, format!("error: {e}"), Vec::new()))
        }
        Err(RustCompileError::Select(e)) => Err(PyValueError::new_err(e.to_string())),
        Err(RustCompileError::Internal(e)) => Err(compile_error(
            py,
            format!("error: internal compiler error: {e}"),
            Vec::new(),
        )),
    }
}

/// Compiles `.lpk` source text into a :class:`Program`.
///
/// ``program`` names the program to compile when the source declares
/// several. ``filename`` is the name diagnostics give the text. Raises
/// :class:`CompileError` when the source has errors.
#[pyfunction]
#[pyo3(signature = (source, program=None, *, filename="<string>"))]
fn compile(
    py: Python<'_>,
    source: &str,
    program: Option<&str>,
    filename: &str,
) -> PyResult<PyProgram> {
    compile_text(py, filename, source, program)
}

/// Loads a program from a file: ``.lpk`` source (compiled) or a compiled
/// artifact (``.lpka`` or its JSON twin, told apart by their first bytes).
#[pyfunction]
#[pyo3(signature = (path, program=None))]
fn load(py: Python<'_>, path: std::path::PathBuf, program: Option<&str>) -> PyResult<PyProgram> {
    let name = path.display().to_string();
    // At most 64 MiB, as lpkc: `/dev/zero` is refused, not read forever.
    let bytes = {
        use std::io::Read;
        let limit: u64 = 64 << 20;
        let cannot = |e: std::io::Error| {
            pyo3::exceptions::PyOSError::new_err(format!("cannot read {name}: {e}"))
        };
        let mut bytes = Vec::new();
        std::fs::File::open(&path)
            .map_err(cannot)?
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(cannot)?;
        if bytes.len() as u64 > limit {
            return Err(PyValueError::new_err(format!(
                "{name} is larger than 64 MiB; lpk reads no larger program file"
            )));
        }
        bytes
    };
    if artifact::looks_like_artifact(&bytes) {
        let loaded = artifact::decode(&bytes).map_err(|e| {
            let code: lpk_compiler::diag::Code = (&e).into();
            let d = PyDiagnostic {
                code: code.as_str().to_string(),
                severity: "error".into(),
                message: e.to_string(),
                file: name.clone(),
                line: 0,
                column: 0,
                notes: vec![format!("in {name}")],
            };
            compile_error(
                py,
                format!("error[{}]: {e}\n  = note: in {name}\n", code.as_str()),
                vec![d],
            )
        })?;
        let art = loaded.artifact;
        if let Some(want) = program {
            if want != art.program.name {
                return Err(PyValueError::new_err(format!(
                    "no program named `{want}` (the artifact holds: {})",
                    art.program.name
                )));
            }
        }
        return Ok(PyProgram {
            lint_recorded: art.lint.is_some(),
            rules: std::sync::OnceLock::new(),
            program: Arc::new(art.program),
            source: Source {
                name: art.source.file,
                text: art.source.text,
                program: program.map(str::to_string),
            },
            warnings: Vec::new(),
        });
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        PyValueError::new_err(format!(
            "{name} is not valid UTF-8 (byte {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    compile_text(py, &name, &text, program)
}

/// Reads `**params` into `(name, value)` pairs.
pub(crate) fn params_of(params: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, i64)>> {
    let mut out = Vec::new();
    if let Some(params) = params {
        for (k, v) in params.iter() {
            let name: String = k
                .extract()
                .map_err(|_| PyTypeError::new_err("parameter names must be strings"))?;
            if v.is_instance_of::<pyo3::types::PyBool>() {
                return Err(PyTypeError::new_err(format!(
                    "parameter `{name}` must be an int, found a bool"
                )));
            }
            let value: i64 = v.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "parameter `{name}` must be an int (within 64 bits), found {}",
                    v.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_else(|_| "?".into())
                ))
            })?;
            out.push((name, value));
        }
    }
    Ok(out)
}

impl PyProgram {
    /// Refuses a program that breaks a rule of the language (what `lpkc
    /// run` refuses, with lint's codes and lines) by raising
    /// :class:`CompileError`; linted once per program, never for an
    /// artifact that records its lint result.
    pub(crate) fn check_rules(&self, py: Python<'_>) -> PyResult<()> {
        if self.lint_recorded {
            return Ok(());
        }
        let verdict = self.rules.get_or_init(|| {
            let program = self.program.clone();
            let source = self.source.clone();
            py.allow_threads(move || rule_verdict(&program, &source))
        });
        match verdict {
            Ok(()) => Ok(()),
            Err((text, diagnostics)) => Err(compile_error(py, text.clone(), diagnostics.clone())),
        }
    }
}

/// Lints a program as `lpkc run` does before running it: from its source
/// when it has one, else from its plans.
fn rule_verdict(program: &Program, source: &Source) -> Result<(), (String, Vec<PyDiagnostic>)> {
    let mut sources = SourceMap::new();
    let errors = match &source.text {
        Some(text) => match compile_source(
            &mut sources,
            &source.name,
            text,
            source.program.as_deref(),
            LintGate::DenyErrors,
        ) {
            Err(RustCompileError::Diagnostics(d)) => d,
            _ => Vec::new(),
        },
        None => {
            let art = Artifact {
                compiler: COMPILER.to_string(),
                source: SourceInfo::of_program(program, &source.name, None),
                program: program.clone(),
                lint: None,
            };
            let opts = lpk_compiler::lint::LintOptions::default();
            let report =
                lpk_compiler::lint::artifact::lint_artifact(&art, &mut sources, &opts, None);
            lpk_compiler::lint::rule_check(report).errors
        }
    };
    if errors.is_empty() {
        Ok(())
    } else {
        Err((
            sources.render_plain(&errors),
            diagnostics_of(&sources, &errors),
        ))
    }
}

#[pymethods]
impl PyProgram {
    /// The program's name.
    #[getter]
    fn name(&self) -> String {
        self.program.name.clone()
    }

    /// The parameters and their defaults (``None`` when a value is needed).
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for p in &self.program.params {
            d.set_item(&p.name, p.default)?;
        }
        Ok(d)
    }

    /// The input matrices' names, in declaration order.
    #[getter]
    fn inputs(&self) -> Vec<String> {
        self.matrices_of(lpk_model::program::Role::Input)
    }

    /// The output matrices' names, in declaration order.
    #[getter]
    fn outputs(&self) -> Vec<String> {
        self.matrices_of(lpk_model::program::Role::Output)
    }

    /// The warnings of compiling the source (empty for an artifact).
    #[getter]
    fn warnings(&self) -> Vec<PyDiagnostic> {
        self.warnings.clone()
    }

    /// The program's source text, when known (an artifact may carry none).
    #[getter]
    fn source(&self) -> Option<String> {
        self.source.text.clone()
    }

    /// Binds the parameters: ``program.bind(N=4)``. Parameters with a
    /// default may be left out. Raises :class:`BindError` (a ``ValueError``)
    /// for an unknown or missing parameter or an unmet ``require``.
    #[pyo3(signature = (**params))]
    fn bind(
        slf: &Bound<'_, Self>,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<objects::PyInstance> {
        let given = params_of(params)?;
        objects::PyInstance::new(slf, &given)
    }

    /// Lints the program (needs its source): the diagnostics and the rule
    /// statuses, as ``lpkc lint --format json`` prints them (a dict with
    /// ``"diagnostics"`` and ``"lint"``: ``{"program", "rules": [{"code",
    /// "rule", "status", "detail"}]}``). ``bound`` is ``--bound``; ``params``
    /// an instance to check too (``-p``).
    #[pyo3(signature = (bound=None, params=None))]
    fn lint(
        &self,
        py: Python<'_>,
        bound: Option<i64>,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyObject> {
        let Some(text) = &self.source.text else {
            return Err(LpkError::new_err(
                "this program was loaded from an artifact without its source; lint needs the source",
            ));
        };
        let given = params_of(params)?;
        let mut opts = lpk_compiler::lint::LintOptions::default();
        if let Some(b) = bound {
            if b < 0 {
                return Err(PyValueError::new_err("bound must be at least 0"));
            }
            opts.bound = b;
        }
        let name = self.source.name.clone();
        let chosen = self.source.program.clone();
        let value = py.allow_threads(|| -> Result<serde_json::Value, String> {
            let mut sources = SourceMap::new();
            let compiled =
                compile_source(&mut sources, &name, text, chosen.as_deref(), LintGate::Off)
                    .map_err(|e| e.to_string())?;
            let hir = compiled.hir();
            let inst = if given.is_empty() {
                None
            } else {
                Some(compiled.program.bind(&given).map_err(|e| e.to_string())?)
            };
            let report = lpk_compiler::lint::lint_program(
                &compiled.checked.module,
                hir,
                &compiled.program,
                compiled.checked.file,
                &opts,
                inst.as_ref(),
            );
            let mut diagnostics = compiled.checked.diagnostics.clone();
            diagnostics.extend(report.diagnostics);
            lpk_compiler::pipeline::sort_by_position(&mut diagnostics);
            let mut value = sources.to_json(&diagnostics);
            let rules: Vec<serde_json::Value> = report
                .summary
                .iter()
                .map(|l| {
                    serde_json::json!({
                        "code": l.code, "rule": l.rule, "status": l.status, "detail": l.detail,
                    })
                })
                .collect();
            let mut lint = serde_json::json!({"program": hir.name, "rules": rules});
            if !given.is_empty() {
                let params: serde_json::Map<String, serde_json::Value> = given
                    .iter()
                    .map(|(n, v)| (n.clone(), (*v).into()))
                    .collect();
                lint["instance"] = params.into();
            }
            if let Some(obj) = value.as_object_mut() {
                obj.insert("lint".into(), lint);
            }
            Ok(value)
        });
        let value = value.map_err(LpkError::new_err)?;
        json_to_py(py, &value)
    }

    /// Writes the compiled artifact to ``path``: CBOR (``.lpka``), or its
    /// JSON twin when the name ends in ``.json`` or ``json=True``.
    #[pyo3(signature = (path, *, json=None, source=true))]
    fn save(&self, path: std::path::PathBuf, json: Option<bool>, source: bool) -> PyResult<()> {
        let json = json.unwrap_or_else(|| path.extension().is_some_and(|e| e == "json"));
        let program = (*self.program).clone();
        let info = SourceInfo::of_program(
            &program,
            &self.source.name,
            if source {
                self.source.text.clone()
            } else {
                None
            },
        );
        let art = Artifact {
            compiler: COMPILER.to_string(),
            source: info,
            program,
            lint: None,
        };
        let bytes = if json {
            artifact::encode_json(&art).map(String::into_bytes)
        } else {
            artifact::encode(&art)
        }
        .map_err(|e| LpkError::new_err(e.to_string()))?;
        std::fs::write(&path, bytes).map_err(|e| {
            pyo3::exceptions::PyOSError::new_err(format!("cannot write {}: {e}", path.display()))
        })
    }

    /// The program-level graph (statements and their dependence relations)
    /// in Graphviz DOT, as ``lpkc dot FILE`` prints it.
    fn to_dot(&self) -> String {
        lpk_compiler::explore::dot::program_dot(&self.program)
    }

    fn __repr__(&self) -> String {
        let params: Vec<String> = self
            .program
            .params
            .iter()
            .map(|p| match p.default {
                Some(d) => format!("{}={d}", p.name),
                None => p.name.clone(),
            })
            .collect();
        format!("<lpk.Program {}({})>", self.program.name, params.join(", "))
    }
}

impl PyProgram {
    fn matrices_of(&self, role: lpk_model::program::Role) -> Vec<String> {
        self.program
            .matrices
            .iter()
            .filter(|m| m.role == role)
            .map(|m| m.name.clone())
            .collect()
    }
}

/// A JSON value as Python objects (through the `json` module, which is
/// exact for what serde_json writes).
pub(crate) fn json_to_py(py: Python<'_>, value: &serde_json::Value) -> PyResult<PyObject> {
    let text = value.to_string();
    let json = py.import("json")?;
    Ok(json.call_method1("loads", (text,))?.unbind())
}

/// Refuses an instance above `max` tasks, counted first.
pub(crate) fn check_limit(inst: &lpk_model::program::Instance<'_>, max: u64) -> PyResult<u64> {
    TaskLimit {
        max,
        flag: "max_tasks=",
    }
    .check(inst)
    .map_err(|e| TaskLimitError::new_err(e.to_string()))
}

/// The native module `lpk._lpk`.
#[pymodule]
fn _lpk(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(run::run, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::submit, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::status, m)?)?;
    m.add_function(wrap_pyfunction!(worker::worker, m)?)?;
    m.add_class::<PyProgram>()?;
    m.add_class::<objects::PyInstance>()?;
    m.add_class::<PyTask>()?;
    m.add_class::<PyTile>()?;
    m.add_class::<objects::PyDag>()?;
    m.add_class::<PyDiagnostic>()?;
    m.add("LpkError", py.get_type::<LpkError>())?;
    m.add("CompileError", py.get_type::<CompileError>())?;
    m.add("BindError", py.get_type::<BindError>())?;
    m.add("QueryError", py.get_type::<QueryError>())?;
    m.add("TaskLimitError", py.get_type::<TaskLimitError>())?;
    m.add("RunError", py.get_type::<RunError>())?;
    m.add("DEFAULT_MAX_TASKS", DEFAULT_MAX_TASKS)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
