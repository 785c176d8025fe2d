//! `lpkc simulate`: a discrete-event simulation of one instance on
//! simulated workers and a tile store (`lpk-sim`, docs/simulation.md). The
//! DAG is walked from the plans and never materialised; the instance is
//! counted first and refused above `--max-tasks`.

use crate::args::{Format, GlobalOpts, InstanceArgs};
use crate::error::CliError;
use crate::{instance, load, output};
use lpk_compiler::explore::limit::TaskLimit;
use lpk_sim::cost::CostModel;
use lpk_sim::engine::{AutoLease, Failures, Lease, Speculation, Stragglers};
use lpk_sim::{Config, Policy, Workers};
use std::path::{Path, PathBuf};

/// The default `--max-tasks`: a simulation takes about 3 microseconds a
/// task in a release build and keeps only the frontier.
pub(crate) const DEFAULT_MAX_TASKS: u64 = 5_000_000;

/// A scheduling policy on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum, PartialEq, Eq, Default)]
pub(crate) enum PolicyArg {
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
pub(crate) struct SimulateArgs {
    #[command(flatten)]
    pub(crate) instance: InstanceArgs,
    /// Tile side in elements: every tile is taken as B x B.
    #[arg(long, value_name = "B")]
    pub(crate) block: u64,
    /// A fixed pool of W workers.
    #[arg(long, value_name = "W")]
    pub(crate) workers: Option<usize>,
    /// numpywren's autoscaling policy: `sf=SF,max=MAX,idle=S`.
    #[arg(long, value_name = "SPEC", value_parser = crate::cluster::parse_autoscale)]
    pub(crate) autoscale: Option<crate::cluster::Autoscale>,
    /// The scheduling policy.
    #[arg(long, value_enum, default_value_t)]
    pub(crate) policy: PolicyArg,
    /// A cost model written by `lpkc calibrate` (default: the flop model
    /// at --gflops, a free store).
    #[arg(long, value_name = "FILE")]
    pub(crate) costs: Option<PathBuf>,
    /// GFLOP/s per worker for kernels without a calibrated time.
    #[arg(long, value_name = "X")]
    pub(crate) gflops: Option<f64>,
    /// The store's latency per request, in seconds (overrides --costs).
    #[arg(long, value_name = "S")]
    pub(crate) store_latency: Option<f64>,
    /// The store's bandwidth in MB/s per worker (overrides --costs; 0 is
    /// infinite).
    #[arg(long, value_name = "MBPS")]
    pub(crate) store_bandwidth: Option<f64>,
    /// Tiles each worker keeps in its cache (LRU); 0 keeps none.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub(crate) cache_tiles: usize,
    /// Observed worker start-up delays in seconds (one number a line or
    /// separated by spaces; `#` starts a comment); each started worker
    /// draws one.
    #[arg(long, value_name = "FILE")]
    pub(crate) startup: Option<PathBuf>,
    /// Request workers ahead of need by the upper confidence bound of the
    /// --quantile of the --startup delays (and keep idle workers at least
    /// that long).
    #[arg(long, requires = "startup")]
    pub(crate) ahead: bool,
    /// The quantile of the start-up delays to bound.
    #[arg(long, value_name = "Q", default_value_t = 0.9)]
    pub(crate) quantile: f64,
    /// The confidence of the bound.
    #[arg(long, value_name = "C", default_value_t = 0.95)]
    pub(crate) confidence: f64,
    /// Probability that a worker dies during one task execution.
    #[arg(long, value_name = "P")]
    pub(crate) fail_rate: Option<f64>,
    /// The lease of an execution (with --fail-rate), from its start: `S`
    /// seconds, or `auto[:q=Q,c=C,factor=F,min=K,fallback=S]`, per kernel F
    /// times the upper bound of the Q-quantile at confidence C of its
    /// observed durations (defaults 0.99, 0.9, 2, 20, 30 s). A dead
    /// worker's task is queued again when it expires; a live worker's
    /// execution gets a copy beside it.
    #[arg(long, value_name = "S|auto", default_value = "30", value_parser = parse_lease)]
    pub(crate) lease: Lease,
    /// Stragglers: each execution takes SLOW times its modelled time with
    /// probability RATE (`rate=P,slow=F`).
    #[arg(long, value_name = "SPEC", value_parser = parse_stragglers)]
    pub(crate) stragglers: Option<Stragglers>,
    /// Speculative re-execution (`[q=Q,c=C,min=K]`, defaults 0.9, 0.95,
    /// 20): once a kernel has K completed executions, one running longer
    /// than the upper bound of the Q-quantile at confidence C of their
    /// durations gets a backup on the next free worker; the first copy to
    /// finish wins, the other is cancelled.
    #[arg(long, value_name = "SPEC", num_args = 0..=1, default_missing_value = "",
          value_parser = parse_speculate)]
    pub(crate) speculate: Option<Speculation>,
    /// Seed of the random draws (start-up delays, failures).
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub(crate) seed: u64,
    /// The most nodes of the coarsened graph METIS partitions (`locality`).
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub(crate) partition_nodes: usize,
    /// Refuse instances with more tasks than this.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_TASKS)]
    pub(crate) max_tasks: u64,
    /// Draw the live and busy workers over time as an SVG chart.
    #[arg(long, value_name = "OUT")]
    pub(crate) svg: Option<PathBuf>,
    /// A summary, or one JSON object.
    #[arg(long, value_enum, default_value_t)]
    pub(crate) format: Format,
}

/// `KEY=VALUE` pairs separated by commas.
fn pairs<'a>(text: &'a str, example: &str) -> Result<Vec<(&'a str, &'a str)>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|part| {
            part.split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| format!("`{part}`: expected KEY=VALUE ({example})"))
        })
        .collect()
}

fn number(key: &str, v: &str, ok: impl Fn(f64) -> bool, what: &str) -> Result<f64, String> {
    v.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && ok(*x))
        .ok_or_else(|| format!("{key}={v}: {key} must be {what}"))
}

fn count(key: &str, v: &str) -> Result<usize, String> {
    v.parse::<usize>()
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| format!("{key}={v}: {key} must be a whole number of at least 1"))
}

const STRICT_UNIT: &str = "strictly between 0 and 1";

/// `--stragglers rate=P,slow=F` (both required).
pub(crate) fn parse_stragglers(text: &str) -> Result<Stragglers, String> {
    let (mut rate, mut slow) = (None, None);
    for (k, v) in pairs(text, "rate=0.05,slow=10")? {
        match k {
            "rate" => rate = Some(number(k, v, |x| (0.0..=1.0).contains(&x), "from 0 to 1")?),
            "slow" => slow = Some(number(k, v, |x| x >= 1.0, "at least 1 (a slow-down)")?),
            other => return Err(format!("`{other}` is not a straggler setting (rate, slow)")),
        }
    }
    match (rate, slow) {
        (Some(rate), Some(slow)) => Ok(Stragglers { rate, slow }),
        _ => Err("expected rate=P (0 to 1),slow=F (at least 1), e.g. rate=0.05,slow=10".into()),
    }
}

/// `--speculate [q=Q,c=C,min=K]` (each optional).
pub(crate) fn parse_speculate(text: &str) -> Result<Speculation, String> {
    let mut s = Speculation::DEFAULT;
    for (k, v) in pairs(text, "q=0.9,c=0.95,min=20")? {
        match k {
            "q" => s.q = number(k, v, |x| x > 0.0 && x < 1.0, STRICT_UNIT)?,
            "c" => s.c = number(k, v, |x| x > 0.0 && x < 1.0, STRICT_UNIT)?,
            "min" => s.min = count(k, v)?,
            other => {
                return Err(format!(
                    "`{other}` is not a speculation setting (q, c, min)"
                ))
            }
        }
    }
    Ok(s)
}

/// `--lease S` or `--lease auto[:q=Q,c=C,factor=F,min=K,fallback=S]`.
pub(crate) fn parse_lease(text: &str) -> Result<Lease, String> {
    let text = text.trim();
    let rest = if text == "auto" {
        Some("")
    } else {
        text.strip_prefix("auto:")
    };
    let Some(rest) = rest else {
        return number("lease", text, |x| x > 0.0, "seconds above 0, or auto")
            .map(Lease::Fixed)
            .map_err(|_| {
                format!(
                    "`{text}` is not a lease: give seconds above 0, or \
                     auto[:q=Q,c=C,factor=F,min=K,fallback=S]"
                )
            });
    };
    let mut a = AutoLease::DEFAULT;
    for (k, v) in pairs(rest, "auto:q=0.99,c=0.9,factor=2")? {
        match k {
            "q" => a.q = number(k, v, |x| x > 0.0 && x < 1.0, STRICT_UNIT)?,
            "c" => a.c = number(k, v, |x| x > 0.0 && x < 1.0, STRICT_UNIT)?,
            "factor" => a.factor = number(k, v, |x| x >= 1.0, "at least 1")?,
            "min" => a.min = count(k, v)?,
            "fallback" => a.fallback_s = number(k, v, |x| x > 0.0, "seconds above 0")?,
            other => {
                return Err(format!(
                    "`{other}` is not an automatic lease setting (q, c, factor, min, fallback)"
                ))
            }
        }
    }
    Ok(Lease::Auto(a))
}

/// Reads the observed start-up delays.
pub(crate) fn read_delays(path: &Path) -> Result<Vec<f64>, CliError> {
    let text = read_table(path, "the start-up delays ")?;
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
pub(crate) fn read_costs(path: &Path) -> Result<CostModel, CliError> {
    let text = read_table(path, "the costs ")?;
    CostModel::from_json(&text).map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))
}

/// The largest cost model or start-up delay file `simulate` reads (16 MiB).
const MAX_TABLE_BYTES: u64 = 16 << 20;

/// Reads a table `simulate` takes (a cost model, start-up delays) as
/// text; `what` names it in errors, as in [`load::read_bounded`].
fn read_table(path: &Path, what: &str) -> Result<String, CliError> {
    let bytes = load::read_bounded(path, MAX_TABLE_BYTES, what)?;
    String::from_utf8(bytes).map_err(|e| {
        CliError::Usage(format!(
            "{what}{} are not UTF-8 text (byte {})",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Runs `lpkc simulate`.
pub(crate) fn run(args: &SimulateArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let program = load::explored(&args.instance, global)?;
    let inst = instance::bind(&program, &args.instance)?;
    if args.block == 0 || args.block > 1 << 20 {
        return Err(CliError::Usage(format!(
            "--block must be between 1 and 1048576, found {}",
            args.block
        )));
    }
    let costs = costs(args)?;
    let workers = workers(args)?;
    let startup = match &args.startup {
        Some(p) => read_delays(p)?,
        None => Vec::new(),
    };
    let bound = if args.startup.is_some() {
        Some(
            lpk_sim::quantile::upper_bound(&startup, args.quantile, args.confidence)
                .map_err(|e| CliError::Usage(format!("--startup: {e}")))?,
        )
    } else {
        None
    };
    let failures = match args.fail_rate {
        None => None,
        Some(rate) if !(0.0..1.0).contains(&rate) => {
            return Err(CliError::Usage(format!(
                "--fail-rate must be at least 0 and below 1, found {rate}"
            )))
        }
        Some(rate) => Some(Failures {
            rate,
            lease: args.lease,
        }),
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
        kernels: lpk_runtime::kernels::Registry::standard(),
        workers,
        policy: args.policy.policy(),
        startup,
        ahead: if args.ahead { bound } else { None },
        cache_tiles: args.cache_tiles,
        failures,
        stragglers: args.stragglers,
        speculation: args.speculate,
        seed: args.seed,
        partition_nodes: args.partition_nodes.max(1),
    };
    let report = lpk_sim::simulate(&inst, &cfg).map_err(|e| match e {
        lpk_sim::SimError::Config(m) => CliError::Usage(m),
        other => CliError::Input(other.to_string()),
    })?;
    check_report(&report, tasks)?;
    if let Some(out) = &args.svg {
        let title = format!(
            "{} {} B={} {}: workers over time",
            program.name,
            instance::params_text(&inst),
            args.block,
            report.policy.name()
        );
        let text = lpk_sim::svg::utilisation_svg(&report.timeline, report.makespan_s, &title)
            .map_err(CliError::Input)?;
        std::fs::write(out, text)
            .map_err(|e| CliError::Usage(format!("cannot write {}: {e}", out.display())))?;
    }
    match args.format {
        Format::Json => output::json(&report_json(args, &inst, &report, workers, bound)),
        Format::Human => output::out(&human(&report, bound)),
    }
    Ok(())
}

/// The cost model: `--costs` (or the defaults), then the flags that
/// override it, checked.
fn costs(args: &SimulateArgs) -> Result<CostModel, CliError> {
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
    Ok(costs)
}

/// `--workers W` or `--autoscale`, exactly one of them.
fn workers(args: &SimulateArgs) -> Result<Workers, CliError> {
    match (args.workers, &args.autoscale) {
        (Some(w), None) if w == 0 || w > 65536 => Err(CliError::Usage(format!(
            "--workers must be between 1 and 65536, found {w}"
        ))),
        (Some(w), None) => Ok(Workers::Fixed(w)),
        (None, Some(a)) => Ok(Workers::Autoscale {
            sf: a.sf,
            max: a.max,
            idle: a.idle,
        }),
        _ => Err(CliError::Usage(
            "give either --workers W or --autoscale sf=SF,max=MAX,idle=S".into(),
        )),
    }
}

/// A simulation that ran another number of tasks than the count, or whose
/// times overflowed, is an error, never a report.
fn check_report(report: &lpk_sim::Report, tasks: u64) -> Result<(), CliError> {
    if report.tasks != tasks {
        return Err(CliError::Input(format!(
            "the simulation ran {} tasks, the count says {tasks}",
            report.tasks
        )));
    }
    let times = [
        report.makespan_s,
        report.worker_seconds,
        report.critical_path_s,
        report.work_s,
    ];
    if times.iter().any(|t| !t.is_finite()) {
        return Err(CliError::Input(format!(
            "the simulated times overflow (makespan {} s): the cost model's times are too \
             large for this instance (check --costs, --gflops, --store-latency and \
             --store-bandwidth)",
            report.makespan_s
        )));
    }
    Ok(())
}

/// The report as JSON: what was simulated (program, parameters, block,
/// workers, startup bound, stragglers, speculation, lease), then the
/// simulation's own fields.
fn report_json(
    args: &SimulateArgs,
    inst: &lpk_model::program::Instance<'_>,
    report: &lpk_sim::Report,
    workers: Workers,
    bound: Option<f64>,
) -> serde_json::Value {
    let program = inst.program;
    let mut json = report.to_json();
    let Some(obj) = json.as_object_mut() else {
        return json;
    };
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
    head.insert(
        "straggling".into(),
        match args.stragglers {
            Some(s) => serde_json::json!({"rate": s.rate, "slow": s.slow}),
            None => serde_json::Value::Null,
        },
    );
    head.insert(
        "speculation".into(),
        match args.speculate {
            Some(s) => serde_json::json!({"q": s.q, "c": s.c, "min": s.min}),
            None => serde_json::Value::Null,
        },
    );
    head.insert(
        "lease".into(),
        match args.lease {
            Lease::Fixed(s) => serde_json::json!(s),
            Lease::Auto(a) => serde_json::json!({
                "q": a.q, "c": a.c, "factor": a.factor, "min": a.min,
                "fallback_s": a.fallback_s
            }),
        },
    );
    head.append(obj);
    *obj = head;
    json
}

fn human(r: &lpk_sim::Report, bound: Option<f64>) -> String {
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
    if r.stragglers > 0 || r.backups > 0 || r.lease_reruns > 0 || r.cancelled > 0 {
        s.push_str(&format!(
            "stragglers {}, failures {}; backups {} ({} won), lease re-runs {} ({} won), \
             cancelled copies {}\n",
            r.stragglers,
            r.failures,
            r.backups,
            r.backups_won,
            r.lease_reruns,
            r.lease_reruns_won,
            r.cancelled
        ));
    }
    for k in &r.kernels {
        let show = |x: Option<f64>, n: usize| match x {
            Some(x) => format!("{x:.6} s (from {n})"),
            None => "none".to_string(),
        };
        s.push_str(&format!(
            "kernel {}: {} observed, threshold {}, lease {}, backups {} ({} won)\n",
            k.kernel,
            k.samples.len(),
            show(k.threshold_s, k.threshold_from),
            show(k.lease_s, k.lease_from),
            k.backups,
            k.backups_won
        ));
    }
    if !r.unmodelled.is_empty() {
        s.push_str(&format!(
            "kernels without a cost (counted as 0 s): {}\n",
            r.unmodelled.join(", ")
        ));
    }
    s
}
