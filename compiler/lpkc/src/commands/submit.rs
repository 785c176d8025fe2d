//! `lpkc submit`: records a distributed run in Redis (program, parameters,
//! block, store), seeds its roots, uploads its input tiles and prints its
//! id; with `--wait`, waits for it with a progress bar.

use crate::args::{Format, GlobalOpts, InstanceArgs, RunInputs};
use crate::error::CliError;
use crate::{cluster, inputs, load, output};
use clap::ValueEnum;
use lpk_cluster::record::{Kernels, RunState};
use lpk_cluster::submit::Submission;
use std::time::Duration;

/// Arguments of `lpkc submit`.
#[derive(clap::Args, Debug)]
pub(crate) struct SubmitArgs {
    #[command(flatten)]
    pub(crate) instance: InstanceArgs,
    #[command(flatten)]
    pub(crate) data: RunInputs,
    /// The Redis that holds the run, e.g. redis://127.0.0.1:6379.
    #[arg(long, value_name = "URL")]
    pub(crate) redis: String,
    /// Where the run's tiles live, reachable by every worker: a shared
    /// directory (absolute path or file:///abs/path) or s3://bucket/prefix
    /// (with the usual AWS_* variables). Tiles go under STORE/RUN/.
    #[arg(long, value_name = "URL")]
    pub(crate) store: String,
    /// `standard`: the standard kernels; `noop`: kernels that do nothing
    /// and move no tiles (to measure the scheduler and the queue).
    #[arg(long, value_enum, default_value_t = KernelChoice::Standard)]
    pub(crate) kernels: KernelChoice,
    /// Seed of generated inputs.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Fail the run when one task's lease has expired this many times
    /// (the task keeps killing or hanging its workers).
    #[arg(long, value_name = "K", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) max_expiries: u32,
    /// Keep every intermediate tile in the store (by default a tile that is
    /// not an output is deleted as soon as its last reader is done).
    #[arg(long)]
    pub(crate) keep_intermediates: bool,
    /// Refuse the run if it has more tasks than this (counted from the
    /// plans before anything is uploaded); workers refuse a record that
    /// says more.
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_tasks: Option<u64>,
    /// The most bytes of tiles the run may keep in its store at once
    /// (`512M`, `8G`, or bytes): refused at submit when its input tiles
    /// alone take more, and the run fails when a completion would bring
    /// the store past it.
    #[arg(long, value_name = "SIZE", value_parser = crate::args::parse_size)]
    pub(crate) max_store_bytes: Option<u64>,
    /// Wait for the run: exit 0 when it is done, 1 when it failed.
    #[arg(long)]
    pub(crate) wait: bool,
    /// Do not show a progress bar while waiting.
    #[arg(long)]
    pub(crate) no_progress: bool,
    /// The answer as text, or one JSON object `{"run": ID}`.
    #[arg(long, value_enum, default_value_t)]
    pub(crate) format: Format,
}

/// Which kernels a distributed run uses.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub(crate) enum KernelChoice {
    /// The standard kernels on faer.
    #[value(alias = "std")]
    Standard,
    /// Kernels that do nothing.
    Noop,
}

/// Runs `lpkc submit`.
pub(crate) fn run(args: &SubmitArgs, global: &GlobalOpts) -> Result<(), CliError> {
    args.data.check_block()?;
    let (_, program) = load::program_of(&args.instance, global, load::Rules::Refuse)?;
    let specs = inputs::specs(&program, &args.data.inputs)?;
    lpk_cluster::tiles::check_store_url(&args.store).map_err(|e| CliError::Usage(e.to_string()))?;
    let mut redis = cluster::open(&args.redis)?;
    let file = args.instance.file.display().to_string();
    let quiet = args.no_progress;
    let submitted = crate::cluster::submit(
        &mut redis,
        &Submission {
            program: &program,
            file: &file,
            params: &args.instance.params,
            inputs: &specs,
            seed: args.seed,
            block: args.data.block,
            store: &args.store,
            kernels: match args.kernels {
                KernelChoice::Standard => Kernels::Standard,
                KernelChoice::Noop => Kernels::Noop,
            },
            max_expiries: args.max_expiries,
            keep_intermediates: args.keep_intermediates,
            limits: lpk_cluster::record::RunLimits {
                max_tasks: args.max_tasks,
                max_store_bytes: args.max_store_bytes,
            },
        },
        quiet,
    )?;
    match args.format {
        Format::Json => output::json(&serde_json::json!({ "run": submitted.run })),
        Format::Human => {
            if !quiet {
                eprintln!(
                    "submitted run {} of {}: {} tasks, {} roots ready",
                    submitted.run, program.name, submitted.tasks, submitted.roots
                );
            }
            output::line(&submitted.run);
        }
    }
    if !args.wait {
        return Ok(());
    }
    let record = cluster::wait(
        &mut redis,
        &submitted.run,
        !args.no_progress,
        Duration::from_secs(30),
        &mut || Ok(()),
    )?;
    match record.state {
        RunState::Done => {
            eprintln!("run {} done: {} tasks", record.id, record.done);
            Ok(())
        }
        _ => {
            let why = record.error.map(|(_, m)| m).unwrap_or_default();
            Err(CliError::Input(format!("run {} failed: {why}", record.id)))
        }
    }
}
