//! An execution's life on a worker: started (its reads, compute and writes
//! costed, a straggler's slow-down and a crash drawn), watched (the
//! kernel's speculation threshold, its lease), and ended by a crash (the
//! task waits for its lease) or by finishing first (the other copy
//! cancelled). Each kernel's durations are observed, and its speculation
//! threshold and automatic lease recomputed from them
//! ([`crate::quantile`]).

use super::workers::State;
use super::{input_cut, Kind, Ready, Role, Running, Sim};
use crate::config::Workers;
use crate::error::SimError;
use crate::faults::{Failures, Lease};
use crate::policy::Policy;
use lpk_model::task::Task;

/// The most executions a simulation of `tasks` tasks runs before it gives
/// up: a thousand per task (a failure rate of 0.999 on average), so a rate
/// near 1 ends with an error instead of running for hours.
fn max_executions(tasks: u64) -> u64 {
    tasks.saturating_mul(1000).saturating_add(100_000)
}

impl Sim<'_, '_> {
    /// Starts an execution of `r` on worker `w`: its duration (reads,
    /// compute, writes, times a straggler's slow-down), its end or its
    /// worker's crash as an event, and the checks that watch it.
    pub(super) fn start(&mut self, w: usize, r: Ready) -> Result<(), SimError> {
        let io = self.io_seconds(w, &r.task)?;
        let compute = self.costs[r.task.stmt.index()].seconds;
        let expected = io + compute;
        let dur = expected * self.straggle();
        self.hist.advance(self.now);
        self.busy += 1;
        self.hist.busy_now = self.busy;
        self.r.peak_busy = self.r.peak_busy.max(self.busy);
        self.r.executions += 1;
        if self.r.executions > max_executions(self.r.tasks) {
            return Err(SimError::Config(format!(
                "{} executions for {} tasks: with this --fail-rate the run does not finish \
                 (each task runs 1 / (1 - rate) times on average; a real run fails a task \
                 after --max-expiries tries)",
                self.r.executions, self.r.tasks
            )));
        }
        self.exec_seq += 1;
        let exec = self.exec_seq;
        let kernel = self.kernel_of[r.task.stmt.index()];
        let lease_s = self.lease_for(kernel);
        let worker = &mut self.workers[w];
        worker.state = State::Busy;
        worker.running = Some(Running {
            ready: r,
            start: self.now,
            exec,
            twin: None,
            copy: Role::First,
            lease_s,
            dur,
            expected,
        });
        let fail = self
            .cfg
            .failures
            .filter(|f| f.rate > 0.0)
            .is_some_and(|f| self.rng.unit() < f.rate);
        if fail {
            let at = self.now + self.rng.unit() * dur;
            self.push_event(at, Kind::Crash(w, exec));
        } else {
            self.push_event(self.now + dur, Kind::Done(w, exec));
        }
        self.watch(w, kernel);
        Ok(())
    }

    /// The seconds worker `w` spends moving `task`'s tiles: each read from
    /// its cache (free), a dense input or the store, each result written to
    /// the store and kept in its cache, and the memory its results first
    /// touch. The bytes are counted as they go.
    fn io_seconds(&mut self, w: usize, task: &Task) -> Result<f64, SimError> {
        let reads = self.read_tiles(task)?;
        let store = self.cfg.costs.store;
        let writes = self.inst.program.statements[task.stmt.index()].writes.len();
        let mut io = 0.0;
        {
            let worker = &mut self.workers[w];
            for (t, b) in reads {
                self.r.read_bytes += b;
                if let Some(cut) = input_cut(self.inst, &self.cfg.costs, &t) {
                    io += cut.transfer(b);
                    continue;
                }
                let local = worker.cache.as_mut().is_some_and(|c| c.get(&t).is_some());
                if !local {
                    self.r.remote_read_bytes += b;
                    io += store.transfer(b);
                    if let Some(c) = worker.cache.as_mut() {
                        c.put(t, ());
                    }
                }
            }
        }
        let outs = self.engine.writes(task)?;
        debug_assert_eq!(outs.len(), writes);
        let st = &self.costs[task.stmt.index()];
        for (i, t) in outs.into_iter().enumerate() {
            let b = st.write_bytes.get(i).copied().unwrap_or(0);
            self.r.written_bytes += b;
            io += store.transfer(b);
            if let Some(c) = self.workers[w].cache.as_mut() {
                c.put(t, ());
            }
        }
        io += self.grow_memory(task)?;
        Ok(io)
    }

    /// Whether worker `w` runs execution `exec`.
    pub(super) fn runs(&self, w: usize, exec: u64) -> bool {
        self.workers[w]
            .running
            .as_ref()
            .is_some_and(|r| r.exec == exec)
    }

    /// The worker running the other copy of worker `w`'s execution.
    pub(super) fn twin(&self, w: usize) -> Option<usize> {
        self.workers[w].running.as_ref().and_then(|r| r.twin)
    }

    /// The slow-down of an execution: `slow` with probability `rate`, else
    /// 1 (no draw without stragglers, so a rate of 0 changes nothing).
    fn straggle(&mut self) -> f64 {
        match self.cfg.stragglers {
            Some(s) if s.rate > 0.0 && self.rng.unit() < s.rate => {
                self.r.stragglers += 1;
                s.slow
            }
            _ => 1.0,
        }
    }

    /// The lease of an execution of `kernel` started now.
    fn lease_for(&self, kernel: usize) -> f64 {
        match self.cfg.failures.map(|f| f.lease) {
            None => f64::INFINITY,
            Some(Lease::Fixed(s)) => s,
            Some(Lease::Auto(a)) => self
                .r
                .kernels
                .get(kernel)
                .and_then(|k| k.lease_s)
                .unwrap_or(a.fallback_s),
        }
    }

    /// The events that watch worker `w`'s new execution: its speculation
    /// check (when its kernel has a threshold) and, with failures, its
    /// lease's expiry.
    fn watch(&mut self, w: usize, kernel: usize) {
        let Some(run) = self.workers[w].running.as_ref() else {
            return;
        };
        let (exec, start, lease) = (run.exec, run.start, run.lease_s);
        if let Some(t) = self.r.kernels.get(kernel).and_then(|k| k.threshold_s) {
            self.push_event(start + t, Kind::Speculate(w, exec));
        }
        if lease.is_finite() {
            self.push_event(start + lease, Kind::LeaseCheck(w, exec));
        }
    }

    /// A speculation check: a backup for an execution past its kernel's
    /// threshold that has no other copy.
    pub(super) fn speculate(&mut self, w: usize, exec: u64) {
        if !self.runs(w, exec) || self.twin(w).is_some() {
            return;
        }
        let Some(run) = self.workers[w].running.as_ref() else {
            return;
        };
        let start = run.start;
        let kernel = self.kernel_of[run.ready.task.stmt.index()];
        let Some(t) = self.r.kernels.get(kernel).and_then(|k| k.threshold_s) else {
            return;
        };
        if self.now < start + t {
            // The threshold rose since the check was set.
            self.push_event(start + t, Kind::Speculate(w, exec));
            return;
        }
        if !self.copies.iter().any(|&(o, e, _)| o == w && e == exec) {
            self.copies.push_back((w, exec, Role::Backup));
        }
    }

    /// Records an observed duration and, at the update points (each new
    /// observation while there are fewer than 16, then whenever they have
    /// grown by an eighth, and at the `min` of speculation or the lease),
    /// recomputes the kernel's bounds from all observations so far.
    fn observe(&mut self, kernel: usize, dur: f64) {
        if !self.observe {
            return;
        }
        let Some(k) = self.r.kernels.get_mut(kernel) else {
            return;
        };
        k.samples.push(dur);
        let n = k.samples.len();
        // The first observation that reaches a `min` is an update point.
        let at_min = self.cfg.speculation.is_some_and(|s| s.min == n)
            || matches!(self.cfg.failures, Some(Failures { lease: Lease::Auto(a), .. }) if a.min == n);
        if n < k.next_update && !at_min {
            return;
        }
        k.next_update = n + (n / 8).max(1);
        if let Some(s) = self.cfg.speculation {
            if n >= s.min.max(1) {
                if let Ok(t) = crate::quantile::upper_bound(&k.samples, s.q, s.c) {
                    k.threshold_s = Some(t);
                    k.threshold_from = n;
                }
            }
        }
        if let Some(Failures {
            lease: Lease::Auto(a),
            ..
        }) = self.cfg.failures
        {
            if n >= a.min.max(1) {
                if let Ok(t) = crate::quantile::upper_bound(&k.samples, a.q, a.c) {
                    k.lease_s = Some(a.factor * t);
                    k.lease_from = n;
                }
            }
        }
        // Running executions of the kernel get a check at the new
        // threshold (a stale or repeated check does nothing).
        if self.cfg.speculation.is_some() {
            if let Some(t) = self.r.kernels[kernel].threshold_s {
                let mut checks = Vec::new();
                for (w, worker) in self.workers.iter().enumerate() {
                    if let Some(run) = &worker.running {
                        if run.twin.is_none()
                            && self.kernel_of[run.ready.task.stmt.index()] == kernel
                        {
                            checks.push(((run.start + t).max(self.now), w, run.exec));
                        }
                    }
                }
                for (at, w, e) in checks {
                    self.push_event(at, Kind::Speculate(w, e));
                }
            }
        }
    }

    /// Ends worker `w`'s execution, if it runs one, counting its busy time.
    fn stop_running(&mut self, w: usize) -> Option<Running> {
        let run = self.workers[w].running.take()?;
        self.hist.advance(self.now);
        self.r.busy_seconds += self.now - run.start;
        self.busy -= 1;
        self.hist.busy_now = self.busy;
        Some(run)
    }

    /// Worker `w` dies: its task waits for its lease (unless another copy
    /// holds it), HEFT's tasks placed on it go to the living, and a fixed
    /// pool requests a replacement.
    pub(super) fn crash(&mut self, w: usize) {
        let Some(run) = self.stop_running(w) else {
            return;
        };
        self.r.failures += 1;
        self.retire(w);
        match run.twin {
            // The other copy runs on: it holds the task.
            Some(o) => {
                if let Some(other) = self.workers[o].running.as_mut() {
                    other.twin = None;
                }
            }
            None => {
                let at = (run.start + run.lease_s).max(self.now);
                self.lost.insert(w, run.ready);
                self.push_event(at, Kind::Lease(w));
            }
        }
        if self.cfg.policy == Policy::Heft {
            // Its placed tasks go to the living.
            let slot = self.workers[w].slot;
            let orphans: Vec<Ready> = self.queues[slot].drain(..).collect();
            self.queued -= orphans.len();
            for r in orphans {
                // Placement needs a live worker; with none, slot 0.
                let s = self.heft_place(&r).unwrap_or(0);
                self.queues[s].push_back(r);
                self.queued += 1;
            }
        }
        if let Workers::Fixed(_) = self.cfg.workers {
            self.request_worker();
        }
    }

    /// Worker `w`'s execution finished first: the other copy, if any, is
    /// cancelled, a winning copy counted, and the durations observed. The
    /// execution, or `None` if `w` runs none.
    pub(super) fn finish(&mut self, w: usize) -> Option<Running> {
        let run = self.stop_running(w)?;
        let kernel = self.kernel_of[run.ready.task.stmt.index()];
        if let Some(o) = run.twin {
            // The other copy loses: cancelled, its worker freed. Its time so
            // far is observed too (a lower bound of its duration): observing
            // only the winners would hide the slow executions that copies
            // beat, and the bounds would never learn the tail.
            if let Some(other) = self.stop_running(o) {
                self.r.cancelled += 1;
                self.set_idle(o);
                self.observe(kernel, self.now - other.start);
            }
        }
        match run.copy {
            Role::Backup => {
                self.r.backups_won += 1;
                if let Some(ks) = self.r.kernels.get_mut(kernel) {
                    ks.backups_won += 1;
                }
            }
            Role::LeaseRerun => self.r.lease_reruns_won += 1,
            Role::First => {}
        }
        // The modelled duration, `now - start` but for rounding (so that a
        // threshold equal to a duration lets that execution finish first).
        self.observe(kernel, run.dur);
        Some(run)
    }
}
