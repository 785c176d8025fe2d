//! `lpkc stats`: task and edge counts per kernel, flops and bytes at a
//! block size, the critical path and the parallelism profile of one
//! instance (optionally drawn as an SVG chart).
//!
//! Counts first: tasks, flops and bytes per kernel come from
//! `stats::counts` at flat memory for any size. Only an instance within
//! `--max-tasks` is expanded for the parts that need its DAG (edges,
//! critical paths, profile); above it those are reported as not computed
//! (`null` in JSON, `"expanded": false`), before any memory is spent.

use crate::args::{Format, GlobalOpts, InstanceArgs};
use crate::error::CliError;
use crate::{instance, load, output};
use lpk_compiler::explore::limit::TaskLimit;
use lpk_compiler::explore::stats::{
    analyse, counts, counts_json, counts_text, profile_svg, stats_json, stats_text, StatsOptions,
    DEFAULT_BLOCK,
};
use std::path::PathBuf;

/// The default `--max-tasks` of `lpkc stats`: the expansion keeps about
/// 100 bytes per task and takes about a microsecond each.
pub(crate) const DEFAULT_MAX_TASKS: u64 = 2_000_000;

/// Arguments of `lpkc stats`.
#[derive(clap::Args, Debug)]
pub(crate) struct StatsArgs {
    #[command(flatten)]
    pub(crate) instance: InstanceArgs,
    /// A table, or one JSON object.
    #[arg(long, value_enum, default_value_t)]
    pub(crate) format: Format,
    /// Expand the DAG (edges, critical path, profile) only for instances
    /// with at most this many tasks; larger ones get the counts of tasks,
    /// flops and bytes alone.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_TASKS)]
    pub(crate) max_tasks: u64,
    /// Tile side in elements for flops and bytes: every tile is taken as
    /// B x B (1-D matrices too).
    #[arg(long, value_name = "B", default_value_t = DEFAULT_BLOCK)]
    pub(crate) block: u64,
    /// Also draw the parallelism profile as an SVG chart to this file
    /// (refused when the DAG is not expanded).
    #[arg(long, value_name = "OUT")]
    pub(crate) svg: Option<PathBuf>,
}

/// Runs `lpkc stats`.
pub(crate) fn run(args: &StatsArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let program = load::explored(&args.instance, global)?;
    let inst = instance::bind(&program, &args.instance)?;
    let block = args.block;
    if block == 0 || block > 1 << 20 {
        return Err(CliError::Usage(format!(
            "--block must be between 1 and 1048576, found {block}"
        )));
    }
    let limit = TaskLimit {
        max: args.max_tasks,
        flag: "--max-tasks",
    };
    // Count before expanding: at flat memory, refused only when even the
    // count would run too long.
    let c = counts(&inst, block).map_err(|e| match e {
        lpk_compiler::explore::stats::StatsError::Count(e) => {
            CliError::Input(limit.uncounted(&inst, e).to_string())
        }
        other => CliError::Input(other.to_string()),
    })?;
    if let Err(why) = limit.check_count(&inst, c.tasks) {
        if args.svg.is_some() {
            return Err(CliError::Input(format!(
                "cannot draw the parallelism profile: {why}"
            )));
        }
        match args.format {
            Format::Json => output::json(&counts_json(&c)),
            Format::Human => output::out(&counts_text(&c, &why.to_string())),
        }
        return Ok(());
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
        Format::Json => output::json(&stats_json(&s)),
        Format::Human => output::out(&stats_text(&s)),
    }
    Ok(())
}
