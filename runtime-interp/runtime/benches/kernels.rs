//! The standard kernels' speed next to faer's own dense routine called
//! directly with `Par::Seq`, on square tiles of order 512 and 1024 and on an
//! 8192×512 panel for `qr_factor`.
//!
//! Throughput is set to the kernel's flop count from `flops::flops`, so
//! criterion's "Gelem/s" reads as GFLOP/s. Both sides of a pair use the same
//! count, so their ratio is the time ratio; faer's QR alone does not form t,
//! which the kernel's count includes. The direct faer calls work in place on
//! a fresh copy made outside the timed region; the kernels copy their input
//! inside it, as the executor sees them.
//!
//! Run: `cargo bench -p lpk-runtime --bench kernels -- --warm-up-time 1
//! --measurement-time 3`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::matmul::matmul;
use faer::linalg::qr::no_pivoting::factor::{
    qr_in_place, qr_in_place_scratch, recommended_block_size,
};
use faer::linalg::triangular_solve::solve_lower_triangular_in_place;
use faer::{Accum, Par};
use lpk_model::flops;
use lpk_runtime::kernels::{Kernel, KernelArg, Registry, Tile};
use lpk_test_support::tiles::{lower, random, spd};
use std::hint::black_box;
use std::sync::Arc;

fn kernel(registry: &Registry, name: &str) -> Arc<dyn Kernel> {
    match registry.get(name) {
        Some(k) => Arc::clone(k),
        None => panic!("{name} is not a standard kernel"),
    }
}

/// Benchmarks `name` on these tiles through the registry, and `direct`
/// (faer on a fresh copy of `fresh()`) next to it.
fn pair<S, F>(
    c: &mut Criterion,
    name: &str,
    label: &str,
    tiles: &[&Tile],
    fresh: impl Fn() -> S,
    mut direct: F,
) where
    F: FnMut(&mut S),
{
    let registry = Registry::standard();
    let k = kernel(&registry, name);
    let shapes: Vec<(usize, usize)> = tiles.iter().map(|t| t.shape()).collect();
    let f = flops::flops(name, &shapes).unwrap_or(0.0);
    let mut group = c.benchmark_group(format!("{name}/{label}"));
    group.sample_size(10);
    group.throughput(Throughput::Elements(f as u64));
    let args: Vec<KernelArg<'_>> = tiles.iter().map(|t| KernelArg::Tile(t)).collect();
    group.bench_function("lpk", |b| {
        b.iter(|| match k.call(black_box(&args)) {
            Ok(out) => out,
            Err(e) => panic!("{name}: {e}"),
        })
    });
    group.bench_function("faer", |b| {
        b.iter_batched_ref(&fresh, &mut direct, BatchSize::LargeInput)
    });
    group.finish();
}

/// gemm_acc (`d + a b`), then syrk (`d - a bᵀ`), on the same tiles.
fn products(c: &mut Criterion, n: usize) {
    let (d, a, b) = (random(n, n, 1), random(n, n, 2), random(n, n, 3));
    for (name, rhs, alpha) in [("gemm_acc", b.as_ref(), 1.0), ("syrk", b.transpose(), -1.0)] {
        pair(
            c,
            name,
            &format!("{n}"),
            &[&d, &a, &b],
            || d.clone(),
            |d| matmul(d.as_mut(), Accum::Add, &a, rhs, alpha, Par::Seq),
        );
    }
}

fn trsm(c: &mut Criterion, n: usize) {
    let (l, b) = (lower(n), random(n, n, 4));
    pair(
        c,
        "trsm",
        &format!("{n}"),
        &[&l, &b],
        || b.clone(),
        |x| solve_lower_triangular_in_place(l.as_ref(), x.as_mut().transpose_mut(), Par::Seq),
    );
}

/// Benchmarks `name`, a factorisation of `a`, next to `direct` (faer in
/// place on a fresh copy, with `scratch` of workspace).
fn factor(
    c: &mut Criterion,
    name: &str,
    label: &str,
    a: &Tile,
    scratch: StackReq,
    mut direct: impl FnMut(&mut Tile, &mut MemStack),
) {
    let mut mem = MemBuffer::new(scratch);
    pair(
        c,
        name,
        label,
        &[a],
        || a.clone(),
        |w| direct(w, MemStack::new(&mut mem)),
    );
}

fn chol(c: &mut Criterion, n: usize) {
    let scratch = cholesky_in_place_scratch::<f64>(n, Par::Seq, Default::default());
    factor(c, "chol", &format!("{n}"), &spd(n), scratch, |l, stack| {
        if cholesky_in_place(
            l.as_mut(),
            Default::default(),
            Par::Seq,
            stack,
            Default::default(),
        )
        .is_err()
        {
            panic!("the bench matrix is positive definite");
        }
    });
}

fn qr_factor(c: &mut Criterion, m: usize, n: usize) {
    let bs = recommended_block_size::<f64>(m, n);
    let mut h = Tile::zeros(bs, m.min(n));
    let scratch = qr_in_place_scratch::<f64>(m, n, bs, Par::Seq, Default::default());
    factor(
        c,
        "qr_factor",
        &format!("{m}x{n}"),
        &random(m, n, 6),
        scratch,
        |w, stack| {
            qr_in_place(w.as_mut(), h.as_mut(), Par::Seq, stack, Default::default());
        },
    );
}

fn kernels(c: &mut Criterion) {
    for n in [512, 1024] {
        products(c, n);
        trsm(c, n);
        chol(c, n);
        qr_factor(c, n, n);
    }
    qr_factor(c, 8192, 512);
}

criterion_group!(benches, kernels);
criterion_main!(benches);
