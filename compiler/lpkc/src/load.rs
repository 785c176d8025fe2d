//! Reading a command's input file: a source as UTF-8 text, an artifact
//! as bytes, and "a source or an artifact" compiled or loaded into a
//! program (told apart by the first bytes, not the name).

use crate::args::{GlobalOpts, ProgramArg};
use crate::error::CliError;
use crate::report;
use compiler::diag::SourceMap;
use compiler::pipeline::{compile_source, LintGate};
use model::artifact::{self, ArtifactError, Loaded};
use model::program::Program;
use std::path::Path;

/// Reads a source file, or explains why it cannot be read (a usage error).
pub fn read_source(path: &Path) -> Result<String, CliError> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|e| {
            CliError::Usage(format!(
                "{} is not valid UTF-8 (byte {})",
                path.display(),
                e.utf8_error().valid_up_to()
            ))
        }),
        Err(e) => Err(CliError::Usage(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// Reads and decodes an artifact file: a usage error if it cannot be read,
/// else the decoder's verdict.
pub fn read_artifact(path: &Path) -> Result<Result<Loaded, ArtifactError>, CliError> {
    let bytes = std::fs::read(path)
        .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", path.display())))?;
    Ok(artifact::decode(&bytes))
}

/// Loads a source file and compiles the chosen program (diagnostics are
/// printed on stderr). A compiled artifact is loaded and validated
/// instead; its source map holds the source text it carries, if any.
pub fn program(
    path: &Path,
    program: &ProgramArg,
    global: &GlobalOpts,
) -> Result<(SourceMap, Program), CliError> {
    if let Some(loaded) = try_artifact(path, program, global) {
        return loaded;
    }
    let text = read_source(path)?;
    let mut sources = SourceMap::new();
    match compile_source(
        &mut sources,
        &path.display().to_string(),
        &text,
        program.program.as_deref(),
        LintGate::Off,
    ) {
        Ok(compiled) => Ok((sources, compiled.program)),
        Err(e) => Err(report::compile_failure(
            &sources,
            e,
            global.errors,
            global.color,
        )),
    }
}

/// Loads `path` as an artifact if its first bytes say it is one (`None`
/// otherwise, so that the caller treats it as source).
fn try_artifact(
    path: &Path,
    program: &ProgramArg,
    global: &GlobalOpts,
) -> Option<Result<(SourceMap, Program), CliError>> {
    let bytes = std::fs::read(path).ok()?;
    if !artifact::looks_like_artifact(&bytes) {
        return None;
    }
    Some(match artifact::decode(&bytes) {
        Ok(loaded) => {
            let art = loaded.artifact;
            match program.program.as_deref() {
                Some(name) if name != art.program.name => Err(CliError::Usage(format!(
                    "no program named `{name}` (the artifact holds: {})",
                    art.program.name
                ))),
                _ => {
                    let mut sources = SourceMap::new();
                    sources.add(art.source.file, art.source.text.unwrap_or_default());
                    Ok((sources, art.program))
                }
            }
        }
        Err(e) => Err(report::artifact_error(
            path,
            &e,
            global.errors,
            global.color,
        )),
    })
}

/// The source text of `path` with the file name diagnostics give it: the
/// file itself, or the source a valid artifact carries (under the name it
/// was compiled from). `None` when there is none to read.
pub fn source_text(path: &Path) -> Option<(String, String)> {
    let bytes = std::fs::read(path).ok()?;
    if artifact::looks_like_artifact(&bytes) {
        let art = artifact::decode(&bytes).ok()?.artifact;
        Some((art.source.file, art.source.text?))
    } else {
        Some((path.display().to_string(), String::from_utf8(bytes).ok()?))
    }
}
