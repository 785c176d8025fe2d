//! `lpkc fmt`: rewrite source files in the canonical style, print one, or
//! check that they are formatted, showing what would change as a unified
//! diff.

use crate::args::GlobalOpts;
use crate::error::CliError;
use crate::{load, output};
use lpk_compiler::diag::SourceMap;
use lpk_compiler::pipeline::check_source;
use std::path::{Path, PathBuf};

/// Arguments of `lpkc fmt`.
#[derive(clap::Args, Debug)]
pub(crate) struct FmtArgs {
    /// The `.lpk` source files.
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// Do not write; print a unified diff of each file that is not
    /// formatted, and exit with 1 if any is not.
    #[arg(long)]
    pub(crate) check: bool,
    /// Print the formatted source to stdout instead of rewriting the file
    /// (one file only).
    #[arg(long, conflicts_with = "check")]
    pub(crate) stdout: bool,
}

/// Runs `lpkc fmt`. Every file is read before any is written, so that an
/// unreadable one (a usage error) leaves all of them as they were; a file
/// with syntax errors is reported and skipped, and the others are still
/// formatted (or checked).
pub(crate) fn run(args: &FmtArgs, global: &GlobalOpts) -> Result<(), CliError> {
    if args.stdout && args.files.len() > 1 {
        return Err(CliError::Usage(
            "`lpkc fmt --stdout` prints one file; give one".to_string(),
        ));
    }
    let texts = args
        .files
        .iter()
        .map(|path| load::read_source(path, "fmt"))
        .collect::<Result<Vec<String>, CliError>>()?;
    let mut failed = false;
    for (path, text) in args.files.iter().zip(&texts) {
        let Ok(formatted) = lpk_grammar::fmt::format_source(text) else {
            // Report the syntax errors the way `check` does.
            let mut sources = SourceMap::new();
            let checked = check_source(&mut sources, &path.display().to_string(), text);
            sources.emit_stderr(&checked.diagnostics, global.color);
            failed = true;
            continue;
        };
        if args.stdout {
            output::out(&formatted);
        } else if formatted == *text {
            continue;
        } else if args.check {
            output::out(&unified_diff(path, text, &formatted));
            eprintln!(
                "{} is not formatted; run `lpkc fmt {}`",
                path.display(),
                path.display()
            );
            failed = true;
        } else {
            std::fs::write(path, formatted)
                .map_err(|e| CliError::Usage(format!("cannot write {}: {e}", path.display())))?;
        }
    }
    if failed {
        Err(CliError::Reported)
    } else {
        Ok(())
    }
}

/// What formatting `path` would change: `--- FILE`, `+++ FILE
/// (formatted)`, then `@@` hunks with three lines of context.
fn unified_diff(path: &Path, text: &str, formatted: &str) -> String {
    let name = path.display().to_string();
    similar::TextDiff::from_lines(text, formatted)
        .unified_diff()
        .context_radius(3)
        .header(&name, &format!("{name} (formatted)"))
        .to_string()
}
