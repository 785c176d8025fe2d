//! What the distributed commands (`submit`, `worker`, `status`, `collect`,
//! `run --redis`) share: opening Redis, waiting for a run with a progress
//! bar, and showing a run's status as text or JSON.

use crate::error::CliError;
use lpk_cluster::conn::Redis;
use lpk_cluster::record::{RunRecord, RunState};
use lpk_cluster::status::{status, ShownTask, Status};
use lpk_cluster::ClusterError;
use lpk_model::program::Program;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Maps a back-end error: a bad URL or run id is a usage error (exit 2),
/// anything else a failed command (exit 1).
pub(crate) fn error(e: ClusterError) -> CliError {
    match e {
        ClusterError::BadUrl { .. } | ClusterError::BadRunId(_) => CliError::Usage(e.to_string()),
        other => CliError::Input(other.to_string()),
    }
}

/// Submits a run, printing the back end's progress notes unless `quiet`;
/// parameters that make no instance are reported as any failed binding.
pub(crate) fn submit(
    redis: &mut Redis,
    submission: &lpk_cluster::submit::Submission<'_>,
    quiet: bool,
) -> Result<lpk_cluster::submit::Submitted, CliError> {
    let submitted = lpk_cluster::submit::submit(redis, submission, &mut |m| {
        if !quiet {
            eprintln!("{m}");
        }
    });
    match submitted {
        Ok(s) => Ok(s),
        Err(ClusterError::Job(e)) => {
            match *e {
                lpk_runtime::job::JobError::Bind { error, params } => Err(
                    crate::error::bind_failure(submission.program, error, &params),
                ),
                other => Err(CliError::Input(other.to_string())),
            }
        }
        Err(e) => Err(error(e)),
    }
}

/// `lpkc run --redis` starts `lpkc worker`s, which have the standard
/// kernels only: a program calling another kernel is refused before
/// anything is submitted, since its run would wait for a worker that has
/// it.
pub(crate) fn refuse_user_kernels(program: &Program) -> Result<(), CliError> {
    let standard = lpk_runtime::kernels::Registry::standard();
    for st in &program.statements {
        if let Some(k) = program.get_kernel(st.kernel) {
            if standard.get(&k.name).is_none() {
                return Err(CliError::Input(format!(
                    "kernel `{}` (line {}) is not a standard kernel, and the workers that \
                     `lpkc run --redis` starts have only those: submit the run with \
                     `lpkc submit` and start workers that have it (docs/kernels.md)",
                    k.name, st.line
                )));
            }
        }
    }
    Ok(())
}

/// Connects to Redis.
pub(crate) fn open(url: &str) -> Result<Redis, CliError> {
    Redis::open(url).map_err(error)
}

/// A task as the status shows it: `kernel@LINE(i=0)`, or its raw id.
pub(crate) fn task_text(program: &Program, t: &ShownTask) -> String {
    match &t.task {
        Some(task) if program.get_statement(task.stmt).is_some() => {
            program.task_name(task).to_string()
        }
        _ => t.id.clone(),
    }
}

/// The status object of the JSON contract (`docs/cli.md`).
pub(crate) fn status_json(s: &Status) -> serde_json::Value {
    lpk_cluster::status::to_json(s, false)
}

/// The status as lines of text.
pub(crate) fn status_lines(s: &Status, blocked: bool) -> Vec<String> {
    let r = &s.record;
    let mut out = vec![format!(
        "run {}: {} ({}), {} of {} tasks done, {:.0} tasks/s",
        r.id,
        r.state.as_str(),
        r.program,
        r.done,
        r.total,
        s.rate
    )];
    match &s.error {
        Some((t, m)) if t.is_none() => out.push(format!("  failed: {m}")),
        Some((t, m)) => out.push(format!(
            "  failed at task {}: {m}",
            task_text(&s.program, t)
        )),
        None => {}
    }
    if r.state == RunState::Running || blocked {
        out.push(format!(
            "  ready and unclaimed: {}, claimed by workers: {}, claimed with an expired lease: {}",
            s.unclaimed,
            s.claimed,
            s.expired.len()
        ));
        for t in &s.unclaimed_tasks {
            out.push(format!("    unclaimed: {}", task_text(&s.program, t)));
        }
        for e in &s.expired {
            out.push(format!(
                "    expired: {} held by {} (no renewal for {:.1} s, handed out {} time(s))",
                task_text(&s.program, &e.task),
                e.consumer,
                e.idle.as_secs_f64(),
                e.deliveries
            ));
        }
        for w in &s.waiting {
            let parents: Vec<String> = w
                .missing
                .iter()
                .map(|(p, tile)| format!("{} ({tile})", task_text(&s.program, p)))
                .collect();
            out.push(format!(
                "    waiting: {} has {} of {} parent edges; waits for {}",
                task_text(&s.program, &w.task),
                w.counted,
                w.in_degree,
                if parents.is_empty() {
                    "nothing (it should be ready)".to_string()
                } else {
                    parents.join(", ")
                }
            ));
        }
        if !s.missing_kernels.is_empty() {
            let names: Vec<String> = s
                .missing_kernels
                .iter()
                .map(|(k, line)| format!("`{k}` (line {line})"))
                .collect();
            out.push(format!(
                "  blocked: no live worker has kernel{} {} ({} live worker{}); \
                 its tasks wait for a worker that has {}",
                if names.len() == 1 { "" } else { "s" },
                names.join(", "),
                s.live_workers,
                if s.live_workers == 1 { "" } else { "s" },
                if names.len() == 1 { "it" } else { "them" },
            ));
        }
        if r.state == RunState::Running
            && s.claimed == 0
            && s.unclaimed > 0
            && s.missing_kernels.is_empty()
        {
            out.push(
                "  hint: no worker holds a task: start workers with `lpkc worker --redis URL`"
                    .into(),
            );
        }
    }
    out
}

/// Waits until run `run` is done or failed, with a progress bar on a
/// terminal; `alive` says whether it is still worth waiting (e.g. local
/// workers still run). Returns the final record.
pub(crate) fn wait(
    redis: &mut Redis,
    run: &str,
    progress: bool,
    lease: Duration,
    alive: &mut dyn FnMut() -> Result<(), CliError>,
) -> Result<RunRecord, CliError> {
    let show = progress && std::io::stderr().is_terminal();
    let bar = show.then(|| {
        let pb = indicatif::ProgressBar::new(0);
        pb.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} tasks  {per_sec}  {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        pb
    });
    let mut last_done = 0;
    let mut last_change = Instant::now();
    let mut warned = false;
    // The run's state is polled every 5 ms (one small read, about 1 KiB),
    // so a finished run is noticed at once; `alive` (which reaps and scales
    // workers) runs every 100 ms.
    let mut checked: Option<Instant> = None;
    loop {
        let record = RunRecord::read(redis, run).map_err(error)?;
        if let Some(pb) = &bar {
            pb.set_length(record.total);
            pb.set_position(record.done);
        }
        if record.state != RunState::Running {
            if let Some(pb) = &bar {
                pb.finish_and_clear();
            }
            return Ok(record);
        }
        if record.done != last_done {
            last_done = record.done;
            last_change = Instant::now();
            warned = false;
        } else if !warned && last_change.elapsed() > Duration::from_secs(30) {
            warned = true;
            if let Ok(s) = status(redis, run, lease, 5, true) {
                let lines = status_lines(&s, true);
                let text = format!("no progress for 30 s:\n{}", lines.join("\n"));
                match &bar {
                    Some(pb) => pb.println(text),
                    None => eprintln!("{text}"),
                }
            }
        }
        if checked.is_none_or(|t| t.elapsed() >= Duration::from_millis(100)) {
            checked = Some(Instant::now());
            if let Err(e) = alive() {
                if let Some(pb) = &bar {
                    pb.finish_and_clear();
                }
                return Err(e);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `--autoscale sf=SF,max=MAX,idle=S`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Autoscale {
    /// Workers per ready task.
    pub(crate) sf: f64,
    /// At most this many workers.
    pub(crate) max: usize,
    /// A worker idle this long (seconds) exits.
    pub(crate) idle: f64,
}

/// Parses `sf=0.5,max=8,idle=2` (every key required once).
pub(crate) fn parse_autoscale(text: &str) -> Result<Autoscale, String> {
    let (mut sf, mut max, mut idle) = (None, None, None);
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("`{part}`: expected KEY=VALUE (sf=0.5,max=8,idle=2)"))?;
        let v = v.trim();
        match k.trim() {
            "sf" => sf = v.parse::<f64>().ok().filter(|x| *x > 0.0 && x.is_finite()),
            "max" => max = v.parse::<usize>().ok().filter(|&m| (1..=4096).contains(&m)),
            "idle" => {
                idle = v
                    .parse::<f64>()
                    .ok()
                    .filter(|&x| lpk_cluster::worker::seconds(x).is_some())
            }
            other => {
                return Err(format!(
                    "`{other}` is not an autoscale setting (sf, max, idle)"
                ))
            }
        }
    }
    match (sf, max, idle) {
        (Some(sf), Some(max), Some(idle)) => Ok(Autoscale { sf, max, idle }),
        _ => Err(
            "expected sf=SF (above 0),max=MAX (1 to 4096),idle=S (seconds above 0, at most a year)"
                .into(),
        ),
    }
}

/// Local worker processes (killed when dropped), with when each started
/// and ended, for worker-seconds.
pub(crate) struct Workers {
    /// The lpkc executable.
    pub(crate) exe: std::path::PathBuf,
    /// The Redis URL the workers get.
    pub(crate) redis: String,
    /// Their lease (seconds).
    pub(crate) lease: f64,
    /// Their idle time (seconds).
    pub(crate) idle: f64,
    /// A shell command that starts one worker instead (`lpkc provision
    /// --spawn`).
    pub(crate) spawn_cmd: Option<String>,
    /// Each worker, when it started and when it ended.
    #[allow(clippy::type_complexity)]
    pub(crate) children: Vec<(std::process::Child, Instant, Option<Instant>)>,
    /// The most alive at once.
    pub(crate) peak: usize,
    /// Their `--cache-mb` (None: the worker's default).
    pub(crate) cache_mb: Option<u64>,
    /// Workers that exited with a failure since the last that exited
    /// well, and the last failure's exit status.
    pub(crate) failed_in_a_row: (u32, Option<std::process::ExitStatus>),
}

/// How many workers in a row may exit with a failure before the pool
/// stops starting them (a worker command that cannot work would otherwise
/// be started again forever).
pub(crate) const MAX_FAILED_IN_A_ROW: u32 = 5;

/// glibc's malloc settings for local workers, unless the caller set them:
/// freed tile memory stays in the process for the next tile instead of
/// going back to the system (a 2 MiB tile would otherwise be mapped and
/// unmapped each time, and memory a process touches for the first time
/// costs a page fault per 4 KiB, more on a virtual machine).
const MALLOC_ENV: [(&str, &str); 2] = [
    ("MALLOC_MMAP_THRESHOLD_", "268435456"),
    ("MALLOC_TRIM_THRESHOLD_", "1073741824"),
];

/// The `--cache-mb` of the local workers of `lpkc run --redis`: none when
/// the store is a local directory (the operating system's page cache keeps
/// its recent tiles already, and a second copy in each worker only costs
/// fresh memory), else the worker's default.
pub(crate) fn local_cache_mb(store: &str) -> Option<u64> {
    let local = !lpk_runtime::store::has_url_scheme(store) || store.starts_with("file:");
    local.then_some(0)
}

impl Workers {
    /// Starts one worker.
    pub(crate) fn spawn(&mut self) -> Result<(), CliError> {
        let k = self.children.len();
        if let Some(cmd) = &self.spawn_cmd {
            let child = std::process::Command::new("sh")
                .args(["-c", cmd])
                .stdin(std::process::Stdio::null())
                .spawn()
                .map_err(|e| CliError::Input(format!("cannot run `{cmd}`: {e}")))?;
            self.children.push((child, std::time::Instant::now(), None));
            self.peak = self.peak.max(self.alive());
            return Ok(());
        }
        // The password, if the URL has one, goes in the worker's
        // environment: a command line is visible to every user in `ps`.
        let (url, password) = lpk_cluster::conn::split_password(&self.redis);
        let child = std::process::Command::new(&self.exe)
            .args(["worker", "--redis", &url, "--quiet"])
            .envs(password.map(|p| (lpk_cluster::conn::PASSWORD_ENV, p)))
            .args(
                self.cache_mb
                    .map(|mb| vec!["--cache-mb".to_string(), mb.to_string()])
                    .unwrap_or_default(),
            )
            .envs(
                MALLOC_ENV
                    .iter()
                    .filter(|(k, _)| std::env::var_os(k).is_none())
                    .copied(),
            )
            .args([
                "--idle",
                &self.idle.to_string(),
                "--lease",
                &self.lease.to_string(),
            ])
            .args([
                "--name",
                &format!("{}-local{k}", lpk_cluster::worker::default_name()),
            ])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .map_err(|e| {
                CliError::Input(format!(
                    "cannot start a worker ({}): {e}",
                    self.exe.display()
                ))
            })?;
        self.children.push((child, std::time::Instant::now(), None));
        self.peak = self.peak.max(self.alive());
        Ok(())
    }

    /// Notes the workers that exited; returns how many still run.
    pub(crate) fn reap(&mut self) -> usize {
        for (c, _, end) in &mut self.children {
            if end.is_some() {
                continue;
            }
            match c.try_wait() {
                Ok(None) => continue,
                Ok(Some(status)) if status.success() => self.failed_in_a_row = (0, None),
                Ok(Some(status)) => {
                    self.failed_in_a_row = (self.failed_in_a_row.0 + 1, Some(status));
                }
                Err(_) => self.failed_in_a_row.0 += 1,
            }
            *end = Some(std::time::Instant::now());
        }
        self.alive()
    }

    /// An error once [`MAX_FAILED_IN_A_ROW`] workers in a row exited with
    /// a failure, naming how they start and how they exited.
    pub(crate) fn check_failing(&self) -> Result<(), CliError> {
        let (n, status) = self.failed_in_a_row;
        if n < MAX_FAILED_IN_A_ROW {
            return Ok(());
        }
        let how = match &self.spawn_cmd {
            Some(cmd) => format!("`{cmd}` (--spawn)"),
            None => format!("`{} worker --redis ...`", self.exe.display()),
        };
        let status = status.map_or_else(|| "an unknown status".to_string(), |s| s.to_string());
        Err(CliError::Input(format!(
            "{n} workers in a row exited with a failure ({status}), started as {how}; \
             stopped starting them (run the command by hand to see why it fails)"
        )))
    }

    /// Workers still running.
    pub(crate) fn alive(&self) -> usize {
        self.children.iter().filter(|c| c.2.is_none()).count()
    }

    /// Seconds of worker processes so far.
    pub(crate) fn worker_seconds(&self) -> f64 {
        let now = std::time::Instant::now();
        self.children
            .iter()
            .map(|(_, start, end)| end.unwrap_or(now).duration_since(*start).as_secs_f64())
            // Not `sum()`: the sum of no f64 is -0.0, printed "-0.00".
            .fold(0.0, |a, b| a + b)
    }

    /// Kills every worker without waiting for it to exit (dropping the
    /// pool waits), so that the caller can go on meanwhile.
    pub(crate) fn stop(&mut self) {
        let now = std::time::Instant::now();
        for (c, _, end) in &mut self.children {
            let _ = c.kill();
            end.get_or_insert(now);
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        // Every signal first, then the waits: the exits overlap.
        for (c, _, _) in &mut self.children {
            let _ = c.kill();
        }
        for (c, _, _) in &mut self.children {
            let _ = c.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_workers_cache_no_tiles_of_a_local_store_only() {
        assert_eq!(local_cache_mb("/shared/tiles"), Some(0));
        assert_eq!(local_cache_mb("file:///shared/tiles"), Some(0));
        assert_eq!(local_cache_mb("s3://bucket/tiles"), None);
    }

    #[test]
    fn a_pool_that_started_nobody_used_zero_worker_seconds_not_minus_zero() {
        let pool = Workers {
            exe: "lpkc".into(),
            redis: "redis://127.0.0.1:1".into(),
            lease: 30.0,
            idle: 1.0,
            spawn_cmd: None,
            children: Vec::new(),
            peak: 0,
            cache_mb: None,
            failed_in_a_row: (0, None),
        };
        assert_eq!(format!("{:.2}", pool.worker_seconds()), "0.00");
    }

    #[test]
    fn autoscale_idle_is_a_number_of_seconds_up_to_a_year() {
        assert!(parse_autoscale("sf=1,max=2,idle=2").is_ok());
        for bad in ["idle=1e20", "idle=0", "idle=-1", "idle=NaN", "idle=inf"] {
            let text = format!("sf=1,max=2,{bad}");
            assert!(parse_autoscale(&text).is_err(), "{text}");
        }
    }
}
