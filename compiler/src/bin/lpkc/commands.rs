//! One function per subcommand. Each returns the process exit code; usage
//! problems (missing file, bad flag values) are exit code 2, problems in the
//! input are diagnostics and exit code 1.

use crate::output;
use crate::{Cli, Color, Command, Format};
use compiler::codes;
use compiler::diag::SourceMap;
use compiler::driver::{check_source, Checked};
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

/// Exit code: the input has errors.
pub const EXIT_ERRORS: u8 = 1;
/// Exit code: usage error.
pub const EXIT_USAGE: u8 = 2;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    let color = match cli.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stderr().is_terminal(),
    };
    match cli.command {
        Command::Check { file, format } => check(&file, format, color),
        Command::Explain { code, list } => explain(code.as_deref(), list),
    }
}

/// Reports a usage error and returns exit code 2.
pub fn usage_error(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_USAGE)
}

/// Reads a source file, or explains why it cannot be read.
pub fn read_source(path: &Path) -> Result<String, ExitCode> {
    match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(s) => Ok(s),
            Err(e) => Err(usage_error(&format!(
                "{} is not valid UTF-8 (byte {})",
                path.display(),
                e.utf8_error().valid_up_to()
            ))),
        },
        Err(e) => Err(usage_error(&format!("cannot read {}: {e}", path.display()))),
    }
}

/// Prints diagnostics in the chosen format.
pub fn report(sources: &SourceMap, checked: &Checked, format: Format, color: bool) {
    match format {
        Format::Json => output::json(&sources.to_json(&checked.diagnostics)),
        Format::Human => sources.emit_stderr(&checked.diagnostics, color),
    }
}

fn check(path: &Path, format: Format, color: bool) -> ExitCode {
    let text = match read_source(path) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let mut sources = SourceMap::new();
    let checked = check_source(&mut sources, &path.display().to_string(), &text);
    report(&sources, &checked, format, color);
    if checked.has_errors() {
        ExitCode::from(EXIT_ERRORS)
    } else {
        ExitCode::SUCCESS
    }
}

fn explain(code: Option<&str>, list: bool) -> ExitCode {
    if list || code.is_none() {
        for c in codes::CODES {
            output::line(&format!("{}  {}", c.code, c.summary));
        }
        return ExitCode::SUCCESS;
    }
    let code = code.unwrap_or_default();
    match codes::lookup(code) {
        Some(info) => {
            output::out(info.doc);
            ExitCode::SUCCESS
        }
        None => usage_error(&format!(
            "unknown diagnostic code `{code}`; `lpkc explain --list` lists every code"
        )),
    }
}
