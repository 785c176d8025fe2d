//! `lpk-negate-worker`: `lpkc worker` with one more kernel, `negate`.
//! Start it as `lpkc worker` is started; it serves every run in that
//! Redis whose kernels it has (the standard ones and `negate`).

use clap::Parser;
use lpk_cluster::worker::{default_name, seconds, work, WorkerConfig};

/// A distributed lpk worker with the standard kernels and `negate`.
#[derive(Parser)]
struct Args {
    /// The Redis that holds the runs, e.g. redis://127.0.0.1:6379.
    #[arg(long, value_name = "URL")]
    redis: String,
    /// Threads taking tasks.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Exit after this many seconds without work.
    #[arg(long, default_value_t = 60.0)]
    idle: f64,
    /// Seconds after which a task this worker stops renewing is taken
    /// over by another worker.
    #[arg(long, default_value_t = 30.0)]
    lease: f64,
    /// The worker's name in Redis [default: HOST-PID].
    #[arg(long)]
    name: Option<String>,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let mut cfg = WorkerConfig::new(&args.redis);
    cfg.kernels = lpk_rust_kernel_example::registry();
    cfg.threads = args.threads.max(1);
    let (Some(idle), Some(lease)) = (seconds(args.idle), seconds(args.lease)) else {
        eprintln!("--idle and --lease take seconds above 0");
        return std::process::ExitCode::from(2);
    };
    cfg.idle = idle;
    cfg.lease = lease;
    cfg.name = args.name.unwrap_or_else(default_name);
    let name = cfg.name.clone();
    let log = move |m: &str| eprintln!("worker {name}: {m}");
    match work(&cfg, &log) {
        Ok(report) => {
            eprintln!(
                "worker {}: idle, exiting after {} tasks",
                cfg.name, report.tasks
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("worker {}: {e}", cfg.name);
            std::process::ExitCode::FAILURE
        }
    }
}
