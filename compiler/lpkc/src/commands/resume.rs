//! `lpkc resume`: rebuilds a distributed run's state in Redis from the
//! done markers in its store, after Redis lost it.

use crate::args::GlobalOpts;
use crate::error::CliError;
use crate::{cluster, output};

/// Arguments of `lpkc resume`.
#[derive(clap::Args, Debug)]
pub(crate) struct ResumeArgs {
    /// The run id `lpkc submit` printed.
    pub(crate) run: String,
    /// The store the run was submitted with (its tiles, manifest and done
    /// markers are under STORE/RUN/).
    #[arg(long, value_name = "URL")]
    pub(crate) store: String,
    /// The Redis to rebuild the run in (workers then need only its URL).
    #[arg(long, value_name = "URL")]
    pub(crate) redis: String,
    /// Rebuild even if Redis still holds the run (its keys are replaced).
    #[arg(long)]
    pub(crate) force: bool,
}

/// Runs `lpkc resume`.
pub(crate) fn run(args: &ResumeArgs, _global: &GlobalOpts) -> Result<(), CliError> {
    let mut redis = cluster::open(&args.redis)?;
    let r = lpk_cluster::resume::resume(&mut redis, &args.run, &args.store, args.force, &mut |m| {
        eprintln!("{m}")
    })
    .map_err(cluster::error)?;
    output::line(&format!(
        "run {}: {} of {} tasks done, {} ready, {} waiting with some parents done; start workers with `lpkc worker --redis {}`",
        args.run, r.done, r.total, r.ready, r.waiting, lpk_cluster::conn::redacted(&args.redis)
    ));
    Ok(())
}
