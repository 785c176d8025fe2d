//! E0506: some parameter value satisfies the `require`s. No oracle
//! violation: when the rule fails there is no instance to expand.
//!
//! Proof: the `require`s alone, one more at a time, as integer
//! feasibility; when that does not refute them, the exhaustive check's
//! finding no instance at all reports it as checked.

use crate::constraint::affine::Side;
use crate::constraint::system::System;
use crate::diag::{Code, Diagnostic};
use crate::front::hir;
use crate::lint::exhaustive::Coverage;
use crate::lint::{checked_text, proved_text};
use lpk_model::program::Program;

/// The rule's code.
pub(crate) const CODE: Code = Code::E0506;

/// The first `require` (0-based) that, with the ones before it, no
/// parameter value within the ceiling satisfies; `None` when the solver
/// cannot prove the `require`s unsatisfiable.
pub(crate) fn unsatisfiable_require(p: &Program) -> Option<usize> {
    let mut sys = System::new();
    for (i, &r) in p.requires.iter().enumerate() {
        sys.assume(&p.exprs, Side::First, r, true);
        if !sys.feasible() {
            return Some(i);
        }
    }
    None
}

/// The diagnostic of requirement `i`, proved unsatisfiable or only
/// checked (with the exhaustive check's coverage).
pub(crate) fn diagnostic(
    hir_program: &hir::ProgramDef,
    p: &Program,
    i: usize,
    proved: bool,
    coverage: Option<&Coverage>,
) -> Diagnostic {
    let sp = hir_program
        .requires
        .get(i)
        .map(|&e| hir_program.expr(e).span)
        .unwrap_or(hir_program.name_span);
    let basis = if proved {
        proved_text(p).replacen("proved for all", "proved over all", 1)
    } else {
        checked_text(p, coverage.unwrap_or(&Coverage::default()))
    };
    Diagnostic::error(CODE, "no parameter value satisfies the `require`s", sp)
        .with_primary_message(if i == 0 {
            "this requirement can never hold".to_string()
        } else {
            "this requirement contradicts the ones before it".to_string()
        })
        .with_note(format!("{basis}: the program can never run"))
        .with_help("fix the condition; every instance would be rejected when it is bound")
}
