//! Plan queries on Cholesky: `children` of tasks drawn uniformly at N = 256
//! (2,829,056 tasks), and a complete walk of the DAG from its roots with
//! in-degree counting at N = 64 and 256 (with counters, and in sequential
//! order in constant memory).
//! Run: `cargo bench -p lpk-compiler --bench plans`.

use criterion::{criterion_group, criterion_main, Criterion};
use lpk_compiler::diag::SourceMap;
use lpk_compiler::pipeline::{compile_source, LintGate};
use lpk_model::program::Program;
use lpk_model::query::Engine;
use lpk_model::task::Task;

fn cholesky() -> Program {
    let text = lpk_test_support::read("examples/cholesky.lpk");
    let mut sources = SourceMap::new();
    compile_source(&mut sources, "cholesky.lpk", &text, None, LintGate::Off)
        .expect("program")
        .program
}

/// A small deterministic generator (no dependency needed for a bench).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: i64) -> i64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as i64
    }
}

/// `count` tasks drawn uniformly from all tasks of the instance.
fn random_tasks(program: &Program, n: i64, count: usize) -> Vec<Task> {
    let inst = program.bind(&[("N".to_string(), n)]).expect("binds");
    let all = inst.tasks().expect("tasks");
    let mut rng = Lcg(42);
    (0..count)
        .map(|_| all[rng.next(all.len() as i64) as usize].clone())
        .collect()
}

/// Benchmarks `query` (of N = 256) on each of `tasks` in turn.
fn random_task<T>(
    c: &mut Criterion,
    name: &str,
    tasks: &[Task],
    mut query: impl FnMut(&Task) -> T,
) {
    let mut drawn = tasks.iter().cycle();
    c.bench_function(&format!("cholesky_n256/{name}_random_task"), |b| {
        b.iter(|| query(drawn.next().expect("tasks")))
    });
}

fn bench(c: &mut Criterion) {
    let program = cholesky();
    let n = 256;
    let inst = program.bind(&[("N".to_string(), n)]).expect("binds");
    let tasks = random_tasks(&program, n, 4096);
    let mut engine = Engine::new(&inst);
    random_task(c, "children", &tasks, |t| {
        engine.children(t).expect("children")
    });
    random_task(c, "parents", &tasks, |t| {
        engine.parents(t).expect("parents")
    });
    let chol0 = Task {
        stmt: lpk_model::StmtId::from_index(0).expect("fits"),
        vars: vec![0].into(),
    };
    c.bench_function("cholesky_n256/children_chol_0 (255 children)", |b| {
        b.iter(|| engine.children(&chol0).expect("children"))
    });
    let mut group = c.benchmark_group("cholesky_walk");
    group.sample_size(10);
    for n in [64i64, 256] {
        let inst = program.bind(&[("N".to_string(), n)]).expect("binds");
        group.bench_function(format!("n{n}"), |b| {
            b.iter(|| lpk_model::dag::walk(&inst).expect("walk"))
        });
        group.bench_function(format!("sequential_n{n}"), |b| {
            b.iter(|| lpk_model::dag::walk_sequential(&inst).expect("walk"))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
