//! The Rust user kernel in distributed runs, through a real Redis and real
//! worker processes (`lpk-negate-worker`): a run SIGKILLs a worker in
//! the middle and must give the embedded run's outputs bit for bit, and
//! workers check the user kernel against the program and the inputs when
//! they load a run, failing it naming the kernel and the line.

use lpk_cluster::conn::Redis;
use lpk_cluster::record::{Kernels, RunLimits, RunRecord, RunState};
use lpk_cluster::submit::{submit, Submission};
use lpk_model::program::Program;
use lpk_runtime::dense::InputSpec;
use lpk_runtime::exec::{ExecConfig, Progress};
use lpk_runtime::job::{run_job, Job};
use lpk_test_support::services;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A database of the test Redis of each test's own (the CLI tests use
/// 0 to 27): workers serve every run of their database.
fn redis_db(db: u32) -> String {
    format!("{}/{db}", services::redis_url().trim_end_matches('/'))
}

fn compile(name: &str, text: &str) -> Program {
    let mut sources = lpk_compiler::diag::SourceMap::new();
    match lpk_compiler::pipeline::compile_source(
        &mut sources,
        name,
        text,
        None,
        lpk_compiler::pipeline::LintGate::Off,
    ) {
        Ok(c) => c.program,
        Err(_) => panic!("{name} does not compile"),
    }
}

fn example() -> (String, Program) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("negated_product.lpk");
    let text = std::fs::read_to_string(&path).expect("read negated_product.lpk");
    let program = compile("negated_product.lpk", &text);
    (text, program)
}

/// The inputs, by matrix, from `name=SPEC` pairs.
fn inputs(program: &Program, specs: &[(&str, &str)]) -> BTreeMap<lpk_model::MatrixId, InputSpec> {
    specs
        .iter()
        .map(|(m, spec)| {
            (
                program.matrix_named(m).expect("an input"),
                InputSpec::parse(spec).expect("an input spec"),
            )
        })
        .collect()
}

/// Submits `program` (block 32) to one worker that has `negate`, which
/// must fail it when it loads the run, before any task; returns the
/// run's error message.
fn failure_at_load(
    redis: &str,
    tmp: &Path,
    program: &Program,
    specs: &BTreeMap<lpk_model::MatrixId, InputSpec>,
) -> String {
    let run = submit_run(redis, &tmp.join("store"), program, specs, 32);
    let _pool = Workers::start(redis, 1);
    let rec = finished(redis, &run, Duration::from_secs(30));
    assert_eq!(rec.state, RunState::Failed);
    assert_eq!(rec.done, 0, "tasks ran");
    rec.error.expect("an error").1
}

/// Submits `program` with kernels as the workers have them.
fn submit_run(
    redis: &str,
    store: &Path,
    program: &Program,
    inputs: &BTreeMap<lpk_model::MatrixId, InputSpec>,
    block: usize,
) -> String {
    let mut r = Redis::open(redis).expect("the test Redis");
    let store = store.display().to_string();
    let s = Submission {
        program,
        file: "test.lpk",
        params: &[],
        inputs,
        seed: 0,
        block,
        store: &store,
        kernels: Kernels::Standard,
        max_expiries: 1000,
        keep_intermediates: false,
        limits: RunLimits::default(),
    };
    submit(&mut r, &s, &mut |_| {}).expect("submit").run
}

/// `lpk-negate-worker` processes, killed when the test ends.
struct Workers {
    redis: String,
    children: Vec<Child>,
    started: usize,
}

impl Workers {
    fn start(redis: &str, n: usize) -> Workers {
        let mut w = Workers {
            redis: redis.to_string(),
            children: Vec::new(),
            started: 0,
        };
        for _ in 0..n {
            w.spawn();
        }
        w
    }
    fn spawn(&mut self) {
        self.started += 1;
        let child = Command::new(env!("CARGO_BIN_EXE_lpk-negate-worker"))
            .args(["--redis", &self.redis, "--lease", "0.5", "--idle", "60"])
            .args(["--name", &format!("negate-{}", self.started)])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start lpk-negate-worker");
        self.children.push(child);
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn record(redis: &str, run: &str) -> RunRecord {
    let mut r = Redis::open(redis).expect("the test Redis");
    RunRecord::read(&mut r, run).expect("the run record")
}

/// Waits (at most `within`) until the run is no longer running.
fn finished(redis: &str, run: &str, within: Duration) -> RunRecord {
    let started = Instant::now();
    loop {
        let rec = record(redis, run);
        if rec.state != RunState::Running {
            return rec;
        }
        assert!(
            started.elapsed() < within,
            "run {run}: {} of {} tasks after {within:?}",
            rec.done,
            rec.total
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_rust_kernel_runs_distributed_through_a_sigkill_bit_for_bit_as_embedded() {
    let redis = redis_db(28);
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let (_, program) = example();
    // 12 x 12 x 12 tiles of 32: 1872 tasks.
    let specs = inputs(
        &program,
        &[("A", "random:384x384"), ("B", "random:384x384")],
    );
    let block = 32;
    let registry = lpk_rust_kernel_example::registry();
    let embedded = tmp.path().join("embedded");
    let job = Job {
        params: &[],
        inputs: &specs,
        seed: 0,
        block,
        output_dir: Some(&embedded),
        outputs: None,
        tile_store: None,
        assemble: true,
        verify: false,
    };
    run_job(
        &program,
        &job,
        &registry,
        &ExecConfig::default(),
        &Progress::default(),
    )
    .expect("the embedded run");

    let store = tmp.path().join("store");
    let run = submit_run(&redis, &store, &program, &specs, block);
    let mut pool = Workers::start(&redis, 3);
    // SIGKILL a worker once the run is under way, and start another.
    let started = Instant::now();
    loop {
        let rec = record(&redis, &run);
        assert_eq!(rec.state, RunState::Running, "the run ended before a kill");
        if rec.done >= 100 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "no progress");
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut victim = pool.children.remove(0);
    victim.kill().expect("SIGKILL a worker");
    let _ = victim.wait();
    let at_kill = record(&redis, &run);
    assert!(
        at_kill.done < at_kill.total,
        "the run was done when the worker was killed"
    );
    pool.spawn();
    let rec = finished(&redis, &run, Duration::from_secs(120));
    assert_eq!(rec.state, RunState::Done, "{:?}", rec.error);
    assert_eq!(rec.done, 12 * 12 * 13);
    drop(pool);

    let distributed = tmp.path().join("distributed");
    let mut r = Redis::open(&redis).expect("the test Redis");
    lpk_cluster::collect::collect(&mut r, &run, &distributed).expect("collect");
    let a = std::fs::read(embedded.join("C.npy")).expect("embedded C");
    let b = std::fs::read(distributed.join("C.npy")).expect("distributed C");
    assert!(
        a == b,
        "C differs between the embedded and the distributed run"
    );
}

#[test]
fn negate_negates_every_element_of_any_shape() {
    use lpk_runtime::kernels::{Kernel, KernelArg, Tile};
    let a = Tile::from_fn(3, 5, |i, j| (i * 5 + j) as f64 - 4.5);
    let out = lpk_rust_kernel_example::Negate
        .call(&[KernelArg::Tile(&a)])
        .expect("negate");
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].nrows(), out[0].ncols()), (3, 5));
    for i in 0..3 {
        for j in 0..5 {
            assert_eq!(out[0][(i, j)], -a[(i, j)]);
        }
    }
}

/// A program that declares `negate` with two results: a worker that has
/// `negate` (with one) fails the run when it loads it, naming the kernel
/// and the line, before any of its tasks runs.
#[test]
fn a_worker_fails_a_run_whose_declaration_of_its_kernel_does_not_fit() {
    let redis = redis_db(29);
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let (text, _) = example();
    let wrong = text.replace("kernel negate(a) -> (b);", "kernel negate(a) -> (b, c);");
    let wrong = wrong.replace(
        "C[m, n] = negate(P[K - 1, m, n]);",
        "C[m, n], Q[m, n] = negate(P[K - 1, m, n]);",
    );
    let wrong = wrong.replace(
        "    matrix P[K, M, N];",
        "    matrix P[K, M, N];\n    output Q[M, N];",
    );
    let program = compile("wrong.lpk", &wrong);
    let line = wrong
        .lines()
        .position(|l| l.contains("= negate("))
        .expect("the call")
        + 1;
    let specs = inputs(&program, &[("A", "random:64x64"), ("B", "random:64x64")]);
    let message = failure_at_load(&redis, tmp.path(), &program, &specs);
    assert!(
        message.contains(&format!(
            "kernel `negate` (line {line}) is declared `kernel negate(a) -> (b, c);`"
        )),
        "{message}"
    );
}

/// Inputs whose edge tiles differ meet in `add` only after `negate`: the
/// submitter, which does not know `negate`'s shape rule, cannot see it;
/// the worker, which does, fails the run at load naming `add` and its
/// line.
#[test]
fn a_worker_checks_shapes_through_its_kernel_when_it_loads_a_run() {
    let redis = redis_db(30);
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let text = "\
kernel negate(a) -> (b);
kernel add(a, b) -> (c);

program p(N: int) {
    input A[N, N];
    input B[N, N];
    output C[N, N];
    matrix D[N, N];

    for i in range(N) {
        for j in range(N) {
            D[i, j] = negate(A[i, j]);
            C[i, j] = add(D[i, j], B[i, j]);
        }
    }
}
";
    let program = compile("edges.lpk", text);
    // Two tiles of 32 each way, edges of 8 and of 16.
    let specs = inputs(&program, &[("A", "random:40x40"), ("B", "random:48x48")]);
    let message = failure_at_load(&redis, tmp.path(), &program, &specs);
    assert!(
        message.contains("kernel `add` (line 13)")
            && message.contains("`A`")
            && message.contains("`B`"),
        "{message}"
    );
}
