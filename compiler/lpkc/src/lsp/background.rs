//! The background worker: the plans and the lint of a document, off the
//! message loop, so that typing never waits for a proof.
//!
//! Jobs are kept per document, the newest only: an edit replaces a job
//! that has not started. A started job first compiles every program of the
//! file (lowering and plans, `pipeline::try_compile_program`) and reports
//! the plans, then lints them (`lint::lint_program`, the options of `lpkc
//! lint`) on a thread of its own. The worker waits for that lint until it
//! is done, a newer version of the document arrives (the lint is
//! superseded), or the time budget runs out (the editor is told so). A
//! superseded or timed-out lint is cancelled (`lpk_compiler::cancel`: it
//! stops at its next solver step or instance, within milliseconds) and its
//! result dropped; the worker starts no other lint until it has ended, so
//! at most one lint computes at a time.

use crate::lsp::analysis::Plans;
use crossbeam_channel::{Receiver, Sender};
use lpk_compiler::cancel::Cancel;
use lpk_compiler::diag::{Diagnostic, SourceMap};
use lpk_compiler::lint::{lint_program, LintOptions};
use lpk_compiler::pipeline::{check_source, sort_by_position, try_compile_program, Checked};
use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The stack of the worker's threads: the compiler's passes recurse, and
/// `lpkc` gives them the main thread's generous stack everywhere.
const STACK: usize = 256 * 1024 * 1024;

/// One version of one document to analyse.
pub(crate) struct Job {
    /// The document's URI.
    pub(crate) uri: String,
    /// The name diagnostics use for it.
    pub(crate) name: String,
    /// Its version.
    pub(crate) version: i32,
    /// Its text.
    pub(crate) text: Arc<str>,
}

/// What the worker reports, always for one version of one document.
pub(crate) enum Outcome {
    /// The compiled programs.
    Plans {
        /// The document.
        uri: String,
        /// The version they are of.
        version: i32,
        /// One per program of the module.
        plans: Plans,
    },
    /// The lint's diagnostics.
    Lint {
        /// The document.
        uri: String,
        /// The version they are of.
        version: i32,
        /// Every program's lint diagnostics, in source order.
        diagnostics: Vec<Diagnostic>,
        /// How long the lint took.
        elapsed: Duration,
    },
    /// The lint ran past its time budget; its result will be dropped.
    LintTimedOut {
        /// The document.
        uri: String,
        /// The version.
        version: i32,
        /// The budget.
        budget: Duration,
    },
}

/// The newest job of each document, and whether the worker should stop.
#[derive(Default)]
struct Pending {
    jobs: BTreeMap<String, Job>,
    stopped: bool,
}

type Shared = Arc<(Mutex<Pending>, Condvar)>;

/// The handle the message loop keeps.
pub(crate) struct Worker {
    shared: Shared,
    /// What the worker reports.
    pub(crate) outcomes: Receiver<Outcome>,
}

impl Worker {
    /// Starts the worker thread with a time budget per lint.
    pub(crate) fn start(budget: Duration) -> std::io::Result<Worker> {
        let shared: Shared = Arc::default();
        let (tx, rx) = crossbeam_channel::unbounded();
        let state = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("lsp-worker".into())
            .stack_size(STACK)
            .spawn(move || run(&state, &tx, budget))?;
        Ok(Worker {
            shared,
            outcomes: rx,
        })
    }

    /// Queues a job, replacing the document's job that has not started.
    pub(crate) fn submit(&self, job: Job) {
        let (lock, wake) = &*self.shared;
        if let Ok(mut pending) = lock.lock() {
            pending.jobs.insert(job.uri.clone(), job);
            wake.notify_all();
        }
    }

    /// Forgets a closed document's job.
    pub(crate) fn forget(&self, uri: &str) {
        let (lock, _) = &*self.shared;
        if let Ok(mut pending) = lock.lock() {
            pending.jobs.remove(uri);
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let (lock, wake) = &*self.shared;
        if let Ok(mut pending) = lock.lock() {
            pending.stopped = true;
            wake.notify_all();
        }
    }
}

/// Whether a newer job for `uri` is waiting (or the worker should stop).
fn superseded(shared: &Shared, uri: &str) -> bool {
    let (lock, _) = &**shared;
    lock.lock()
        .map_or(true, |p| p.stopped || p.jobs.contains_key(uri))
}

/// Takes the next job, waiting for one; `None` when the worker stops.
fn next_job(shared: &Shared) -> Option<Job> {
    let (lock, wake) = &**shared;
    let mut pending = lock.lock().ok()?;
    loop {
        if pending.stopped {
            return None;
        }
        if let Some((_, job)) = pending.jobs.pop_first() {
            return Some(job);
        }
        pending = wake.wait(pending).ok()?;
    }
}

/// The worker's loop.
fn run(shared: &Shared, tx: &Sender<Outcome>, budget: Duration) {
    let mut previous: Option<JoinHandle<()>> = None;
    while let Some(job) = next_job(shared) {
        let (checked, plans) = compile(&job);
        let sent = tx.send(Outcome::Plans {
            uri: job.uri.clone(),
            version: job.version,
            plans: Arc::clone(&plans),
        });
        if sent.is_err() {
            return;
        }
        if checked.has_errors() || superseded(shared, &job.uri) {
            continue;
        }
        // One lint at a time: wait for a dropped one to finish, unless this
        // job is superseded meanwhile.
        if !wait_for_previous(&mut previous, shared, &job.uri) {
            continue;
        }
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        let cancel = Cancel::new();
        let token = cancel.clone();
        let lint = std::thread::Builder::new()
            .name("lsp-lint".into())
            .stack_size(STACK)
            .spawn(move || {
                let started = Instant::now();
                let diagnostics = token.run(|| lint_all(&checked, &plans));
                let _ = done_tx.send((diagnostics, started.elapsed()));
            });
        let Ok(lint) = lint else {
            continue;
        };
        previous = Some(lint);
        let outcome = wait_for_lint(&done_rx, shared, &job, budget);
        if !matches!(outcome, Some(Outcome::Lint { .. })) {
            // Superseded or out of time: its result would be dropped.
            cancel.cancel();
        }
        if let Some(outcome) = outcome {
            if tx.send(outcome).is_err() {
                return;
            }
        }
    }
}

/// Waits until the previous lint thread has ended; false if `uri` got a
/// newer job first.
fn wait_for_previous(previous: &mut Option<JoinHandle<()>>, shared: &Shared, uri: &str) -> bool {
    while let Some(handle) = previous.take() {
        if handle.is_finished() {
            let _ = handle.join();
            break;
        }
        *previous = Some(handle);
        if superseded(shared, uri) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Waits for the lint of `job`: its outcome, a timeout, or `None` when a
/// newer version supersedes it.
fn wait_for_lint(
    done: &Receiver<(Vec<Diagnostic>, Duration)>,
    shared: &Shared,
    job: &Job,
    budget: Duration,
) -> Option<Outcome> {
    let deadline = Instant::now() + budget;
    loop {
        match done.recv_timeout(Duration::from_millis(20)) {
            Ok((diagnostics, elapsed)) => {
                return Some(Outcome::Lint {
                    uri: job.uri.clone(),
                    version: job.version,
                    diagnostics,
                    elapsed,
                })
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return None,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
        }
        if superseded(shared, &job.uri) {
            return None;
        }
        if Instant::now() >= deadline {
            return Some(Outcome::LintTimedOut {
                uri: job.uri.clone(),
                version: job.version,
                budget,
            });
        }
    }
}

/// Checks a job's text and compiles each of its programs.
fn compile(job: &Job) -> (Checked, Plans) {
    let mut sources = SourceMap::new();
    let checked = check_source(&mut sources, &job.name, &job.text);
    if checked.has_errors() {
        return (checked, Arc::new(Vec::new()));
    }
    let plans = checked
        .module
        .programs
        .iter()
        .map(|p| try_compile_program(&checked.module, p, &sources).ok())
        .collect();
    (checked, Arc::new(plans))
}

/// Every program's lint diagnostics, as `lpkc lint` reports them.
fn lint_all(checked: &Checked, plans: &Plans) -> Vec<Diagnostic> {
    let opts = LintOptions::default();
    let mut out = Vec::new();
    for (hir, program) in checked.module.programs.iter().zip(plans.iter()) {
        if let Some(program) = program {
            let report = lint_program(&checked.module, hir, program, checked.file, &opts, None);
            out.extend(report.diagnostics);
        }
    }
    sort_by_position(&mut out);
    // A kernel no program calls is reported by every program's lint.
    out.dedup();
    out
}
