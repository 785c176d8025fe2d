//! `parse_check`: parse + resolve + type-check of every example, and of
//! generated files of 1,000 to 10,000 statements (to show linear growth).
//! Run: `cargo bench -p lpk-compiler --bench parse_check`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lpk_compiler::diag::SourceMap;
use lpk_compiler::pipeline::check_source;

fn generated(statements: usize) -> String {
    let mut s = String::from(
        "kernel f(a) -> (b);\nkernel g(a, b) -> (c);\nprogram big(N: int) {\n    require N >= 1;\n    input A[N, N];\n",
    );
    for k in 0..statements {
        s.push_str(&format!("    matrix M{k}[N, N];\n"));
    }
    for k in 0..statements {
        if k == 0 {
            s.push_str("    for i in range(N) { M0[i, 0] = f(A[i, 0]); }\n");
        } else {
            s.push_str(&format!(
                "    for i in range(1, N) {{ if i % 2 == 0 {{ M{k}[i, i - 1] = g(M{}[i, 0], A[i, i]); }} }}\n",
                k - 1
            ));
        }
    }
    s.push_str("}\n");
    s
}

fn bench(c: &mut Criterion) {
    let examples = lpk_test_support::examples();
    let mut group = c.benchmark_group("parse_check/examples");
    for path in &examples {
        let text = std::fs::read_to_string(path).expect("readable");
        let name = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        group.bench_with_input(BenchmarkId::from_parameter(&name), &text, |b, text| {
            b.iter(|| {
                let mut sources = SourceMap::new();
                let checked = check_source(&mut sources, "x.lpk", text);
                assert!(!checked.has_errors());
                checked
            })
        });
    }
    group.finish();
    let mut group = c.benchmark_group("parse_check/generated");
    group.sample_size(10);
    for n in [1_000usize, 5_000, 10_000] {
        let text = generated(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &text, |b, text| {
            b.iter(|| {
                let mut sources = SourceMap::new();
                let checked = check_source(&mut sources, "big.lpk", text);
                assert!(!checked.has_errors(), "{:?}", checked.diagnostics.first());
                checked
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
