//! `lpkc calibrate`: times each standard kernel at the given block sizes on
//! this machine (one thread, as the executor calls them) and a tile store's
//! latency and bandwidth, and writes the cost model `lpkc simulate --costs`
//! reads (docs/simulation.md).
//!
//! A kernel is timed by `--threads` threads at once (default 1), each
//! cycling through copies of its arguments (64 MiB of them, so that calls
//! read memory, not the cache, as in a run), on `B x B` tiles of a symmetric, diagonally dominant
//! matrix (positive definite, well conditioned for every factorisation and
//! triangular solve); `qr_apply` and `qr_apply_pair` get the factors of a
//! `qr_factor` / `qr_pair` call, the LQ kernels likewise, and the pivoted
//! LU's kernels the pivots and factors of `getrf` / `tstrf`. Each figure is the mean of the timed
//! calls (the throughput, see [`mean`]), repeated for at least `--min-time` seconds (and 3 calls). The
//! store's latency is the mean time of a put + get of a 1 x 1 tile, its
//! bandwidth the bytes of a `B x B` tile per second beyond that latency.
//! With `--no-store` (the embedded executor) the store is free and the cost
//! of cutting an input tile out of a dense input is timed the same way
//! (a 1 x 1 tile for the latency, the largest block for the bandwidth).

use crate::args::GlobalOpts;
use crate::error::CliError;
use crate::output;
use lpk_runtime::kernels::{Kernel, KernelArg, Registry, Tile};
use lpk_runtime::store::TileStore;
use lpk_sim::cost::{CostModel, KernelTime, StoreCost};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Arguments of `lpkc calibrate`.
#[derive(clap::Args, Debug)]
pub(crate) struct CalibrateArgs {
    /// Block sizes to time (comma-separated).
    #[arg(long, value_name = "B,..", value_delimiter = ',', default_values_t = [128u64, 256, 512])]
    pub(crate) block: Vec<u64>,
    /// Only these kernels (comma-separated; default every standard kernel).
    #[arg(long, value_name = "K,..", value_delimiter = ',')]
    pub(crate) kernels: Vec<String>,
    /// Seconds to spend timing each kernel at each block, at least.
    #[arg(long, value_name = "S", default_value_t = 0.2)]
    pub(crate) min_time: f64,
    /// The tile store to time (a URL as `lpkc run --store` takes; default a
    /// `file://` store in a new temporary directory).
    #[arg(long, value_name = "URL", conflicts_with = "no_store")]
    pub(crate) store: Option<String>,
    /// Model the embedded executor: a free store (latency and bandwidth
    /// 0: its tiles stay in memory) and the time of cutting an input tile
    /// out of a dense input, which it pays on every read of an input tile
    /// (`input_cut` in the model).
    #[arg(long)]
    pub(crate) no_store: bool,
    /// GFLOP/s written for kernels that were not timed.
    #[arg(long, value_name = "X", default_value_t = lpk_sim::cost::DEFAULT_GFLOPS)]
    pub(crate) gflops: f64,
    /// Seconds added to every task (the scheduler's own cost).
    #[arg(long, value_name = "S", default_value_t = 0.0)]
    pub(crate) task_overhead: f64,
    /// Threads calling each kernel at once, each on its own tiles (the
    /// embedded executor's `--workers`: they share the machine's cores,
    /// caches and memory bandwidth as its worker threads do).
    #[arg(long, value_name = "T", default_value_t = 1)]
    pub(crate) threads: usize,
    /// Where to write the cost model (default stdout).
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

/// A symmetric, diagonally dominant `b x b` tile.
fn good_tile(b: usize) -> Tile {
    Tile::from_fn(b, b, |i, j| {
        let d = (i as f64 - j as f64).abs();
        1.0 / (1.0 + d) + if i == j { b as f64 } else { 0.0 }
    })
}

/// The mean of `times`: the simulator sums task times, so it needs the
/// throughput (total time / calls), which on a busy machine includes the
/// calls that were preempted (a median would drop them).
fn mean(times: &[f64]) -> f64 {
    if times.is_empty() {
        0.0
    } else {
        times.iter().sum::<f64>() / times.len() as f64
    }
}

/// Runs `work(t)` on threads `t` = 0, 1, ... of `threads` (at least one)
/// at once and waits for them all; their results in thread order, or the
/// first error (a thread that panicked is one).
fn on_threads<T: Send>(
    threads: usize,
    work: impl Fn(usize) -> Result<T, String> + Sync,
) -> Result<Vec<T>, String> {
    let work = &work;
    let results: Vec<Result<T, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads.max(1))
            .map(|t| scope.spawn(move || work(t)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a timing thread panicked".into()))
            })
            .collect()
    });
    results.into_iter().collect()
}

/// Repeats `f` for at least `min_time` seconds and 3 calls; the mean.
fn time<E>(min_time: f64, mut f: impl FnMut() -> Result<(), E>) -> Result<f64, E> {
    let start = Instant::now();
    let mut times = Vec::new();
    while times.len() < 3 || (start.elapsed().as_secs_f64() < min_time && times.len() < 10_000) {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64());
    }
    Ok(mean(&times))
}

/// An owned kernel argument.
#[derive(Clone)]
enum Owned {
    Tile(Tile),
    Int(i64),
    Real(f64),
}

/// Bytes of tiles each timing thread cycles through, so that a call finds
/// its arguments in memory rather than in the cache, as in a run.
const POOL_BYTES: usize = 64 << 20;

/// The last items made, kept alive as a run keeps them: input tiles cut
/// (about 256 MiB of `b x b` tiles, until their task ran) and kernel
/// results (until their readers ran). Dropped at once, an item's memory
/// would be handed back warm to the next one, whose write would then look
/// faster than in `lpkc run` (a quarter for cuts). The results' ring is
/// full before timing starts, so a kernel writes into resident memory; the
/// fresh memory a run's growing live set touches is timed apart, see
/// [`time_fresh_memory`].
struct Ring<T> {
    items: std::collections::VecDeque<T>,
    len: usize,
}

impl<T> Ring<T> {
    fn new(b: usize) -> Self {
        Ring::with_len(((256usize << 20) / (8 * b * b).max(1)).clamp(8, 4096))
    }

    fn with_len(len: usize) -> Self {
        Ring {
            items: std::collections::VecDeque::with_capacity(len),
            len,
        }
    }

    fn push(&mut self, item: T) {
        if self.items.len() == self.len {
            self.items.pop_front();
        }
        self.items.push_back(item);
    }
}

/// A kernel call's arguments.
fn refs(args: &[Owned]) -> Vec<KernelArg<'_>> {
    args.iter()
        .map(|x| match x {
            Owned::Tile(t) => KernelArg::Tile(t),
            Owned::Int(v) => KernelArg::Int(*v),
            Owned::Real(v) => KernelArg::Real(*v),
        })
        .collect()
}

/// Seconds per call of `name` at block `b`: `threads` threads call it at
/// once, each on its own pool of argument copies, for `min_time` seconds
/// and at least once; the mean over all calls (one round of
/// [`ROUNDS`]).
fn time_kernel(
    reg: &Registry,
    name: &str,
    b: usize,
    min_time: f64,
    threads: usize,
) -> Result<f64, String> {
    let kernel = reg
        .get(name)
        .ok_or_else(|| format!("the runtime has no kernel `{name}`"))?;
    let err = |e: String| format!("{name} at block {b}: {e}");
    let args = arguments(reg, name, kernel.as_ref(), b).map_err(err)?;
    let bytes: usize = args
        .iter()
        .map(|x| match x {
            Owned::Tile(t) => 8 * t.nrows() * t.ncols(),
            _ => 0,
        })
        .sum();
    let copies = (POOL_BYTES / bytes.max(1)).clamp(1, 256);
    let pools: Vec<Vec<Vec<Owned>>> = (0..threads.max(1))
        .map(|_| vec![args.clone(); copies])
        .collect();
    let times =
        on_threads(threads, |t| call_for(kernel.as_ref(), &pools[t], min_time)).map_err(err)?;
    Ok(mean(&times.concat()))
}

/// The arguments `kernel` (named `name` in `reg`) is timed on at block `b`: from its signature (a
/// well-conditioned tile for each tile, small scalars), except the QR and
/// LQ kernels, timed on what they get in a run (the factors `qr_apply`,
/// `qr_apply_pair`, `lq_apply` and `lq_apply_pair` apply; two triangular
/// factors for `qr_pair` and `lq_pair`), and the pivoted LU's `gessm`,
/// `tstrf` and `ssssm` (the pivots and factors of `getrf` and `tstrf`).
fn arguments(
    reg: &Registry,
    name: &str,
    kernel: &dyn Kernel,
    b: usize,
) -> Result<Vec<Owned>, String> {
    let sig = kernel
        .signature()
        .ok_or_else(|| format!("kernel `{name}` has no signature to build its arguments from"))?;
    let a = good_tile(b);
    let call = |k: &str, args: &[KernelArg<'_>]| -> Result<Vec<Tile>, String> {
        reg.get(k)
            .ok_or(format!("no {k}"))?
            .call(args)
            .map_err(|e| e.to_string())
    };
    let tile = |t: &Tile| Owned::Tile(t.clone());
    match name {
        "qr_apply" | "qr_apply_pair" | "lq_apply" | "lq_apply_pair" => {
            // "qr" or "lq": the factor kernels of the same family.
            let family = &name[..2];
            let f = if name.ends_with("_pair") {
                call(
                    &format!("{family}_pair"),
                    &[KernelArg::Tile(&a), KernelArg::Tile(&a)],
                )?
            } else {
                call(&format!("{family}_factor"), &[KernelArg::Tile(&a)])?
            };
            let (v, t) = (f.first().ok_or("no v")?, f.get(1).ok_or("no t")?);
            let mut args = vec![tile(v), tile(t), tile(&a)];
            if name.ends_with("_pair") {
                args.push(tile(&a));
            }
            Ok(args)
        }
        "qr_pair" | "lq_pair" => {
            let family = &name[..2];
            let f = call(&format!("{family}_factor"), &[KernelArg::Tile(&a)])?;
            let r = f.get(2).ok_or("the factor kernel gave no triangle")?;
            Ok(vec![tile(r), tile(r)])
        }
        // The pivoted LU: the pivots and factors a run passes on.
        "gessm" => {
            let f = call("getrf", &[KernelArg::Tile(&a)])?;
            let (l, p) = (f.first().ok_or("no l")?, f.get(2).ok_or("no p")?);
            Ok(vec![tile(p), tile(l), tile(&a)])
        }
        "tstrf" => {
            let f = call("getrf", &[KernelArg::Tile(&a)])?;
            Ok(vec![tile(f.get(1).ok_or("no u")?), tile(&a)])
        }
        "ssssm" => {
            let u = call("getrf", &[KernelArg::Tile(&a)])?;
            let u = u.get(1).ok_or("no u")?;
            let f = call("tstrf", &[KernelArg::Tile(u), KernelArg::Tile(&a)])?;
            let (l, p) = (f.get(1).ok_or("no l")?, f.get(2).ok_or("no p")?);
            Ok(vec![tile(l), tile(p), tile(&a), tile(&a)])
        }
        _ => Ok(sig
            .params
            .iter()
            .map(|(_, kind)| match kind {
                None => tile(&a),
                Some(lpk_model::stdlib::ScalarKind::Int) => Owned::Int(2),
                Some(lpk_model::stdlib::ScalarKind::Real) => Owned::Real(0.5),
            })
            .collect()),
    }
}

/// One timing thread: calls `kernel` on the argument copies of `pool` in
/// turn for `min_time` seconds (at least once, at most 100,000 times);
/// the seconds of each call.
fn call_for(kernel: &dyn Kernel, pool: &[Vec<Owned>], min_time: f64) -> Result<Vec<f64>, String> {
    // Results kept alive, about POOL_BYTES of them, as a run keeps its
    // tiles until their readers ran: each call writes into memory that is
    // resident but cold (the oldest result's), not into the block the
    // last result freed, still in cache. (Kept alive by the 256 MiB of
    // `Ring::new`, TSQR's `qr_pair` took 50 % longer than in a run.)
    let first = pool.first().ok_or("no arguments")?;
    let shape = kernel.call(&refs(first)).map_err(|e| e.to_string())?;
    let out_bytes: usize = shape.iter().map(|t| 8 * t.nrows() * t.ncols()).sum();
    let mut kept = Ring::with_len((POOL_BYTES / out_bytes.max(1)).clamp(1, 4096));
    while kept.items.len() < kept.len {
        kept.push(shape.clone());
    }
    let start = Instant::now();
    let mut times = Vec::new();
    let mut i = 0;
    while times.is_empty() || (start.elapsed().as_secs_f64() < min_time && times.len() < 100_000) {
        let args = refs(&pool[i % pool.len()]);
        let t = Instant::now();
        let out = kernel.call(&args).map_err(|e| e.to_string())?;
        times.push(t.elapsed().as_secs_f64());
        kept.push(out);
        i += 1;
    }
    Ok(times)
}

/// The name the timing tiles go under in a store (`STORE/lpkc_calibrate/`).
const CALIB: &str = "lpkc_calibrate";

/// The store's latency and bandwidth, from puts and gets of a 1 x 1 tile
/// and a `b x b` tile.
fn time_store(store: &dyn TileStore, b: usize, min_time: f64) -> Result<StoreCost, String> {
    let small = Arc::new(good_tile(1));
    let big = Arc::new(good_tile(b));
    let round = |tile: &Arc<Tile>, idx: i64| -> Result<(), String> {
        store
            .put(CALIB, &[idx], tile.clone())
            .map_err(|e| e.to_string())?;
        store
            .get(CALIB, &[idx])
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "a tile just written is missing".to_string())?;
        Ok(())
    };
    let mut i = 0;
    let lat = time(min_time, || {
        i += 1;
        round(&small, i)
    })?;
    let t_big = time(min_time, || {
        i += 1;
        round(&big, i)
    })?;
    for k in 1..=i {
        let _ = store.delete(CALIB, &[k]);
    }
    // A put and a get: two requests of each size.
    let bytes = 2.0 * 8.0 * (b * b) as f64;
    let extra = (t_big - lat).max(1e-12);
    Ok(StoreCost {
        latency_s: lat / 2.0,
        bandwidth_bytes_per_s: bytes / extra,
    })
}

/// Seconds to cut `b x b` input tiles out of a dense matrix, as the
/// embedded executor does for every read of an input tile
/// (`lpk_runtime::dense::tile_rect`, then a copy): `threads` threads at once,
/// each cycling through the tiles of its own dense matrix of about
/// [`POOL_BYTES`]; the mean.
fn time_cut(b: usize, min_time: f64, threads: usize) -> Result<f64, String> {
    // A square matrix of whole tiles, at least 2 x 2 of them.
    let per_side = (((POOL_BYTES / 8) as f64).sqrt() as usize / b).max(2);
    let n = per_side * b;
    let times = on_threads(threads, |_| {
        let dense = Tile::from_fn(n, n, |i, j| (i + 2 * j) as f64);
        let tiles = (per_side * per_side) as i64;
        let start = Instant::now();
        let mut times = Vec::new();
        let mut k = 0i64;
        let mut ring = Ring::new(b);
        while times.len() < 3 || (start.elapsed().as_secs_f64() < min_time && times.len() < 100_000)
        {
            let index = [k / per_side as i64, k % per_side as i64];
            let t = Instant::now();
            let (r0, nr, c0, nc) =
                lpk_runtime::dense::tile_rect(b, &index, n, n, false).map_err(|e| e.to_string())?;
            let tile = dense.as_ref().submatrix(r0, c0, nr, nc).to_owned();
            times.push(t.elapsed().as_secs_f64());
            ring.push(tile);
            k = (k + 1) % tiles;
        }
        Ok(times)
    })?;
    Ok(mean(&times.concat()))
}

/// Bytes per second of first-touching fresh memory, beyond writing
/// resident memory: `threads` threads at once each fill a new 64 MiB
/// buffer (the allocator maps it fresh: page faults, the kernel's zeroing,
/// the write), then fill it again (resident, cold: it is far larger than
/// the caches); the difference counts. A kernel's calibrated time already
/// holds its write of a result into resident cold memory (see [`Ring`]),
/// so what a fresh page adds in a run is the difference.
fn time_fresh_memory(min_time: f64, threads: usize) -> Result<f64, String> {
    const N: usize = 8 << 20; // f64s: 64 MiB
    let parts = on_threads(threads, |_| {
        let start = Instant::now();
        // (bytes touched fresh, seconds)
        let (mut bytes, mut extra, mut n) = (0.0, 0.0, 0);
        while n < 3 || (start.elapsed().as_secs_f64() < min_time && n < 1000) {
            let t = Instant::now();
            let mut v = vec![1.0f64; N];
            let fresh = t.elapsed().as_secs_f64();
            std::hint::black_box(&mut v);
            let t = Instant::now();
            v.fill(2.0);
            std::hint::black_box(&v);
            let resident = t.elapsed().as_secs_f64();
            extra += (fresh - resident).max(0.0);
            bytes += (8 * N) as f64;
            n += 1;
        }
        Ok((bytes, extra))
    })?;
    let bytes: f64 = parts.iter().map(|&(b, _)| b).sum();
    let extra: f64 = parts.iter().map(|&(_, e)| e).sum();
    Ok(bytes / extra.max(1e-9))
}

/// The most tile memory a calibration may hold at once, refused before
/// anything is allocated.
const MEMORY_BUDGET: usize = 8 << 30;

/// An upper bound on the tile memory calibrating block `b` holds at once
/// on `threads` threads: per thread, the argument pool and the results
/// kept (each about [`POOL_BYTES`], at least one set of up to 4 argument
/// and 3 result tiles, `qr_pair`'s result counting 2), the first result and
/// the call in flight; with `no_store` also the input cuts kept (256 MiB,
/// at least 8 tiles) and the dense matrix they are cut from (at least 2 x
/// 2 tiles).
fn memory_needed(b: usize, threads: usize, no_store: bool) -> usize {
    let tile = 8usize.saturating_mul(b).saturating_mul(b);
    let mut per_thread = POOL_BYTES.max(tile.saturating_mul(4))
        + POOL_BYTES.max(tile.saturating_mul(4))
        + tile.saturating_mul(8);
    if no_store {
        per_thread = per_thread
            .saturating_add((256usize << 20).max(tile.saturating_mul(8)))
            .saturating_add(POOL_BYTES.max(tile.saturating_mul(4)));
    }
    per_thread.saturating_mul(threads.max(1))
}

/// Rounds of timing per kernel (and of fresh memory); the median counts.
const ROUNDS: usize = 5;

/// The median of samples (the upper one of an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Runs `lpkc calibrate`.
pub(crate) fn run(args: &CalibrateArgs, _global: &GlobalOpts) -> Result<(), CliError> {
    check_args(args)?;
    let big = *args.block.iter().max().unwrap_or(&256) as usize;
    let reg = Registry::standard();
    let names: Vec<String> = if args.kernels.is_empty() {
        // In the order of docs/kernels.md.
        lpk_model::stdlib::STANDARD
            .iter()
            .filter(|s| reg.get(s.name).is_some())
            .map(|s| s.name.to_string())
            .collect()
    } else {
        args.kernels.clone()
    };
    let mut model = CostModel {
        machine: format!(
            "lpkc calibrate on {} ({} threads available); kernels timed on {} threads at once",
            std::env::consts::ARCH,
            std::thread::available_parallelism().map_or(1, |n| n.get()),
            args.threads
        ),
        gflops: args.gflops,
        task_overhead_s: args.task_overhead,
        ..CostModel::default()
    };
    model
        .check()
        .map_err(|e| CliError::Usage(format!("{e} (check --gflops and --task-overhead)")))?;
    time_kernels(args, &reg, &names, &mut model)?;
    model.store = if args.no_store {
        time_in_memory(args, big, &mut model)?
    } else {
        time_tile_store(args, big)?
    };
    let text = serde_json::to_string_pretty(&model)
        .map_err(|e| CliError::Input(format!("cannot write the cost model: {e}")))?;
    match &args.output {
        Some(p) => std::fs::write(p, format!("{text}\n"))
            .map_err(|e| CliError::Usage(format!("cannot write {}: {e}", p.display())))?,
        None => output::out(&format!("{text}\n")),
    }
    Ok(())
}

/// The flags in their ranges, and the memory the timing would hold within
/// its budget.
fn check_args(args: &CalibrateArgs) -> Result<(), CliError> {
    if args.block.is_empty() || args.block.iter().any(|&b| b == 0 || b > 8192) {
        return Err(CliError::Usage(
            "--block takes block sizes from 1 to 8192, e.g. --block 128,256".into(),
        ));
    }
    if !(args.min_time.is_finite() && args.min_time >= 0.0 && args.min_time <= 60.0) {
        return Err(CliError::Usage(format!(
            "--min-time must be between 0 and 60 seconds, found {}",
            args.min_time
        )));
    }
    if args.threads == 0 || args.threads > 256 {
        return Err(CliError::Usage(format!(
            "--threads must be between 1 and 256, found {}",
            args.threads
        )));
    }
    let big = *args.block.iter().max().unwrap_or(&256) as usize;
    let need = memory_needed(big, args.threads, args.no_store);
    if need > MEMORY_BUDGET {
        return Err(CliError::Usage(format!(
            "timing block {big} on {} thread(s) would hold about {:.1} GiB of tiles at once \
             (each thread keeps its own argument copies and results, {} MiB per tile); \
             at most {} GiB is allowed: use fewer --threads or smaller blocks",
            args.threads,
            need as f64 / f64::from(1u32 << 30),
            (8 * big * big) >> 20,
            MEMORY_BUDGET >> 30
        )));
    }
    Ok(())
}

/// Times every kernel of `names` at every block into `model`.
fn time_kernels(
    args: &CalibrateArgs,
    reg: &Registry,
    names: &[String],
    model: &mut CostModel,
) -> Result<(), CliError> {
    // Each kernel is timed in ROUNDS rounds of min_time / ROUNDS, the
    // kernels in turn within a round, and keeps the median of its rounds'
    // means: on a shared machine whose speed drifts for seconds at a time,
    // a slow spell then weighs on one round of every kernel, not on all of
    // one kernel's calls.
    let mut rounds: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); args.block.len()]; names.len()];
    for _ in 0..ROUNDS {
        for (k, name) in names.iter().enumerate() {
            for (i, &b) in args.block.iter().enumerate() {
                let s = time_kernel(
                    reg,
                    name,
                    b as usize,
                    args.min_time / ROUNDS as f64,
                    args.threads,
                )
                .map_err(CliError::Usage)?;
                rounds[k][i].push(s);
            }
        }
    }
    for (name, per_block) in names.iter().zip(rounds) {
        let mut times = Vec::new();
        for (&b, samples) in args.block.iter().zip(per_block) {
            let s = median(samples);
            eprintln!("{name:>14} B={b:<5} {:>12.6} ms", s * 1e3);
            times.push(KernelTime {
                block: b,
                seconds: s,
            });
        }
        model.kernels.insert(name.clone(), times);
    }
    Ok(())
}

/// The embedded executor's "store": tiles stay in memory, but every read
/// of an input tile copies it out of the dense input (`input_cut`), and
/// results are written to fresh memory.
fn time_in_memory(
    args: &CalibrateArgs,
    big: usize,
    model: &mut CostModel,
) -> Result<StoreCost, CliError> {
    let lat = time_cut(1, args.min_time / 4.0, args.threads).map_err(CliError::Input)?;
    let t = time_cut(big, args.min_time, args.threads).map_err(CliError::Input)?;
    let cut = StoreCost {
        latency_s: lat,
        bandwidth_bytes_per_s: (8 * big * big) as f64 / (t - lat).max(1e-12),
    };
    eprintln!(
        "{:>14} {:.3} ms per {big} x {big} tile ({:.1} MB/s)",
        "input cut",
        t * 1e3,
        cut.bandwidth_bytes_per_s / 1e6
    );
    model.input_cut = Some(cut);
    let mut rates = Vec::new();
    for _ in 0..ROUNDS {
        rates.push(
            time_fresh_memory(args.min_time / ROUNDS as f64, args.threads)
                .map_err(CliError::Input)?,
        );
    }
    let fresh = median(rates);
    eprintln!(
        "{:>14} {:.1} MB/s first touched",
        "fresh memory",
        fresh / 1e6
    );
    model.fresh_memory_bytes_per_s = Some(fresh);
    Ok(StoreCost::FREE)
}

/// The latency and bandwidth of `--store` (by default a temporary
/// directory, removed after).
fn time_tile_store(args: &CalibrateArgs, big: usize) -> Result<StoreCost, CliError> {
    let (store, dir): (Box<dyn TileStore>, Option<PathBuf>) = match &args.store {
        Some(url) if lpk_runtime::store::is_root_dir(url) => {
            return Err(CliError::Usage(format!(
                "--store {url}: the file system's root is not a tile store; name a directory"
            )))
        }
        Some(url) => (
            lpk_runtime::store::open_store(url)
                .map_err(|e| CliError::Usage(format!("--store {url}: {e}")))?,
            // The directory the timing tiles go to, removed after.
            lpk_runtime::store::local_dir(url).map(|d| d.join(CALIB)),
        ),
        None => {
            let dir = std::env::temp_dir().join(format!("lpkc-calibrate-{}", std::process::id()));
            std::fs::create_dir_all(&dir)
                .map_err(|e| CliError::Input(format!("cannot create {}: {e}", dir.display())))?;
            let url = format!("file://{}", dir.display());
            (
                lpk_runtime::store::open_store(&url)
                    .map_err(|e| CliError::Input(format!("{url}: {e}")))?,
                Some(dir),
            )
        }
    };
    let cost = time_store(store.as_ref(), big, args.min_time);
    if let Some(d) = dir {
        // Our own temporary directory goes whole; in the user's store
        // only the (emptied) directory of the timing tiles.
        let _ = if args.store.is_some() {
            std::fs::remove_dir(d)
        } else {
            std::fs::remove_dir_all(d)
        };
    }
    let cost = cost.map_err(|e| CliError::Input(format!("timing the store: {e}")))?;
    eprintln!(
        "{:>14} latency {:.3} ms, bandwidth {:.1} MB/s ({})",
        "store",
        cost.latency_s * 1e3,
        cost.bandwidth_bytes_per_s / 1e6,
        store.describe()
    );
    Ok(cost)
}
