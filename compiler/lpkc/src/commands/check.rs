//! `lpkc check`: parse, resolve and type-check one source file and report
//! its diagnostics; or decode and validate a compiled artifact and report
//! whether it loads.

use crate::args::{Format, GlobalOpts};
use crate::error::CliError;
use crate::load::{self, Input};
use crate::report;
use lpk_compiler::diag::SourceMap;
use lpk_compiler::pipeline::check_source;
use std::path::PathBuf;

/// Arguments of `lpkc check`.
#[derive(clap::Args, Debug)]
pub(crate) struct CheckArgs {
    /// The `.lpk` source file, or a compiled artifact to validate.
    pub(crate) file: PathBuf,
    /// Diagnostics as text on stderr or as JSON on stdout.
    #[arg(long, value_enum, default_value_t)]
    pub(crate) format: Format,
}

/// Runs `lpkc check`.
pub(crate) fn run(args: &CheckArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let text = match load::read_input(&args.file)? {
        Input::Source(text) => text,
        Input::Artifact(bytes) => return check_artifact(args, global, &bytes),
    };
    let mut sources = SourceMap::new();
    let checked = check_source(&mut sources, &args.file.display().to_string(), &text);
    report::diagnostics(&sources, &checked.diagnostics, args.format, global.color);
    if checked.has_errors() {
        Err(CliError::Reported)
    } else {
        Ok(())
    }
}

/// Decodes and validates an artifact: no diagnostics (and a line saying
/// so on stderr) when it loads, else its artifact error.
fn check_artifact(args: &CheckArgs, global: &GlobalOpts, bytes: &[u8]) -> Result<(), CliError> {
    let path = &args.file;
    let loaded = lpk_model::artifact::decode(bytes)
        .map_err(|e| report::artifact_error(path, &e, args.format, global.color))?;
    match args.format {
        Format::Json => report::diagnostics(&SourceMap::new(), &[], args.format, global.color),
        Format::Human => eprintln!(
            "{}: a valid artifact of program `{}` (format lpka {}.{}, {})",
            path.display(),
            loaded.artifact.program.name,
            loaded.major,
            loaded.minor,
            loaded.artifact.compiler
        ),
    }
    Ok(())
}
