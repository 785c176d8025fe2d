//! `lpkc`: the command-line front of the lpk compiler. Argument parsing and
//! output live here; everything else is in the `compiler`, `model` and
//! `runtime` libraries.
//!
//! Modules form a DAG: `main` → `commands::*` (one module per subcommand,
//! never importing another) → the shared modules `args`, `load`,
//! `instance`, `report`, `error` and `output` (which import no command) →
//! the libraries. `output` is the only module that writes to stdout, but
//! for `lsp`'s transport, which owns stdout for the protocol under `lpkc lsp`.
//!
//! Exit codes (docs/cli.md): 0 success, 1 the input has errors, 2 usage
//! error; commands return a [`CliError`] and [`exit_code`] reports it (as
//! the diagnostics object on stdout when the command's answer is JSON)
//! and maps it.

mod args;
mod cluster;
mod commands;
mod error;
mod inputs;
mod instance;
mod load;
mod lsp;
mod output;
mod report;

use args::{Color, Format, GlobalOpts};
use clap::{Parser, Subcommand};
use commands::{
    bench::BenchArgs, calibrate::CalibrateArgs, check::CheckArgs, collect::CollectArgs,
    compile::CompileArgs, dag::DagArgs, dot::DotArgs, explain::ExplainArgs, fmt::FmtArgs,
    inspect::InspectArgs, lint::LintArgs, lsp::LspArgs, plans::PlansArgs, provision::ProvisionArgs,
    query::QueryArgs, repl::ReplArgs, resume::ResumeArgs, run::RunArgs, simulate::SimulateArgs,
    stats::StatsArgs, status::StatusArgs, submit::SubmitArgs, trace::TraceArgs, worker::WorkerArgs,
};
use error::CliError;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The lpk compiler, static analyzer and dependency query tool for `.lpk`
/// tiled linear-algebra programs.
#[derive(Parser, Debug)]
#[command(name = "lpkc", version)]
pub(crate) struct Cli {
    /// When to colour diagnostics.
    #[arg(long, value_enum, default_value_t = Color::Auto, global = true)]
    pub(crate) color: Color,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Parse, resolve and type-check a source file and report diagnostics.
    Check(CheckArgs),
    /// Rewrite a source file in the canonical style (comments are kept).
    Fmt(FmtArgs),
    /// Print the dependence plans of a program, saying where each enumerates.
    Plans(PlansArgs),
    /// Answer dependency queries (children, parents, writer, readers, tasks).
    ///
    /// TASK is `kernel@LINE(var=INT, ...)` (the kernel may be omitted;
    /// `@LINE:COL(...)` picks one of several calls on a line); TILE is
    /// `M[INT, ...]`. Without `-e`, commands are read from stdin, one a line.
    Query(QueryArgs),
    /// Print the expanded task DAG of one instance.
    Dag(DagArgs),
    /// Task and edge counts per kernel, critical path and widest level.
    Stats(StatsArgs),
    /// Graphviz DOT: without `-p` the program-level graph (statements and
    /// the symbolic dependence relations between them), with `-p` the
    /// expanded DAG of that instance.
    Dot(DotArgs),
    /// Explore a program interactively: the query commands plus `show`,
    /// `count`, `path`, `critical-path`, `set`, `plans` and `help`.
    ///
    /// With a terminal it has history and Tab completion; with stdin not a
    /// terminal it reads one command a line, like `query`.
    Repl(ReplArgs),
    /// Execute the program on real matrices with the embedded executor.
    ///
    /// Every `input` matrix needs data: `--input A=a.npy`, or a generated
    /// matrix `A=random:ROWSxCOLS`, `A=spd:N` (symmetric positive
    /// definite), `A=identity:N`. Parameters not given with `-p` are
    /// inferred from the input shapes (`A[N, N]` with 1000 rows and block
    /// 256 gives N = 4); edge tiles are smaller than the block.
    Run(RunArgs),
    /// Submit a distributed run to Redis: uploads the input tiles to
    /// --store, records the run, seeds its ready tasks and prints its id.
    /// Workers (`lpkc worker`) on any machine that reaches the same Redis
    /// and store run it; `--wait` waits with a progress bar (exit 0 done,
    /// 1 failed).
    Submit(SubmitArgs),
    /// A stateless worker: runs the tasks of every run in one Redis,
    /// renewing a lease on each task it holds, taking over tasks whose
    /// lease expired, and exiting after --idle seconds without work.
    Worker(WorkerArgs),
    /// The state of a distributed run: counts, rate, the failed task and
    /// its error; with --blocked, why a run does not progress.
    Status(StatusArgs),
    /// Write a finished distributed run's outputs as .npy files, exactly
    /// as `lpkc run --output-dir` writes them.
    Collect(CollectArgs),
    /// The timeline of every task execution of a distributed run: Chrome
    /// trace-event JSON (Perfetto, chrome://tracing), and with --svg a
    /// Gantt chart of the workers with live workers and ready tasks.
    Trace(TraceArgs),
    /// Rebuild a distributed run in Redis from the done markers in its
    /// store, after Redis lost it (restarted without persistence, flushed,
    /// replaced); workers then finish it.
    Resume(ResumeArgs),
    /// Start and stop workers as the runs in one Redis need them
    /// (numpywren's policy: about SF x ready tasks, at most MAX, each
    /// exiting after S seconds idle), with a command of yours
    /// (--spawn 'ssh host lpkc worker ...') or local workers.
    Provision(ProvisionArgs),
    /// Simulate one instance on simulated workers and a tile store: the
    /// real DAG walked from the plans (never materialised), a cost per
    /// task, a policy (fifo, critical-path, heft, locality), autoscaling,
    /// start-up delays and failures; makespan, worker-seconds and bounds.
    Simulate(SimulateArgs),
    /// Time each standard kernel at the given block sizes and a tile
    /// store's latency and bandwidth; write the cost model `simulate
    /// --costs` reads.
    Calibrate(CalibrateArgs),
    /// Check a source file and write its program artifact (`docs/artifact.md`).
    Compile(CompileArgs),
    /// Check the program's rules for every parameter value (single
    /// assignment, reads of unwritten tiles, reads before writes, writes to
    /// inputs, indices in bounds) and warn about dead code and unused names.
    ///
    /// Each rule is proved over all parameter values where the index
    /// expressions allow it, else checked exhaustively for every parameter
    /// value up to --bound; findings give the smallest counterexample.
    Lint(LintArgs),
    /// A language server over stdio: diagnostics as you type, hover with
    /// the plans, definitions, references, writers and readers, formatting,
    /// quick fixes and semantic tokens (docs/editors.md).
    Lsp(LspArgs),
    /// Print an artifact's contents: a summary, or the JSON twin.
    Inspect(InspectArgs),
    /// Benchmark a run against faer's monolithic routine on the same
    /// matrix, in one process: wall time, GFLOP/s, the ratio, and peak
    /// resident memory against the input size (docs/performance.md).
    Bench(BenchArgs),
    /// Print the documentation of a diagnostic code (e.g. `lpkc explain E0101`).
    Explain(ExplainArgs),
}

impl Command {
    /// How the command reports its failures: naming its input file, and
    /// as the diagnostics object when its answer is JSON, so that stdout
    /// holds JSON whatever happens. One table, so that a new command
    /// states both at once.
    fn reporting(&self) -> (Option<&Path>, bool) {
        let json = |format: Format| format == Format::Json;
        match self {
            Command::Check(a) => (Some(&a.file), json(a.format)),
            Command::Fmt(a) => (a.files.first().map(PathBuf::as_path), false),
            Command::Plans(a) => (Some(&a.file), false),
            Command::Query(a) => (Some(&a.instance.file), json(a.format)),
            Command::Dag(a) => (
                Some(&a.instance.file),
                a.format == commands::dag::DagFormat::Json,
            ),
            Command::Stats(a) => (Some(&a.instance.file), json(a.format)),
            Command::Dot(a) => (Some(&a.instance.file), false),
            Command::Repl(a) => (Some(&a.instance.file), false),
            Command::Run(a) => (Some(&a.instance.file), json(a.format)),
            Command::Compile(a) => (Some(&a.file), json(a.format)),
            Command::Lint(a) => (Some(&a.instance.file), json(a.format)),
            Command::Inspect(a) => (Some(&a.file), json(a.format)),
            Command::Submit(a) => (Some(&a.instance.file), json(a.format)),
            Command::Simulate(a) => (Some(&a.instance.file), json(a.format)),
            Command::Bench(a) => (None, json(a.format)),
            Command::Status(a) => (None, json(a.format)),
            Command::Calibrate(_)
            | Command::Explain(_)
            | Command::Lsp(_)
            | Command::Worker(_)
            | Command::Collect(_)
            | Command::Trace(_)
            | Command::Resume(_)
            | Command::Provision(_) => (None, false),
        }
    }

    /// The command's input file, which its failures name.
    fn file(&self) -> Option<&Path> {
        self.reporting().0
    }

    /// The format of the command's failures.
    fn error_format(&self) -> Format {
        if self.reporting().1 {
            Format::Json
        } else {
            Format::Human
        }
    }
}

/// Runs the parsed command line.
fn run(cli: &Cli, global: &GlobalOpts) -> Result<(), CliError> {
    match &cli.command {
        Command::Check(args) => commands::check::run(args, global),
        Command::Fmt(args) => commands::fmt::run(args, global),
        Command::Plans(args) => commands::plans::run(args, global),
        Command::Query(args) => commands::query::run(args, global),
        Command::Dag(args) => commands::dag::run(args, global),
        Command::Stats(args) => commands::stats::run(args, global),
        Command::Dot(args) => commands::dot::run(args, global),
        Command::Repl(args) => commands::repl::run(args, global),
        Command::Run(args) => commands::run::run(args, global),
        Command::Compile(args) => commands::compile::run(args, global),
        Command::Lint(args) => commands::lint::run(args, global),
        Command::Lsp(args) => commands::lsp::run(args, global),
        Command::Inspect(args) => commands::inspect::run(args, global),
        Command::Bench(args) => commands::bench::run(args, global),
        Command::Explain(args) => commands::explain::run(args, global),
        Command::Submit(args) => commands::submit::run(args, global),
        Command::Worker(args) => commands::worker::run(args, global),
        Command::Status(args) => commands::status::run(args, global),
        Command::Collect(args) => commands::collect::run(args, global),
        Command::Trace(args) => commands::trace::run(args, global),
        Command::Simulate(args) => commands::simulate::run(args, global),
        Command::Calibrate(args) => commands::calibrate::run(args, global),
        Command::Resume(args) => commands::resume::run(args, global),
        Command::Provision(args) => commands::provision::run(args, global),
    }
}

/// The one place a command's outcome becomes the process exit code: a
/// failure the command has not reported already is reported here, in the
/// command's error format.
fn exit_code(result: Result<(), CliError>, cli: &Cli, global: &GlobalOpts) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report::failure(&e, cli.command.file(), global.errors, global.color);
            ExitCode::from(e.exit_code())
        }
    }
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
            let global = GlobalOpts::new(cli.color, cli.command.error_format());
            let result = run(&cli, &global);
            exit_code(result, &cli, &global)
        });
    match handle.map(|h| h.join()) {
        Ok(Ok(code)) => code,
        _ => {
            eprintln!("error: internal error: lpkc crashed; this is a bug, please report it");
            ExitCode::from(101)
        }
    }
}
