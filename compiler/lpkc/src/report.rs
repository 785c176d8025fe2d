//! Reporting what went wrong in the input: diagnostics in the chosen
//! format (text on stderr, or the JSON of spec/cli.md through `output`),
//! artifact errors as `error[E04xx]` diagnostics, and a failed pipeline.
//! Each reporting function returns the [`CliError`] its caller returns.

use crate::args::Format;
use crate::error::CliError;
use crate::output;
use compiler::diag::{Diagnostic, Severity, SourceMap};
use compiler::pipeline::CompileError;
use model::artifact::ArtifactError;
use std::path::Path;

/// Prints diagnostics in the chosen format.
pub fn diagnostics(sources: &SourceMap, diagnostics: &[Diagnostic], format: Format, color: bool) {
    match format {
        Format::Json => output::json(&sources.to_json(diagnostics)),
        Format::Human => sources.emit_stderr(diagnostics, color),
    }
}

/// Reports why a source did not compile: its diagnostics (the input has
/// errors) or why no program could be chosen (a usage error, printed by
/// `main`).
pub fn compile_failure(
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
pub fn artifact_error(path: &Path, e: &ArtifactError, format: Format, color: bool) -> CliError {
    let d = artifact_diagnostic(path, e);
    diagnostics(&SourceMap::new(), &[d], format, color);
    CliError::Reported
}
