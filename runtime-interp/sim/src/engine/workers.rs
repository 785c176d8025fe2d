//! The workers: their life (requested, up after a start-up delay, idle,
//! busy, gone), their LRU tile caches, and how many there are (a fixed
//! pool whose dead are replaced, or numpywren's autoscaling, idle workers
//! let go after `idle` seconds and never before the start-up bound).

use super::{Kind, Running, Sim};
use crate::config::Workers;
use lpk_model::task::TileRef;
use std::collections::VecDeque;
use std::num::NonZeroUsize;

/// Where a worker is in its life.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum State {
    Starting,
    Idle { since: f64 },
    Busy,
    Gone,
}

/// A worker's LRU tile cache of at most `cap` tiles. It grows as tiles
/// come (an `lru::LruCache::new(cap)` allocates its whole capacity up
/// front, which `--cache-tiles 100000000` on many workers turns into
/// gigabytes).
pub(super) struct TileCache {
    lru: lru::LruCache<TileRef, ()>,
    cap: usize,
}

impl TileCache {
    fn new(cap: NonZeroUsize) -> TileCache {
        TileCache {
            lru: lru::LruCache::unbounded(),
            cap: cap.get(),
        }
    }

    pub(super) fn contains(&self, t: &TileRef) -> bool {
        self.lru.contains(t)
    }

    /// Whether `t` is held, marking it most recently used.
    pub(super) fn get(&mut self, t: &TileRef) -> Option<&()> {
        self.lru.get(t)
    }

    pub(super) fn put(&mut self, t: TileRef, v: ()) {
        self.lru.put(t, v);
        if self.lru.len() > self.cap {
            self.lru.pop_lru();
        }
    }
}

/// A simulated worker.
pub(super) struct Worker {
    pub(super) state: State,
    /// When it was requested.
    pub(super) requested: f64,
    /// When it died or exited, if it did.
    pub(super) ended: Option<f64>,
    /// Its queue (HEFT, locality) and its part (locality).
    pub(super) slot: usize,
    pub(super) cache: Option<TileCache>,
    pub(super) running: Option<Running>,
    /// HEFT: when the tasks placed on it are estimated to be done.
    pub(super) est_free: f64,
}

impl Sim<'_, '_> {
    /// Workers the autoscaling policy wants now.
    fn wanted(&self) -> usize {
        match self.cfg.workers {
            Workers::Fixed(n) => n,
            Workers::Autoscale { sf, max, .. } => {
                ((sf * self.ready_len() as f64).ceil() as usize).min(max)
            }
        }
    }

    /// Autoscaling: requests workers until as many are live as it wants.
    pub(super) fn autoscale(&mut self) {
        if let Workers::Autoscale { .. } = self.cfg.workers {
            let want = self.wanted();
            while self.live < want {
                self.request_worker();
            }
        }
    }

    /// Requests a worker, up after a start-up delay drawn from the observed
    /// ones (never before the run is submitted, at 0).
    pub(super) fn request_worker(&mut self) {
        let delay = if self.cfg.startup.is_empty() {
            0.0
        } else {
            let i = (self.rng.next_u64() % self.cfg.startup.len() as u64) as usize;
            self.cfg.startup[i]
        };
        let slot = self.free_slots.pop_first().unwrap_or(0);
        let w = self.workers.len();
        if let Some(h) = self.holder.get_mut(slot) {
            *h = Some(w);
        }
        self.workers.push(Worker {
            state: State::Starting,
            requested: self.now,
            ended: None,
            slot,
            cache: NonZeroUsize::new(self.cfg.cache_tiles).map(TileCache::new),
            running: None,
            est_free: (self.now + delay).max(0.0),
        });
        self.r.workers_started += 1;
        self.hist.advance(self.now);
        self.live += 1;
        self.hist.live_now = self.live;
        self.r.peak_workers = self.r.peak_workers.max(self.live);
        // The run is submitted at 0: a worker requested ahead that is up
        // before then waits for it.
        self.push_event((self.now + delay).max(0.0), Kind::Up(w));
    }

    /// Worker `w` is idle from now (autoscaling: until its idle check).
    pub(super) fn set_idle(&mut self, w: usize) {
        self.workers[w].state = State::Idle { since: self.now };
        // HEFT's estimate: now when nothing is placed on it, else what is
        // placed is still to run.
        let slot = self.workers[w].slot;
        let empty = self.queues.get(slot).is_none_or(VecDeque::is_empty);
        let est = &mut self.workers[w].est_free;
        *est = if empty { self.now } else { est.max(self.now) };
        self.idle.push(w);
        if let Workers::Autoscale { idle, .. } = self.cfg.workers {
            let keep = idle.max(self.cfg.ahead.unwrap_or(0.0));
            self.push_event(self.now + keep, Kind::IdleCheck(w));
        }
    }

    /// Worker `w` is gone (dead or let go): its slot is free again.
    pub(super) fn retire(&mut self, w: usize) {
        let worker = &mut self.workers[w];
        worker.state = State::Gone;
        worker.ended = Some(self.now);
        worker.cache = None;
        let slot = worker.slot;
        if slot < self.queues.len() {
            self.free_slots.insert(slot);
        }
        if let Some(h) = self.holder.get_mut(slot).filter(|h| **h == Some(w)) {
            *h = None;
        }
        self.live -= 1;
        self.hist.live_now = self.live;
    }

    /// Autoscaling: worker `w` exits if it has been idle long enough.
    pub(super) fn idle_check(&mut self, w: usize) {
        let Workers::Autoscale { idle, .. } = self.cfg.workers else {
            return;
        };
        let keep = idle.max(self.cfg.ahead.unwrap_or(0.0));
        if let State::Idle { since } = self.workers[w].state {
            if self.now - since >= keep - 1e-12 {
                self.retire(w);
            }
        }
    }
}
