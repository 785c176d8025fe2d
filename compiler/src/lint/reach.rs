//! Reachability: `require`s that no parameter value satisfies, and
//! statements (whole branches) that run for no parameter value, both as
//! integer feasibility of the `require`s and the statement's domain.

use super::split::Split;
use crate::constraint::system::System;
use model::program::Program;

/// The first `require` (0-based) that, with the ones before it, no
/// parameter value within the ceiling satisfies; `None` when the solver
/// cannot prove the `require`s unsatisfiable.
pub(crate) fn unsatisfiable_require(p: &Program) -> Option<usize> {
    let mut sys = System::new();
    for (i, &r) in p.requires.iter().enumerate() {
        sys.assume(&p.exprs, 0, r, true);
        if !sys.feasible() {
            return Some(i);
        }
    }
    None
}

/// Per statement: whether it provably never runs.
pub(crate) fn never_runs(sp: &Split) -> Vec<bool> {
    sp.variants
        .iter()
        .enumerate()
        .map(|(s, vs)| (0..vs.len()).all(|i| !sp.with_domain(s, i, 0).feasible()))
        .collect()
}
