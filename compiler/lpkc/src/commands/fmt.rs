//! `lpkc fmt`: rewrite a source file in the canonical style, print it, or
//! check that it is formatted.

use crate::args::GlobalOpts;
use crate::error::CliError;
use crate::{load, output};
use compiler::diag::SourceMap;
use compiler::pipeline::check_source;
use std::path::PathBuf;

/// Arguments of `lpkc fmt`.
#[derive(clap::Args, Debug)]
pub struct FmtArgs {
    /// The `.lpk` source file.
    pub file: PathBuf,
    /// Do not write; exit with 1 if the file is not formatted.
    #[arg(long)]
    pub check: bool,
    /// Print the formatted source to stdout instead of rewriting the file.
    #[arg(long, conflicts_with = "check")]
    pub stdout: bool,
}

/// Runs `lpkc fmt`.
pub fn run(args: &FmtArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let path = &args.file;
    let text = load::read_source(path, "fmt")?;
    let Ok(formatted) = grammar::fmt::format_source(&text) else {
        // Report the syntax errors the way `check` does.
        let mut sources = SourceMap::new();
        let checked = check_source(&mut sources, &path.display().to_string(), &text);
        sources.emit_stderr(&checked.diagnostics, global.color);
        return Err(CliError::Reported);
    };
    if args.stdout {
        output::out(&formatted);
        Ok(())
    } else if formatted == text {
        Ok(())
    } else if args.check {
        eprintln!(
            "{} is not formatted; run `lpkc fmt {}`",
            path.display(),
            path.display()
        );
        Err(CliError::Reported)
    } else {
        std::fs::write(path, formatted)
            .map_err(|e| CliError::Usage(format!("cannot write {}: {e}", path.display())))
    }
}
