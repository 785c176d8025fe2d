//! Dependence plans and their evaluator. A plan answers "which iterations
//! of statement S access tile `t` through access A?" with integer
//! arithmetic only: a straight-line list of steps that assign slots from
//! closed forms, check conditions, and enumerate what no equation fixes.
//!
//! Slot layout while a plan runs: `0..depth` are the statement's loop
//! variables (the answer), `depth..depth + inputs` the tile's coordinates,
//! and the rest temporaries. Any evaluation error rejects the candidate at
//! hand: a real task's expressions always evaluate in a valid instance, so
//! rejecting never drops a true answer.

use crate::expr::{ceil_div, exact_log, floor_div, floor_mod, Env, EvalError, ExprPool, ExprRef};
use serde::{Deserialize, Serialize};

/// One step of a plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStep {
    /// `slot := value`.
    Set {
        /// Target slot.
        slot: u32,
        /// Int expression over known slots.
        value: ExprRef,
    },
    /// `slot := num / den`, rejecting when `den` does not divide `num`.
    SetDiv {
        /// Target slot.
        slot: u32,
        /// Numerator.
        num: ExprRef,
        /// Denominator (non-zero constant).
        den: i64,
    },
    /// `slot := k` with `base ** k == value`, rejecting when there is no
    /// such `k`.
    SetLog {
        /// Target slot.
        slot: u32,
        /// The power's value.
        value: ExprRef,
        /// The base (at least 2).
        base: i64,
    },
    /// Reject unless `cond` holds.
    Check {
        /// Bool expression over known slots.
        cond: ExprRef,
    },
    /// Reject unless `lo <= slot < hi`.
    CheckRange {
        /// The checked slot.
        slot: u32,
        /// Inclusive lower bound.
        lo: ExprRef,
        /// Exclusive upper bound.
        hi: ExprRef,
    },
    /// An enumeration (see [`RangeStep`]).
    Range(RangeStep),
}

impl PlanStep {
    /// The slot the step sets (`None` for the checks).
    pub fn assigned_slot(&self) -> Option<u32> {
        match self {
            PlanStep::Set { slot, .. }
            | PlanStep::SetDiv { slot, .. }
            | PlanStep::SetLog { slot, .. }
            | PlanStep::Range(RangeStep { slot, .. }) => Some(*slot),
            PlanStep::Check { .. } | PlanStep::CheckRange { .. } => None,
        }
    }
}

/// For every `slot` in `range(lo, hi, step)` that also satisfies
/// `slot >= l` for each `l` in `lower` and `slot < u` for each `u` in
/// `upper`, run the rest of the plan. Serialised as the fields of
/// [`PlanStep::Range`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RangeStep {
    /// The enumerated slot.
    pub slot: u32,
    /// The loop's lower bound (the step's origin).
    pub lo: ExprRef,
    /// The loop's upper bound.
    pub hi: ExprRef,
    /// The loop's step.
    pub step: ExprRef,
    /// Extra inclusive lower bounds derived from other constraints.
    pub lower: Vec<ExprRef>,
    /// Extra exclusive upper bounds derived from other constraints.
    pub upper: Vec<ExprRef>,
}

/// A plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The statement's loop depth: slots `0..depth` are the answer.
    pub depth: u32,
    /// Number of inputs (tile coordinates) after the answer slots.
    pub inputs: u32,
    /// Total number of slots.
    pub slots: u32,
    /// The steps.
    pub steps: Vec<PlanStep>,
}

/// Why a plan could not be run to completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The work budget ran out (an enumeration too large to be real).
    #[error("the plan enumerated more than its work budget allows")]
    Budget,
    /// The plan's shape does not fit its inputs (a corrupt artifact).
    #[error("malformed plan")]
    Malformed,
}

/// Reusable scratch memory for running plans without allocating.
#[derive(Default, Debug)]
pub struct Scratch {
    slots: Vec<i64>,
}

impl Plan {
    /// Runs the plan for the given tile coordinates, calling `emit` with the
    /// loop variables of every answer until it returns `false`. `budget` is
    /// decremented per enumerated value and per answer.
    pub fn run(
        &self,
        pool: &ExprPool,
        params: &[i64],
        tile: &[i64],
        scratch: &mut Scratch,
        budget: &mut u64,
        emit: &mut dyn FnMut(&[i64]) -> bool,
    ) -> Result<(), PlanError> {
        if tile.len() != self.inputs as usize
            || self.slots < self.depth + self.inputs
            || self.slots > 4096
        {
            return Err(PlanError::Malformed);
        }
        scratch.slots.clear();
        scratch.slots.resize(self.slots as usize, 0);
        let d = self.depth as usize;
        scratch.slots[d..d + tile.len()].copy_from_slice(tile);
        let mut runner = Runner {
            pool,
            params,
            steps: &self.steps,
            depth: d,
            budget,
            emit,
            stopped: false,
        };
        runner.run(0, &mut scratch.slots)
    }
}

struct Runner<'a, 'e> {
    pool: &'a ExprPool,
    params: &'a [i64],
    steps: &'a [PlanStep],
    depth: usize,
    budget: &'a mut u64,
    emit: &'e mut dyn FnMut(&[i64]) -> bool,
    /// Set when `emit` asked to stop.
    stopped: bool,
}

impl Runner<'_, '_> {
    fn int(&self, r: ExprRef, slots: &[i64]) -> Result<i64, EvalError> {
        self.pool.eval_int(
            r,
            Env {
                params: self.params,
                slots,
            },
        )
    }

    /// Whether condition `cond` evaluates to true at `slots`.
    fn holds(&self, cond: ExprRef, slots: &[i64]) -> bool {
        let ok = self.pool.eval_bool(
            cond,
            Env {
                params: self.params,
                slots,
            },
        );
        ok == Ok(true)
    }

    fn spend(&mut self) -> Result<(), PlanError> {
        if *self.budget == 0 {
            return Err(PlanError::Budget);
        }
        *self.budget -= 1;
        Ok(())
    }

    fn set(slots: &mut [i64], slot: u32, v: i64) -> Result<(), PlanError> {
        *slots.get_mut(slot as usize).ok_or(PlanError::Malformed)? = v;
        Ok(())
    }

    fn run(&mut self, mut k: usize, slots: &mut [i64]) -> Result<(), PlanError> {
        while let Some(step) = self.steps.get(k) {
            match step {
                PlanStep::Set { slot, value } => match self.int(*value, slots) {
                    Ok(v) => Self::set(slots, *slot, v)?,
                    Err(_) => return Ok(()),
                },
                PlanStep::SetDiv { slot, num, den } => {
                    let Ok(n) = self.int(*num, slots) else {
                        return Ok(());
                    };
                    match floor_mod(n, *den) {
                        Ok(0) => match floor_div(n, *den) {
                            Ok(q) => Self::set(slots, *slot, q)?,
                            Err(_) => return Ok(()),
                        },
                        _ => return Ok(()),
                    }
                }
                PlanStep::SetLog { slot, value, base } => {
                    let Ok(v) = self.int(*value, slots) else {
                        return Ok(());
                    };
                    match exact_log(v, *base) {
                        Some(e) => Self::set(slots, *slot, e)?,
                        None => return Ok(()),
                    }
                }
                PlanStep::Check { cond } => {
                    if !self.holds(*cond, slots) {
                        return Ok(());
                    }
                }
                PlanStep::CheckRange { slot, lo, hi } => {
                    let Some(&v) = slots.get(*slot as usize) else {
                        return Err(PlanError::Malformed);
                    };
                    match (self.int(*lo, slots), self.int(*hi, slots)) {
                        (Ok(lo), Ok(hi)) if lo <= v && v < hi => {}
                        _ => return Ok(()),
                    }
                }
                PlanStep::Range(r) => {
                    let (Ok(lo), Ok(hi), Ok(step)) = (
                        self.int(r.lo, slots),
                        self.int(r.hi, slots),
                        self.int(r.step, slots),
                    ) else {
                        return Ok(());
                    };
                    if step <= 0 {
                        return Ok(());
                    }
                    let Some(start) = self.range_start(lo, step, &r.lower, slots) else {
                        return Ok(());
                    };
                    let Some(hi) = self.range_end(hi, &r.upper, slots) else {
                        return Ok(());
                    };
                    return self.enumerate(k, r.slot, (start, hi, step), slots);
                }
            }
            k += 1;
        }
        self.spend()?;
        if !(self.emit)(&slots[..self.depth]) {
            self.stopped = true;
        }
        Ok(())
    }
    /// The first value at least `lo` and every bound of `lower` on the
    /// lattice `lo + step·n`; `None` when a bound fails to evaluate or the
    /// value overflows (the range then has no value).
    fn range_start(&self, lo: i64, step: i64, lower: &[ExprRef], slots: &[i64]) -> Option<i64> {
        let mut start = lo;
        for l in lower {
            let Ok(l) = self.int(*l, slots) else {
                return None;
            };
            if l > start {
                // First value >= l on the step's lattice.
                let Some(Ok(steps)) = l.checked_sub(lo).map(|d| ceil_div(d, step)) else {
                    return None;
                };
                start = steps.checked_mul(step).and_then(|s| s.checked_add(lo))?;
            }
        }
        Some(start)
    }

    /// `hi` capped by every bound of `upper`; `None` when a bound fails to
    /// evaluate.
    fn range_end(&self, mut hi: i64, upper: &[ExprRef], slots: &[i64]) -> Option<i64> {
        for u in upper {
            let Ok(u) = self.int(*u, slots) else {
                return None;
            };
            hi = hi.min(u);
        }
        Some(hi)
    }

    /// Runs the steps after step `k` with `slot` set to each value of
    /// `(start, hi, step)`, in order, until `emit` asks to stop.
    fn enumerate(
        &mut self,
        k: usize,
        slot: u32,
        (start, hi, step): (i64, i64, i64),
        slots: &mut [i64],
    ) -> Result<(), PlanError> {
        let mut v = start;
        while v < hi {
            self.spend()?;
            Self::set(slots, slot, v)?;
            self.run(k + 1, slots)?;
            if self.stopped {
                return Ok(());
            }
            match v.checked_add(step) {
                Some(n) => v = n,
                None => break,
            }
        }
        Ok(())
    }
}
