//! `lpkc bench`: one run of an example program through the embedded
//! executor side by side with faer's monolithic routine on the same matrix,
//! in the same process: wall time, GFLOP/s, the ratio, and the peak resident
//! memory of each phase against the input size. The figures of
//! `docs/performance.md` come from here.

use crate::args::{Format, GlobalOpts};
use crate::error::CliError;
use crate::output;
use compiler::pipeline::{compile_source, CompileError, LintGate};
use runtime::dense::{self, InputSpec};
use runtime::exec::{ExecConfig, Progress};
use runtime::kernels::{Registry, Tile};
use runtime::reference;
use std::collections::BTreeMap;
use std::time::Instant;

/// What `lpkc bench` measures.
#[derive(Clone, Copy, Debug, clap::ValueEnum, PartialEq, Eq)]
pub enum Workload {
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
pub struct BenchArgs {
    /// What to run.
    #[arg(value_enum)]
    pub workload: Workload,
    /// Rows (and columns for cholesky and gemm) of the matrix.
    #[arg(long, default_value_t = 8192)]
    pub n: usize,
    /// Columns of the tall-skinny matrix (tsqr).
    #[arg(long, default_value_t = 512)]
    pub cols: usize,
    /// Tile size (tsqr: rows per row block).
    #[arg(long, default_value_t = 1024)]
    pub block: usize,
    /// Worker threads for both lpk and faer.
    ///
    /// [default: the number of cores]
    #[arg(long)]
    pub workers: Option<usize>,
    /// Seed of the generated matrices.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// A table, or one JSON object.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

const CHOLESKY: &str = include_str!("../../../../examples/cholesky.lpk");
const GEMM: &str = include_str!("../../../../examples/gemm.lpk");
const TSQR: &str = include_str!("../../../../examples/tsqr.lpk");

/// Compiles an embedded example (its errors would be bugs of lpkc).
fn compile(name: &str, text: &str) -> Result<model::program::Program, String> {
    let mut sources = compiler::diag::SourceMap::new();
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
pub fn run(args: &BenchArgs, _global: &GlobalOpts) -> Result<(), CliError> {
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

/// Runs lpk, then faer, and prints the comparison.
fn measure(args: &BenchArgs) -> Result<(), String> {
    let workers = args
        .workers
        .unwrap_or_else(|| ExecConfig::default().workers);
    let n = args.n;
    let (name, text, specs, flops): (&str, &str, Vec<InputSpec>, f64) = match args.workload {
        Workload::Cholesky => (
            "cholesky.lpk",
            CHOLESKY,
            vec![InputSpec::Spd(n)],
            (n as f64).powi(3) / 3.0,
        ),
        Workload::Gemm => (
            "gemm.lpk",
            GEMM,
            vec![
                InputSpec::Random { rows: n, cols: n },
                InputSpec::Random { rows: n, cols: n },
            ],
            2.0 * (n as f64).powi(3),
        ),
        Workload::Tsqr => {
            let (m, c) = (n as f64, args.cols as f64);
            (
                "tsqr.lpk",
                TSQR,
                vec![InputSpec::Random {
                    rows: n,
                    cols: args.cols,
                }],
                2.0 * c * c * (m - c / 3.0),
            )
        }
    };
    let program = compile(name, text)?;
    let input_ids: Vec<u32> = program
        .matrices
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == model::program::Role::Input)
        .map(|(i, _)| i as u32)
        .collect();
    let mut data: BTreeMap<u32, Tile> = BTreeMap::new();
    for (k, (id, spec)) in input_ids.iter().zip(&specs).enumerate() {
        let t = spec
            .generate(args.seed.wrapping_add(k as u64))
            .ok_or("internal error: no generator")?;
        data.insert(*id, t);
    }
    let input_bytes: u64 = data
        .values()
        .map(|t| (t.nrows() * t.ncols() * 8) as u64)
        .sum();
    // The header goes out once, on stdout, before the runs (which take a
    // while); the JSON form has the same figures as fields.
    if args.format == Format::Human {
        output::line(&format!(
            "bench {}: n = {n}{}, block {}, {workers} workers; inputs {:.0} MiB",
            args.workload.name(),
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
    let registry = Registry::standard();
    let config = ExecConfig { workers };
    let progress = Progress::default();
    let started = Instant::now();
    let done = dense::run(
        &program,
        &[],
        &data,
        args.block,
        &registry,
        &config,
        &progress,
    )
    .map_err(|e| e.to_string())?;
    let lpk_secs = started.elapsed().as_secs_f64();
    let lpk_rss = peak_rss();
    eprintln!("  lpk:  {lpk_secs:.3} s ({} tasks)", done.report.tasks);

    // The result to compare with the reference, before faer runs.
    let by = |m: &str| {
        program
            .matrices
            .iter()
            .position(|d| d.name == m)
            .and_then(|i| done.outputs.get(&(i as u32)))
    };
    let ext_of = |m: &str| -> Vec<i64> {
        program
            .matrices
            .iter()
            .position(|d| d.name == m)
            .and_then(|i| done.instance.extents.get(i).cloned())
            .unwrap_or_default()
    };
    let ins: Vec<&Tile> = data.values().collect();
    let (ref_secs, ref_rss, difference) = match args.workload {
        Workload::Cholesky => {
            let l = dense::assemble(&ext_of("L"), by("L").ok_or("no L")?, args.block)
                .map_err(|e| e.to_string())?;
            drop(done.outputs);
            reset_peak_rss();
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
            let rss = peak_rss();
            eprintln!("  faer llt {llt_secs:.3} s, in place {in_place_secs:.3} s");
            for j in 0..r.ncols() {
                for i in 0..j.min(r.nrows()) {
                    r[(i, j)] = 0.0;
                }
            }
            (llt_secs.min(in_place_secs), rss, fro(&(&l - &r)) / fro(&r))
        }
        Workload::Gemm => {
            let c = dense::assemble(&ext_of("C"), by("C").ok_or("no C")?, args.block)
                .map_err(|e| e.to_string())?;
            drop(done.outputs);
            reset_peak_rss();
            let t = Instant::now();
            let r = reference::product(ins[0], ins[1], workers).ok_or("shapes")?;
            let secs = t.elapsed().as_secs_f64();
            let rss = peak_rss();
            (secs, rss, fro(&(&c - &r)) / fro(&r))
        }
        Workload::Tsqr => {
            let ext = ext_of("R");
            let top = ext.first().copied().unwrap_or(1) - 1;
            let r_lpk = by("R")
                .and_then(|m| m.get(&vec![top, 0]))
                .ok_or("no final R")?
                .as_ref()
                .clone();
            drop(done.outputs);
            reset_peak_rss();
            let t = Instant::now();
            let r = reference::qr_r(ins[0], workers);
            let secs = t.elapsed().as_secs_f64();
            let rss = peak_rss();
            // R is unique up to the signs of its rows: compare RᵀR.
            let a = r_lpk.transpose() * &r_lpk;
            let b = r.transpose() * &r;
            (secs, rss, fro(&(&a - &b)) / fro(&b))
        }
    };
    eprintln!("  faer: {ref_secs:.3} s");
    let mib = |b: Option<u64>| b.map(|b| b as f64 / 1048576.0);
    let over_input = |b: Option<u64>| b.map(|b| b as f64 / input_bytes as f64);
    match args.format {
        Format::Json => output::json(&serde_json::json!({
            "workload": args.workload.name(),
            "n": n,
            "cols": (args.workload == Workload::Tsqr).then_some(args.cols),
            "block": args.block,
            "workers": workers,
            "tasks": done.report.tasks,
            "lpk_seconds": lpk_secs,
            "faer_seconds": ref_secs,
            "ratio": lpk_secs / ref_secs,
            "lpk_gflops": flops / lpk_secs / 1e9,
            "faer_gflops": flops / ref_secs / 1e9,
            "input_bytes": input_bytes,
            "lpk_peak_rss_bytes": lpk_rss,
            "faer_peak_rss_bytes": ref_rss,
            "rss_before_bytes": base_rss,
            "lpk_peak_over_input": over_input(lpk_rss),
            "relative_difference": difference,
        })),
        Format::Human => {
            output::line(&format!(
                "  lpk   {lpk_secs:8.3} s  {:7.1} GFLOP/s  peak RSS {}  ({} tasks)",
                flops / lpk_secs / 1e9,
                fmt_mib(mib(lpk_rss), over_input(lpk_rss)),
                done.report.tasks
            ));
            output::line(&format!(
                "  faer  {ref_secs:8.3} s  {:7.1} GFLOP/s  peak RSS {}",
                flops / ref_secs / 1e9,
                fmt_mib(mib(ref_rss), over_input(ref_rss))
            ));
            output::line(&format!(
                "  lpk / faer = {:.2}; results differ by {difference:.1e} (relative)",
                lpk_secs / ref_secs
            ));
        }
    }
    Ok(())
}

fn fmt_mib(mib: Option<f64>, ratio: Option<f64>) -> String {
    match (mib, ratio) {
        (Some(m), Some(r)) => format!("{m:.0} MiB ({r:.2}x the input)"),
        _ => "unknown".into(),
    }
}
