//! `lpkc status`: the state of one distributed run.

use crate::args::{Format, GlobalOpts, RunAddress};
use crate::error::CliError;
use crate::{cluster, output};
use std::time::Duration;

/// Arguments of `lpkc status`.
#[derive(clap::Args, Debug)]
pub(crate) struct StatusArgs {
    #[command(flatten)]
    pub(crate) run: RunAddress,
    /// Also list, for a run that does not progress, the ready tasks no
    /// worker took, the claimed tasks whose lease expired, and a few
    /// waiting tasks with the parents they still wait for (from the plans).
    #[arg(long)]
    pub(crate) blocked: bool,
    /// A claimed task not renewed for this many seconds counts as expired.
    #[arg(long, value_name = "S", default_value_t = 30.0, value_parser = crate::args::parse_seconds)]
    pub(crate) lease: f64,
    /// The answer as text, or one JSON object.
    #[arg(long, value_enum, default_value_t)]
    pub(crate) format: Format,
}

/// Runs `lpkc status`.
pub(crate) fn run(args: &StatusArgs, _global: &GlobalOpts) -> Result<(), CliError> {
    let mut redis = cluster::open(&args.run.redis)?;
    let limit = if args.blocked { 20 } else { 5 };
    let s = lpk_cluster::status::status(
        &mut redis,
        &args.run.id,
        Duration::from_secs_f64(args.lease),
        limit,
        args.blocked,
    )
    .map_err(cluster::error)?;
    match args.format {
        Format::Json => output::json(&cluster::status_json(&s)),
        Format::Human => {
            for l in cluster::status_lines(&s, args.blocked) {
                output::line(&l);
            }
        }
    }
    Ok(())
}
