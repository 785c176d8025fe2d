//! Reporting what went wrong: diagnostics in the chosen format (text on
//! stderr, or the JSON of docs/cli.md through `output`), artifact errors as
//! `error[E04xx]` diagnostics, a failed pipeline, and the failures `main`
//! reports for every command ([`failure`]): one-message errors and failed
//! parameter bindings, the latter pointing at the declaration they break.
//! Each reporting function returns the [`CliError`] its caller returns.

use crate::args::Format;
use crate::error::{BindFailure, CliError};
use crate::output;
use lpk_compiler::diag::{Code, Diagnostic, Label, Severity, SourceMap};
use lpk_compiler::pipeline::{declaration_spans, CompileError, DeclarationSpans, SelectError};
use lpk_grammar::ast::Span;
use lpk_model::artifact::ArtifactError;
use lpk_model::program::BindError;
use std::path::Path;

/// The code of a usage error (exit code 2) reported as a diagnostic.
pub(crate) const CODE_USAGE: Code = Code::E0602;
/// The code of parameters that make no valid instance (an unmet
/// `require`, an extent that cannot be evaluated or is negative).
pub(crate) const CODE_INSTANCE: Code = Code::E0601;
/// The code of any other failure one message says (an evaluation error,
/// a task limit, a failed run).
pub(crate) const CODE_INPUT: Code = Code::E0603;

/// Prints diagnostics in the chosen format.
pub(crate) fn diagnostics(
    sources: &SourceMap,
    diagnostics: &[Diagnostic],
    format: Format,
    color: bool,
) {
    diagnostics_of(sources, diagnostics, format, color, None);
}

/// Prints diagnostics in the chosen format; in JSON, a diagnostic that
/// points at no source position names `file` (the command's input).
fn diagnostics_of(
    sources: &SourceMap,
    diagnostics: &[Diagnostic],
    format: Format,
    color: bool,
    file: Option<&Path>,
) {
    match format {
        Format::Json => {
            let mut value = sources.to_json(diagnostics);
            if let (Some(file), Some(items)) = (
                file,
                value.get_mut("diagnostics").and_then(|d| d.as_array_mut()),
            ) {
                for item in items {
                    if item["file"].as_str().is_some_and(str::is_empty) {
                        item["file"] = file.display().to_string().into();
                    }
                }
            }
            output::json(&value);
        }
        Format::Human => sources.emit_stderr(diagnostics, color),
    }
}

/// Reports why a source did not compile: its diagnostics (the input has
/// errors), a file without a program (also an error of the input), or
/// why the program asked for cannot be chosen (a usage error, reported
/// by `main`).
pub(crate) fn compile_failure(
    sources: &SourceMap,
    error: CompileError,
    format: Format,
    color: bool,
) -> CliError {
    match error {
        CompileError::Diagnostics(d) => {
            diagnostics(sources, &d, format, color);
            CliError::Reported
        }
        CompileError::Select(e @ SelectError::NoProgram) => CliError::Input(e.to_string()),
        CompileError::Select(e) => CliError::Usage(e.to_string()),
        CompileError::Internal(e) => CliError::Input(e.to_string()),
    }
}

/// The diagnostic of an artifact error, with the file in a note (an
/// artifact has no source position for a broken header).
fn artifact_diagnostic(path: &Path, e: &ArtifactError) -> Diagnostic {
    Diagnostic {
        severity: Severity::Error,
        code: e.into(),
        message: e.to_string(),
        labels: Vec::new(),
        notes: vec![format!("in {}", path.display())],
    }
}

/// Reports an artifact error as a diagnostic in the chosen format.
pub(crate) fn artifact_error(
    path: &Path,
    e: &ArtifactError,
    format: Format,
    color: bool,
) -> CliError {
    let d = artifact_diagnostic(path, e);
    diagnostics_of(&SourceMap::new(), &[d], format, color, Some(path));
    CliError::Reported
}

/// Reports a command's failure the way docs/cli.md says: with `--format
/// json` always the diagnostics object on stdout; else a usage or input
/// message as `error: MESSAGE` on stderr and a failed binding as a
/// diagnostic at the declaration it breaks. `file` is the command's input.
pub(crate) fn failure(error: &CliError, file: Option<&Path>, format: Format, color: bool) {
    let message = |code: Code, message: &str| {
        if format == Format::Json {
            let d = Diagnostic {
                severity: Severity::Error,
                code,
                message: message.to_string(),
                labels: Vec::new(),
                notes: Vec::new(),
            };
            diagnostics_of(&SourceMap::new(), &[d], format, color, file);
        } else {
            eprintln!("error: {message}");
        }
    };
    match error {
        CliError::Usage(m) => message(CODE_USAGE, m),
        CliError::Input(m) => message(CODE_INPUT, m),
        CliError::Bind(b) => {
            let (sources, spans) = file
                .and_then(|f| locate(f, &b.program))
                .map_or((SourceMap::new(), None), |(s, d)| (s, Some(d)));
            let d = bind_diagnostic(b, spans.as_ref(), file);
            diagnostics_of(&sources, &[d], format, color, file);
        }
        CliError::Reported => {}
    }
}

/// The source of `path` (a source file, or the text an artifact carries)
/// in a new source map, with the declarations of `program` in it.
fn locate(path: &Path, program: &str) -> Option<(SourceMap, DeclarationSpans)> {
    let (name, text) = source_text(path)?;
    let mut sources = SourceMap::new();
    let file = sources.add(name, text);
    let spans = declaration_spans(sources.source(file), file, program)?;
    Some((sources, spans))
}

/// The source text of `path` with the file name diagnostics give it: the
/// file itself, or the source a valid artifact carries (under the name it
/// was compiled from). `None` when there is none to read.
fn source_text(path: &Path) -> Option<(String, String)> {
    let bytes = std::fs::read(path).ok()?;
    if lpk_model::artifact::looks_like_artifact(&bytes) {
        let art = lpk_model::artifact::decode(&bytes).ok()?.artifact;
        Some((art.source.file, art.source.text?))
    } else {
        Some((path.display().to_string(), String::from_utf8(bytes).ok()?))
    }
}

/// The diagnostic of a failed binding: at the `require` that does not hold
/// with the values that broke it, at the parameter that needs a value, at
/// the parameter list a name is not in, at the matrix whose extent is bad.
/// Without the source (an artifact compiled with `--no-source`) it has no
/// label and says so.
fn bind_diagnostic(
    b: &BindFailure,
    spans: Option<&DeclarationSpans>,
    file: Option<&Path>,
) -> Diagnostic {
    let code = if b.is_usage() {
        CODE_USAGE
    } else {
        CODE_INSTANCE
    };
    let (message, label, notes): (String, Option<(Span, String)>, Vec<String>) = match &b.error {
        BindError::Require { index, text } => {
            let named: Vec<String> = b
                .values
                .iter()
                .filter(|(n, _)| mentions(text, n))
                .filter_map(|(n, v)| v.map(|v| format!("{n} = {v}")))
                .collect();
            let values = if named.is_empty() {
                String::new()
            } else {
                format!(" for {}", named.join(", "))
            };
            (
                format!("`require {text}` does not hold{values}"),
                spans
                    .and_then(|s| s.requires.get(index.saturating_sub(1)))
                    .map(|&s| (s, format!("requirement {index} of `{}`", b.program))),
                vec![format!(
                    "help: choose parameters that meet every `require` of `{}`",
                    b.program
                )],
            )
        }
        BindError::Missing(name) => (
            b.error.to_string(),
            spans
                .and_then(|s| s.params.iter().find(|(n, _)| n == name))
                .map(|(_, s)| (*s, "declared here without a default".to_string())),
            Vec::new(),
        ),
        BindError::Unknown { .. } => (
            b.error.to_string(),
            spans.map(|s| {
                let list = s
                    .params
                    .iter()
                    .map(|(_, s)| *s)
                    .reduce(Span::to)
                    .unwrap_or(s.name);
                (list, format!("the parameters of `{}`", b.program))
            }),
            Vec::new(),
        ),
        BindError::NegativeExtent { matrix, .. } => (
            b.error.to_string(),
            spans
                .and_then(|s| s.matrices.iter().find(|(n, _)| n == matrix))
                .map(|(_, s)| (*s, "declared here".to_string())),
            Vec::new(),
        ),
        BindError::Eval { .. } => (b.error.to_string(), None, Vec::new()),
    };
    let mut notes = notes;
    if spans.is_none() {
        if let Some(f) = file {
            notes.push(format!(
                "in {} (its source text is not available to point at)",
                f.display()
            ));
        }
    }
    if !b.is_usage() {
        let given: Vec<String> = b
            .values
            .iter()
            .filter_map(|(n, v)| v.map(|v| format!("{n}={v}")))
            .collect();
        if !given.is_empty() {
            notes.insert(
                0,
                format!("the instance: {}({})", b.program, given.join(", ")),
            );
        }
    }
    Diagnostic {
        severity: Severity::Error,
        code,
        message,
        labels: label
            .map(|(span, message)| Label {
                span,
                message,
                primary: true,
            })
            .into_iter()
            .collect(),
        notes,
    }
}

/// Whether `name` occurs in `text` as a whole identifier.
fn mentions(text: &str, name: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|word| word == name)
}
