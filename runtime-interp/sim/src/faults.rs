//! The fault model's settings: worker failures and the leases that recover
//! their tasks, stragglers, and speculative backups, each with the check
//! that makes it usable. The engine applies them (`engine::executions`).

use crate::error::SimError;

/// Worker failures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Failures {
    /// Probability that a worker dies during one execution.
    pub rate: f64,
    /// The lease of every execution.
    pub lease: Lease,
}

impl Failures {
    /// The rate and the lease, checked.
    pub(crate) fn check(&self) -> Result<(), SimError> {
        if !(0.0..1.0).contains(&self.rate) {
            return bad(format!(
                "the failure rate must be at least 0 and below 1, found {}",
                self.rate
            ));
        }
        match self.lease {
            Lease::Fixed(s) if !positive(s) => {
                return bad(format!("the lease must be above 0 seconds, found {s}"))
            }
            Lease::Auto(a)
                if !(unit(a.q)
                    && unit(a.c)
                    && a.factor.is_finite()
                    && a.factor >= 1.0
                    && positive(a.fallback_s)) =>
            {
                return bad(format!(
                    "an automatic lease needs q and c strictly between 0 and 1, a factor of at \
                     least 1 and a fallback above 0 seconds, found q = {}, c = {}, factor = {}, \
                     fallback = {}",
                    a.q, a.c, a.factor, a.fallback_s
                ));
            }
            _ => {}
        }
        Ok(())
    }
}

/// The lease of an execution: it runs from the execution's start. When it
/// expires before the execution ends, the task is queued again if the
/// worker died, and a copy is started beside it (the first to finish
/// wins) if the worker is alive.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lease {
    /// This many seconds for every execution.
    Fixed(f64),
    /// Per kernel, from the durations observed so far.
    Auto(AutoLease),
}

/// A lease from a quantile bound: `factor` times the upper bound of the
/// `q`-quantile at confidence `c` of the kernel's observed durations, once
/// it has at least `min` of them and they suffice for the bound;
/// `fallback_s` before.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AutoLease {
    /// The quantile.
    pub q: f64,
    /// The confidence.
    pub c: f64,
    /// The safety factor (at least 1).
    pub factor: f64,
    /// Observations needed before the bound is used.
    pub min: usize,
    /// The lease before that.
    pub fallback_s: f64,
}

impl AutoLease {
    /// `q = 0.99`, `c = 0.9`, `factor = 2`, `min = 20`, `fallback = 30 s`
    /// (the bound needs 230 observations of a kernel: `1 - 0.99^n >= 0.9`).
    /// A quantile above the share of stragglers keeps healthy slow
    /// executions under the lease (docs/simulation.md).
    pub const DEFAULT: AutoLease = AutoLease {
        q: 0.99,
        c: 0.9,
        factor: 2.0,
        min: 20,
        fallback_s: 30.0,
    };
}

/// Stragglers: each execution independently takes `slow` times its
/// modelled time (reads, compute and writes) with probability `rate`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stragglers {
    /// Probability that an execution straggles.
    pub rate: f64,
    /// Its slow-down factor (at least 1).
    pub slow: f64,
}

impl Stragglers {
    /// The rate and the slow-down, checked.
    pub(crate) fn check(&self) -> Result<(), SimError> {
        if !((0.0..=1.0).contains(&self.rate) && self.slow.is_finite() && self.slow >= 1.0) {
            return bad(format!(
                "stragglers need a rate from 0 to 1 and a slow-down of at least 1, found rate = \
                 {}, slow = {}",
                self.rate, self.slow
            ));
        }
        Ok(())
    }
}

/// Speculative re-execution: once a kernel has `min` completed
/// executions, its threshold is the upper bound of the `q`-quantile at
/// confidence `c` of their durations; an execution running longer than its
/// kernel's threshold gets one backup copy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Speculation {
    /// The quantile.
    pub q: f64,
    /// The confidence.
    pub c: f64,
    /// Observations needed before any backup.
    pub min: usize,
}

impl Speculation {
    /// `q = 0.9`, `c = 0.95`, `min = 20`.
    pub const DEFAULT: Speculation = Speculation {
        q: 0.9,
        c: 0.95,
        min: 20,
    };

    /// The quantile and the confidence, checked.
    pub(crate) fn check(&self) -> Result<(), SimError> {
        if !(unit(self.q) && unit(self.c)) {
            return bad(format!(
                "speculation needs q and c strictly between 0 and 1, found q = {}, c = {}",
                self.q, self.c
            ));
        }
        Ok(())
    }
}

/// Unusable settings, and why.
fn bad(m: String) -> Result<(), SimError> {
    Err(SimError::Config(m))
}

/// Whether `x` is a finite number above 0.
fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// Whether `x` is strictly between 0 and 1.
fn unit(x: f64) -> bool {
    x > 0.0 && x < 1.0
}
