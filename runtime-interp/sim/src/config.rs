//! A simulation's settings: the [`Config`] a caller fills in, the
//! [`Workers`] it runs on, and the check that rejects unusable settings
//! before anything runs.

use crate::cost::CostModel;
use crate::error::SimError;
use crate::faults::{Failures, Speculation, Stragglers};
use crate::policy::Policy;

/// How many workers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Workers {
    /// This many, for the whole run (a dead one is replaced).
    Fixed(usize),
    /// numpywren's policy.
    Autoscale {
        /// Workers per ready task.
        sf: f64,
        /// At most this many.
        max: usize,
        /// Seconds idle before a worker exits.
        idle: f64,
    },
}

/// A simulation's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Tile side in elements.
    pub block: u64,
    /// The cost model.
    pub costs: CostModel,
    /// The kernels: their flop and result-shape models price a task that
    /// the cost model has no calibrated time for.
    pub kernels: lpk_runtime::kernels::Registry,
    /// The workers.
    pub workers: Workers,
    /// The policy.
    pub policy: Policy,
    /// Observed start-up delays, drawn from for every worker (none: 0).
    pub startup: Vec<f64>,
    /// The start-up bound `D`: request the first workers `D` before the
    /// run and keep idle workers at least `D`.
    pub ahead: Option<f64>,
    /// Tiles each worker keeps (LRU); 0 keeps none.
    pub cache_tiles: usize,
    /// Failures, if any.
    pub failures: Option<Failures>,
    /// Stragglers, if any.
    pub stragglers: Option<Stragglers>,
    /// Speculative re-execution, if any.
    pub speculation: Option<Speculation>,
    /// Seed of the random draws (delays, failures).
    pub seed: u64,
    /// The most nodes of the coarsened graph (`locality`).
    pub partition_nodes: usize,
}

impl Config {
    /// Defaults for `block` and `workers`.
    pub fn new(block: u64, workers: Workers) -> Self {
        Config {
            block,
            costs: CostModel::default(),
            kernels: lpk_runtime::kernels::Registry::standard(),
            workers,
            policy: Policy::Fifo,
            startup: Vec::new(),
            ahead: None,
            cache_tiles: 64,
            failures: None,
            stragglers: None,
            speculation: None,
            seed: 1,
            partition_nodes: 4096,
        }
    }

    /// The settings, checked: every number in its range, the fault model's
    /// and the cost model's included.
    pub(crate) fn check(&self) -> Result<(), SimError> {
        let bad = |m: String| Err(SimError::Config(m));
        if self.block == 0 {
            return bad("the block size must be at least 1".into());
        }
        self.workers.check()?;
        if self.startup.iter().any(|d| !(d.is_finite() && *d >= 0.0)) {
            return bad("start-up delays must be finite and not negative".into());
        }
        if let Some(d) = self.ahead {
            if !(d.is_finite() && d >= 0.0) {
                return bad(format!(
                    "the start-up bound must be finite and not negative, found {d}"
                ));
            }
        }
        if let Some(f) = self.failures {
            f.check()?;
        }
        if let Some(s) = self.stragglers {
            s.check()?;
        }
        if let Some(s) = self.speculation {
            s.check()?;
        }
        self.costs
            .check()
            .map_err(|e| SimError::Config(e.to_string()))?;
        Ok(())
    }
}

impl Workers {
    /// The count or the autoscaling settings, checked.
    fn check(&self) -> Result<(), SimError> {
        let bad = |m: String| Err(SimError::Config(m));
        match *self {
            Workers::Fixed(n) if n == 0 || n > 1 << 16 => {
                bad(format!("workers must be between 1 and 65536, found {n}"))
            }
            Workers::Autoscale { sf, max, idle }
                if !(sf > 0.0 && sf.is_finite())
                    || max == 0
                    || max > 1 << 16
                    || !(idle > 0.0 && idle.is_finite()) =>
            {
                bad("autoscale needs sf above 0, max from 1 to 65536, idle above 0".into())
            }
            _ => Ok(()),
        }
    }
}
