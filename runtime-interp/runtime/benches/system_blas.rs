//! The standard kernels (faer) against the machine's OpenBLAS doing the same
//! operation, single-threaded as lpk's executor calls them, at the block
//! sizes users pick: the table of `docs/performance.md`.
//!
//! Each side is timed as the executor sees a kernel: the output tile is a
//! fresh copy of the accumulated input (`gemm_acc`, `syrk`, `trsm`) or of
//! the matrix to factor (`chol`), made inside the timed call. Every figure
//! is the median of repeated calls (at least 3, and about a second of
//! work), in GFLOP/s from the kernels' own flop counts; both sides'
//! results are compared before anything is printed, so a wrong call cannot
//! look fast.
//!
//! Run (needs libopenblas-dev): `cargo bench -p lpk-runtime --features
//! system-blas --bench system_blas` (add block sizes as arguments to
//! measure others, e.g. `-- 256 512`).

#![allow(clippy::print_stdout)]

use lpk_model::flops;
use lpk_runtime::kernels::{KernelArg, Registry, Tile};
use lpk_test_support::tiles::{lower, random, spd};
use std::time::Instant;

/// The median time in seconds of `f`, called at least three times and for
/// about a second.
fn median(mut f: impl FnMut()) -> f64 {
    let mut times = Vec::new();
    let started = Instant::now();
    while times.len() < 3 || (started.elapsed().as_secs_f64() < 1.0 && times.len() < 200) {
        let t = Instant::now();
        f();
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// The largest entry of |x - y| relative to the largest of |y|.
fn rel_diff(x: &Tile, y: &Tile) -> f64 {
    let mut diff: f64 = 0.0;
    let mut size: f64 = 0.0;
    for j in 0..y.ncols() {
        for i in 0..y.nrows() {
            diff = diff.max((x[(i, j)] - y[(i, j)]).abs());
            size = size.max(y[(i, j)].abs());
        }
    }
    diff / size.max(f64::MIN_POSITIVE)
}

/// One kernel at one block size: (faer GFLOP/s, OpenBLAS GFLOP/s).
fn measure(name: &str, tiles: &[&Tile], system: impl Fn() -> Tile) -> (f64, f64) {
    let registry = Registry::standard();
    let Some(kernel) = registry.get(name) else {
        panic!("{name} is not a standard kernel")
    };
    let args: Vec<KernelArg<'_>> = tiles.iter().map(|t| KernelArg::Tile(t)).collect();
    let run = || match kernel.call(&args) {
        Ok(mut out) => out.remove(0),
        Err(e) => panic!("{name}: {e}"),
    };
    let (ours, theirs) = (run(), system());
    let diff = rel_diff(&theirs, &ours);
    assert!(diff < 1e-10, "{name}: OpenBLAS and faer differ by {diff:e}");
    let shapes: Vec<(usize, usize)> = tiles.iter().map(|t| t.shape()).collect();
    let f = flops::flops(name, &shapes).unwrap_or(0.0);
    let t_faer = median(|| drop(std::hint::black_box(run())));
    let t_sys = median(|| drop(std::hint::black_box(system())));
    (f / t_faer / 1e9, f / t_sys / 1e9)
}

/// Fails the measurement on a refused call.
fn ok(r: Result<(), lpk_sysblas::BlasError>) {
    if let Err(e) = r {
        panic!("{e}")
    }
}

fn row(name: &str, n: usize, (faer, sys): (f64, f64)) {
    println!(
        "| `{name}` | {n} | {faer:.1} | {sys:.1} | {:.2} |",
        sys / faer
    );
}

fn main() {
    lpk_sysblas::single_threaded();
    let core = lpk_sysblas::core_name();
    println!("OpenBLAS kernels: {core} (set OPENBLAS_CORETYPE to choose others)");
    if core == "Prescott" {
        println!("warning: OpenBLAS runs its SSE3 kernels on this CPU: it does not know it");
    }
    let blocks: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let blocks = if blocks.is_empty() {
        vec![256, 512, 1024, 2048]
    } else {
        blocks
    };
    println!("| kernel | block | faer GFLOP/s | OpenBLAS GFLOP/s | OpenBLAS / faer |");
    println!("|---|---:|---:|---:|---:|");
    for &n in &blocks {
        let (c, a, b) = (random(n, n, 1), random(n, n, 2), random(n, n, 3));
        // gemm_acc is `c + a b`, syrk `c - a bᵀ`.
        for (name, rhs, alpha) in [("gemm_acc", b.as_ref(), 1.0), ("syrk", b.transpose(), -1.0)] {
            let product = measure(name, &[&c, &a, &b], || {
                let mut d = c.clone();
                ok(lpk_sysblas::gemm(d.as_mut(), 1.0, a.as_ref(), rhs, alpha));
                d
            });
            row(name, n, product);
        }
        let l = lower(n);
        let trsm = measure("trsm", &[&l, &b], || {
            let mut x = b.clone();
            ok(lpk_sysblas::trsm_right_lower_trans(l.as_ref(), x.as_mut()));
            x
        });
        row("trsm", n, trsm);
        let s = spd(n);
        let chol = measure("chol", &[&s], || {
            let mut x = s.clone();
            ok(lpk_sysblas::potrf_lower(x.as_mut()));
            // The kernel returns l with a zero upper triangle.
            for j in 1..n {
                for i in 0..j {
                    x[(i, j)] = 0.0;
                }
            }
            x
        });
        row("chol", n, chol);
    }
}
