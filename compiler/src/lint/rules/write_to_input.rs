//! E0502: no task writes an `input`. Oracle: `Violation::WriteToInput`.
//!
//! Proof: for each write access of an input, the statement's domain with
//! the `require`s is infeasible (the statement never runs).

use super::{blocked, Blocked, FindingText};
use crate::constraint::affine::Side;
use crate::diag::Code;
use crate::lint::split::Split;
use lpk_model::program::Program;

/// The rule's code.
pub(crate) const CODE: Code = Code::E0502;
/// The rule, as a noun phrase.
pub(crate) const RULE: &str = "no write to an input";
/// What a finding says.
pub(crate) const TEXT: FindingText = FindingText {
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
