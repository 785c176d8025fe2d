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

/// The commands that take a compiled artifact where a source would do.
const ARTIFACT_COMMANDS: &str = "check, lint, inspect, plans, query, dag, stats, dot, repl and run";

/// A command's input file: `.lpk` source text or a compiled artifact, told
/// apart by the artifact's magic bytes, not the file name.
pub enum Input {
    /// Source text.
    Source(String),
    /// The bytes of a compiled artifact (not yet decoded).
    Artifact(Vec<u8>),
}

/// Reads a source or an artifact, or explains why it cannot be read (a
/// usage error).
pub fn read_input(path: &Path) -> Result<Input, CliError> {
    let bytes = std::fs::read(path)
        .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", path.display())))?;
    if artifact::looks_like_artifact(&bytes) {
        return Ok(Input::Artifact(bytes));
    }
    String::from_utf8(bytes).map(Input::Source).map_err(|e| {
        CliError::Usage(format!(
            "{} is not valid UTF-8 (byte {})",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Reads a source file for `lpkc COMMAND`, which needs the source: an
/// artifact is a usage error that says what the file is and which
/// commands take one.
pub fn read_source(path: &Path, command: &str) -> Result<String, CliError> {
    match read_input(path)? {
        Input::Source(text) => Ok(text),
        Input::Artifact(_) => Err(CliError::Usage(format!(
            "{} is a compiled lpk artifact, not `.lpk` source: `lpkc {command}` needs the \
             source (the commands that take an artifact: {ARTIFACT_COMMANDS})",
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
/// printed in the command's error format). A compiled artifact is loaded
/// and validated instead; its source map holds the source text it
/// carries, if any.
pub fn program(
    path: &Path,
    program: &ProgramArg,
    global: &GlobalOpts,
) -> Result<(SourceMap, Program), CliError> {
    let text = match read_input(path)? {
        Input::Source(text) => text,
        Input::Artifact(bytes) => return from_artifact(path, &bytes, program, global),
    };
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

/// Decodes an artifact's bytes and checks it holds the program asked for.
fn from_artifact(
    path: &Path,
    bytes: &[u8],
    program: &ProgramArg,
    global: &GlobalOpts,
) -> Result<(SourceMap, Program), CliError> {
    let loaded = artifact::decode(bytes)
        .map_err(|e| report::artifact_error(path, &e, global.errors, global.color))?;
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
