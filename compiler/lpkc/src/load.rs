//! Reading a command's input file: a source as UTF-8 text, an artifact
//! as bytes, and "a source or an artifact" compiled or loaded into a
//! program (told apart by the first bytes, not the name).

use crate::args::{GlobalOpts, InstanceArgs, ProgramArg};
use crate::error::CliError;
use crate::report;
use lpk_compiler::diag::{Diagnostic, Severity, SourceMap};
use lpk_compiler::pipeline::{compile_source, CompileError, LintGate};
use lpk_model::artifact::{self, ArtifactError, Loaded};
use lpk_model::program::Program;
use std::path::Path;

/// The commands that take a compiled artifact where a source would do.
const ARTIFACT_COMMANDS: &str = "check, lint, inspect, plans, query, dag, stats, dot, repl and run";

/// A command's input file: `.lpk` source text or a compiled artifact, told
/// apart by the artifact's magic bytes, not the file name.
pub(crate) enum Input {
    /// Source text.
    Source(String),
    /// The bytes of a compiled artifact (not yet decoded).
    Artifact(Vec<u8>),
}

/// The largest source or artifact file a command reads (64 MiB): a
/// larger one, or an endless one such as `/dev/zero`, is refused after
/// reading that much, not after filling the memory.
pub(crate) const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Reads at most `limit` bytes of `path` (`what` names it in errors): a
/// usage error if it cannot be read or is larger.
pub(crate) fn read_bounded(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>, CliError> {
    use std::io::Read;
    let cannot =
        |e: std::io::Error| CliError::Usage(format!("cannot read {what}{}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > limit {
        return Err(CliError::Usage(format!(
            "{what}{} is larger than {} MiB; lpkc reads no larger one",
            path.display(),
            limit >> 20
        )));
    }
    Ok(bytes)
}

/// Reads a source or an artifact, or explains why it cannot be read (a
/// usage error).
pub(crate) fn read_input(path: &Path) -> Result<Input, CliError> {
    let bytes = read_bounded(path, MAX_INPUT_BYTES, "")?;
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
pub(crate) fn read_source(path: &Path, command: &str) -> Result<String, CliError> {
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
pub(crate) fn read_artifact(path: &Path) -> Result<Result<Loaded, ArtifactError>, CliError> {
    let bytes = read_bounded(path, MAX_INPUT_BYTES, "")?;
    Ok(artifact::decode(&bytes))
}

/// What a command does with a program that breaks a rule of the language
/// (a lint error: a tile written twice, a read before its write, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rules {
    /// Refuse it before any work, with lint's diagnostics (`run`,
    /// `submit`): a run of such a program has no meaning.
    Refuse,
    /// Answer, after printing lint's errors as warnings on stderr
    /// (`query`, `dag`, `dot`, `stats`, `simulate`, the REPL).
    Warn,
    /// Do not lint (`plans`: it shows the plans, whatever they describe).
    Ignore,
}

/// The program of an exploring command (`query`, `dag`, `dot`, `stats`,
/// `simulate`): [`program_of`] with [`Rules::Warn`], the source map dropped.
pub(crate) fn explored(instance: &InstanceArgs, global: &GlobalOpts) -> Result<Program, CliError> {
    Ok(program_of(instance, global, Rules::Warn)?.1)
}

/// The [`program`] of a command that works on one instance: its file, and
/// the program `--program` chose in it.
pub(crate) fn program_of(
    instance: &InstanceArgs,
    global: &GlobalOpts,
    rules: Rules,
) -> Result<(SourceMap, Program), CliError> {
    program(&instance.file, &instance.program, global, rules)
}

/// Loads a source file and compiles the chosen program (diagnostics are
/// printed in the command's error format). A compiled artifact is loaded
/// and validated instead; its source map holds the source text it
/// carries, if any. `rules` says what a program that breaks a rule of
/// the language gets; an artifact that records its lint result (what
/// `lpkc compile` writes) is not linted again.
pub(crate) fn program(
    path: &Path,
    program: &ProgramArg,
    global: &GlobalOpts,
    rules: Rules,
) -> Result<(SourceMap, Program), CliError> {
    let text = match read_input(path)? {
        Input::Source(text) => text,
        Input::Artifact(bytes) => return from_artifact(path, &bytes, program, global, rules),
    };
    let mut sources = SourceMap::new();
    let gate = if rules == Rules::Refuse {
        LintGate::DenyErrors
    } else {
        LintGate::Off
    };
    let compiled = compile_source(
        &mut sources,
        &path.display().to_string(),
        &text,
        program.program.as_deref(),
        gate,
    )
    .map_err(|e| report::compile_failure(&sources, e, global.errors, global.color))?;
    if rules == Rules::Warn {
        let errors = lpk_compiler::lint::lint_errors(
            &compiled.checked.module,
            compiled.hir(),
            &compiled.program,
            compiled.checked.file,
        );
        warn(&sources, errors, global);
    }
    Ok((sources, compiled.program))
}

/// Decodes an artifact's bytes and checks it holds the program asked for,
/// then lints it as `rules` says, unless it records its lint result.
fn from_artifact(
    path: &Path,
    bytes: &[u8],
    program: &ProgramArg,
    global: &GlobalOpts,
    rules: Rules,
) -> Result<(SourceMap, Program), CliError> {
    let loaded = artifact::decode(bytes)
        .map_err(|e| report::artifact_error(path, &e, global.errors, global.color))?;
    let art = loaded.artifact;
    if let Some(name) = program.program.as_deref() {
        if name != art.program.name {
            return Err(CliError::Usage(format!(
                "no program named `{name}` (the artifact holds: {})",
                art.program.name
            )));
        }
    }
    let mut sources = SourceMap::new();
    if rules == Rules::Ignore || art.lint.is_some() {
        sources.add(art.source.file, art.source.text.unwrap_or_default());
        return Ok((sources, art.program));
    }
    let lint = lpk_compiler::lint::artifact::lint_artifact(
        &art,
        &mut sources,
        &lpk_compiler::lint::LintOptions::default(),
        None,
    );
    let errors = lpk_compiler::lint::rule_check(lint).errors;
    if art.source.text.is_none() {
        sources.add(art.source.file, String::new());
    }
    match rules {
        Rules::Refuse if !errors.is_empty() => Err(report::compile_failure(
            &sources,
            CompileError::Diagnostics(errors),
            global.errors,
            global.color,
        )),
        _ => {
            warn(&sources, errors, global);
            Ok((sources, art.program))
        }
    }
}

/// Prints lint errors as warnings on stderr: the command answers from the
/// plans, but the program breaks a rule and `lpkc run` refuses it.
fn warn(sources: &SourceMap, errors: Vec<Diagnostic>, global: &GlobalOpts) {
    if errors.is_empty() {
        return;
    }
    let warnings: Vec<Diagnostic> = errors
        .into_iter()
        .map(|mut d| {
            d.severity = Severity::Warning;
            d.notes.push(
                "this program breaks a rule of the language: `lpkc run` and `lpkc submit` \
                 refuse it, and the answers below follow its plans"
                    .into(),
            );
            d
        })
        .collect();
    sources.emit_stderr(&warnings, global.color);
}
