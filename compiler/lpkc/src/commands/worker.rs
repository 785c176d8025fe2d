//! `lpkc worker`: a stateless worker that runs the tasks of every run in
//! one Redis (see `docs/distributed.md`).

use crate::args::GlobalOpts;
use crate::cluster;
use crate::error::CliError;
use lpk_cluster::faults::Faults;
use lpk_cluster::worker::{default_name, work, WorkerConfig};
use std::time::Duration;

/// Arguments of `lpkc worker`.
#[derive(clap::Args, Debug)]
pub(crate) struct WorkerArgs {
    /// The Redis that holds the runs, e.g. redis://127.0.0.1:6379.
    #[arg(long, value_name = "URL")]
    pub(crate) redis: String,
    /// Threads taking tasks (each runs one task at a time).
    #[arg(long, value_name = "T", default_value_t = 1,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
    pub(crate) threads: usize,
    /// Exit after this many seconds without work (or without reaching
    /// Redis).
    #[arg(long, value_name = "S", default_value_t = 60.0, value_parser = crate::args::parse_seconds)]
    pub(crate) idle: f64,
    /// Seconds after which a task this worker stops renewing (it died or
    /// hung) is taken over by another worker; renewed every third of it.
    #[arg(long, value_name = "S", default_value_t = 30.0, value_parser = crate::args::parse_seconds)]
    pub(crate) lease: f64,
    /// Testing aid: fail on purpose, e.g.
    /// `crash-after-write=0.05,crash-before-write=0.05,stall=0.02`
    /// (probabilities per task; see docs/distributed.md).
    #[arg(long, value_name = "SPEC", value_parser = Faults::parse)]
    pub(crate) inject_faults: Option<Faults>,
    /// Megabytes of tiles to keep for tasks that read them again.
    #[arg(long, value_name = "MB", default_value_t = 1024)]
    pub(crate) cache_mb: u64,
    /// The worker's name in Redis [default: HOST-PID].
    #[arg(long)]
    pub(crate) name: Option<String>,
    /// Print only errors.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// Runs `lpkc worker`.
pub(crate) fn run(args: &WorkerArgs, _global: &GlobalOpts) -> Result<(), CliError> {
    let mut cfg = WorkerConfig::new(&args.redis);
    cfg.threads = args.threads;
    cfg.idle = Duration::from_secs_f64(args.idle);
    cfg.lease = Duration::from_secs_f64(args.lease);
    cfg.faults = args.inject_faults.clone().unwrap_or_default();
    cfg.cache_bytes = args.cache_mb.saturating_mul(1 << 20);
    cfg.name = args.name.clone().unwrap_or_else(default_name);
    let quiet = args.quiet;
    let name = cfg.name.clone();
    let log = move |m: &str| {
        if !quiet {
            eprintln!("worker {name}: {m}");
        }
    };
    if !quiet {
        eprintln!(
            "worker {}: {} thread(s), lease {:.1} s, idle {:.1} s, Redis {}",
            cfg.name,
            cfg.threads,
            args.lease,
            args.idle,
            lpk_cluster::conn::redacted(&cfg.redis)
        );
    }
    let report = work(&cfg, &log).map_err(cluster::error)?;
    if !quiet {
        eprintln!(
            "worker {}: idle for {:.1} s, exiting: {} tasks ({} taken over, {} ran twice), {} Redis round trips",
            cfg.name, args.idle, report.tasks, report.taken_over, report.duplicates, report.round_trips
        );
    }
    Ok(())
}
