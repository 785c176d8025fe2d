//! `npy`: reading and writing a 8192×8192 `f64` matrix (512 MiB) as
//! `.npy`, in memory and through a file, in Fortran order (what the writer
//! produces) and C order (what numpy writes by default).
//! Run: `cargo bench -p lpk-runtime --bench npy`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lpk_runtime::kernels::Tile;
use lpk_runtime::npy::{self, ReadLimit};
use std::time::Duration;

const N: usize = 8192;

/// The C-order `.npy` bytes of `t`, as numpy writes them.
fn c_order(t: &Tile) -> Vec<u8> {
    let header = format!(
        "{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, {}), }}",
        t.nrows(),
        t.ncols()
    );
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    let padded = (10 + header.len() + 1).next_multiple_of(64) - 10;
    out.extend_from_slice(&(padded as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.resize(10 + padded - 1, b' ');
    out.push(b'\n');
    out.reserve(t.nrows() * t.ncols() * 8);
    for i in 0..t.nrows() {
        for j in 0..t.ncols() {
            out.extend_from_slice(&t[(i, j)].to_le_bytes());
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let t = Tile::from_fn(N, N, |i, j| (i * 31 + j) as f64 * 0.5);
    let f_bytes = npy::to_bytes(&t);
    let c_bytes = c_order(&t);
    let limit = ReadLimit::default();
    let dir = std::env::temp_dir().join(format!("lpk-npy-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench dir");
    let path = dir.join("m.npy");

    let mut g = c.benchmark_group("npy_8192");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Bytes((N * N * 8) as u64));
    g.bench_function("to_bytes", |b| b.iter(|| npy::to_bytes(&t)));
    g.bench_function("read_bytes_fortran", |b| {
        b.iter(|| npy::read_bytes(&f_bytes, "m.npy", &limit).expect("read"))
    });
    g.bench_function("read_bytes_c", |b| {
        b.iter(|| npy::read_bytes(&c_bytes, "m.npy", &limit).expect("read"))
    });
    g.bench_function("write_file", |b| {
        b.iter(|| npy::write_file(&path, &t).expect("write"))
    });
    g.bench_function("read_file", |b| {
        b.iter(|| npy::read_file(&path).expect("read"))
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
