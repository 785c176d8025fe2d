//! `lpkc check`: parse, resolve and type-check one source file and report
//! its diagnostics.

use crate::args::{Format, GlobalOpts};
use crate::error::CliError;
use crate::{load, report};
use compiler::diag::SourceMap;
use compiler::pipeline::check_source;
use std::path::PathBuf;

/// Arguments of `lpkc check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The `.lpk` source file.
    pub file: PathBuf,
    /// Diagnostics as text on stderr or as JSON on stdout.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `lpkc check`.
pub fn run(args: &CheckArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let text = load::read_source(&args.file)?;
    let mut sources = SourceMap::new();
    let checked = check_source(&mut sources, &args.file.display().to_string(), &text);
    report::diagnostics(&sources, &checked.diagnostics, args.format, global.color);
    if checked.has_errors() {
        Err(CliError::Reported)
    } else {
        Ok(())
    }
}
