//! `lpkc lint` on every example with the default options (bound 64, task
//! budget 400,000): the front end, lowering, the proofs and, for the rules
//! not proved, the exhaustive check. The target is under 200 ms each.
//! Run: `cargo bench -p lpk-compiler --bench lint`.

use criterion::{criterion_group, criterion_main, Criterion};
use lpk_compiler::diag::SourceMap;
use lpk_compiler::lint::{lint_program, LintOptions};
use lpk_compiler::pipeline::{compile_source, LintGate};

fn lint_example(text: &str) -> usize {
    let mut sources = SourceMap::new();
    let compiled =
        compile_source(&mut sources, "example.lpk", text, None, LintGate::Off).expect("program");
    let report = lint_program(
        &compiled.checked.module,
        compiled.hir(),
        &compiled.program,
        compiled.checked.file,
        &LintOptions::default(),
        None,
    );
    report.diagnostics.len()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("lint");
    group.sample_size(10);
    for name in [
        "caqr",
        "cholesky",
        "gemm",
        "gemm_tree",
        "gesv",
        "getrf",
        "lu",
        "posv",
        "trsolve",
        "trtri",
        "tsqr",
    ] {
        let text = lpk_test_support::read(&format!("examples/{name}.lpk"));
        group.bench_function(name, |b| b.iter(|| lint_example(&text)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
