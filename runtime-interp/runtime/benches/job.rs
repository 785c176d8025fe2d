//! `job`: a whole `lpkc run` on files, end to end — Cholesky of an SPD
//! matrix read from a `.npy` file, `L.npy` written into an output
//! directory with its marker — next to the same run on an in-memory matrix
//! collecting tiles in memory (`in_memory::run`, what `lpkc bench` times) and
//! to faer's in-place Cholesky of the whole matrix.
//!
//! Run: `cargo bench -p lpk-runtime --bench job`; the size and block come
//! from `LPK_JOB_N` (default 2048) and `LPK_JOB_BLOCK` (default 512), the
//! workers from `LPK_JOB_WORKERS` (default 2).

use criterion::{criterion_group, criterion_main, Criterion};
use lpk_runtime::dense::InputSpec;
use lpk_runtime::exec::{ExecConfig, Progress};
use lpk_runtime::in_memory;
use lpk_runtime::job::{run_job, Job};
use lpk_runtime::kernels::{Registry, Tile};
use lpk_runtime::{npy, reference};
use std::collections::BTreeMap;
use std::time::Duration;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn bench(c: &mut Criterion) {
    let n = env("LPK_JOB_N", 2048);
    let block = env("LPK_JOB_BLOCK", 512);
    let workers = env("LPK_JOB_WORKERS", 2);
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/programs/cholesky.lpka"
    ))
    .expect("fixture");
    let program = lpk_model::artifact::decode(&bytes)
        .expect("valid")
        .artifact
        .program;
    let dir = std::env::temp_dir().join(format!("lpk-job-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let a: Tile = InputSpec::Spd(n).generate(0).expect("generated");
    let file = dir.join("a.npy");
    npy::write_file(&file, &a).expect("write");
    let out = dir.join("out");
    let registry = Registry::standard();
    let config = ExecConfig { workers };
    let specs: BTreeMap<lpk_model::MatrixId, InputSpec> = [(
        lpk_model::MatrixId::from_index(0).expect("fits"),
        InputSpec::File(file.clone()),
    )]
    .into();

    let mut g = c.benchmark_group(format!("cholesky_n{n}_b{block}_w{workers}"));
    g.sample_size(10).warm_up_time(Duration::from_millis(100));
    g.bench_function("run_job_npy_to_output_dir", |b| {
        b.iter(|| {
            let job = Job {
                params: &[],
                inputs: &specs,
                seed: 0,
                block,
                output_dir: Some(&out),
                outputs: None,
                tile_store: None,
                assemble: true,
                verify: false,
            };
            run_job(&program, &job, &registry, &config, &Progress::default()).expect("runs")
        })
    });
    let data: BTreeMap<lpk_model::MatrixId, Tile> =
        [(lpk_model::MatrixId::from_index(0).expect("fits"), a.clone())].into();
    g.bench_function("dense_run_in_memory", |b| {
        b.iter(|| {
            in_memory::run(
                &program,
                &[],
                &data,
                block,
                &registry,
                &config,
                &Progress::default(),
            )
            .expect("runs")
        })
    });
    g.bench_function("faer_cholesky_in_place", |b| {
        b.iter(|| reference::cholesky_in_place(&a, workers).expect("SPD"))
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
