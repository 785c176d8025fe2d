//! The argument groups several commands share (the program file,
//! `--program`, `-p`, a distributed run's id and Redis, `--format`,
//! `--color`) and the global options every command receives.
//! Each command's own arguments live in its module under `commands/`.

use crate::error::CliError;
use clap::ValueEnum;
use std::io::IsTerminal;
use std::path::PathBuf;

/// Colour choice.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub(crate) enum Color {
    /// Colour when stderr is a terminal.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// Output format of diagnostics and answers.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq, Default)]
pub(crate) enum Format {
    /// Human-readable text (diagnostics on stderr).
    #[default]
    Human,
    /// One JSON object on stdout (see docs/cli.md).
    Json,
}

/// Picks a program of the file.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ProgramArg {
    /// The program to use when the file declares several.
    #[arg(long, value_name = "NAME")]
    pub(crate) program: Option<String>,
}

/// The arguments of a command that works on one instance: the file,
/// the program chosen in it, and the values of its parameters.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct InstanceArgs {
    /// The `.lpk` source file or a compiled artifact.
    pub(crate) file: PathBuf,
    #[command(flatten)]
    pub(crate) program: ProgramArg,
    /// Binds a program parameter (repeatable): `-p N=64`.
    #[arg(short = 'p', long = "param", value_name = "NAME=INT", value_parser = parse_param)]
    pub(crate) params: Vec<(String, i64)>,
}

/// The tiling and the input data of a command that runs a program (`run`,
/// `submit`).
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct RunInputs {
    /// Tile size: every tile is BLOCK x BLOCK except at the edges.
    #[arg(long, value_name = "B")]
    pub(crate) block: usize,
    /// Data of an input matrix (repeatable): NAME=FILE.npy,
    /// NAME=random:ROWSxCOLS, NAME=spd:N or NAME=identity:N.
    #[arg(long = "input", value_name = "NAME=SPEC", value_parser = parse_input)]
    pub(crate) inputs: Vec<(String, String)>,
}

impl RunInputs {
    /// Refuses a block of 0 (a usage error): no tile would hold anything.
    pub(crate) fn check_block(&self) -> Result<(), CliError> {
        if self.block == 0 {
            return Err(CliError::Usage("--block must be at least 1".into()));
        }
        Ok(())
    }
}

/// The run a command about one distributed run reads: its id and the
/// Redis that holds it.
#[derive(clap::Args, Debug)]
pub(crate) struct RunAddress {
    /// The run id `lpkc submit` printed.
    #[arg(value_name = "RUN")]
    pub(crate) id: String,
    /// The Redis that holds the run.
    #[arg(long, value_name = "URL")]
    pub(crate) redis: String,
}

/// Parses a number of seconds for `--lease`, `--idle` and the like:
/// above 0 and at most a year (`lpk_cluster::worker::seconds`).
pub(crate) fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if lpk_cluster::worker::seconds(v).is_some() => Ok(v),
        _ => Err(format!(
            "`{s}` is not a number of seconds above 0 and at most {} (a year)",
            lpk_cluster::worker::MAX_SECONDS
        )),
    }
}

/// Parses a size in bytes: a whole number with an optional binary suffix
/// `K`, `M`, `G` or `T` (`512M` is 512 MiB; `B`/`iB` may follow).
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (digits, shift) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 30),
        Some('T' | 't') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1u64 << shift))
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            format!("`{s}` is not a size: a whole number above 0, with K, M, G or T (e.g. 512M)")
        })
}

/// Parses one `-p NAME=INT`.
fn parse_param(s: &str) -> Result<(String, i64), String> {
    let (name, value) = split_named(s, "NAME=INT", "")?;
    let value: i64 = value
        .trim()
        .parse()
        .map_err(|_| format!("`{name}` needs an integer value, found `{}`", value.trim()))?;
    Ok((name.to_string(), value))
}

/// Parses one `--input NAME=SPEC` (the spec itself is checked later,
/// against the program's matrices, by `inputs::specs`).
fn parse_input(s: &str) -> Result<(String, String), String> {
    let (name, spec) = split_named(s, "NAME=SPEC", " (e.g. A=a.npy or A=spd:1024)")?;
    Ok((name.to_string(), spec.trim().to_string()))
}

/// Splits `NAME=VALUE` at its first `=` into the trimmed name, which must
/// not be empty, and the value as given. An argument without `=` is
/// refused as not of the `form` (with `example` after it); an empty name
/// as not of the `form`.
fn split_named<'s>(s: &'s str, form: &str, example: &str) -> Result<(&'s str, &'s str), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("expected {form}{example}, found `{s}`"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("expected {form}, found `{s}`"));
    }
    Ok((name, value))
}

/// The options every command receives, resolved from the global flags.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GlobalOpts {
    /// Whether diagnostics on stderr are coloured.
    pub(crate) color: bool,
    /// How the command reports its failures: JSON when its answer is
    /// JSON (`--format json`), so that stdout always holds JSON.
    pub(crate) errors: Format,
}

impl GlobalOpts {
    /// Resolves `--color` (`auto`: whether stderr is a terminal).
    pub(crate) fn new(color: Color, errors: Format) -> Self {
        let color = match color {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => std::io::stderr().is_terminal(),
        };
        GlobalOpts { color, errors }
    }
}
