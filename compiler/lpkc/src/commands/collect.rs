//! `lpkc collect`: a finished distributed run's outputs as `.npy` files,
//! exactly as `lpkc run --output-dir` writes them.

use crate::args::{GlobalOpts, RunAddress};
use crate::error::CliError;
use crate::{cluster, output};
use std::path::PathBuf;

/// Arguments of `lpkc collect`.
#[derive(clap::Args, Debug)]
pub(crate) struct CollectArgs {
    #[command(flatten)]
    pub(crate) run: RunAddress,
    /// Where to write the outputs (`DIR/M.npy`, then `DIR/_SUCCESS`).
    #[arg(long, value_name = "DIR")]
    pub(crate) output_dir: PathBuf,
}

/// Runs `lpkc collect`.
pub(crate) fn run(args: &CollectArgs, _global: &GlobalOpts) -> Result<(), CliError> {
    let mut redis = cluster::open(&args.run.redis)?;
    let written = lpk_cluster::collect::collect(&mut redis, &args.run.id, &args.output_dir)
        .map_err(cluster::error)?;
    for w in &written {
        output::line(&format!("{}: {}", w.request, w.path.display()));
    }
    Ok(())
}
