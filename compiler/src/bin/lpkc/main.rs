//! `lpkc`: the command-line front of the lpk compiler. Argument parsing and
//! output live here; everything else is in the `compiler` library.
//!
//! Exit codes (spec/cli.md): 0 success, 1 the input has errors, 2 usage
//! error.

mod commands;
mod output;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

/// The lpk compiler, static analyzer and dependency query tool for `.lpk`
/// tiled linear-algebra programs.
#[derive(Parser, Debug)]
#[command(name = "lpkc", version, about, long_about = None)]
pub struct Cli {
    /// When to colour diagnostics.
    #[arg(long, value_enum, default_value_t = Color::Auto, global = true)]
    pub color: Color,
    #[command(subcommand)]
    pub command: Command,
}

/// Colour choice.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Color {
    /// Colour when stderr is a terminal.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// Output format of diagnostics and answers.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq, Default)]
pub enum Format {
    /// Human-readable text (diagnostics on stderr).
    #[default]
    Human,
    /// One JSON object on stdout (see spec/cli.md).
    Json,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Parse, resolve and type-check a source file and report diagnostics.
    Check {
        /// The `.lpk` source file.
        file: PathBuf,
        /// Diagnostics as text on stderr or as JSON on stdout.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Print the documentation of a diagnostic code (e.g. `lpkc explain E0101`).
    Explain {
        /// The code; omit it with `--list` to list every code.
        code: Option<String>,
        /// List every code with its summary.
        #[arg(long)]
        list: bool,
    },
}

fn main() -> ExitCode {
    // Deeply nested input is rejected by the parser long before the stack
    // runs out, but the compiler's recursive passes still get a generous
    // stack so that no input near the limits can crash them.
    let handle = std::thread::Builder::new()
        .name("lpkc".into())
        .stack_size(256 * 1024 * 1024)
        .spawn(|| {
            let cli = Cli::parse();
            commands::run(cli)
        });
    match handle.map(|h| h.join()) {
        Ok(Ok(code)) => code,
        _ => {
            eprintln!("error: internal error: lpkc crashed; this is a bug, please report it");
            ExitCode::from(101)
        }
    }
}
