//! E0502: no task writes an `input`. Oracle: `Violation::WriteToInput`.
//!
//! Proof: for each write access of an input, the statement's domain with
//! the `require`s is infeasible (the statement never runs).

use super::{blocked, Blocked, ErrorRule};
use crate::constraint::affine::Side;
use crate::diag::Code;
use crate::lint::split::Split;
use lpk_model::program::Program;

/// The rule: its code, its name and what its findings say.
pub(crate) const RULE: ErrorRule = ErrorRule {
    code: Code::E0502,
    name: "no write to an input",
    here: "writes an input",
    there: "",
    help: "write into an `output` or `matrix` instead; inputs are read-only",
};

/// Whether no task can ever write a tile of an input (proved when true).
pub(crate) fn proved(p: &Program, sp: &Split) -> Result<(), Blocked> {
    for (s, i, _) in sp.all() {
        let Some(st) = p.statements.get(s) else {
            continue;
        };
        for w in &st.writes {
            if super::is_input(p, w.matrix) {
                let sys = sp.with_domain(s, i, Side::First);
                if sys.feasible() {
                    return Err(blocked(p, &sp.exprs, &sys, &[s]));
                }
            }
        }
    }
    Ok(())
}
