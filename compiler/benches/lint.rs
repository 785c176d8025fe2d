//! `lpkc lint` on every example with the default options (bound 64, task
//! budget 400,000): the front end, lowering, the proofs and, for the rules
//! not proved, the exhaustive check. The target is under 200 ms each.
//! Run: `cargo bench -p lpk-compiler --bench lint`.

use compiler::diag::SourceMap;
use compiler::lint::{lint_program, LintOptions};
use compiler::pipeline::{check_source, compile_program, select_program};
use criterion::{criterion_group, criterion_main, Criterion};
use std::path::Path;

fn lint_example(text: &str) -> usize {
    let mut sources = SourceMap::new();
    let checked = check_source(&mut sources, "example.lpk", text);
    let hir = select_program(&checked.module, None).expect("program");
    let program = compile_program(&checked.module, hir, &sources);
    let report = lint_program(
        &checked.module,
        hir,
        &program,
        checked.file,
        &LintOptions::default(),
        None,
    );
    report.diagnostics.len()
}

fn bench(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut group = c.benchmark_group("lint");
    group.sample_size(10);
    for name in [
        "caqr",
        "cholesky",
        "gemm",
        "gemm_tree",
        "lu",
        "trsolve",
        "trtri",
        "tsqr",
    ] {
        let text = std::fs::read_to_string(dir.join(format!("{name}.lpk"))).expect("example");
        group.bench_function(name, |b| b.iter(|| lint_example(&text)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
