//! `lpkc collect`: a finished distributed run's outputs as `.npy` files,
//! exactly as `lpkc run --output-dir` writes them.

use crate::args::GlobalOpts;
use crate::error::CliError;
use crate::{cluster, output};
use std::path::PathBuf;

/// Arguments of `lpkc collect`.
#[derive(clap::Args, Debug)]
pub(crate) struct CollectArgs {
    /// The run id `lpkc submit` printed.
    pub(crate) run: String,
    /// The Redis that holds the run.
    #[arg(long, value_name = "URL")]
    pub(crate) redis: String,
    /// Where to write the outputs (`DIR/M.npy`, then `DIR/_SUCCESS`).
    #[arg(long, value_name = "DIR")]
    pub(crate) output_dir: PathBuf,
}

/// Runs `lpkc collect`.
pub(crate) fn run(args: &CollectArgs, _global: &GlobalOpts) -> Result<(), CliError> {
    let mut redis = cluster::open(&args.redis)?;
    let written = lpk_cluster::collect::collect(&mut redis, &args.run, &args.output_dir)
        .map_err(cluster::error)?;
    for w in &written {
        output::line(&format!("{}: {}", w.request, w.path.display()));
    }
    Ok(())
}
