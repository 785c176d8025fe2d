//! `lpkc`: the command-line front of the lpk compiler. Argument parsing and
//! output live here; everything else is in the `compiler` library.
//!
//! Exit codes (spec/cli.md): 0 success, 1 the input has errors, 2 usage
//! error.

mod artifact_cmd;
mod bench;
mod commands;
mod explore_cmd;
mod lint_cmd;
mod output;
mod repl_cmd;
mod run;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

/// The lpk compiler, static analyzer and dependency query tool for `.lpk`
/// tiled linear-algebra programs.
#[derive(Parser, Debug)]
#[command(name = "lpkc", version)]
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
    /// Rewrite a source file in the canonical style (comments are kept).
    Fmt {
        /// The `.lpk` source file.
        file: PathBuf,
        /// Do not write; exit with 1 if the file is not formatted.
        #[arg(long)]
        check: bool,
        /// Print the formatted source to stdout instead of rewriting the file.
        #[arg(long, conflicts_with = "check")]
        stdout: bool,
    },
    /// Print the dependence plans of a program, saying where each enumerates.
    Plans {
        /// The `.lpk` source file.
        file: PathBuf,
        #[command(flatten)]
        program: ProgramArg,
    },
    /// Answer dependency queries (children, parents, writer, readers, tasks).
    ///
    /// TASK is `kernel@LINE(var=INT, ...)` (the kernel may be omitted;
    /// `@LINE:COL(...)` picks one of several calls on a line); TILE is
    /// `M[INT, ...]`. Without `-e`, commands are read from stdin, one a line.
    Query {
        /// The `.lpk` source file.
        file: PathBuf,
        #[command(flatten)]
        instance: InstanceArgs,
        /// A command to run (repeatable).
        #[arg(short = 'e', long = "eval", value_name = "CMD")]
        commands: Vec<String>,
        /// Answers as text, or one JSON object a line.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Print the expanded task DAG of one instance.
    Dag {
        /// The `.lpk` source file.
        file: PathBuf,
        #[command(flatten)]
        instance: InstanceArgs,
        /// JSON (spec/cli.md) or Graphviz DOT.
        #[arg(long, value_enum, default_value_t = DagFormat::Json)]
        format: DagFormat,
        /// `plans`: edges from the dependence plans; `expand`: brute force,
        /// running the program sequentially (the oracle), which also reports
        /// rule violations.
        #[arg(long, value_enum, default_value_t = Method::Plans)]
        method: Method,
        /// Refuse instances with more tasks than this.
        #[arg(long, default_value_t = 1_000_000)]
        max_tasks: usize,
    },
    /// Task and edge counts per kernel, critical path and widest level.
    Stats {
        /// The `.lpk` source file.
        file: PathBuf,
        #[command(flatten)]
        instance: InstanceArgs,
        /// A table, or one JSON object.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
        /// Refuse instances with more tasks than this.
        #[arg(long, default_value_t = 20_000_000)]
        max_tasks: u64,
        /// Tile side in elements for flops and bytes: every tile is taken as
        /// B x B (1-D matrices too).
        #[arg(long, value_name = "B", default_value_t = compiler::explore::stats::DEFAULT_BLOCK)]
        block: u64,
        /// Also draw the parallelism profile as an SVG chart to this file.
        #[arg(long, value_name = "OUT")]
        svg: Option<PathBuf>,
    },
    /// Graphviz DOT: without `-p` the program-level graph (statements and
    /// the symbolic dependence relations between them), with `-p` the
    /// expanded DAG of that instance.
    Dot {
        /// The `.lpk` source file.
        file: PathBuf,
        #[command(flatten)]
        instance: InstanceArgs,
        /// Group the expanded DAG's tasks by the value of this loop
        /// variable (needs `-p`).
        #[arg(long, value_name = "VAR")]
        cluster: Option<String>,
        /// Refuse to draw an expanded DAG with more tasks than this.
        #[arg(long, value_name = "N", default_value_t = 2000)]
        max_tasks: usize,
    },
    /// Explore a program interactively: the query commands plus `show`,
    /// `count`, `path`, `critical-path`, `set`, `plans` and `help`.
    ///
    /// With a terminal it has history and Tab completion; with stdin not a
    /// terminal it reads one command a line, like `query`.
    Repl {
        /// The `.lpk` source file.
        file: PathBuf,
        #[command(flatten)]
        instance: InstanceArgs,
        /// The history file [default: $XDG_STATE_HOME/lpkc/history, else
        /// ~/.lpkc_history].
        #[arg(long, value_name = "FILE", conflicts_with = "no_history")]
        history: Option<PathBuf>,
        /// Keep no history file.
        #[arg(long)]
        no_history: bool,
    },
    /// Execute the program on real matrices with the embedded executor.
    ///
    /// Every `input` matrix needs data: `--input A=a.npy`, or a generated
    /// matrix `A=random:ROWSxCOLS`, `A=spd:N` (symmetric positive
    /// definite), `A=identity:N`. Parameters not given with `-p` are
    /// inferred from the input shapes (`A[N, N]` with 1000 rows and block
    /// 256 gives N = 4); edge tiles are smaller than the block.
    Run {
        /// The `.lpk` source file.
        file: PathBuf,
        #[command(flatten)]
        instance: InstanceArgs,
        /// Tile size: every tile is BLOCK x BLOCK except at the edges.
        #[arg(long, value_name = "B")]
        block: usize,
        /// Data of an input matrix (repeatable): NAME=FILE.npy,
        /// NAME=random:ROWSxCOLS, NAME=spd:N or NAME=identity:N.
        #[arg(long = "input", value_name = "NAME=SPEC", value_parser = parse_input)]
        inputs: Vec<(String, String)>,
        /// Write each 2-D output to DIR/M.npy (in place, as its tiles are
        /// computed) and outputs that do not assemble as tiles
        /// DIR/M/i_j.npy; `DIR/_SUCCESS` is written last, only after success.
        #[arg(long, value_name = "DIR")]
        output_dir: Option<PathBuf>,
        /// Also write every output tile, as it is computed, to a tile store:
        /// `mem`, `dir:PATH`, or an object_store URL such as
        /// `file:///abs/path` (keys `M/i_j.npy`). Assembled matrices and the
        /// marker stay in --output-dir.
        #[arg(long, value_name = "SPEC")]
        tile_store: Option<String>,
        /// Worker threads [default: the number of cores].
        #[arg(long, value_name = "W")]
        workers: Option<usize>,
        /// Seed of generated inputs.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Check the residual of the outputs against the inputs (Cholesky,
        /// LU, QR, triangular solve/inverse, matrix product); exit code 1 if
        /// it is too large.
        #[arg(long)]
        verify: bool,
        /// `std`: the standard kernels; `noop`: kernels that do nothing
        /// (to measure the scheduler alone).
        #[arg(long, value_enum, default_value_t = KernelSet::Std)]
        kernels: KernelSet,
        /// Do not show a progress bar.
        #[arg(long)]
        no_progress: bool,
        /// The summary as text, or one JSON object.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Check a source file and write its program artifact (`docs/artifact.md`).
    Compile {
        /// The `.lpk` source file.
        file: PathBuf,
        /// Where to write [default: FILE.lpka, or FILE.lpka.json with
        /// `--encoding json`].
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: Option<PathBuf>,
        /// The artifact encoding [default: cbor, or json when OUT ends in
        /// `.json`].
        #[arg(long, value_enum)]
        encoding: Option<ArtifactEncoding>,
        /// Do not include the source text in the artifact.
        #[arg(long)]
        no_source: bool,
        #[command(flatten)]
        program: ProgramArg,
        /// Diagnostics as text on stderr or as JSON on stdout.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Check the program's rules for every parameter value (single
    /// assignment, reads of unwritten tiles, reads before writes, writes to
    /// inputs, indices in bounds) and warn about dead code and unused names.
    ///
    /// Each rule is proved over all parameter values where the index
    /// expressions allow it, else checked exhaustively for every parameter
    /// value up to --bound; findings give the smallest counterexample.
    Lint {
        /// The `.lpk` source file.
        file: PathBuf,
        #[command(flatten)]
        instance: InstanceArgs,
        /// `--deny warnings`: exit with 1 on warnings too.
        #[arg(long, value_name = "warnings")]
        deny: Vec<String>,
        /// Do not report this code (repeatable).
        #[arg(long, value_name = "CODE")]
        allow: Vec<String>,
        /// Largest parameter value of the exhaustive check.
        #[arg(long, value_name = "B", default_value_t = compiler::lint::DEFAULT_BOUND)]
        bound: i64,
        /// Tasks the exhaustive check may expand over all instances.
        #[arg(long, value_name = "TASKS", default_value_t = compiler::lint::DEFAULT_TASK_BUDGET)]
        budget: usize,
        /// Diagnostics as text on stderr or as JSON on stdout.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Print an artifact's contents: a summary, or the JSON twin.
    Inspect {
        /// The artifact (CBOR or its JSON twin).
        file: PathBuf,
        /// A readable summary, or the JSON twin on stdout.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Benchmark a run against faer's monolithic routine on the same
    /// matrix, in one process: wall time, GFLOP/s, the ratio, and peak
    /// resident memory against the input size (docs/performance.md).
    Bench {
        /// What to run.
        #[arg(value_enum)]
        workload: bench::Workload,
        /// Rows (and columns for cholesky and gemm) of the matrix.
        #[arg(long, default_value_t = 8192)]
        n: usize,
        /// Columns of the tall-skinny matrix (tsqr).
        #[arg(long, default_value_t = 512)]
        cols: usize,
        /// Tile size (tsqr: rows per row block).
        #[arg(long, default_value_t = 1024)]
        block: usize,
        /// Worker threads for both lpk and faer [default: the number of
        /// cores].
        #[arg(long)]
        workers: Option<usize>,
        /// Seed of the generated matrices.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// A table, or one JSON object.
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

/// Picks a program of the file.
#[derive(clap::Args, Debug, Clone)]
pub struct ProgramArg {
    /// The program to use when the file declares several.
    #[arg(long, value_name = "NAME")]
    pub program: Option<String>,
}

/// Picks a program and binds its parameters.
#[derive(clap::Args, Debug, Clone)]
pub struct InstanceArgs {
    #[command(flatten)]
    pub program: ProgramArg,
    /// Binds a program parameter (repeatable): `-p N=64`.
    #[arg(short = 'p', long = "param", value_name = "NAME=INT", value_parser = parse_param)]
    pub params: Vec<(String, i64)>,
}

fn parse_param(s: &str) -> Result<(String, i64), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=INT, found `{s}`"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("expected NAME=INT, found `{s}`"));
    }
    let value: i64 = value
        .trim()
        .parse()
        .map_err(|_| format!("`{name}` needs an integer value, found `{}`", value.trim()))?;
    Ok((name.to_string(), value))
}

fn parse_input(s: &str) -> Result<(String, String), String> {
    let (name, spec) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=SPEC (e.g. A=a.npy or A=spd:1024), found `{s}`"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("expected NAME=SPEC, found `{s}`"));
    }
    Ok((name.to_string(), spec.trim().to_string()))
}

/// How `compile` encodes the artifact.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum ArtifactEncoding {
    /// The binary container with a CBOR payload.
    Cbor,
    /// The JSON twin.
    Json,
}

/// Which kernels `run` uses.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum KernelSet {
    /// The standard kernels on faer.
    Std,
    /// Kernels that do nothing and return empty tiles.
    Noop,
}

/// Output format of `dag`.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum DagFormat {
    /// `{"program", "params", "tasks", "edges"}`.
    Json,
    /// Graphviz DOT.
    Dot,
}

/// How `dag` finds the edges.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Method {
    /// From the dependence plans.
    Plans,
    /// By running the program sequentially (brute force).
    Expand,
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
