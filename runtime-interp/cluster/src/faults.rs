//! `--inject-faults`: a testing aid that makes a worker fail at the worst
//! moments, as numpywren's fault injection did, so tests can prove that a
//! run survives them.
//!
//! `SPEC` is comma-separated `NAME=PROBABILITY`:
//! - `crash-before-write`: after the kernel ran, before any output is
//!   written, the process exits at once (exit code 86);
//! - `crash-after-write`: after the outputs and the done marker are
//!   written, before the task is completed in Redis, the process exits at
//!   once (exit code 87);
//! - `stall`: the worker stops renewing the task's lease and sleeps for
//!   twice the lease before going on, so another worker takes the task
//!   over while this one still holds it; both then complete it.

use lpk_model::rng::SplitMix64;

/// Fault probabilities per task.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Faults {
    /// Probability of exiting before writing outputs.
    pub crash_before_write: f64,
    /// Probability of exiting after writing outputs, before completing.
    pub crash_after_write: f64,
    /// Probability of stalling (no lease renewal).
    pub stall: f64,
}

/// The exit code of a `crash-before-write`.
pub(crate) const EXIT_BEFORE_WRITE: i32 = 86;
/// The exit code of a `crash-after-write`.
pub(crate) const EXIT_AFTER_WRITE: i32 = 87;

impl Faults {
    /// Parses a `SPEC`.
    pub fn parse(spec: &str) -> Result<Faults, String> {
        let mut f = Faults::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, p) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}`: expected NAME=PROBABILITY"))?;
            let p: f64 = p
                .trim()
                .parse()
                .ok()
                .filter(|p: &f64| (0.0..=1.0).contains(p))
                .ok_or_else(|| format!("`{part}`: the probability must be a number from 0 to 1"))?;
            match name.trim() {
                "crash-before-write" => f.crash_before_write = p,
                "crash-after-write" => f.crash_after_write = p,
                "stall" => f.stall = p,
                other => {
                    return Err(format!(
                        "`{other}` is not a fault (known: crash-before-write, crash-after-write, stall)"
                    ))
                }
            }
        }
        Ok(f)
    }

    /// Whether any fault is enabled.
    pub fn any(&self) -> bool {
        self.crash_before_write > 0.0 || self.crash_after_write > 0.0 || self.stall > 0.0
    }
}

/// The fault draws of one worker process ([`SplitMix64`], seeded per
/// process).
#[derive(Debug)]
pub(crate) struct Dice(SplitMix64);

impl Dice {
    /// A generator seeded from the clock and the process id.
    pub fn new() -> Dice {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Dice(SplitMix64::new(t ^ (u64::from(std::process::id()) << 32)))
    }

    /// A generator with a fixed seed.
    #[cfg(test)]
    fn seeded(seed: u64) -> Dice {
        Dice(SplitMix64::new(seed))
    }

    /// A uniform draw in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        self.0.unit()
    }

    /// True with probability `p`.
    pub fn hit(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }
}

impl Default for Dice {
    fn default() -> Self {
        Dice::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_errors_say_why() {
        let f = Faults::parse("crash-after-write=0.05, crash-before-write=0.05,stall=0.02")
            .expect("a valid spec");
        assert_eq!(f.crash_after_write, 0.05);
        assert_eq!(f.crash_before_write, 0.05);
        assert_eq!(f.stall, 0.02);
        assert!(Faults::parse("explode=0.1")
            .unwrap_err()
            .contains("not a fault"));
        assert!(Faults::parse("stall=2")
            .unwrap_err()
            .contains("from 0 to 1"));
        assert!(Faults::parse("stall")
            .unwrap_err()
            .contains("NAME=PROBABILITY"));
        assert!(!Faults::parse("").expect("empty").any());
    }

    #[test]
    fn dice_hit_at_about_the_rate() {
        let mut d = Dice::seeded(1);
        let hits = (0..10_000).filter(|_| d.hit(0.1)).count();
        assert!((800..1200).contains(&hits), "{hits}");
        assert!(!(0..1000).any(|_| d.hit(0.0)));
    }
}
