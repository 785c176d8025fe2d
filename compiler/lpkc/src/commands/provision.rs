//! `lpkc provision`: the autoscaling policy of `lpkc run --autoscale` as a
//! loop of its own, for every run in one Redis, starting each worker with
//! a command the user gives (e.g. `ssh host lpkc worker --redis URL`).

use crate::args::GlobalOpts;
use crate::error::CliError;
use crate::{cluster, output};
use std::time::{Duration, Instant};

/// Arguments of `lpkc provision`.
#[derive(clap::Args, Debug)]
pub(crate) struct ProvisionArgs {
    /// The Redis that holds the runs.
    #[arg(long, value_name = "URL")]
    pub(crate) redis: String,
    /// The policy: keep about SF x ready tasks (over every run) workers,
    /// at most MAX; a worker idle for S seconds exits.
    #[arg(long, value_name = "sf=SF,max=MAX,idle=S", value_parser = cluster::parse_autoscale)]
    pub(crate) autoscale: cluster::Autoscale,
    /// The shell command that starts one worker, e.g.
    /// `ssh host lpkc worker --redis redis://HOST:6379 --idle 30`
    /// [default: a local `lpkc worker --redis URL --idle S`].
    #[arg(long, value_name = "CMD")]
    pub(crate) spawn: Option<String>,
    /// The lease of the local workers it starts (seconds).
    #[arg(long, value_name = "S", default_value_t = 30.0, value_parser = crate::args::parse_seconds)]
    pub(crate) lease: f64,
}

/// Runs `lpkc provision`: until no run has been running for the idle time
/// and every worker it started has exited.
pub(crate) fn run(args: &ProvisionArgs, _global: &GlobalOpts) -> Result<(), CliError> {
    let a = &args.autoscale;
    let mut redis = cluster::open(&args.redis)?;
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Input(format!("cannot find the lpkc executable: {e}")))?;
    let mut pool = cluster::Workers {
        exe,
        redis: args.redis.clone(),
        lease: args.lease,
        idle: a.idle,
        spawn_cmd: args.spawn.clone(),
        children: Vec::new(),
        peak: 0,
        cache_mb: None,
        failed_in_a_row: (0, None),
    };
    let started = Instant::now();
    let mut quiet_since = Instant::now();
    loop {
        let runs: Vec<String> = redis
            .query(
                lpk_cluster::redis::cmd("SMEMBERS").arg(lpk_cluster::protocol::RUNS),
                "listing runs",
            )
            .map_err(cluster::error)?;
        let mut ready = 0u64;
        for run in &runs {
            let n: u64 = redis
                .query(
                    lpk_cluster::redis::cmd("XLEN")
                        .arg(lpk_cluster::protocol::Keys::new(run).queue()),
                    "counting ready tasks",
                )
                .map_err(cluster::error)?;
            ready += n;
        }
        let alive = pool.reap();
        pool.check_failing()?;
        let target = if ready == 0 {
            0
        } else {
            ((a.sf * ready as f64).ceil() as usize).clamp(1, a.max)
        };
        for _ in alive..target {
            pool.spawn()?;
        }
        if !runs.is_empty() {
            quiet_since = Instant::now();
        } else if pool.alive() == 0 && quiet_since.elapsed().as_secs_f64() >= a.idle {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let ws = pool.worker_seconds();
    output::line(&format!(
        "provisioned {} workers (at most {} at once) for {:.1} s: {:.2} worker-seconds",
        pool.children.len(),
        pool.peak,
        started.elapsed().as_secs_f64(),
        ws
    ));
    Ok(())
}
