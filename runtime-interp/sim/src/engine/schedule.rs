//! The scheduling policies at work: how a ready task is queued (one queue
//! in ready order, a heap by top level, or a worker's queue chosen by
//! HEFT's earliest finish time or by the locality partition), which task
//! an idle worker picks (stealing from the longest queue when its own is
//! empty), and how idle workers are handed copies and ready tasks.

use super::workers::State;
use super::{input_cut, Ready, Role, Seconds, Sim};
use crate::error::SimError;
use crate::policy::Policy;
use lpk_model::frontier::Queued;
use lpk_model::task::{Task, TileRef};
use std::cmp::Reverse;
use std::collections::VecDeque;

/// `Ready` ordered for the critical-path heap, which pops the greatest:
/// smallest top level, then largest cost, then earliest.
pub(super) type ByPriority = Queued<(Reverse<Seconds>, Seconds, Reverse<u64>), Ready>;

impl Sim<'_, '_> {
    /// Queues a ready task as the policy does: in ready order (fifo), by
    /// priority (critical-path), or on a worker's queue (HEFT, locality).
    pub(super) fn enqueue(&mut self, r: Ready) -> Result<(), SimError> {
        match self.cfg.policy {
            Policy::Fifo => self.fifo.push_back(r),
            Policy::CriticalPath => {
                let cost = self.cost(&r.task);
                let key = (Reverse(Seconds(r.tl)), Seconds(cost), Reverse(r.seq));
                self.heap.push(Queued { key, item: r });
            }
            Policy::Heft => {
                let slot = self.heft_place(&r)?;
                self.queues[slot].push_back(r);
                self.queued += 1;
            }
            Policy::Locality => {
                let slot = match &self.partition {
                    Some(p) => p.part_of(&self.engine, &r.task)? % self.queues.len(),
                    None => 0,
                };
                self.backlog[slot] += self.estimate(&r.task).0;
                self.queues[slot].push_back(r);
                self.queued += 1;
            }
        }
        Ok(())
    }

    /// The tiles a task reads from the store or a cache: each distinct
    /// tile once, without zero tiles that no task writes.
    pub(super) fn read_tiles(&mut self, task: &Task) -> Result<Vec<(TileRef, u64)>, SimError> {
        let tiles = self.engine.reads(task)?;
        let mut out: Vec<(TileRef, u64)> = Vec::with_capacity(tiles.len());
        let cost = &self.costs[task.stmt.index()];
        for (i, t) in tiles.into_iter().enumerate() {
            if out.iter().any(|(o, _)| *o == t) {
                continue;
            }
            if self.inst.program.is_zero(t.matrix) && self.engine.writer(&t)?.is_empty() {
                continue;
            }
            let b = cost.read_bytes.get(i).copied().unwrap_or(0);
            out.push((t, b));
        }
        Ok(out)
    }

    /// HEFT: the live worker with the earliest estimated finish time.
    pub(super) fn heft_place(&mut self, r: &Ready) -> Result<usize, SimError> {
        let reads = self.read_tiles(&r.task)?;
        let st = &self.costs[r.task.stmt.index()];
        let store = self.cfg.costs.store;
        let writes: f64 = st.write_bytes.iter().map(|&b| store.transfer(b)).sum();
        let base = st.seconds + writes;
        let mut best: Option<(f64, usize)> = None;
        for (w, worker) in self.workers.iter().enumerate() {
            if worker.state == State::Gone {
                continue;
            }
            let transfer: f64 = reads
                .iter()
                .map(|(t, b)| match input_cut(self.inst, &self.cfg.costs, t) {
                    Some(cut) => cut.transfer(*b),
                    None if worker.cache.as_ref().is_some_and(|c| c.contains(t)) => 0.0,
                    None => store.transfer(*b),
                })
                .sum();
            let eft = worker.est_free.max(self.now) + transfer + base;
            if best.is_none_or(|(e, _)| eft < e) {
                best = Some((eft, w));
            }
        }
        match best {
            Some((eft, w)) => {
                self.workers[w].est_free = eft;
                Ok(self.workers[w].slot)
            }
            // No worker yet: the first slot (a worker will take it).
            None => Ok(0),
        }
    }

    /// The next task for worker `w`, by the policy.
    fn pick(&mut self, w: usize) -> Option<Ready> {
        match self.cfg.policy {
            Policy::Fifo => self.fifo.pop_front(),
            Policy::CriticalPath => self.heap.pop().map(|b| b.item),
            Policy::Heft => {
                let slot = self.workers[w].slot;
                let mut got = self.queues.get_mut(slot).and_then(VecDeque::pop_front);
                if got.is_none() && self.queued > 0 {
                    // Steal from the longest queue whose worker is gone
                    // (a placement is final otherwise).
                    let victim = self
                        .free_slots
                        .iter()
                        .copied()
                        .max_by_key(|&s| self.queues[s].len())
                        .filter(|&s| !self.queues[s].is_empty());
                    got = victim.and_then(|s| self.queues[s].pop_front());
                }
                if got.is_some() {
                    self.queued -= 1;
                }
                got
            }
            Policy::Locality => self.pick_local(w),
        }
    }

    /// Locality: worker `w` runs the newest task of its own queue (the one
    /// whose inputs its cache most likely still holds: depth first, as a
    /// work-stealing runtime's owner does), else steals the oldest task of
    /// another queue, if it would finish it before that queue's owner
    /// would (see [`Sim::steal`]).
    fn pick_local(&mut self, w: usize) -> Option<Ready> {
        let own = self.workers[w].slot;
        let mut got = self
            .queues
            .get_mut(own)
            .and_then(VecDeque::pop_back)
            .map(|r| (own, r));
        if got.is_none() && self.queued > 0 {
            got = self
                .steal(own)
                .and_then(|s| self.queues[s].pop_front().map(|r| (s, r)));
        }
        let (slot, r) = got?;
        self.queued -= 1;
        if self.queues[slot].is_empty() {
            self.backlog[slot] = 0.0;
        } else {
            self.backlog[slot] -= self.estimate(&r.task).0;
        }
        Some(r)
    }

    /// Locality: the queue an idle worker whose own queue is empty steals
    /// from, if any. The owner of a queue runs its newest task first, so
    /// the oldest (its front) is the one it would run last: it finishes
    /// it when its current task and the whole queue are done. A thief
    /// finishes it after reading all its tiles from the store and doing
    /// it. It steals where that gains most, and only where it gains: a
    /// steal that finishes no sooner only moves tiles away from where
    /// their readers will run. A queue that no live worker holds is
    /// stolen from first, longest first.
    fn steal(&self, own: usize) -> Option<usize> {
        let mut best: Option<((bool, f64), usize)> = None;
        for (s, q) in self.queues.iter().enumerate() {
            let Some(front) = q.front().filter(|_| s != own) else {
                continue;
            };
            let key = match self.holder_free(s) {
                None => (true, q.len() as f64),
                Some(free) => {
                    let (owner, reads) = self.estimate(&front.task);
                    let gain = free + self.backlog[s] - (self.now + owner + reads);
                    if gain <= 0.0 {
                        continue;
                    }
                    (false, gain)
                }
            };
            if best.is_none_or(|(b, _)| key > b) {
                best = Some((key, s));
            }
        }
        best.map(|(_, s)| s)
    }

    /// When the live worker holding `slot` is free to take its next task,
    /// as the scheduler expects it; `None` when no live worker holds it.
    fn holder_free(&self, slot: usize) -> Option<f64> {
        let worker = &self.workers[(*self.holder.get(slot)?)?];
        let free = match worker.state {
            State::Busy => worker
                .running
                .as_ref()
                .map_or(self.now, |r| r.start + r.expected),
            State::Starting => worker.est_free,
            State::Idle { .. } => self.now,
            State::Gone => return None,
        };
        Some(free.max(self.now))
    }

    /// Locality's estimate of a task: the seconds its owner spends on it
    /// (compute and writes; its tiles are mostly at hand) and the seconds
    /// to read all its tiles from the store (what a thief pays).
    fn estimate(&self, task: &Task) -> (f64, f64) {
        let st = &self.costs[task.stmt.index()];
        let store = self.cfg.costs.store;
        let writes: f64 = st.write_bytes.iter().map(|&b| store.transfer(b)).sum();
        let reads: f64 = st.read_bytes.iter().map(|&b| store.transfer(b)).sum();
        (st.seconds + writes, reads)
    }

    /// Idle workers take work: copies first, then ready tasks as the
    /// policy picks them.
    pub(super) fn dispatch(&mut self) -> Result<(), SimError> {
        self.dispatch_copies()?;
        if self.ready_len() == 0 {
            return Ok(());
        }
        let mut still_idle = Vec::new();
        while let Some(w) = self.idle.pop() {
            if !matches!(self.workers[w].state, State::Idle { .. }) {
                continue;
            }
            if self.ready_len() == 0 {
                still_idle.push(w);
                break;
            }
            match self.pick(w) {
                Some(r) => self.start(w, r)?,
                None => still_idle.push(w),
            }
        }
        self.idle.extend(still_idle);
        Ok(())
    }

    /// Copies (speculative backups, lease re-runs of live executions), each
    /// on the next free worker.
    fn dispatch_copies(&mut self) -> Result<(), SimError> {
        while !self.copies.is_empty() {
            let Some(&w) = self.idle.last() else { break };
            if !matches!(self.workers[w].state, State::Idle { .. }) {
                self.idle.pop();
                continue;
            }
            let Some((of, e, copy)) = self.copies.pop_front() else {
                break;
            };
            if !self.runs(of, e) || self.twin(of).is_some() {
                continue;
            }
            self.idle.pop();
            let ready = match &self.workers[of].running {
                Some(run) => run.ready.clone(),
                None => continue,
            };
            match copy {
                Role::Backup => {
                    self.r.backups += 1;
                    let k = self.kernel_of[ready.task.stmt.index()];
                    if let Some(ks) = self.r.kernels.get_mut(k) {
                        ks.backups += 1;
                    }
                }
                Role::LeaseRerun => self.r.lease_reruns += 1,
                Role::First => {}
            }
            self.start(w, ready)?;
            if let Some(run) = self.workers[w].running.as_mut() {
                run.copy = copy;
                run.twin = Some(of);
            }
            if let Some(run) = self.workers[of].running.as_mut() {
                run.twin = Some(w);
            }
        }
        Ok(())
    }
}
