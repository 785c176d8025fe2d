//! `lpkc simulate`: a discrete-event simulation of one instance on
//! simulated workers and a tile store (`lpk-sim`, docs/simulation.md). The
//! DAG is walked from the plans and never materialised; the instance is
//! counted first and refused above `--max-tasks`.

use crate::args::{Format, GlobalOpts, InstanceArgs};
use crate::error::CliError;
use crate::{instance, load, output};
use compiler::explore::limit::TaskLimit;
use sim::cost::CostModel;
use sim::engine::Failures;
use sim::{Config, Policy, Workers};
use std::path::{Path, PathBuf};

/// The default `--max-tasks`: a simulation takes about 3 microseconds a
/// task in a release build and keeps only the frontier.
pub const DEFAULT_MAX_TASKS: u64 = 5_000_000;

/// A scheduling policy on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum, PartialEq, Eq, Default)]
pub enum PolicyArg {
    /// One queue in ready order (numpywren).
    #[default]
    Fifo,
    /// Smallest top level first (an upper bound of the bottom level).
    CriticalPath,
    /// Earliest finish time, transfers included.
    Heft,
    /// Owner computes by a METIS partition of the coarsened graph.
    Locality,
}

impl PolicyArg {
    fn policy(self) -> Policy {
        match self {
            PolicyArg::Fifo => Policy::Fifo,
            PolicyArg::CriticalPath => Policy::CriticalPath,
            PolicyArg::Heft => Policy::Heft,
            PolicyArg::Locality => Policy::Locality,
        }
    }
}

/// Arguments of `lpkc simulate`.
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("pool").required(true).args(["workers", "autoscale"])))]
pub struct SimulateArgs {
    /// The `.lpk` source file (or a compiled artifact).
    pub file: PathBuf,
    #[command(flatten)]
    pub instance: InstanceArgs,
    /// Tile side in elements: every tile is taken as B x B.
    #[arg(long, value_name = "B")]
    pub block: u64,
    /// A fixed pool of W workers.
    #[arg(long, value_name = "W")]
    pub workers: Option<usize>,
    /// numpywren's autoscaling policy: `sf=SF,max=MAX,idle=S`.
    #[arg(long, value_name = "SPEC", value_parser = crate::cluster::parse_autoscale)]
    pub autoscale: Option<crate::cluster::Autoscale>,
    /// The scheduling policy.
    #[arg(long, value_enum, default_value_t)]
    pub policy: PolicyArg,
    /// A cost model written by `lpkc calibrate` (default: the flop model
    /// at --gflops, a free store).
    #[arg(long, value_name = "FILE")]
    pub costs: Option<PathBuf>,
    /// GFLOP/s per worker for kernels without a calibrated time.
    #[arg(long, value_name = "X")]
    pub gflops: Option<f64>,
    /// The store's latency per request, in seconds (overrides --costs).
    #[arg(long, value_name = "S")]
    pub store_latency: Option<f64>,
    /// The store's bandwidth in MB/s per worker (overrides --costs; 0 is
    /// infinite).
    #[arg(long, value_name = "MBPS")]
    pub store_bandwidth: Option<f64>,
    /// Tiles each worker keeps in its cache (LRU); 0 keeps none.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub cache_tiles: usize,
    /// Observed worker start-up delays in seconds (one number a line or
    /// separated by spaces; `#` starts a comment); each started worker
    /// draws one.
    #[arg(long, value_name = "FILE")]
    pub startup: Option<PathBuf>,
    /// Request workers ahead of need by the upper confidence bound of the
    /// --quantile of the --startup delays (and keep idle workers at least
    /// that long).
    #[arg(long, requires = "startup")]
    pub ahead: bool,
    /// The quantile of the start-up delays to bound.
    #[arg(long, value_name = "Q", default_value_t = 0.9)]
    pub quantile: f64,
    /// The confidence of the bound.
    #[arg(long, value_name = "C", default_value_t = 0.95)]
    pub confidence: f64,
    /// Probability that a worker dies during one task execution.
    #[arg(long, value_name = "P")]
    pub fail_rate: Option<f64>,
    /// Seconds after its start that a dead worker's task is queued again.
    #[arg(long, value_name = "S", default_value_t = 30.0)]
    pub lease: f64,
    /// Seed of the random draws (start-up delays, failures).
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// The most nodes of the coarsened graph METIS partitions (`locality`).
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub partition_nodes: usize,
    /// Refuse instances with more tasks than this.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_TASKS)]
    pub max_tasks: u64,
    /// Draw the live and busy workers over time as an SVG chart.
    #[arg(long, value_name = "OUT")]
    pub svg: Option<PathBuf>,
    /// A summary, or one JSON object.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Reads the observed start-up delays.
pub fn read_delays(path: &Path) -> Result<Vec<f64>, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::Usage(format!(
            "cannot read the start-up delays {}: {e}",
            path.display()
        ))
    })?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        for word in line.split([' ', '\t', ',']).filter(|w| !w.is_empty()) {
            match word.parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 0.0 => out.push(x),
                _ => {
                    return Err(CliError::Usage(format!(
                        "{}:{}: `{word}` is not a delay in seconds (a number, 0 or more)",
                        path.display(),
                        n + 1
                    )))
                }
            }
        }
    }
    if out.is_empty() {
        return Err(CliError::Usage(format!(
            "{} holds no start-up delays (write one number of seconds a line)",
            path.display()
        )));
    }
    Ok(out)
}

/// Reads a cost model.
pub fn read_costs(path: &Path) -> Result<CostModel, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("cannot read the costs {}: {e}", path.display())))?;
    CostModel::from_json(&text).map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))
}

/// Runs `lpkc simulate`.
pub fn run(args: &SimulateArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let (_, program) = load::program(&args.file, &args.instance.program, global)?;
    let inst = instance::bind(&program, &args.instance)?;
    if args.block == 0 || args.block > 1 << 20 {
        return Err(CliError::Usage(format!(
            "--block must be between 1 and 1048576, found {}",
            args.block
        )));
    }
    let mut costs = match &args.costs {
        Some(p) => read_costs(p)?,
        None => CostModel::default(),
    };
    if let Some(g) = args.gflops {
        costs.gflops = g;
    }
    if let Some(l) = args.store_latency {
        costs.store.latency_s = l;
    }
    if let Some(b) = args.store_bandwidth {
        costs.store.bandwidth_bytes_per_s = b * 1e6;
    }
    costs.check().map_err(|e| {
        CliError::Usage(format!(
            "{e} (check --gflops, --store-latency, --store-bandwidth)"
        ))
    })?;
    let workers = match (args.workers, &args.autoscale) {
        (Some(w), None) => {
            if w == 0 || w > 65536 {
                return Err(CliError::Usage(format!(
                    "--workers must be between 1 and 65536, found {w}"
                )));
            }
            Workers::Fixed(w)
        }
        (None, Some(a)) => Workers::Autoscale {
            sf: a.sf,
            max: a.max,
            idle: a.idle,
        },
        _ => {
            return Err(CliError::Usage(
                "give either --workers W or --autoscale sf=SF,max=MAX,idle=S".into(),
            ))
        }
    };
    let startup = match &args.startup {
        Some(p) => read_delays(p)?,
        None => Vec::new(),
    };
    let bound = if args.startup.is_some() {
        Some(
            sim::quantile::upper_bound(&startup, args.quantile, args.confidence)
                .map_err(|e| CliError::Usage(format!("--startup: {e}")))?,
        )
    } else {
        None
    };
    let failures = match args.fail_rate {
        None => None,
        Some(rate) => {
            if !(0.0..1.0).contains(&rate) {
                return Err(CliError::Usage(format!(
                    "--fail-rate must be at least 0 and below 1, found {rate}"
                )));
            }
            if !(args.lease.is_finite() && args.lease > 0.0) {
                return Err(CliError::Usage(format!(
                    "--lease must be above 0 seconds, found {}",
                    args.lease
                )));
            }
            Some(Failures {
                rate,
                lease_s: args.lease,
            })
        }
    };
    let limit = TaskLimit {
        max: args.max_tasks,
        flag: "--max-tasks",
    };
    let tasks = limit
        .check(&inst)
        .map_err(|e| CliError::Input(e.to_string()))?;
    let cfg = Config {
        block: args.block,
        costs,
        workers,
        policy: args.policy.policy(),
        startup,
        ahead: if args.ahead { bound } else { None },
        cache_tiles: args.cache_tiles,
        failures,
        seed: args.seed,
        partition_nodes: args.partition_nodes.max(1),
    };
    let report = sim::simulate(&inst, &cfg).map_err(|e| match e {
        sim::SimError::Config(m) => CliError::Usage(m),
        other => CliError::Input(other.to_string()),
    })?;
    if report.tasks != tasks {
        return Err(CliError::Input(format!(
            "the simulation ran {} tasks, the count says {tasks}",
            report.tasks
        )));
    }
    if let Some(out) = &args.svg {
        let title = format!(
            "{} {} B={} {}: workers over time",
            program.name,
            instance::params_text(&inst),
            args.block,
            report.policy.name()
        );
        let text = sim::svg::utilisation_svg(&report.timeline, report.makespan_s, &title)
            .map_err(CliError::Input)?;
        std::fs::write(out, text)
            .map_err(|e| CliError::Usage(format!("cannot write {}: {e}", out.display())))?;
    }
    let mut json = report.to_json();
    if let Some(obj) = json.as_object_mut() {
        let mut head = serde_json::Map::new();
        head.insert("program".into(), program.name.clone().into());
        head.insert(
            "params".into(),
            serde_json::Value::Object(
                program
                    .params
                    .iter()
                    .zip(&inst.params)
                    .map(|(p, &v)| (p.name.clone(), v.into()))
                    .collect(),
            ),
        );
        head.insert("block".into(), args.block.into());
        head.insert(
            "workers".into(),
            match workers {
                Workers::Fixed(w) => serde_json::json!(w),
                Workers::Autoscale { sf, max, idle } => {
                    serde_json::json!({"sf": sf, "max": max, "idle": idle})
                }
            },
        );
        head.insert("startup_bound_s".into(), serde_json::json!(bound));
        head.insert("ahead".into(), args.ahead.into());
        head.append(obj);
        *obj = head;
    }
    match args.format {
        Format::Json => output::json(&json),
        Format::Human => output::out(&human(&report, bound)),
    }
    Ok(())
}

fn human(r: &sim::Report, bound: Option<f64>) -> String {
    let j = r.to_json();
    let f = |k: &str| j.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
    let mut s = format!(
        "policy {}: {} tasks, {} executions\n\
         makespan {:.6} s (critical path {:.6} s, work {:.6} s)\n\
         worker-seconds {:.6} (busy {:.6}, utilisation {:.1} %), peak workers {}, peak busy {}\n\
         read {} bytes ({:.1} % from the store), written {} bytes\n",
        r.policy.name(),
        r.tasks,
        r.executions,
        r.makespan_s,
        r.critical_path_s,
        r.work_s,
        r.worker_seconds,
        r.busy_seconds,
        100.0 * f("utilisation"),
        r.peak_workers,
        r.peak_busy,
        r.read_bytes,
        100.0 * f("remote_read_share"),
        r.written_bytes,
    );
    if let Some(b) = bound {
        s.push_str(&format!("start-up bound {b:.3} s\n"));
    }
    if !r.unmodelled.is_empty() {
        s.push_str(&format!(
            "kernels without a cost (counted as 0 s): {}\n",
            r.unmodelled.join(", ")
        ));
    }
    s
}
