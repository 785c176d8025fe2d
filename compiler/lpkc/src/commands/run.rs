//! `lpkc run`: execute a program on real matrices with the embedded
//! executor (`lpk_runtime::exec`): inputs read or generated, a progress bar,
//! outputs written with a completion marker, an optional residual check.

use crate::args::{Format, GlobalOpts, InstanceArgs, RunInputs};
use crate::error::{bind_failure, CliError};
use crate::{inputs, load, output};
use clap::ValueEnum;
use lpk_model::program::Program;
use lpk_runtime::exec::{self, ExecConfig, Progress, Stage};
use lpk_runtime::job;
use lpk_runtime::kernels::Registry;
use lpk_runtime::outputs::{Form, OutputRequest};
use lpk_runtime::store::{open_store, TileStore};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Arguments of `lpkc run`.
#[derive(clap::Args, Debug)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) instance: InstanceArgs,
    #[command(flatten)]
    pub(crate) data: RunInputs,
    /// Write the outputs into DIR: each one that forms a grid of tiles as
    /// DIR/M.npy (in place, as its tiles are computed, where it can), any
    /// other as its tiles DIR/M/i_j.npy with DIR/M/index.json;
    /// `DIR/_SUCCESS` is written last, only after success.
    #[arg(long, value_name = "DIR")]
    pub(crate) output_dir: Option<PathBuf>,
    /// What to write into --output-dir (repeatable): a matrix `R`, one
    /// tile `R[3, 0]` (DIR/R[3,0].npy) or a slice `R[3, :]` (DIR/R[3,_].npy,
    /// assembled if its tiles form a grid).
    ///
    /// [default: every output matrix]
    #[arg(long = "output", value_name = "SELECTION", value_parser = parse_output)]
    pub(crate) outputs: Vec<OutputRequest>,
    /// Also write every output tile, as it is computed, to a tile store:
    /// `mem`, `dir:PATH`, or an object_store URL such as
    /// `file:///abs/path` or `s3://bucket/prefix` (keys `M/i_j.npy`; S3
    /// reads the AWS_* variables, docs/stores.md). Assembled matrices and
    /// the marker stay in --output-dir.
    #[arg(long, value_name = "SPEC")]
    pub(crate) tile_store: Option<String>,
    /// Worker threads, 1 to 4096.
    ///
    /// [default: the number of cores]
    #[arg(long, value_name = "W",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096))]
    pub(crate) workers: Option<usize>,
    /// Seed of generated inputs.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Check the residual of the outputs against the inputs (Cholesky,
    /// LU, QR, triangular solve/inverse, matrix product); exit code 1 if
    /// it is too large.
    #[arg(long)]
    pub(crate) verify: bool,
    /// `std`: the standard kernels; `noop`: kernels that do nothing
    /// (to measure the scheduler alone).
    #[arg(long, value_enum, default_value_t = KernelSet::Std)]
    pub(crate) kernels: KernelSet,
    /// Do not show a progress bar.
    #[arg(long)]
    pub(crate) no_progress: bool,
    /// Write the timeline of every task (worker thread, start, end, bytes
    /// read and written) as Chrome trace-event JSON: open it in Perfetto
    /// or chrome://tracing (the embedded executor; for a run through Redis
    /// use `lpkc trace RUN`).
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<PathBuf>,
    /// Draw the same timeline as an SVG Gantt chart of the worker threads,
    /// with the ready tasks beneath it.
    #[arg(long, value_name = "OUT")]
    pub(crate) trace_svg: Option<PathBuf>,
    /// Run through this Redis with local worker processes (--workers of
    /// them, default 2) instead of in this process: submit, wait, collect,
    /// as `lpkc submit`, `lpkc worker` and `lpkc collect` do.
    #[arg(long, value_name = "URL", requires = "store")]
    pub(crate) redis: Option<String>,
    /// With --redis: where the run's tiles live (a shared directory's
    /// absolute path, file:///abs/path or s3://bucket/prefix).
    #[arg(long, value_name = "URL", requires = "redis")]
    pub(crate) store: Option<String>,
    /// With --redis: keep every intermediate tile in the store (by default
    /// one that is not an output is deleted after its last reader).
    #[arg(long, requires = "redis")]
    pub(crate) keep_intermediates: bool,
    /// With --redis: start and stop local workers as the run goes, as
    /// numpywren does: keep about SF x ready tasks workers, at most MAX; a
    /// worker idle for S seconds exits. Reports worker-seconds.
    #[arg(long, value_name = "sf=SF,max=MAX,idle=S", value_parser = crate::cluster::parse_autoscale,
          requires = "redis", conflicts_with = "workers")]
    pub(crate) autoscale: Option<crate::cluster::Autoscale>,
    /// With --redis: the local workers' lease in seconds.
    #[arg(long, value_name = "S", default_value_t = 10.0, requires = "redis",
          value_parser = crate::args::parse_seconds)]
    pub(crate) lease: f64,
    /// The summary as text, or one JSON object.
    #[arg(long, value_enum, default_value_t)]
    pub(crate) format: Format,
}

/// Which kernels `run` uses.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub(crate) enum KernelSet {
    /// The standard kernels on faer.
    Std,
    /// Kernels that do nothing and return empty tiles.
    Noop,
}

/// Parses one `--output` (checked against the program later).
fn parse_output(s: &str) -> Result<OutputRequest, String> {
    OutputRequest::parse(s).map_err(|e| e.to_string())
}

/// An error of the run itself (the input has errors, exit code 1).
fn fail(message: &str) -> CliError {
    CliError::Input(message.to_string())
}

/// Whether `e` is an input file that could not be opened at all (absent,
/// or not readable).
fn unopenable_input(e: &job::JobError) -> bool {
    use std::io::ErrorKind;
    match e {
        job::JobError::Input { source, .. } => matches!(
            &**source,
            lpk_runtime::npy::NpyError::Io { source, .. }
                if matches!(source.kind(), ErrorKind::NotFound | ErrorKind::PermissionDenied)
        ),
        _ => false,
    }
}

/// A usage error (exit code 2).
fn usage_error(message: &str) -> CliError {
    CliError::Usage(message.to_string())
}

/// Runs `lpkc run`.
pub(crate) fn run(args: &RunArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let (_, program) = load::program_of(&args.instance, global, load::Rules::Refuse)?;
    match (&args.redis, &args.store) {
        (Some(redis), Some(store)) => distributed(&program, args, redis, store),
        _ => execute(&program, args),
    }
}

/// Flags of the embedded run that a run through Redis does not take.
fn refuse_embedded_only(args: &RunArgs) -> Result<(), CliError> {
    for (given, flag) in [
        (args.verify, "--verify"),
        (!args.outputs.is_empty(), "--output"),
        (args.tile_store.is_some(), "--tile-store"),
        (
            args.trace.is_some() || args.trace_svg.is_some(),
            "--trace (use `lpkc trace RUN`)",
        ),
    ] {
        if given {
            return Err(usage_error(&format!(
                "{flag} is not available with --redis (yet); run without --redis for it"
            )));
        }
    }
    Ok(())
}

/// The local workers of a run through Redis, none started yet.
fn local_workers(
    args: &RunArgs,
    redis_url: &str,
    store: &str,
) -> Result<crate::cluster::Workers, CliError> {
    let exe = std::env::current_exe().map_err(|e| {
        fail(&format!(
            "cannot find the lpkc executable to start workers: {e}"
        ))
    })?;
    Ok(crate::cluster::Workers {
        exe,
        redis: redis_url.to_string(),
        lease: args.lease,
        idle: args.autoscale.as_ref().map_or(3600.0, |a| a.idle),
        spawn_cmd: None,
        children: Vec::new(),
        peak: 0,
        cache_mb: crate::cluster::local_cache_mb(store),
        failed_in_a_row: (0, None),
    })
}

/// Keeps the local workers going while the run waits: with `--autoscale`,
/// numpywren's policy (about sf x ready tasks workers, at most max, at
/// least one while the run runs); without it, fails once every worker has
/// exited.
fn tend_workers(
    children: &mut crate::cluster::Workers,
    probe: &mut lpk_cluster::conn::Redis,
    queue: &str,
    autoscale: Option<&crate::cluster::Autoscale>,
) -> Result<(), CliError> {
    let Some(a) = autoscale else {
        return if children.reap() == 0 {
            Err(fail(
                "every local worker exited before the run finished (see their messages above)",
            ))
        } else {
            Ok(())
        };
    };
    let ready: u64 = probe
        .query(
            lpk_cluster::redis::cmd("XLEN").arg(queue),
            "counting ready tasks",
        )
        .map_err(crate::cluster::error)?;
    let target = ((a.sf * ready as f64).ceil() as usize).clamp(1, a.max);
    let alive = children.reap();
    for _ in alive..target {
        children.spawn()?;
    }
    Ok(())
}

/// What a run through Redis reports.
struct Ran<'a> {
    run: &'a str,
    workers: usize,
    record: &'a lpk_cluster::record::RunRecord,
    submitted_at: Duration,
    wall: Duration,
    total: Duration,
    worker_seconds: f64,
    peak_workers: usize,
    written: &'a [lpk_runtime::outputs::Written],
}

/// Runs the program through Redis with local workers: submit, wait while
/// tending the workers, collect the outputs (fetched while the run goes
/// on), report.
fn distributed(
    program: &Program,
    args: &RunArgs,
    redis_url: &str,
    store: &str,
) -> Result<(), CliError> {
    use lpk_cluster::record::{Kernels, RunState};
    args.data.check_block()?;
    refuse_embedded_only(args)?;
    if args.kernels == KernelSet::Std {
        crate::cluster::refuse_user_kernels(program)?;
    }
    let specs = inputs::specs(program, &args.data.inputs)?;
    lpk_cluster::tiles::check_store_url(store).map_err(|e| usage_error(&e.to_string()))?;
    let mut redis = crate::cluster::open(redis_url)?;
    let workers = args.workers.unwrap_or(2);
    let started = std::time::Instant::now();
    let mut children = local_workers(args, redis_url, store)?;
    if args.autoscale.is_none() {
        for _ in 0..workers {
            children.spawn()?;
        }
    }
    let file = args.instance.file.display().to_string();
    let quiet = args.no_progress || args.format == Format::Json;
    let submission = lpk_cluster::submit::Submission {
        program,
        file: &file,
        params: &args.instance.params,
        inputs: &specs,
        seed: args.seed,
        block: args.data.block,
        store,
        kernels: match args.kernels {
            KernelSet::Std => Kernels::Standard,
            KernelSet::Noop => Kernels::Noop,
        },
        max_expiries: 3,
        keep_intermediates: args.keep_intermediates,
        limits: lpk_cluster::record::RunLimits::default(),
    };
    let submitted = crate::cluster::submit(&mut redis, &submission, quiet)?;
    let submitted_at = started.elapsed();
    // The output tiles are fetched while the run goes on, so that only the
    // last ones are left to read when it ends.
    let collector = args
        .output_dir
        .as_ref()
        .map(|dir| lpk_cluster::collect::Collector::start(redis_url, &submitted.run, dir));
    let mut probe = crate::cluster::open(redis_url)?;
    let queue = lpk_cluster::protocol::Keys::new(&submitted.run).queue();
    let record = crate::cluster::wait(
        &mut redis,
        &submitted.run,
        !args.no_progress,
        Duration::from_secs_f64(args.lease),
        &mut || tend_workers(&mut children, &mut probe, &queue, args.autoscale.as_ref()),
    )?;
    let wall = started.elapsed();
    children.reap();
    // Signalled now, waited for when `children` is dropped (after the
    // outputs are written): the exits overlap the collection.
    children.stop();
    if record.state != RunState::Done {
        let why = record.error.map(|(_, m)| m).unwrap_or_default();
        return Err(fail(&format!("run {} failed: {why}", record.id)));
    }
    let early = collector.map(|c| c.finish()).unwrap_or_default();
    let written = match &args.output_dir {
        Some(dir) => lpk_cluster::collect::collect_with(&mut redis, &submitted.run, dir, early)
            .map_err(crate::cluster::error)?,
        None => Vec::new(),
    };
    let ran = Ran {
        run: &submitted.run,
        workers,
        record: &record,
        submitted_at,
        wall,
        total: started.elapsed(),
        worker_seconds: children.worker_seconds(),
        peak_workers: children.peak,
        written: &written,
    };
    report_distributed(program, args, redis_url, &ran);
    Ok(())
}

/// Prints what a run through Redis did, as JSON or for people.
fn report_distributed(program: &Program, args: &RunArgs, redis_url: &str, ran: &Ran<'_>) {
    let (record, peak_workers) = (ran.record, ran.peak_workers);
    let secs = ran.wall.as_secs_f64();
    match args.format {
        Format::Json => output::json(&serde_json::json!({
            "program": program.name,
            "run": ran.run,
            "block": args.data.block,
            "workers": if args.autoscale.is_some() { peak_workers } else { ran.workers },
            "tasks": record.total,
            "wall_seconds": secs,
            "submit_seconds": ran.submitted_at.as_secs_f64(),
            "worker_seconds": ran.worker_seconds,
            "peak_workers": peak_workers,
            "store_peak_bytes": record.peak_bytes,
            "store_final_bytes": record.stored_bytes,
            "total_seconds": ran.total.as_secs_f64(),
            "outputs": ran.written.iter().map(|w| serde_json::json!({
                "output": w.request.to_string(),
                "path": w.path.display().to_string(),
            })).collect::<Vec<_>>(),
        })),
        Format::Human => {
            output::line(&format!(
                "ran {} as run {} with block {}: {} tasks on {} local workers through {} in {:.3} s ({:.0} tasks/s; submitting {:.3} s)",
                program.name,
                ran.run,
                args.data.block,
                record.total,
                if args.autoscale.is_some() {
                    format!("up to {peak_workers}")
                } else {
                    ran.workers.to_string()
                },
                lpk_cluster::conn::redacted(redis_url),
                secs,
                record.total as f64 / secs.max(1e-12),
                ran.submitted_at.as_secs_f64(),
            ));
            output::line(&format!(
                "  {:.2} worker-seconds, at most {peak_workers} workers at once{}",
                ran.worker_seconds,
                match &args.autoscale {
                    Some(a) =>
                        format!(" (autoscale sf={}, max={}, idle={} s)", a.sf, a.max, a.idle),
                    None => String::new(),
                }
            ));
            output::line(&format!(
                "  tile store: peak {}, at the end {} ({})",
                human_bytes(record.peak_bytes.max(0) as u64),
                human_bytes(record.stored_bytes.max(0) as u64),
                if args.keep_intermediates {
                    "intermediates kept"
                } else {
                    "dead tiles deleted"
                }
            ));
            if let Some(dir) = &args.output_dir {
                output::line(&format!("  outputs in {}", dir.display()));
            }
        }
    }
}

/// Runs the program: the embedded run pipeline ([`job::run_job`]) with a
/// progress bar, then traces and the report.
fn execute(program: &Program, args: &RunArgs) -> Result<(), CliError> {
    args.data.check_block()?;
    let specs = inputs::specs(program, &args.data.inputs)?;
    if args.verify && args.kernels == KernelSet::Noop {
        return Err(usage_error(
            "--verify needs real kernels (not --kernels noop)",
        ));
    }
    if !args.outputs.is_empty() && args.output_dir.is_none() {
        return Err(usage_error(
            "--output picks what to write into --output-dir, which is not given",
        ));
    }
    let tile_store: Option<Box<dyn TileStore>> = match &args.tile_store {
        Some(spec) => match open_store(spec) {
            Ok(s) => Some(s),
            Err(e) => return Err(usage_error(&format!("--tile-store {spec}: {e}"))),
        },
        None => None,
    };
    let registry = match args.kernels {
        KernelSet::Std => Registry::standard(),
        KernelSet::Noop => exec::noop_registry(program),
    };
    let config = ExecConfig {
        workers: args
            .workers
            .unwrap_or_else(|| ExecConfig::default().workers),
    };
    let progress = if args.trace.is_some() || args.trace_svg.is_some() {
        Progress::with_timeline()
    } else {
        Progress::default()
    };
    let job = job::Job {
        params: &args.instance.params,
        inputs: &specs,
        seed: args.seed,
        block: args.data.block,
        output_dir: args.output_dir.as_deref(),
        outputs: (!args.outputs.is_empty()).then_some(args.outputs.as_slice()),
        tile_store: tile_store.as_deref(),
        assemble: args.kernels == KernelSet::Std,
        verify: args.verify,
    };
    let show = !args.no_progress && std::io::stderr().is_terminal();
    let result = with_progress_bar(show, &progress, || {
        job::run_job(program, &job, &registry, &config, &progress)
    });
    let done = result.map_err(|e| job_error(program, e))?;
    for w in &done.written {
        if let Form::Tiles {
            count,
            why: Some(why),
        } = &w.form
        {
            eprintln!(
                "note: output `{}` forms no grid ({why}); wrote its {count} tiles and {}",
                w.request,
                w.path.display()
            );
        }
    }
    write_traces(args, &done.instance, &progress.take_timeline())?;
    match args.format {
        Format::Json => output::json(&report_json(args, &done)),
        Format::Human => report_human(program, args, &done),
    }
    match done.residual {
        Some(r) if !r.ok() => Err(CliError::Reported),
        _ => Ok(()),
    }
}

/// A failed run as the CLI reports it: a binding that fails with its
/// parameters, a bad `--output` or a missing input file as usage errors
/// (exit 2, as a missing source file is), anything else as a failure.
fn job_error(program: &Program, e: job::JobError) -> CliError {
    match e {
        job::JobError::Bind { error, params } => bind_failure(program, error, &params),
        e @ job::JobError::Select(_) => usage_error(&e.to_string()),
        e @ job::JobError::Input { .. } if unopenable_input(&e) => usage_error(&e.to_string()),
        e => fail(&e.to_string()),
    }
}

/// Runs `run` while a thread draws a progress bar on stderr (when `show`):
/// the task count and rate while tasks run, then a spinner that says what
/// the run waits for (`--verify`, writing the outputs).
fn with_progress_bar<T: Send>(show: bool, progress: &Progress, run: impl FnOnce() -> T) -> T {
    if !show {
        return run();
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    let start = std::time::Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| draw_progress(progress, &stop, start));
        let r = run();
        stop.store(true, Ordering::Relaxed);
        r
    })
}

/// The progress bar's loop, until `stop`.
fn draw_progress(
    progress: &Progress,
    stop: &std::sync::atomic::AtomicBool,
    start: std::time::Instant,
) {
    let style = |template: &str, default: fn() -> indicatif::ProgressStyle| {
        indicatif::ProgressStyle::with_template(template).unwrap_or_else(|_| default())
    };
    let pb = indicatif::ProgressBar::new(0);
    pb.set_style(style(
        "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} tasks  {per_sec}  {msg}",
        indicatif::ProgressStyle::default_bar,
    ));
    let mut spinner: Option<indicatif::ProgressBar> = None;
    while !stop.load(Ordering::Relaxed) {
        let stage = progress.stage();
        if stage == Stage::Tasks {
            pb.set_length(progress.total.load(Ordering::Relaxed));
            pb.set_position(progress.done.load(Ordering::Relaxed));
            let secs = start.elapsed().as_secs_f64().max(1e-9);
            pb.set_message(format!("{:.1} GFLOP/s", progress.flops() / secs / 1e9));
        } else {
            let sp = spinner.get_or_insert_with(|| {
                pb.finish_and_clear();
                let sp = indicatif::ProgressBar::new_spinner();
                sp.set_style(style(
                    "{spinner} [{elapsed_precise}] {msg}",
                    indicatif::ProgressStyle::default_spinner,
                ));
                sp.enable_steady_tick(Duration::from_millis(100));
                sp
            });
            sp.set_message(stage.describe());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    pb.finish_and_clear();
    if let Some(sp) = spinner {
        sp.finish_and_clear();
    }
}

/// Writes `--trace` (Chrome JSON) and `--trace-svg` from the timeline.
fn write_traces(
    args: &RunArgs,
    inst: &lpk_model::program::Instance<'_>,
    events: &[lpk_runtime::timeline::Event],
) -> Result<(), CliError> {
    let write = |path: &PathBuf, text: String| {
        std::fs::write(path, text)
            .map_err(|e| usage_error(&format!("cannot write {}: {e}", path.display())))
    };
    if let Some(path) = &args.trace {
        let json = lpk_runtime::timeline::chrome_json(inst, events);
        write(path, format!("{json}\n"))?;
    }
    if let Some(path) = &args.trace_svg {
        write(path, lpk_runtime::timeline::svg(inst, events))?;
    }
    Ok(())
}

/// The report of `--format json`.
fn report_json(args: &RunArgs, done: &job::JobReport<'_>) -> serde_json::Value {
    let (report, timings, inst) = (&done.report, &done.timings, &done.instance);
    let mut v = lpk_runtime::pipeline::report_json(inst, args.data.block, report);
    v["max_waiting"] = serde_json::json!(report.max_waiting);
    v["timings"] = serde_json::json!({
        "prepare_seconds": timings.prepare.as_secs_f64(),
        "compute_seconds": timings.compute.as_secs_f64(),
        "io_seconds": (timings.prepare + timings.finish).as_secs_f64(),
        "read_in_tasks_seconds": timings.read_in_tasks.as_secs_f64(),
        "write_in_tasks_seconds": timings.write_in_tasks.as_secs_f64(),
        "verify_seconds": timings.verify.as_secs_f64(),
        "finish_seconds": timings.finish.as_secs_f64(),
        "total_seconds": timings.total.as_secs_f64(),
    });
    if args.output_dir.is_some() {
        v["outputs"] = done
            .written
            .iter()
            .map(|w| match &w.form {
                Form::Dense { rows, cols } => serde_json::json!({
                    "output": w.request.to_string(),
                    "path": w.path.display().to_string(),
                    "shape": [rows, cols],
                }),
                Form::Tiles { count, .. } => serde_json::json!({
                    "output": w.request.to_string(),
                    "path": w.path.display().to_string(),
                    "tiles": count,
                }),
            })
            .collect();
    }
    if let Some(r) = &done.residual {
        v["residual"] = lpk_runtime::pipeline::residual_json(r);
    }
    v
}

/// The human report.
fn report_human(program: &Program, args: &RunArgs, done: &job::JobReport<'_>) {
    let (report, timings, inst) = (&done.report, &done.timings, &done.instance);
    let secs = report.wall.as_secs_f64();
    let params: Vec<String> = program
        .params
        .iter()
        .zip(&inst.params)
        .map(|(p, v)| format!("{}={v}", p.name))
        .collect();
    output::line(&format!(
        "ran {} ({}) with block {}: {} tasks on {} workers in {:.3} s ({:.0} tasks/s)",
        program.name,
        params.join(", "),
        args.data.block,
        report.tasks,
        report.workers,
        secs,
        report.tasks as f64 / secs.max(1e-12),
    ));
    // The rate is over the wall time (what the run achieved); the kernel
    // time is summed over the workers, so it is not its denominator.
    output::line(&format!(
        "  {:.3} GFLOP at {:.2} GFLOP/s of wall time ({:.3} s of kernel time over all workers){}",
        report.flops / 1e9,
        report.flops / secs.max(1e-12) / 1e9,
        report.kernel_time.as_secs_f64(),
        if report.flops_complete {
            ""
        } else {
            " (some kernels have no flop model)"
        }
    ));
    output::line(&format!(
        "  peak tile memory {}",
        human_bytes(report.peak_tile_bytes)
    ));
    if let Some(dir) = &args.output_dir {
        output::line(&format!("  outputs in {}", dir.display()));
    }
    let s = |d: Duration| d.as_secs_f64();
    output::line(&format!(
        "  time: run {:.3} s, I/O outside tasks {:.3} s (before {:.3} s, after {:.3} s), verify {:.3} s, total {:.3} s",
        s(timings.compute),
        s(timings.prepare + timings.finish),
        s(timings.prepare),
        s(timings.finish),
        s(timings.verify),
        s(timings.total),
    ));
    output::line(&format!(
        "  I/O inside tasks (summed over workers): reading inputs {:.3} s, writing outputs {:.3} s",
        s(timings.read_in_tasks),
        s(timings.write_in_tasks),
    ));
    if let Some(r) = &done.residual {
        output::line(&format!(
            "  residual {} = {:.3e} (bound {:.1e}): {}",
            r.formula,
            r.value,
            r.bound,
            if r.ok() { "ok" } else { "TOO LARGE" }
        ));
    }
}

fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b} B")
    }
}
