//! Utilisation over time: the [`Timeline`] a report carries (busy and live
//! workers per bin), and the fixed-size histogram the engine accumulates it
//! in as workers start, run and stop.

/// Utilisation over time: busy and live workers, averaged per bin.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// Time of the first bin's start (negative when workers were requested
    /// before the run).
    pub start: f64,
    /// Seconds per bin.
    pub width: f64,
    /// Busy worker-seconds per bin.
    pub busy: Vec<f64>,
    /// Live (requested, not yet gone) worker-seconds per bin.
    pub live: Vec<f64>,
}

/// Bins of a histogram: merged pairwise as the run grows, so memory stays
/// fixed however long it runs.
const BINS: usize = 400;

/// The busy and live worker counts integrated over time into a
/// [`Timeline`] of [`BINS`] bins.
pub(crate) struct Histogram {
    /// The integrals so far.
    pub(crate) t: Timeline,
    last: f64,
    /// Workers running an execution now.
    pub(crate) busy_now: usize,
    /// Workers requested and not yet gone now.
    pub(crate) live_now: usize,
}

impl Histogram {
    /// An empty histogram from time `start`.
    pub(crate) fn new(start: f64) -> Self {
        Histogram {
            t: Timeline {
                start,
                width: 1e-6,
                busy: vec![0.0; BINS],
                live: vec![0.0; BINS],
            },
            last: start,
            busy_now: 0,
            live_now: 0,
        }
    }

    /// Accounts for the time up to `now` at the current counts.
    pub(crate) fn advance(&mut self, now: f64) {
        if now <= self.last {
            return;
        }
        while now - self.t.start > self.t.width * BINS as f64 {
            // Merge bins pairwise, doubling their width.
            for v in [&mut self.t.busy, &mut self.t.live] {
                for i in 0..BINS / 2 {
                    v[i] = v[2 * i] + v[2 * i + 1];
                }
                for x in &mut v[BINS / 2..] {
                    *x = 0.0;
                }
            }
            self.t.width *= 2.0;
        }
        let (b, l) = (self.busy_now as f64, self.live_now as f64);
        let mut a = self.last;
        while a < now {
            let i = (((a - self.t.start) / self.t.width) as usize).min(BINS - 1);
            let end = (self.t.start + (i + 1) as f64 * self.t.width).min(now);
            let end = if end <= a { now } else { end };
            self.t.busy[i] += b * (end - a);
            self.t.live[i] += l * (end - a);
            a = end;
        }
        self.last = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_keeps_the_integral() {
        let mut h = Histogram::new(0.0);
        h.busy_now = 2;
        h.live_now = 3;
        h.advance(10.0);
        h.busy_now = 1;
        h.advance(1000.0);
        let busy: f64 = h.t.busy.iter().sum();
        let live: f64 = h.t.live.iter().sum();
        assert!((busy - (20.0 + 990.0)).abs() < 1e-6, "{busy}");
        assert!((live - 3000.0).abs() < 1e-6, "{live}");
        assert!(h.t.width * BINS as f64 >= 1000.0);
    }
}
