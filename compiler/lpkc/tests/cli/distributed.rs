//! Distributed runs through a real Redis and real worker processes:
//! `lpkc submit`, `worker`, `status`, `collect` and `run --redis`, checked
//! bit for bit against the embedded `lpkc run`, while the tests kill
//! workers with SIGKILL or make them crash and stall on purpose.

use crate::binary::ok;
use crate::strings_of;
use lpk_test_support::services;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The test Redis, in a database of this test's own (0 to 31: the test
/// Redis has 32): workers take tasks of every run in their database, so
/// tests that run at the same time must not share one (a test's crashing workers would take another's tasks).
fn redis_db(db: u32) -> String {
    format!("{}/{db}", services::redis_url().trim_end_matches('/'))
}

fn lpkc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lpkc"))
}

fn example(name: &str) -> PathBuf {
    lpk_test_support::workspace_root()
        .join("examples")
        .join(name)
}

/// Asserts that a command exited with `code`; returns its stderr.
fn fails(out: &Output, code: i32) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    stderr
}

/// Cholesky of 4096 x 4096 in tiles of 256: long enough for faults to strike.
const CHOLESKY_4096: [&str; 4] = ["--block", "256", "--input", "A=spd:4096"];

/// A tree of products of 3072 x 3072 matrices in tiles of 256.
const GEMM_TREE_3072: [&str; 6] = [
    "--block",
    "256",
    "--input",
    "A=random:3072x3072",
    "--input",
    "B=random:3072x3072",
];

/// A small Cholesky: 4 x 4 tiles of 32, 20 tasks.
const CHOLESKY_128: [&str; 4] = ["--block", "32", "--input", "A=spd:128"];

/// A small pseudo-random sequence (the seed is printed, so a failure can
/// be replayed).
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        eprintln!("fault schedule seed {seed}");
        Rng(seed)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

/// Where a test's run keeps its tiles.
enum Store {
    Dir(PathBuf),
    S3 {
        url: String,
        env: Vec<(String, String)>,
    },
}

impl Store {
    /// A store in a fresh bucket of the test S3 server.
    fn s3(tag: &str) -> Store {
        let s3 = services::s3_endpoint();
        let bucket = s3.fresh_bucket(tag);
        Store::S3 {
            url: s3.url(&bucket, "runs"),
            env: s3.env(),
        }
    }
    fn url(&self) -> String {
        match self {
            Store::Dir(p) => p.display().to_string(),
            Store::S3 { url, .. } => url.clone(),
        }
    }
    fn env(&self) -> Vec<(String, String)> {
        match self {
            Store::Dir(_) => Vec::new(),
            Store::S3 { env, .. } => env.clone(),
        }
    }
}

/// Worker processes, killed when the test ends however it ends.
struct Workers {
    redis: String,
    env: Vec<(String, String)>,
    extra: Vec<String>,
    children: Vec<Child>,
}

impl Workers {
    /// Starts `n` workers with the arguments `extra`.
    fn start(redis: &str, store: &Store, extra: &[&str], n: usize) -> Workers {
        let mut pool = Workers {
            redis: redis.to_string(),
            env: store.env(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
            children: Vec::new(),
        };
        for _ in 0..n {
            pool.spawn();
        }
        pool
    }
    fn spawn(&mut self) {
        let child = lpkc()
            .args(["worker", "--redis", &self.redis, "--quiet"])
            .args(&self.extra)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start a worker");
        self.children.push(child);
    }
    /// Kills a worker drawn from `rng` with SIGKILL and starts a
    /// replacement.
    fn kill_and_replace(&mut self, rng: &mut Rng) {
        let k = rng.below(self.children.len() as u64) as usize;
        let mut c = self.children.remove(k);
        c.kill().expect("SIGKILL a worker");
        let _ = c.wait();
        self.spawn();
    }
    /// Replaces workers that exited; returns their exit codes.
    fn replace_exited(&mut self) -> Vec<Option<i32>> {
        let mut codes = Vec::new();
        let mut k = 0;
        while k < self.children.len() {
            if let Ok(Some(status)) = self.children[k].try_wait() {
                codes.push(status.code());
                let _ = self.children.remove(k).wait();
                self.spawn();
            } else {
                k += 1;
            }
        }
        codes
    }
}

impl Workers {
    /// Asserts that every worker still runs: none gave up.
    fn assert_all_running(&mut self) {
        for c in &mut self.children {
            assert!(matches!(c.try_wait(), Ok(None)), "a worker exited");
        }
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

fn status(redis: &str, run: &str) -> Value {
    let out = lpkc()
        .args(["status", run, "--redis", redis, "--format", "json"])
        .output()
        .expect("run lpkc status");
    serde_json::from_str(&ok(&out, "lpkc status")).expect("status is JSON")
}

/// `lpkc submit FILE ARGS --redis REDIS --store STORE --no-progress`, to
/// add to.
fn submit_cmd(redis: &str, store: &Store, file: &Path, args: &[&str]) -> Command {
    let mut cmd = lpkc();
    cmd.arg("submit")
        .arg(file)
        .args(args)
        .args(["--redis", redis, "--store", &store.url(), "--no-progress"])
        .envs(store.env());
    cmd
}

/// Submits `file`, which must fail with exit 1; returns stdout and
/// stderr.
fn submit_fails(redis: &str, store: &Store, file: &Path, args: &[&str]) -> (String, String) {
    let out = submit_cmd(redis, store, file, args)
        .output()
        .expect("run lpkc submit");
    let stderr = fails(&out, 1);
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

/// Submits `file`; returns the run's id.
fn submit(redis: &str, store: &Store, file: &Path, args: &[&str]) -> String {
    let out = submit_cmd(redis, store, file, args)
        .args(["--format", "json"])
        .output()
        .expect("run lpkc submit");
    let v: Value = serde_json::from_str(&ok(&out, "lpkc submit")).expect("submit prints JSON");
    v["run"].as_str().expect("a run id").to_string()
}

/// Runs `file` embedded into `dir`/embedded; returns that directory.
fn embedded_in(dir: &Path, file: &Path, args: &[&str]) -> PathBuf {
    let emb = dir.join("embedded");
    embedded(file, args, &emb);
    emb
}

fn embedded(file: &Path, args: &[&str], dir: &Path) {
    let out = lpkc()
        .arg("run")
        .arg(file)
        .args(args)
        .arg("--output-dir")
        .arg(dir)
        .arg("--no-progress")
        .output()
        .expect("run lpkc run");
    ok(&out, "embedded lpkc run");
}

/// `lpkc collect` of `run` into `dir`, successful or not.
fn try_collect(redis: &str, store: &Store, run: &str, dir: &Path) -> Output {
    lpkc()
        .args(["collect", run, "--redis", redis, "--output-dir"])
        .arg(dir)
        .envs(store.env())
        .output()
        .expect("run lpkc collect")
}

fn collect(redis: &str, store: &Store, run: &str, dir: &Path) {
    ok(&try_collect(redis, store, run, dir), "lpkc collect");
}

/// Collects `run` into `dir`, which must then hold the same outputs as
/// the embedded run's `embedded`.
fn collect_same(redis: &str, store: &Store, run: &str, embedded: &Path, dir: &Path) {
    collect(redis, store, run, dir);
    assert_same_outputs(embedded, dir);
}

/// `lpkc run FILE ARGS --redis REDIS --store STORE`, to add to.
fn run_on_redis(file: &Path, args: &[&str], redis: &str, store: &Store) -> Command {
    let mut cmd = lpkc();
    cmd.arg("run")
        .arg(file)
        .args(args)
        .args(["--redis", redis, "--store", &store.url()]);
    cmd
}

/// Runs one worker until it has been idle for `idle` seconds; returns
/// what it printed, stdout then stderr.
fn worker_until_idle(redis: &str, idle: &str) -> String {
    let out = lpkc()
        .args(["worker", "--redis", redis, "--idle", idle])
        .output()
        .expect("run a worker");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{all}");
    all
}

/// Every `.npy` of the embedded run's output directory is byte-identical
/// in the distributed one, and both are complete.
fn assert_same_outputs(embedded: &Path, distributed: &Path) {
    let mut compared = 0;
    for e in std::fs::read_dir(embedded).expect("embedded outputs") {
        let p = e.expect("an entry").path();
        if p.extension().is_some_and(|x| x == "npy") {
            let name = p.file_name().expect("a name");
            let a = std::fs::read(&p).expect("read embedded output");
            let b = std::fs::read(distributed.join(name))
                .unwrap_or_else(|e| panic!("distributed output {name:?}: {e}"));
            assert!(
                a == b,
                "{name:?} differs between the embedded and the distributed run"
            );
            compared += 1;
        }
    }
    assert!(compared > 0, "no outputs compared");
    assert!(distributed.join("_SUCCESS").exists());
}

/// How faults strike a run: the test SIGKILLs workers, or the workers
/// crash and stall by themselves (`--inject-faults` with this list).
enum Fault {
    Kill,
    Inject(&'static str),
}

/// Runs example `file` distributed with three workers while faults
/// strike every 60–210 ms, until the run is done (within 300 s); at least
/// ten faults must strike. The store is `store`, or (`None`) a directory
/// of the run's own.
fn run_under_faults(db: u32, file: &str, args: &[&str], store: Option<Store>, fault: Fault) {
    let (workers, min_faults, deadline) = (3, 10, Duration::from_secs(300));
    let file = &example(file);
    let kill = matches!(fault, Fault::Kill);
    let mut worker_args = vec!["--lease", "1", "--idle", "60"];
    if let Fault::Inject(faults) = fault {
        worker_args.extend(["--inject-faults", faults]);
    }
    let redis = redis_db(db);
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let store = store.unwrap_or_else(|| dir_store(&tmp));
    let emb = embedded_in(tmp.path(), file, args);
    // Random kills hit the tasks of the run's sequential tail again and
    // again; the limit on expiries is tested on its own below.
    let mut submit_args = args.to_vec();
    submit_args.extend(["--max-expiries", "1000"]);
    let run = submit(&redis, &store, file, &submit_args);
    let mut pool = Workers::start(&redis, &store, &worker_args, workers);
    let mut rng = Rng::new();
    let started = Instant::now();
    let mut faults = 0usize;
    let final_state = loop {
        let s = status(&redis, &run);
        let state = s["state"].as_str().unwrap_or("").to_string();
        if state != "running" {
            break s;
        }
        assert!(
            started.elapsed() < deadline,
            "run {run} not done after {deadline:?} ({faults} faults so far): {s}"
        );
        std::thread::sleep(Duration::from_millis(60 + rng.below(150)));
        if kill {
            pool.kill_and_replace(&mut rng);
            faults += 1;
        }
        for code in pool.replace_exited() {
            assert!(
                matches!(code, Some(86) | Some(87)),
                "a worker exited with {code:?}, not by an injected crash"
            );
            faults += 1;
        }
    };
    drop(pool);
    assert_eq!(final_state["state"], "done", "{final_state}");
    assert_eq!(final_state["tasks_done"], final_state["tasks_total"]);
    eprintln!(
        "{} done in {:.1} s with {faults} faults",
        file.display(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        faults >= min_faults,
        "only {faults} faults struck; the run was too short to prove anything"
    );
    collect_same(&redis, &store, &run, &emb, &tmp.path().join("distributed"));
    check_trace(&redis, &run, &final_state, tmp.path(), kill);
    if let Store::Dir(dir) = &store {
        assert_only_outputs_left(&dir.join(&run), &emb, &["A", "B"]);
    }
}

fn walk_files(p: &Path) -> Vec<PathBuf> {
    if p.is_file() {
        return vec![p.to_path_buf()];
    }
    std::fs::read_dir(p)
        .map(|d| {
            d.filter_map(Result::ok)
                .flat_map(|e| walk_files(&e.path()))
                .collect()
        })
        .unwrap_or_default()
}

/// After a run (without --keep-intermediates) its store holds only the
/// input and output tiles, the done markers, the manifest and the
/// artifact: every dead intermediate tile was deleted, even with workers
/// killed.
fn assert_only_outputs_left(run_dir: &Path, embedded: &Path, inputs: &[&str]) {
    let outputs: Vec<String> = std::fs::read_dir(embedded)
        .expect("embedded outputs")
        .filter_map(|e| {
            let p = e.ok()?.path();
            (p.extension()? == "npy")
                .then(|| p.file_stem().map(|s| s.to_string_lossy().into_owned()))?
        })
        .collect();
    let mut left = Vec::new();
    for e in std::fs::read_dir(run_dir).expect("the run's store") {
        let name = e
            .expect("an entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if !outputs.contains(&name)
            && !inputs.contains(&name.as_str())
            && !["done", "manifest.json", "program.lpka"].contains(&name.as_str())
        {
            // Deleting a tile may leave its matrix's directory, empty.
            // A worker killed in the middle of a put leaves the local
            // store's staging file `NAME#N` (never read as a tile).
            let files: Vec<PathBuf> = walk_files(&run_dir.join(&name))
                .into_iter()
                .filter(|f| !f.to_string_lossy().contains('#'))
                .collect();
            if !files.is_empty() {
                left.push(format!(
                    "{name}: {} files, e.g. {}",
                    files.len(),
                    files[0].display()
                ));
            }
        }
    }
    assert!(
        left.is_empty(),
        "dead tiles left in {}: {left:?}",
        run_dir.display()
    );
}

/// `lpkc trace`: one complete event per execution, every task at least
/// once, retries marked (with `retried`: at least one), and an SVG.
fn check_trace(redis: &str, run: &str, status: &Value, dir: &Path, retried: bool) {
    let json = dir.join("trace.json");
    let svg = dir.join("trace.svg");
    let out = lpkc()
        .args(["trace", run, "--redis", redis, "-o"])
        .arg(&json)
        .arg("--svg")
        .arg(&svg)
        .output()
        .expect("run lpkc trace");
    ok(&out, "lpkc trace");
    let (events, tasks) = trace_executions(&json);
    let total = status["tasks_total"].as_u64().expect("tasks_total") as usize;
    assert_eq!(tasks, total, "every task appears in the trace");
    assert!(events.len() >= total);
    assert!(events
        .iter()
        .all(|e| e["dur"].as_u64().is_some_and(|d| d >= 1)
            && e["tid"].as_u64().is_some_and(|t| t >= 1)));
    if retried {
        assert!(
            events.iter().any(|e| e["args"]["retry"] == true),
            "no retried execution in the trace"
        );
    }
    let text = std::fs::read_to_string(&svg).expect("trace.svg");
    assert!(
        text.starts_with("<svg") && text.contains("live workers") && text.contains("ready tasks")
    );
    assert_svg_renders(&svg);
}

/// The complete events (`"ph": "X"`, one per execution) of a trace file,
/// and how many tasks they name.
pub(crate) fn trace_executions(json: &Path) -> (Vec<Value>, usize) {
    let text = std::fs::read_to_string(json).expect("the trace file");
    let v: Value = serde_json::from_str(&text).expect("JSON");
    let events: Vec<Value> = v["traceEvents"]
        .as_array()
        .expect("traceEvents")
        .iter()
        .filter(|e| e["ph"] == "X")
        .cloned()
        .collect();
    let names: std::collections::HashSet<&str> =
        events.iter().filter_map(|e| e["name"].as_str()).collect();
    let tasks = names.len();
    (events, tasks)
}

/// Renders an SVG with librsvg (`rsvg-convert`, which scripts/test
/// installs) into a PNG: a broken SVG fails to render.
pub(crate) fn assert_svg_renders(svg: &Path) {
    let png = svg.with_extension("png");
    let out = Command::new("rsvg-convert")
        .arg(svg)
        .arg("-o")
        .arg(&png)
        .output()
        .expect("rsvg-convert (scripts/test installs librsvg2-bin)");
    ok(&out, "rsvg-convert");
    let bytes = std::fs::read(&png).expect("the rendered PNG");
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 1000,
        "{} rendered to {} bytes",
        svg.display(),
        bytes.len()
    );
}

fn dir_store(tmp: &tempfile::TempDir) -> Store {
    Store::Dir(tmp.path().join("store"))
}

/// A test's Redis database `db`, a temporary directory, and a store in it.
fn redis_and_dir_store(db: u32) -> (String, tempfile::TempDir, Store) {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let store = dir_store(&tmp);
    (redis_db(db), tmp, store)
}

/// A failed run's error message, asserting that its status says failed.
fn failure(s: &Value) -> &str {
    assert_eq!(s["state"], "failed", "{s}");
    s["error"]["message"].as_str().unwrap_or_default()
}

/// The test Redis at `url`, to change behind the workers' backs.
fn open_redis(url: &str) -> lpk_cluster::conn::Redis {
    lpk_cluster::conn::Redis::open(url).expect("the test Redis")
}

/// Runs the Redis command `name` with `args` (one, or a tuple of them)
/// on `r`; returns its reply.
fn redis_do<T: lpk_cluster::redis::FromRedisValue>(
    r: &mut lpk_cluster::conn::Redis,
    name: &str,
    args: impl lpk_cluster::redis::ToRedisArgs,
) -> T {
    r.query(lpk_cluster::redis::cmd(name).arg(args), name)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn cholesky_survives_sigkill_of_workers() {
    run_under_faults(1, "cholesky.lpk", &CHOLESKY_4096, None, Fault::Kill);
}

#[test]
fn cholesky_survives_injected_crashes_and_stalls() {
    let faults = Fault::Inject("crash-after-write=0.02,crash-before-write=0.02,stall=0.01");
    run_under_faults(2, "cholesky.lpk", &CHOLESKY_4096, None, faults);
}

#[test]
fn gemm_tree_survives_sigkill_of_workers() {
    run_under_faults(3, "gemm_tree.lpk", &GEMM_TREE_3072, None, Fault::Kill);
}

#[test]
fn s3_store_survives_sigkill_of_workers() {
    let store = Some(Store::s3("kill"));
    run_under_faults(4, "cholesky.lpk", &CHOLESKY_4096, store, Fault::Kill);
}

/// Waits until `run` has done `tasks` tasks, within `deadline_secs`, while it
/// runs (it must not finish first, `before` doing what); returns its
/// status.
fn wait_progress(redis: &str, run: &str, tasks: u64, deadline_secs: u64, before: &str) -> Value {
    let (started, deadline) = (Instant::now(), Duration::from_secs(deadline_secs));
    loop {
        let s = status(redis, run);
        assert_eq!(s["state"], "running", "finished before {before}: {s}");
        if s["tasks_done"].as_u64().unwrap_or(0) >= tasks {
            return s;
        }
        assert!(started.elapsed() < deadline, "{s}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `lpkc provision --autoscale POLICY --spawn COMMAND`.
fn provision(redis: &str, policy: &str, command: &str) -> Output {
    lpkc()
        .args(["provision", "--redis", redis, "--autoscale", policy])
        .args(["--spawn", command])
        .output()
        .expect("run lpkc provision")
}

/// `lpkc resume` of `run` from `store`.
fn resume(redis: &str, store: &Store, run: &str) -> Output {
    lpkc()
        .args(["resume", run, "--redis", redis, "--store", &store.url()])
        .envs(store.env())
        .output()
        .expect("lpkc resume")
}

/// `lpkc status` of a run Redis does not hold: exit 1; returns stderr.
fn status_fails(redis: &str, run: &str) -> String {
    let out = lpkc()
        .args(["status", run, "--redis", redis])
        .output()
        .expect("lpkc status");
    fails(&out, 1)
}

/// Waits until a run leaves `running`; returns its final status.
fn wait_finished(redis: &str, run: &str, deadline: Duration, pool: &mut Workers) -> Value {
    let started = Instant::now();
    loop {
        let s = status(redis, run);
        if s["state"] != "running" {
            return s;
        }
        if started.elapsed() >= deadline {
            let blocked = lpkc()
                .args(["status", run, "--redis", redis, "--blocked", "--lease", "1"])
                .output()
                .expect("lpkc status --blocked");
            panic!(
                "run {run} still running after {deadline:?}:\n{}",
                String::from_utf8_lossy(&blocked.stdout)
            );
        }
        pool.replace_exited();
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_kernel_error_fails_the_run_naming_the_task_and_submit_wait_exits_1() {
    let (redis, tmp, store) = redis_and_dir_store(5);
    let _pool = Workers::start(&redis, &store, &["--lease", "2", "--idle", "30"], 2);
    let args = ["--block", "32", "--input", "A=random:128x128", "--wait"];
    let (stdout, stderr) = submit_fails(&redis, &store, &example("cholesky.lpk"), &args);
    assert!(
        stderr.contains("chol@") && stderr.contains("not positive definite"),
        "{stderr}"
    );
    let run = stdout.trim().to_string();
    let s = status(&redis, &run);
    assert!(failure(&s).contains("not positive definite"), "{s}");
    assert_eq!(s["error"]["task"]["kernel"], "chol", "{s}");
    // Collecting a failed run is refused, saying why.
    let out = try_collect(&redis, &store, &run, &tmp.path().join("out"));
    assert!(fails(&out, 1).contains("failed"));
}

#[test]
fn a_task_that_kills_every_worker_fails_the_run_after_k_tries() {
    let (redis, _tmp, store) = redis_and_dir_store(6);
    let run = submit(
        &redis,
        &store,
        &example("cholesky.lpk"),
        &[
            "--block",
            "32",
            "--input",
            "A=spd:64",
            "--max-expiries",
            "2",
        ],
    );
    let mut pool = Workers::start(
        &redis,
        &store,
        &[
            "--lease",
            "0.3",
            "--idle",
            "30",
            "--inject-faults",
            "crash-before-write=1",
        ],
        2,
    );
    let s = wait_finished(&redis, &run, Duration::from_secs(60), &mut pool);
    let msg = failure(&s);
    assert!(msg.contains("lease expired 2 times"), "{msg}");
    assert_eq!(s["error"]["task"]["kernel"], "chol", "{s}");
    assert_eq!(s["tasks_done"], 0);
}

#[test]
fn runs_share_one_redis_and_run_all_in_one_command() {
    let (redis, tmp, store) = redis_and_dir_store(7);
    // Two runs at once through the same workers.
    let chol = ["--block", "32", "--input", "A=spd:200"];
    let tsqr = ["--block", "16", "--input", "A=random:400x16"];
    // A zero matrix pads this tree: its unwritten tiles are made, never stored.
    let zero = [
        "--block",
        "16",
        "--input",
        "A=random:40x88",
        "--input",
        "B=random:88x24",
    ];
    let a = submit(&redis, &store, &example("cholesky.lpk"), &chol);
    let b = submit(&redis, &store, &example("tsqr.lpk"), &tsqr);
    let c = submit(&redis, &store, &example("gemm_tree_zero.lpk"), &zero);
    let mut pool = Workers::start(
        &redis,
        &store,
        &["--lease", "2", "--idle", "30", "--threads", "2"],
        2,
    );
    for (run, file, args) in [
        (&a, "cholesky.lpk", &chol[..]),
        (&b, "tsqr.lpk", &tsqr[..]),
        (&c, "gemm_tree_zero.lpk", &zero[..]),
    ] {
        let s = wait_finished(&redis, run, Duration::from_secs(120), &mut pool);
        assert_eq!(s["state"], "done", "{s}");
        let emb = tmp.path().join(format!("emb-{file}"));
        embedded(&example(file), args, &emb);
        let dist = tmp.path().join(format!("dist-{file}"));
        collect_same(&redis, &store, run, &emb, &dist);
    }
    drop(pool);
    // `run --redis` does all of it with its own workers.
    let dist = tmp.path().join("one-command");
    let out = run_on_redis(&example("cholesky.lpk"), &chol, &redis, &store)
        .args(["--workers", "2", "--no-progress"])
        .arg("--output-dir")
        .arg(&dist)
        .output()
        .expect("run lpkc run --redis");
    ok(&out, "lpkc run --redis");
    assert_same_outputs(&tmp.path().join("emb-cholesky.lpk"), &dist);
}

#[test]
fn bad_urls_stores_and_runs_are_clear_errors() {
    let redis = redis_db(8);
    let cholesky = example("cholesky.lpk").display().to_string();
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            vec!["status", "nosuchrun", "--redis", &redis],
            1,
            "no run `nosuchrun`",
        ),
        (
            vec!["status", "bad id!", "--redis", &redis],
            2,
            "is not a run id",
        ),
        (
            vec!["status", "r", "--redis", "http://x"],
            2,
            "not a Redis URL",
        ),
        (
            vec!["status", "r", "--redis", "redis://127.0.0.1:1"],
            1,
            "Redis at redis://127.0.0.1:1",
        ),
        (
            vec![
                "submit", &cholesky, "--block", "8", "--input", "A=spd:16", "--redis", &redis,
                "--store", "mem",
            ],
            2,
            "need a store they all reach",
        ),
        (
            vec!["worker", "--redis", &redis, "--inject-faults", "boom=1"],
            2,
            "not a fault",
        ),
    ];
    for (args, code, text) in cases {
        let out = lpkc().args(&args).output().expect("run lpkc");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.contains(text), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// A Redis of this test's own that the test can kill and start again:
/// with an append-only file synced after every write (`persist`), or
/// without any persistence, so that it restarts empty.
struct OwnRedis {
    port: u16,
    dir: PathBuf,
    persist: bool,
    child: Option<Child>,
}

impl OwnRedis {
    fn start(dir: &Path) -> OwnRedis {
        OwnRedis::start_with(dir, true)
    }
    fn start_with(dir: &Path, persist: bool) -> OwnRedis {
        let port = services::free_port().expect("a free port");
        let mut r = OwnRedis {
            port,
            dir: dir.to_path_buf(),
            persist,
            child: None,
        };
        r.restart();
        r
    }
    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
    fn restart(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                if self.persist { "yes" } else { "no" },
                "--appendfsync",
                "always",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server (scripts/test installs it)");
        self.child = Some(child);
        let started = Instant::now();
        while services::redis_ping(services::socket_addr(&self.url())).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().expect("SIGKILL redis-server");
            let _ = c.wait();
        }
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.kill();
    }
}

#[test]
fn workers_reconnect_after_redis_is_killed_and_restarted() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let mut redis = OwnRedis::start(tmp.path());
    let url = redis.url();
    let store = dir_store(&tmp);
    let emb = embedded_in(tmp.path(), &example("cholesky.lpk"), &CHOLESKY_4096);
    let run = submit(&url, &store, &example("cholesky.lpk"), &CHOLESKY_4096);
    let mut pool = Workers::start(
        &url,
        &store,
        &["--lease", "2", "--idle", "60", "--threads", "2"],
        2,
    );
    // Let the run get going, then take Redis away twice while it runs.
    let mut restarts = 0;
    let started = Instant::now();
    while restarts < 2 {
        std::thread::sleep(Duration::from_millis(700));
        let s = status(&url, &run);
        assert_eq!(
            s["state"], "running",
            "finished before Redis could be restarted twice: {s}"
        );
        redis.kill();
        std::thread::sleep(Duration::from_millis(1500));
        redis.restart();
        restarts += 1;
        assert!(started.elapsed() < Duration::from_secs(120));
    }
    let s = wait_finished(&url, &run, Duration::from_secs(180), &mut pool);
    assert_eq!(s["state"], "done", "{s}");
    collect_same(&url, &store, &run, &emb, &tmp.path().join("distributed"));
    // Every worker is still there: none gave up while Redis was away.
    pool.assert_all_running();
}

/// Runs `file` with two workers on a Redis without persistence, and twice
/// while it runs: SIGKILLs Redis, starts it again empty (the run is gone),
/// and resumes the run from the store with `lpkc resume`; the same
/// workers reconnect and finish it, bit-identical to the embedded run,
/// leaving only inputs and outputs in the store.
fn resume_after_redis_restarts_empty(file: &str, args: &[&str], inputs: &[&str]) {
    let file = &example(file);
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let mut redis = OwnRedis::start_with(tmp.path(), false);
    let url = redis.url();
    let store = dir_store(&tmp);
    let emb = embedded_in(tmp.path(), file, args);
    let run = submit(&url, &store, file, args);
    let mut pool = Workers::start(
        &url,
        &store,
        &["--lease", "2", "--idle", "120", "--threads", "2"],
        2,
    );
    let total = status(&url, &run)["tasks_total"]
        .as_u64()
        .expect("tasks_total");
    let mut done_before = 0;
    for round in 1..=2u64 {
        // Let a third of the run (more) pass, then lose Redis.
        wait_progress(&url, &run, round * total / 3, 240, "Redis is lost twice");
        redis.kill();
        std::thread::sleep(Duration::from_millis(300));
        redis.restart();
        status_fails(&url, &run);
        ok(&resume(&url, &store, &run), "lpkc resume");
        let s = status(&url, &run);
        let done = s["tasks_done"].as_u64().expect("tasks_done");
        assert!(
            done >= done_before && done >= round * total / 3,
            "resume {round} found {done} tasks done, fewer than were done: {s}"
        );
        done_before = done;
    }
    let s = wait_finished(&url, &run, Duration::from_secs(240), &mut pool);
    assert_eq!(s["state"], "done", "{s}");
    assert_eq!(s["tasks_done"], s["tasks_total"]);
    collect_same(&url, &store, &run, &emb, &tmp.path().join("distributed"));
    assert_only_outputs_left(&tmp.path().join("store").join(&run), &emb, inputs);
    // A directory store's done markers are the workers' logs, one per
    // worker process, not an object per task.
    let markers: Vec<String> = std::fs::read_dir(tmp.path().join("store").join(&run).join("done"))
        .expect("the done markers")
        .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
        .collect();
    assert!(
        !markers.is_empty() && markers.len() <= 2 && markers.iter().all(|m| m.ends_with(".log")),
        "{markers:?}"
    );
    pool.assert_all_running();
}

#[test]
fn cholesky_resumes_twice_after_redis_restarts_empty() {
    resume_after_redis_restarts_empty("cholesky.lpk", &CHOLESKY_4096, &["A"]);
}

#[test]
fn gemm_tree_resumes_twice_after_redis_restarts_empty() {
    resume_after_redis_restarts_empty("gemm_tree.lpk", &GEMM_TREE_3072, &["A", "B"]);
}

#[test]
fn status_blocked_says_what_a_stalled_run_waits_for() {
    let (redis, _tmp, store) = redis_and_dir_store(9);
    let args = ["--block", "128", "--input", "A=spd:2048"];
    let run = submit(&redis, &store, &example("cholesky.lpk"), &args);
    // One worker makes some progress, then dies: the run stalls.
    let pool = Workers::start(&redis, &store, &["--lease", "30", "--idle", "60"], 1);
    wait_progress(&redis, &run, 40, 60, "it could be stopped");
    drop(pool);
    let blocked = [
        "status",
        &run,
        "--redis",
        &redis,
        "--blocked",
        "--lease",
        "0.001",
    ];
    let out = lpkc()
        .args(blocked)
        .args(["--format", "json"])
        .output()
        .expect("run lpkc status");
    let s: Value = serde_json::from_str(&ok(&out, "lpkc status --blocked")).expect("JSON");
    assert_eq!(s["state"], "running");
    let stuck = s["unclaimed_tasks"].as_array().map_or(0, Vec::len)
        + s["expired_leases"].as_array().map_or(0, Vec::len);
    assert!(stuck > 0, "nothing ready or expired listed: {s}");
    let waiting = s["waiting"].as_array().expect("waiting tasks");
    assert!(!waiting.is_empty(), "{s}");
    for w in waiting {
        let need = w["in_degree"].as_u64().expect("in_degree");
        let have = w["counted"].as_u64().expect("counted");
        let missing = w["waits_for"].as_array().expect("waits_for");
        assert!(have < need, "{w}");
        assert_eq!(have + missing.len() as u64, need, "{w}");
        for p in missing {
            assert!(
                p["task"]["kernel"].is_string()
                    && p["tile"].as_str().is_some_and(|t| t.starts_with("L[")),
                "{p}"
            );
        }
    }
    let text = lpkc().args(blocked).output().expect("run lpkc status");
    let text = ok(&text, "lpkc status --blocked");
    assert!(
        text.contains("waits for") && text.contains("running"),
        "{text}"
    );
}

#[test]
fn a_run_lost_by_redis_resumes_from_its_done_markers() {
    // On S3, where a done marker is an object per task (a directory
    // store's logs are resumed from in `resume_after_redis_restarts_empty`).
    let redis = redis_db(10);
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let store = Store::s3("resume");
    let args = ["--block", "128", "--input", "A=spd:2048"];
    let emb = embedded_in(tmp.path(), &example("cholesky.lpk"), &args);
    let run = submit(&redis, &store, &example("cholesky.lpk"), &args);
    let mut pool = Workers::start(&redis, &store, &["--lease", "2", "--idle", "60"], 2);
    wait_progress(&redis, &run, 150, 60, "Redis could lose it");
    // Redis loses everything while workers run (they keep running).
    let mut r = open_redis(&redis);
    r.query::<()>(&lpk_cluster::redis::cmd("FLUSHDB"), "FLUSHDB")
        .expect("FLUSHDB");
    assert!(status_fails(&redis, &run).contains("no run"));
    // Resume from the store; the same workers pick the run up again.
    let said = ok(&resume(&redis, &store, &run), "lpkc resume");
    assert!(said.contains("tasks done"), "{said}");
    let s = status(&redis, &run);
    let done_after_resume = s["tasks_done"].as_u64().unwrap_or(0);
    assert!(
        done_after_resume >= 150,
        "resume found fewer done tasks than were done: {s}"
    );
    // Resuming a run Redis holds is refused.
    assert!(fails(&resume(&redis, &store, &run), 1).contains("still in Redis"));
    let s = wait_finished(&redis, &run, Duration::from_secs(120), &mut pool);
    assert_eq!(s["state"], "done", "{s}");
    collect_same(&redis, &store, &run, &emb, &tmp.path().join("distributed"));
}

#[test]
fn autoscale_starts_workers_for_the_ready_tasks_and_reports_worker_seconds() {
    let (redis, tmp, store) = redis_and_dir_store(11);
    let args = ["--block", "128", "--input", "A=spd:1536"];
    let emb = embedded_in(tmp.path(), &example("cholesky.lpk"), &args);
    let dist = tmp.path().join("distributed");
    let out = run_on_redis(&example("cholesky.lpk"), &args, &redis, &store)
        .args(["--autoscale", "sf=0.25,max=3,idle=0.5"])
        .args(["--no-progress", "--format", "json", "--output-dir"])
        .arg(&dist)
        .output()
        .expect("lpkc run --autoscale");
    let v: Value = serde_json::from_str(&ok(&out, "lpkc run --autoscale")).expect("JSON");
    assert_same_outputs(&emb, &dist);
    let peak = v["peak_workers"].as_u64().expect("peak_workers");
    assert!((1..=3).contains(&peak), "{v}");
    let ws = v["worker_seconds"].as_f64().expect("worker_seconds");
    let wall = v["wall_seconds"].as_f64().expect("wall_seconds");
    assert!(ws > 0.0 && ws <= 3.0 * wall + 3.0, "{v}");
    // Bad policies are usage errors.
    for bad in [
        "sf=0.5,max=0,idle=1",
        "sf=-1,max=2,idle=1",
        "max=2,idle=1",
        "sf=1,max=2,idle=1,x=3",
    ] {
        let out = run_on_redis(&example("cholesky.lpk"), &args, &redis, &store)
            .args(["--autoscale", bad])
            .output()
            .expect("lpkc run");
        assert_eq!(out.status.code(), Some(2), "{bad}");
    }
}

#[test]
fn provision_starts_workers_with_the_given_command_until_the_runs_are_done() {
    let (redis, tmp, store) = redis_and_dir_store(12);
    let args = ["--block", "128", "--input", "A=spd:1024"];
    let emb = embedded_in(tmp.path(), &example("cholesky.lpk"), &args);
    let run = submit(&redis, &store, &example("cholesky.lpk"), &args);
    let lpkc_path = env!("CARGO_BIN_EXE_lpkc");
    let spawn = format!("exec {lpkc_path} worker --redis {redis} --idle 0.5 --quiet");
    let started = Instant::now();
    let out = provision(&redis, "sf=0.5,max=2,idle=0.5", &spawn);
    let said = ok(&out, "lpkc provision");
    assert!(started.elapsed() < Duration::from_secs(120));
    assert!(said.contains("worker-seconds"), "{said}");
    let s = status(&redis, &run);
    assert_eq!(s["state"], "done", "{s}");
    collect_same(&redis, &store, &run, &emb, &tmp.path().join("distributed"));
}

/// `lpkc run --redis --output-dir` fetches the output tiles while the run
/// goes on; here two more workers (outside it, on the same Redis) take
/// part and are killed with SIGKILL and replaced while it runs, so tiles
/// are written, written again by a task run a second time, and read by
/// the collector as their writers complete. Its `.npy` must be
/// byte-identical to the embedded run's and to `lpkc collect`'s.
fn run_collecting_under_kills(db: u32, file: &str, args: &[&str]) {
    let (redis, tmp, store) = redis_and_dir_store(db);
    let file = &example(file);
    let emb = embedded_in(tmp.path(), file, args);
    let mut pool = Workers::start(&redis, &store, &["--lease", "1", "--idle", "60"], 2);
    let dist = tmp.path().join("distributed");
    let run_cmd = run_on_redis(file, args, &redis, &store)
        .args(["--workers", "1", "--lease", "1"])
        .args(["--no-progress", "--format", "json", "--output-dir"])
        .arg(&dist)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lpkc run --redis");
    let mut rng = Rng::new();
    let started = Instant::now();
    let mut kills = 0;
    let mut child = run_cmd;
    // At most six kills, so that no task's lease expires past the run's
    // limit (`lpkc run` submits with --max-expiries 3).
    while child.try_wait().expect("poll lpkc run").is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "lpkc run --redis not done after 300 s"
        );
        std::thread::sleep(Duration::from_millis(60 + rng.below(150)));
        if kills < 6 && child.try_wait().expect("poll lpkc run").is_none() {
            pool.kill_and_replace(&mut rng);
            kills += 1;
        }
    }
    let out = child.wait_with_output().expect("lpkc run's output");
    drop(pool);
    let v: Value = serde_json::from_str(&ok(&out, "lpkc run --redis")).expect("JSON");
    eprintln!(
        "{} done in {:.1} s with {kills} kills",
        file.display(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        kills >= 2,
        "only {kills} kills struck: the run was too short"
    );
    assert_same_outputs(&emb, &dist);
    let run = v["run"].as_str().expect("a run id");
    collect_same(&redis, &store, run, &emb, &tmp.path().join("collected"));
}

#[test]
fn cholesky_run_collects_during_the_run_while_workers_are_killed() {
    run_collecting_under_kills(13, "cholesky.lpk", &CHOLESKY_4096);
}

#[test]
fn gemm_tree_run_collects_during_the_run_while_workers_are_killed() {
    run_collecting_under_kills(14, "gemm_tree.lpk", &GEMM_TREE_3072);
}

/// Sets run `run`'s `uploading` key for `ms` milliseconds, as `submit`
/// does while it uploads the inputs, or (`None`) without a time to live,
/// as no submitter does.
fn set_uploading(r: &mut lpk_cluster::conn::Redis, run: &str, ms: Option<u64>) {
    let key = lpk_cluster::protocol::Keys::new(run).uploading();
    match ms {
        Some(ms) => redis_do::<()>(r, "SET", (key, 1, "PX", ms)),
        None => redis_do::<()>(r, "SET", (key, 1)),
    }
}

#[test]
fn workers_wait_for_an_input_tile_still_uploading_and_fail_the_run_when_the_upload_ended_without_it(
) {
    // `submit` seeds the roots first and uploads the inputs meanwhile,
    // keeping the run's `uploading` key alive; a worker that misses an input
    // tile waits while the key lives. Here the upload is replayed by hand:
    // the key set again and one tile of A held back.
    let (redis, tmp, store) = redis_and_dir_store(13);
    let Store::Dir(root) = &store else {
        unreachable!("a directory store")
    };
    let args = ["--block", "64", "--input", "A=spd:256"];
    let emb = embedded_in(tmp.path(), &example("cholesky.lpk"), &args);
    let mut r = open_redis(&redis);

    let run = submit(&redis, &store, &example("cholesky.lpk"), &args);
    let tile = root.join(&run).join("A/3_2.npy");
    let aside = tmp.path().join("aside.npy");
    std::fs::rename(&tile, &aside).expect("hold the tile back");
    set_uploading(&mut r, &run, Some(60_000));
    let mut pool = Workers::start(&redis, &store, &["--lease", "2", "--idle", "60"], 2);
    // The tasks that need A[3, 2] (and those after them) wait for it.
    std::thread::sleep(Duration::from_millis(1500));
    let s = status(&redis, &run);
    assert_eq!(s["state"], "running", "{s}");
    assert!(
        s["tasks_done"].as_u64() < s["tasks_total"].as_u64(),
        "the run finished without its input tile: {s}"
    );
    std::fs::rename(&aside, &tile).expect("the tile arrives");
    let key = lpk_cluster::protocol::Keys::new(&run).uploading();
    redis_do::<()>(&mut r, "DEL", &key);
    let s = wait_finished(&redis, &run, Duration::from_secs(120), &mut pool);
    assert_eq!(s["state"], "done", "{s}");
    collect_same(&redis, &store, &run, &emb, &tmp.path().join("distributed"));

    // The upload ended (no key) without the tile, or its submitter died
    // (the key ran out without renewal): the run fails naming the tile.
    // A key without a time to live was not set by a submitter (one always
    // sets one, and renews it): the workers do not wait for it forever.
    for (key, ended) in [(None, true), (Some(Some(400)), true), (Some(None), false)] {
        let run = submit(&redis, &store, &example("cholesky.lpk"), &args);
        std::fs::remove_file(root.join(&run).join("A/3_2.npy")).expect("lose the tile");
        if let Some(ms) = key {
            set_uploading(&mut r, &run, ms);
        }
        let s = wait_finished(&redis, &run, Duration::from_secs(120), &mut pool);
        let message = failure(&s);
        assert!(
            message.contains("input tile A[3, 2] is not in the store")
                && (!ended || message.contains("the upload of the run's inputs ended without it")),
            "{s}"
        );
    }
}

#[test]
fn a_submit_killed_while_it_uploads_fails_its_run_naming_a_missing_input_tile() {
    // A real `lpkc submit` SIGKILLed in the middle of its upload (to S3,
    // where 2,080 tiles take seconds): its `uploading` key stops being
    // renewed and runs out; the workers, which ran what they could and
    // waited for the rest, then fail the run naming an input tile that
    // never arrived. Nothing is reported done.
    let redis = redis_db(15);
    let store = Store::s3("killedsubmit");
    let mut r = open_redis(&redis);
    // The database is this test's own: no key of an earlier run is taken
    // for this one's.
    r.query::<()>(&lpk_cluster::redis::cmd("FLUSHDB"), "FLUSHDB")
        .expect("FLUSHDB");
    let args = ["--block", "64", "--input", "A=spd:4096"];
    let mut submitter = submit_cmd(&redis, &store, &example("cholesky.lpk"), &args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start lpkc submit");
    // The run is recorded and its upload under way once its key is set.
    let started = Instant::now();
    let key = loop {
        let keys: Vec<String> = redis_do(&mut r, "KEYS", "lpk:*:uploading");
        if let Some(k) = keys.into_iter().next() {
            break k;
        }
        assert!(
            matches!(submitter.try_wait(), Ok(None)),
            "submit ended before its upload began"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no upload began"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let run = key
        .strip_prefix("lpk:")
        .and_then(|k| k.strip_suffix(":uploading"))
        .expect("the run's id in its key")
        .to_string();
    std::thread::sleep(Duration::from_millis(300));
    submitter.kill().expect("SIGKILL submit");
    let exit = submitter.wait().expect("submit's exit");
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            exit.signal(),
            Some(9),
            "submit finished its upload before it could be killed: {exit:?}"
        );
    }
    let mut pool = Workers::start(&redis, &store, &["--lease", "5", "--idle", "90"], 2);
    let s = wait_finished(&redis, &run, Duration::from_secs(120), &mut pool);
    let message = failure(&s);
    assert!(s["tasks_done"].as_u64() < s["tasks_total"].as_u64(), "{s}");
    assert!(
        message.contains("input tile A[")
            && message.contains("is not in the store")
            && message.contains("the upload of the run's inputs ended without it"),
        "{s}"
    );
    // The key ran out on its own (no one deleted it): it is gone.
    assert_eq!(redis_do::<i64>(&mut r, "EXISTS", &key), 0);
}

/// `lpkc collect` of a run whose output tiles or Redis record someone
/// changed: exit 1 naming the tile (or the tampering), and no `_SUCCESS`;
/// never an output assembled with zeros where a task wrote a tile.
#[test]
fn collect_refuses_a_missing_output_tile_or_a_tampered_record() {
    let (redis, tmp, store) = redis_and_dir_store(18);
    let run = submit(&redis, &store, &example("cholesky.lpk"), &CHOLESKY_128);
    let mut pool = Workers::start(&redis, &store, &["--idle", "30", "--threads", "2"], 1);
    let s = wait_finished(&redis, &run, Duration::from_secs(120), &mut pool);
    assert_eq!(s["state"], "done", "{s}");
    drop(pool);
    let good = tmp.path().join("good");
    collect(&redis, &store, &run, &good);
    assert!(good.join("_SUCCESS").exists());

    // Each refusal: exit 1 and no `_SUCCESS`; returns what collect says.
    let refused = |name: &str| -> String {
        let dir = tmp.path().join(name);
        let stderr = fails(&try_collect(&redis, &store, &run, &dir), 1);
        assert!(!dir.join("_SUCCESS").exists());
        stderr
    };
    let mut r = open_redis(&redis);
    let keys = lpk_cluster::protocol::Keys::new(&run);

    // A late copy of a task killed between writing its tile and its
    // completion leaves a dead tile behind: collect deletes a temporary's
    // tile that is in the `gone` set, and nothing else.
    let s_dir = tmp.path().join("store").join(&run).join("S");
    std::fs::create_dir_all(&s_dir).expect("the directory of S");
    let any_tile = std::fs::read(
        tmp.path()
            .join("store")
            .join(&run)
            .join("L")
            .join("0_0.npy"),
    )
    .expect("a tile of L");
    let s_tile = |index: &[i64]| {
        let s = lpk_model::MatrixId::from_index(2).expect("a small index");
        lpk_cluster::ids::tile_id(s, index)
    };
    assert!(redis_do::<bool>(
        &mut r,
        "SISMEMBER",
        (keys.gone(), s_tile(&[1, 1, 1]))
    ));
    std::fs::write(s_dir.join("1_1_1.npy"), &any_tile).expect("a dead tile written again");
    redis_do::<()>(&mut r, "SREM", (keys.gone(), s_tile(&[1, 2, 1])));
    std::fs::write(s_dir.join("1_2_1.npy"), &any_tile).expect("a tile that never died");
    collect(&redis, &store, &run, &tmp.path().join("leftover"));
    assert!(
        !s_dir.join("1_1_1.npy").exists(),
        "a dead tile written again was kept"
    );
    assert!(
        s_dir.join("1_2_1.npy").exists(),
        "a tile not in `gone` was deleted"
    );
    std::fs::remove_file(s_dir.join("1_2_1.npy")).expect("remove the planted tile");

    // Redis's counters lowered: the plans count the tasks.
    let total: u64 = s["tasks_total"].as_u64().expect("tasks_total");
    redis_do::<()>(&mut r, "HSET", (keys.meta(), "done", 3, "total", 3));
    let stderr = refused("counters");
    assert!(
        stderr.contains(&format!("the program has {total} tasks")),
        "{stderr}"
    );
    redis_do::<()>(&mut r, "HSET", (keys.meta(), "done", total, "total", total));

    // An output tile in the dead set: collect deletes dead tiles, but
    // never an output's.
    let l_tile = lpk_cluster::ids::tile_id(
        lpk_model::MatrixId::from_index(1).expect("a small index"),
        &[2, 1],
    );
    redis_do::<()>(&mut r, "SADD", (keys.dead(), &l_tile));
    let stderr = refused("dead");
    assert!(stderr.contains("its dead set names L[2, 1]"), "{stderr}");
    let tile_file = tmp
        .path()
        .join("store")
        .join(&run)
        .join("L")
        .join("2_1.npy");
    assert!(tile_file.exists(), "the output tile was deleted");
    redis_do::<()>(&mut r, "SREM", (keys.dead(), &l_tile));

    // A tile of L changed in the store (one value), or its digest
    // removed from Redis: refused, naming the tile.
    let original = std::fs::read(&tile_file).expect("read a tile of L");
    let mut changed = original.clone();
    let last = changed.len() - 1;
    changed[last] ^= 0x01;
    std::fs::write(&tile_file, &changed).expect("change a tile of L");
    let stderr = refused("changed");
    assert!(
        stderr.contains("output tile L[2, 1] in the store")
            && stderr.contains("is not the tile its writer stored"),
        "{stderr}"
    );
    std::fs::write(&tile_file, &original).expect("restore the tile");
    let sum: String = redis_do(&mut r, "HGET", (keys.sums(), &l_tile));
    redis_do::<()>(&mut r, "HDEL", (keys.sums(), &l_tile));
    let stderr = refused("no-digest");
    assert!(
        stderr.contains("L[2, 1]") && stderr.contains("has no digest in Redis"),
        "{stderr}"
    );
    redis_do::<()>(&mut r, "HSET", (keys.sums(), &l_tile, &sum));
    collect(&redis, &store, &run, &tmp.path().join("again"));
    assert_eq!(
        std::fs::read(good.join("L.npy")).expect("the first L"),
        std::fs::read(tmp.path().join("again").join("L.npy")).expect("L again")
    );

    // A tile of L deleted from the store.
    std::fs::remove_file(&tile_file).expect("delete a tile of L");
    let stderr = refused("missing");
    assert!(
        stderr.contains("output tile L[2, 1] is not in the store"),
        "{stderr}"
    );
    assert!(stderr.contains("although trsm@"), "{stderr}");
}

/// A run whose ready queue someone deleted from Redis: a worker skips it,
/// saying so, instead of asking for it thousands of times a second.
#[test]
fn a_worker_skips_a_run_whose_queue_was_deleted_without_spinning() {
    let (redis, _tmp, store) = redis_and_dir_store(16);
    let run = submit(&redis, &store, &example("cholesky.lpk"), &CHOLESKY_128);
    let mut r = open_redis(&redis);
    redis_do::<()>(
        &mut r,
        "DEL",
        lpk_cluster::protocol::Keys::new(&run).queue(),
    );
    let started = Instant::now();
    let all = worker_until_idle(&redis, "3");
    assert!(started.elapsed() < Duration::from_secs(30), "{all}");
    assert!(
        all.contains(&format!("skipping run {run}: its ready queue is gone")),
        "{all}"
    );
    // "..., N Redis round trips": a few per 50 ms at most, not thousands.
    let trips: u64 = all
        .split(" Redis round trips")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no round-trip count in: {all}"));
    assert!(trips < 1000, "{trips} round trips in 3 s idle: {all}");
    redis_do::<()>(&mut r, "SREM", (lpk_cluster::protocol::RUNS, &run));
}

/// `lpkc provision` whose worker command fails at once stops after a few
/// tries, naming the command and its exit status, instead of starting it
/// again forever.
#[test]
fn provision_stops_when_its_workers_keep_failing() {
    let (redis, _tmp, store) = redis_and_dir_store(17);
    let run = submit(&redis, &store, &example("cholesky.lpk"), &CHOLESKY_128);
    let started = Instant::now();
    let out = provision(&redis, "sf=1,max=2,idle=5", "exit 3");
    let err = fails(&out, 1);
    assert!(started.elapsed() < Duration::from_secs(60), "{err}");
    assert!(
        err.contains("workers in a row exited with a failure"),
        "{err}"
    );
    assert!(err.contains("exit status: 3"), "{err}");
    assert!(err.contains("`exit 3`"), "{err}");
    // The run is still there for real workers.
    let mut pool = Workers::start(&redis, &store, &["--idle", "30"], 1);
    let s = wait_finished(&redis, &run, Duration::from_secs(120), &mut pool);
    assert_eq!(s["state"], "done", "{s}");
}

/// A run a worker could not complete: one tile read by two million tasks
/// (a triangular solve with 2,000,000 right-hand-side columns at block 1)
/// would make the worker that completes its writer allocate every edge at
/// once. `submit` refuses it before uploading anything, naming the task.
#[test]
fn submit_refuses_a_task_with_more_children_than_a_worker_completes() {
    let (redis, tmp, store) = redis_and_dir_store(19);
    let args = [
        "--block",
        "1",
        "--input",
        "L=spd:1",
        "--input",
        "B=random:1x2000000",
    ];
    let (_, err) = submit_fails(&redis, &store, &example("trsolve.lpk"), &args);
    assert!(
        err.contains("task trtri@") && err.contains("has more than 1048576 children"),
        "{err}"
    );
    assert!(!tmp.path().join("store").exists(), "nothing was uploaded");
}

/// Per-run limits: refused at submit from the plans' count and the input
/// tiles' bytes, enforced while running (a completion that brings the
/// store past the cap fails the run, naming the task), and a record whose
/// parameters were raised in Redis is refused by the workers.
#[test]
fn per_run_limits_are_refused_at_submit_and_enforced_while_running() {
    let (redis, tmp, store) = redis_and_dir_store(20);
    let file = example("cholesky.lpk");
    // CHOLESKY_128 has 20 tasks; the lower triangle of A, 10 tiles of
    // 8,192 bytes, is uploaded.
    let refused = |extra: &[&str]| -> String {
        submit_fails(&redis, &store, &file, &[&CHOLESKY_128[..], extra].concat()).1
    };
    let err = refused(&["--max-tasks", "19"]);
    assert!(
        err.contains("the run has 20 tasks, more than its --max-tasks 19"),
        "{err}"
    );
    let err = refused(&["--max-store-bytes", "79K"]);
    assert!(
        err.contains("input tiles alone take 81920 bytes in the store, more than its --max-store-bytes 80896"),
        "{err}"
    );
    assert!(!tmp.path().join("store").exists(), "nothing was uploaded");

    // Inputs fit, the first output tile does not: the run fails naming it.
    let run = submit(
        &redis,
        &store,
        &file,
        &[
            &CHOLESKY_128[..],
            &["--max-store-bytes", "85000", "--max-tasks", "20"],
        ]
        .concat(),
    );
    let mut pool = Workers::start(&redis, &store, &["--idle", "30"], 1);
    let s = wait_finished(&redis, &run, Duration::from_secs(120), &mut pool);
    assert!(
        failure(&s).contains("more than its --max-store-bytes 85000"),
        "{s}"
    );
    assert_eq!(s["error"]["task"]["kernel"], "chol", "{s}");

    // Parameters raised in Redis after submission: no worker runs it.
    let run = submit(&redis, &store, &file, &CHOLESKY_128);
    let meta = lpk_cluster::protocol::Keys::new(&run).meta();
    redis_do::<()>(&mut open_redis(&redis), "HSET", (meta, "params", "40"));
    let all = worker_until_idle(&redis, "2");
    assert!(
        all.contains(&format!(
            "skipping run {run}: run {run}: its parameters make "
        )) && all.contains("but it was submitted with 20; its record was changed in Redis"),
        "{all}"
    );
    assert_eq!(status(&redis, &run)["tasks_done"], 0);
    drop(pool);
}

/// What someone else wrote into Redis: each hostile change fails its own
/// run with an error that says what is wrong, and the worker goes on to
/// finish a clean run submitted beside them.
#[test]
fn hostile_redis_contents_fail_their_run_and_the_worker_serves_the_others() {
    let (redis, tmp, store) = redis_and_dir_store(21);
    let file = example("cholesky.lpk");
    let clean = submit(&redis, &store, &file, &CHOLESKY_128);
    let mut r = open_redis(&redis);
    let meta = |run: &str| lpk_cluster::protocol::Keys::new(run).meta();
    // (run, what was done to it, what its error must say)
    let mut cases: Vec<(String, &str, &str)> = Vec::new();

    let mut noise = Rng(7);
    let garbage: Vec<u8> = (0..8 << 20).map(|_| noise.below(256) as u8).collect();
    // (a field of the run's record, its new value, what, what the error says)
    let fields: [(&str, Vec<u8>, &str, &str); 4] = [
        (
            "artifact",
            garbage,
            "an 8 MiB random artifact",
            "its program does not load",
        ),
        (
            "id",
            clean.clone().into_bytes(),
            "a record naming another tenant's run",
            "names run",
        ),
        (
            "block",
            b"0".to_vec(),
            "block 0",
            "block: must be at least 1",
        ),
        (
            "total",
            b"1000000000000".to_vec(),
            "a task count that is not the plans'",
            "its record was changed in Redis",
        ),
    ];
    for (field, value, what, says) in fields {
        let run = submit(&redis, &store, &file, &CHOLESKY_128);
        redis_do::<()>(&mut r, "HSET", (meta(&run), field, value));
        cases.push((run, what, says));
    }
    let task_ids = [
        ("../../../../etc/passwd".to_string(), "a task id with `..`"),
        ("9".repeat(4 << 20), "a 4 MiB task id"),
    ];
    for (id, what) in task_ids {
        let run = submit(&redis, &store, &file, &CHOLESKY_128);
        let queue = lpk_cluster::protocol::Keys::new(&run).queue();
        redis_do::<()>(&mut r, "XADD", (queue, "*", "t", id));
        cases.push((run, what, "which is not a task of this run"));
    }

    // Run ids that are none: skipped, never used as a key or a path.
    let not_ids = ["../../escape".to_string(), "x".repeat(1 << 20)];
    redis_do::<()>(&mut r, "SADD", (lpk_cluster::protocol::RUNS, &not_ids[..]));

    let all = worker_until_idle(&redis, "3");
    assert!(
        all.len() < 200_000,
        "the worker echoed what it read: {} bytes",
        all.len()
    );
    assert!(
        all.contains("skipping run ../../escape: `../../escape` is not a run id"),
        "{all}"
    );
    assert_eq!(status(&redis, &clean)["state"], "done", "{all}");
    for (run, what, says) in &cases {
        let (state, error): (Option<String>, Option<String>) =
            redis_do(&mut r, "HMGET", (meta(run), "state", "error"));
        let error = error.unwrap_or_default();
        eprintln!("{what}: the worker answers: {error}");
        assert_eq!(state.as_deref(), Some("failed"), "{what}: {all}");
        assert!(error.contains(says), "{what}: {error}");
        assert!(
            error.len() < 2000,
            "{what}: an error of {} bytes",
            error.len()
        );
        assert!(all.contains(&format!("run {run} failed")), "{what}: {all}");
    }
    assert!(!tmp.path().join("escape").exists());
    redis_do::<()>(&mut r, "SREM", (lpk_cluster::protocol::RUNS, &not_ids[..]));
}

/// A `.npy` file (version 1) of `f8` zeros with the given header shape
/// and `elements` values of data.
fn npy_bytes(shape: &str, elements: usize) -> Vec<u8> {
    let mut header = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.resize(out.len() + elements * 8, 0);
    out
}

/// What someone else wrote into the store: an input tile of the wrong
/// shape, one whose header claims a terabyte, one of random bytes. Each
/// fails its own run naming the task and the tile, without allocating
/// what the header claims; a clean run beside them finishes.
#[test]
fn hostile_store_contents_fail_their_run_naming_the_tile() {
    let (redis, tmp, store) = redis_and_dir_store(22);
    let file = example("cholesky.lpk");
    let clean = submit(&redis, &store, &file, &CHOLESKY_128);
    let mut noise = Rng(11);
    let random: Vec<u8> = (0..8192).map(|_| noise.below(256) as u8).collect();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "a tile of the wrong shape",
            npy_bytes("(16, 16)", 256),
            "16",
        ),
        (
            "a header claiming 2^40 x 2^40",
            npy_bytes("(1099511627776, 1099511627776)", 4),
            "1099511627776",
        ),
        (
            "a header claiming 46000 x 46000 (16 GiB) over 32 bytes of data",
            npy_bytes("(46000, 46000)", 4),
            "A[0, 0]",
        ),
        ("random bytes", random, "A[0, 0]"),
    ];
    let mut runs = Vec::new();
    for (what, bytes, _) in &cases {
        let run = submit(&redis, &store, &file, &CHOLESKY_128);
        let tile = tmp
            .path()
            .join("store")
            .join(&run)
            .join("A")
            .join("0_0.npy");
        assert!(tile.exists(), "{what}: no input tile at {}", tile.display());
        std::fs::write(&tile, bytes).expect("overwrite an input tile");
        runs.push(run);
    }
    let all = worker_until_idle(&redis, "3");
    assert_eq!(status(&redis, &clean)["state"], "done", "{all}");
    for ((what, _, says), run) in cases.iter().zip(&runs) {
        let s = status(&redis, run);
        eprintln!("{what}: the worker answers: {}", s["error"]["message"]);
        let message = failure(&s);
        assert!(message.contains(says), "{what}: {message}");
        assert!(
            message.contains("A[0, 0]") || message.contains("A[0,0]"),
            "{what}: {message}"
        );
        assert_eq!(s["error"]["task"]["kernel"], "chol", "{what}: {s}");
    }
}

/// A run of a program calling a kernel of the user's own (`negate`, which
/// `lpk-negate-worker` of examples/rust-kernel has): `submit` accepts it,
/// a standard `lpkc worker` takes none of its tasks, and `status` shows it
/// blocked, naming the kernel and its line, as long as no live worker
/// has it.
#[test]
fn a_run_whose_kernel_no_live_worker_has_is_blocked_and_left_alone() {
    let (redis, _tmp, store) = redis_and_dir_store(27);
    let file = lpk_test_support::workspace_root().join("examples/rust-kernel/negated_product.lpk");
    let text = std::fs::read_to_string(&file).expect("read the example");
    let line = text
        .lines()
        .position(|l| l.contains("= negate("))
        .expect("the call")
        + 1;
    let args = [
        "--block",
        "16",
        "--input",
        "A=random:32x32",
        "--input",
        "B=random:32x32",
    ];
    let run = submit(&redis, &store, &file, &args);
    let mut pool = Workers::start(&redis, &store, &["--lease", "0.5", "--idle", "60"], 1);
    // The worker registers at once; give it time to take what it can.
    let started = Instant::now();
    let s = loop {
        let s = status(&redis, &run);
        if s["live_workers"].as_u64() == Some(1) {
            break s;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{s}");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(1500));
    pool.assert_all_running();
    let after = status(&redis, &run);
    assert_eq!(after["state"], "running", "{after}");
    assert_eq!(after["tasks_done"], 0, "{after}");
    assert_eq!(
        after["claimed"], 0,
        "a standard worker claimed a task: {after}"
    );
    // The 2 x 2 roots (the first gemm of each output tile) stay ready.
    assert_eq!(after["ready_unclaimed"], 4, "{after}");
    for s in [&s, &after] {
        assert_eq!(
            s["missing_kernels"],
            serde_json::json!([{ "kernel": "negate", "line": line }]),
            "{s}"
        );
    }
    let out = lpkc()
        .args(["status", &run, "--redis", &redis, "--blocked"])
        .output()
        .expect("run lpkc status");
    let text = ok(&out, "lpkc status --blocked");
    assert!(
        text.contains(&format!(
            "blocked: no live worker has kernel `negate` (line {line}) (1 live worker)"
        )),
        "{text}"
    );
    // Once the worker is killed, its registration expires with its lease
    // (0.5 s): every kernel of the run is then missing.
    drop(pool);
    let killed = Instant::now();
    let s = loop {
        let s = status(&redis, &run);
        if s["live_workers"] == 0 {
            break s;
        }
        assert!(killed.elapsed() < Duration::from_secs(10), "{s}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let missing = strings_of(&s["missing_kernels"], "kernel");
    assert_eq!(missing, ["gemm", "gemm_acc", "negate"], "{s}");
    // `lpkc run --redis` starts standard workers: it refuses the program
    // before it submits anything, rather than wait for ever.
    let out = run_on_redis(&file, &args, &redis, &store)
        .output()
        .expect("run lpkc run --redis");
    let err = fails(&out, 1);
    assert!(
        err.contains(&format!(
            "kernel `negate` (line {line}) is not a standard kernel"
        )),
        "{err}"
    );
}
