//! `lpkc bench`: one run of an example program through the embedded
//! executor side by side with faer's monolithic routine on the same matrix,
//! in the same process: wall time, GFLOP/s, the ratio, and the peak resident
//! memory of each phase against the input size. The figures of
//! `docs/performance.md` come from here.

use crate::args::{Format, GlobalOpts};
use crate::error::CliError;
use crate::output;
use lpk_compiler::pipeline::{compile_source, CompileError, LintGate};
use lpk_model::program::Program;
use lpk_model::MatrixId;
use lpk_runtime::dense::{self, InputSpec};
use lpk_runtime::exec::{ExecConfig, Progress};
use lpk_runtime::in_memory;
use lpk_runtime::kernels::{Registry, Tile};
use lpk_runtime::reference;
use std::collections::BTreeMap;
use std::time::Instant;

/// What `lpkc bench` measures.
#[derive(Clone, Copy, Debug, clap::ValueEnum, PartialEq, Eq)]
pub(crate) enum Workload {
    /// examples/cholesky.lpk on an SPD n×n matrix against faer's `llt`.
    Cholesky,
    /// examples/gemm.lpk (gemm_acc chains) on n×n matrices against faer's
    /// `matmul`.
    Gemm,
    /// examples/tsqr.lpk on an n×cols matrix in row blocks of `block` rows
    /// against faer's dense `qr`.
    Tsqr,
}

impl Workload {
    /// The name `lpkc bench` takes.
    fn name(self) -> &'static str {
        match self {
            Workload::Cholesky => "cholesky",
            Workload::Gemm => "gemm",
            Workload::Tsqr => "tsqr",
        }
    }
}

/// Arguments of `lpkc bench`.
#[derive(clap::Args, Debug)]
pub(crate) struct BenchArgs {
    /// What to run.
    #[arg(value_enum)]
    pub(crate) workload: Workload,
    /// Rows (and columns for cholesky and gemm) of the matrix.
    #[arg(long, default_value_t = 8192)]
    pub(crate) n: usize,
    /// Columns of the tall-skinny matrix (tsqr).
    #[arg(long, default_value_t = 512)]
    pub(crate) cols: usize,
    /// Tile size (tsqr: rows per row block).
    #[arg(long, default_value_t = 1024)]
    pub(crate) block: usize,
    /// Worker threads for both lpk and faer.
    ///
    /// [default: the number of cores]
    #[arg(long)]
    pub(crate) workers: Option<usize>,
    /// Seed of the generated matrices.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// A table, or one JSON object.
    #[arg(long, value_enum, default_value_t)]
    pub(crate) format: Format,
}

const CHOLESKY: &str = include_str!("../../../../examples/cholesky.lpk");
const GEMM: &str = include_str!("../../../../examples/gemm.lpk");
const TSQR: &str = include_str!("../../../../examples/tsqr.lpk");

/// Compiles an embedded example (its errors would be bugs of lpkc).
fn compile(name: &str, text: &str) -> Result<lpk_model::program::Program, String> {
    let mut sources = lpk_compiler::diag::SourceMap::new();
    match compile_source(&mut sources, name, text, None, LintGate::DenyErrors) {
        Ok(compiled) => Ok(compiled.program),
        Err(CompileError::Diagnostics(_)) => Err(format!(
            "internal error: {name} does not check or breaks a rule"
        )),
        Err(CompileError::Select(e)) => Err(e.to_string()),
        Err(CompileError::Internal(e)) => Err(e.to_string()),
    }
}

/// Peak resident memory of this process since the last reset, in bytes
/// (Linux `VmHWM`; `None` elsewhere).
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Resets the peak to the current resident memory (Linux 4.0+).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn fro(m: &Tile) -> f64 {
    m.norm_l2()
}

/// Runs `lpkc bench`.
pub(crate) fn run(args: &BenchArgs, _global: &GlobalOpts) -> Result<(), CliError> {
    if args.block == 0 || args.n == 0 || args.cols == 0 {
        return Err(CliError::Usage(
            "--n, --cols and --block must be at least 1".into(),
        ));
    }
    if args.workers == Some(0) {
        return Err(CliError::Usage("--workers must be at least 1".into()));
    }
    measure(args).map_err(CliError::Input)
}

/// A workload's program and inputs.
struct Case {
    /// The program's file name.
    name: &'static str,
    /// Its source.
    text: &'static str,
    /// Its inputs, in matrix order.
    specs: Vec<InputSpec>,
    /// The flops of the operation (for the rates).
    flops: f64,
}

/// The program, inputs and flop count of `args.workload`.
fn workload(args: &BenchArgs) -> Case {
    let n = args.n;
    let random = |rows, cols| InputSpec::Random { rows, cols };
    match args.workload {
        Workload::Cholesky => Case {
            name: "cholesky.lpk",
            text: CHOLESKY,
            specs: vec![InputSpec::Spd(n)],
            flops: (n as f64).powi(3) / 3.0,
        },
        Workload::Gemm => Case {
            name: "gemm.lpk",
            text: GEMM,
            specs: vec![random(n, n), random(n, n)],
            flops: 2.0 * (n as f64).powi(3),
        },
        Workload::Tsqr => {
            let (m, c) = (n as f64, args.cols as f64);
            Case {
                name: "tsqr.lpk",
                text: TSQR,
                specs: vec![random(n, args.cols)],
                flops: 2.0 * c * c * (m - c / 3.0),
            }
        }
    }
}

/// The inputs generated, by matrix index (the `k`th with seed `seed + k`).
fn generate(
    program: &Program,
    specs: &[InputSpec],
    seed: u64,
) -> Result<BTreeMap<MatrixId, Tile>, String> {
    let input_ids = program
        .matrix_ids()
        .filter(|(_, m)| m.role == lpk_model::program::Role::Input)
        .map(|(i, _)| i);
    let mut data: BTreeMap<MatrixId, Tile> = BTreeMap::new();
    for (k, (id, spec)) in input_ids.zip(specs).enumerate() {
        let t = spec
            .generate(seed.wrapping_add(k as u64))
            .ok_or("internal error: no generator")?;
        data.insert(id, t);
    }
    Ok(data)
}

/// One side's measurement.
struct Measured {
    /// Wall seconds.
    secs: f64,
    /// Peak resident bytes during it.
    rss: Option<u64>,
}

/// Runs lpk, then faer, and prints the comparison.
fn measure(args: &BenchArgs) -> Result<(), String> {
    let workers = args
        .workers
        .unwrap_or_else(|| ExecConfig::default().workers);
    let w = workload(args);
    let program = compile(w.name, w.text)?;
    let data = generate(&program, &w.specs, args.seed)?;
    let input_bytes: u64 = data
        .values()
        .map(|t| (t.nrows() * t.ncols() * 8) as u64)
        .sum();
    // The header goes out once, on stdout, before the runs (which take a
    // while); the JSON form has the same figures as fields.
    if args.format == Format::Human {
        output::line(&format!(
            "bench {}: n = {}{}, block {}, {workers} workers; inputs {:.0} MiB",
            args.workload.name(),
            args.n,
            if args.workload == Workload::Tsqr {
                format!(" x {}", args.cols)
            } else {
                String::new()
            },
            args.block,
            input_bytes as f64 / 1048576.0
        ));
    }
    // lpk first, so the peak it reports is its own.
    reset_peak_rss();
    let base_rss = peak_rss();
    let started = Instant::now();
    let done = in_memory::run(
        &program,
        &[],
        &data,
        args.block,
        &Registry::standard(),
        &ExecConfig { workers },
        &Progress::default(),
    )
    .map_err(|e| e.to_string())?;
    let lpk = Measured {
        secs: started.elapsed().as_secs_f64(),
        rss: peak_rss(),
    };
    eprintln!("  lpk:  {:.3} s ({} tasks)", lpk.secs, done.report.tasks);
    let tasks = done.report.tasks;
    let (faer, difference) = reference_run(args, &program, done, &data, workers)?;
    eprintln!("  faer: {:.3} s", faer.secs);
    let figures = Figures {
        tasks,
        flops: w.flops,
        input_bytes,
        base_rss,
        lpk,
        faer,
        difference,
    };
    print_figures(args, workers, &figures);
    Ok(())
}

/// Runs faer's dense routine on the same inputs and returns its
/// measurement and the relative difference from lpk's result (which is
/// dropped before faer runs, so each peak is its own).
fn reference_run(
    args: &BenchArgs,
    program: &Program,
    done: in_memory::DenseRun<'_>,
    data: &BTreeMap<MatrixId, Tile>,
    workers: usize,
) -> Result<(Measured, f64), String> {
    // Taken before lpk's tiles are dropped, and so before the peak is reset.
    let lpk = lpk_result(args, program, &done)?;
    drop(done.outputs);
    reset_peak_rss();
    let ins: Vec<&Tile> = data.values().collect();
    let timed = |secs: f64| Measured {
        secs,
        rss: peak_rss(),
    };
    match args.workload {
        Workload::Cholesky => {
            // faer two ways: the `llt` decomposition object, and the
            // in-place factorisation (faster: no extra copies); the better
            // time is the baseline.
            let t = Instant::now();
            let r = reference::cholesky(ins[0], workers).ok_or("faer: not positive definite")?;
            let llt_secs = t.elapsed().as_secs_f64();
            drop(r);
            let t = Instant::now();
            let mut r = reference::cholesky_in_place(ins[0], workers)
                .ok_or("faer: not positive definite")?;
            let in_place_secs = t.elapsed().as_secs_f64();
            let m = timed(llt_secs.min(in_place_secs));
            eprintln!("  faer llt {llt_secs:.3} s, in place {in_place_secs:.3} s");
            for j in 0..r.ncols() {
                for i in 0..j.min(r.nrows()) {
                    r[(i, j)] = 0.0;
                }
            }
            Ok((m, fro(&(&lpk - &r)) / fro(&r)))
        }
        Workload::Gemm => {
            let t = Instant::now();
            let r = reference::product(ins[0], ins[1], workers).ok_or("shapes")?;
            let m = timed(t.elapsed().as_secs_f64());
            Ok((m, fro(&(&lpk - &r)) / fro(&r)))
        }
        Workload::Tsqr => {
            let t = Instant::now();
            let r = reference::qr_r(ins[0], workers);
            let m = timed(t.elapsed().as_secs_f64());
            // R is unique up to the signs of its rows: compare RᵀR.
            let a = lpk.transpose() * &lpk;
            let b = r.transpose() * &r;
            Ok((m, fro(&(&a - &b)) / fro(&b)))
        }
    }
}

/// lpk's result that faer's is compared with, as one dense matrix: the
/// factor L, the product C, or the R that TSQR leaves in its last row
/// block's tile.
fn lpk_result(
    args: &BenchArgs,
    program: &Program,
    done: &in_memory::DenseRun<'_>,
) -> Result<Tile, String> {
    let name = match args.workload {
        Workload::Cholesky => "L",
        Workload::Gemm => "C",
        Workload::Tsqr => "R",
    };
    let id = program.matrix_named(name);
    let extents = id
        .and_then(|i| done.instance.extents.get(i.index()).cloned())
        .unwrap_or_default();
    let tiles = id.and_then(|i| done.outputs.get(&i));
    match args.workload {
        Workload::Tsqr => {
            let top = extents.first().copied().unwrap_or(1) - 1;
            let last = tiles.and_then(|m| m.get(&vec![top, 0]));
            Ok(last.ok_or("no final R")?.as_ref().clone())
        }
        Workload::Cholesky | Workload::Gemm => {
            let tiles = tiles.ok_or_else(|| format!("no {name}"))?;
            dense::assemble(&extents, tiles, args.block).map_err(|e| e.to_string())
        }
    }
}

/// What `lpkc bench` reports.
struct Figures {
    tasks: u64,
    flops: f64,
    input_bytes: u64,
    base_rss: Option<u64>,
    lpk: Measured,
    faer: Measured,
    difference: f64,
}

/// Prints the comparison, as JSON or for people.
fn print_figures(args: &BenchArgs, workers: usize, f: &Figures) {
    let mib = |b: Option<u64>| b.map(|b| b as f64 / 1048576.0);
    let over_input = |b: Option<u64>| b.map(|b| b as f64 / f.input_bytes as f64);
    let (lpk_secs, ref_secs) = (f.lpk.secs, f.faer.secs);
    match args.format {
        Format::Json => output::json(&serde_json::json!({
            "workload": args.workload.name(),
            "n": args.n,
            "cols": (args.workload == Workload::Tsqr).then_some(args.cols),
            "block": args.block,
            "workers": workers,
            "tasks": f.tasks,
            "lpk_seconds": lpk_secs,
            "faer_seconds": ref_secs,
            "ratio": lpk_secs / ref_secs,
            "lpk_gflops": f.flops / lpk_secs / 1e9,
            "faer_gflops": f.flops / ref_secs / 1e9,
            "input_bytes": f.input_bytes,
            "lpk_peak_rss_bytes": f.lpk.rss,
            "faer_peak_rss_bytes": f.faer.rss,
            "rss_before_bytes": f.base_rss,
            "lpk_peak_over_input": over_input(f.lpk.rss),
            "relative_difference": f.difference,
        })),
        Format::Human => {
            output::line(&format!(
                "  lpk   {lpk_secs:8.3} s  {:7.1} GFLOP/s  peak RSS {}  ({} tasks)",
                f.flops / lpk_secs / 1e9,
                fmt_mib(mib(f.lpk.rss), over_input(f.lpk.rss)),
                f.tasks
            ));
            output::line(&format!(
                "  faer  {ref_secs:8.3} s  {:7.1} GFLOP/s  peak RSS {}",
                f.flops / ref_secs / 1e9,
                fmt_mib(mib(f.faer.rss), over_input(f.faer.rss))
            ));
            output::line(&format!(
                "  lpk / faer = {:.2}; results differ by {:.1e} (relative)",
                lpk_secs / ref_secs,
                f.difference
            ));
        }
    }
}

fn fmt_mib(mib: Option<f64>, ratio: Option<f64>) -> String {
    match (mib, ratio) {
        (Some(m), Some(r)) => format!("{m:.0} MiB ({r:.2}x the input)"),
        _ => "unknown".into(),
    }
}
