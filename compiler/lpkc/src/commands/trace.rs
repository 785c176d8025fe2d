//! `lpkc trace`: the timeline of every task execution of a distributed
//! run, as Chrome trace-event JSON (open it in Perfetto or
//! `chrome://tracing`) and, with `--svg`, a Gantt chart of the workers.

use crate::args::{GlobalOpts, RunAddress};
use crate::error::CliError;
use crate::{cluster, output};
use std::path::PathBuf;

/// Arguments of `lpkc trace`.
#[derive(clap::Args, Debug)]
pub(crate) struct TraceArgs {
    #[command(flatten)]
    pub(crate) run: RunAddress,
    /// Where to write the trace-event JSON (`-` for stdout).
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: PathBuf,
    /// Also draw a Gantt chart of the workers over time, with the live
    /// workers and the ready tasks beneath it, as SVG.
    #[arg(long, value_name = "OUT")]
    pub(crate) svg: Option<PathBuf>,
}

/// Runs `lpkc trace`.
pub(crate) fn run(args: &TraceArgs, _global: &GlobalOpts) -> Result<(), CliError> {
    let mut redis = cluster::open(&args.run.redis)?;
    let record =
        lpk_cluster::record::RunRecord::read(&mut redis, &args.run.id).map_err(cluster::error)?;
    let program = record.load_program().map_err(cluster::error)?;
    let inst = program
        .bind_values(record.params.clone())
        .map_err(|e| CliError::Input(format!("run {}: {e}", args.run.id)))?;
    let (events, skipped) =
        lpk_cluster::trace::read(&mut redis, &args.run.id).map_err(cluster::error)?;
    if skipped > 0 {
        eprintln!(
            "warning: {skipped} trace entries written by another version of lpk were skipped"
        );
    }
    let json = lpk_runtime::timeline::chrome_json(&inst, &events);
    let write = |path: &PathBuf, text: &str| -> Result<(), CliError> {
        if path.as_os_str() == "-" {
            output::out(text);
            Ok(())
        } else {
            std::fs::write(path, text)
                .map_err(|e| CliError::Usage(format!("cannot write {}: {e}", path.display())))
        }
    };
    write(&args.output, &format!("{json}\n"))?;
    if let Some(svg) = &args.svg {
        write(svg, &lpk_runtime::timeline::svg(&inst, &events))?;
    }
    eprintln!(
        "{} task executions of run {} ({} of {} tasks done){}",
        events.len(),
        args.run.id,
        record.done,
        record.total,
        if events.iter().any(|e| e.retry) {
            ", some retried"
        } else {
            ""
        }
    );
    Ok(())
}
