//! `lpkc stats`: task and edge counts per kernel, flops and bytes at a
//! block size, the critical path and the parallelism profile of one
//! instance (optionally drawn as an SVG chart).

use crate::args::{Format, GlobalOpts, InstanceArgs};
use crate::error::CliError;
use crate::{instance, load, output};
use compiler::explore::stats::{analyse, profile_svg, stats_text, StatsOptions, DEFAULT_BLOCK};
use std::path::PathBuf;

/// Arguments of `lpkc stats`.
#[derive(clap::Args, Debug)]
pub struct StatsArgs {
    /// The `.lpk` source file.
    pub file: PathBuf,
    #[command(flatten)]
    pub instance: InstanceArgs,
    /// A table, or one JSON object.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Refuse instances with more tasks than this.
    #[arg(long, default_value_t = 20_000_000)]
    pub max_tasks: u64,
    /// Tile side in elements for flops and bytes: every tile is taken as
    /// B x B (1-D matrices too).
    #[arg(long, value_name = "B", default_value_t = DEFAULT_BLOCK)]
    pub block: u64,
    /// Also draw the parallelism profile as an SVG chart to this file.
    #[arg(long, value_name = "OUT")]
    pub svg: Option<PathBuf>,
}

/// Runs `lpkc stats`.
pub fn run(args: &StatsArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let (_, program) = load::program(&args.file, &args.instance.program, global)?;
    let inst = instance::bind(&program, &args.instance)?;
    let block = args.block;
    if block == 0 || block > 1 << 20 {
        return Err(CliError::Usage(format!(
            "--block must be between 1 and 1048576, found {block}"
        )));
    }
    let opts = StatsOptions {
        max_tasks: args.max_tasks,
        block,
        ..Default::default()
    };
    let s = analyse(&inst, &opts)
        .map_err(|e| CliError::Input(e.to_string()))?
        .stats;
    if let Some(out) = &args.svg {
        let title = format!(
            "{} {}: tasks ready per step",
            program.name,
            instance::params_text(&inst)
        );
        profile_svg(&s, &title)
            .map_err(|e| e.to_string())
            .and_then(|text| {
                std::fs::write(out, text)
                    .map_err(|e| format!("cannot write {}: {e}", out.display()))
            })
            .map_err(CliError::Input)?;
    }
    match args.format {
        Format::Json => output::json(&serde_json::to_value(&s).unwrap_or_default()),
        Format::Human => output::out(&stats_text(&s)),
    }
    Ok(())
}
