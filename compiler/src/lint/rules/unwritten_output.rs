//! W0508: an `output` that no statement that can run writes at all (an
//! output written only in part is normal and not reported). No oracle
//! violation.
//!
//! Proof: every statement writing it is proved never to run
//! ([`super::never_runs`]), or there is none.

use crate::diag::{Code, Diagnostic};
use crate::front::hir;
use lpk_model::program::{Program, Role};
use lpk_model::MatrixId;

/// The rule's code.
pub(crate) const CODE: Code = Code::W0508;

/// Output matrices that no statement that may run writes.
pub(crate) fn unwritten_outputs(p: &Program, never: &[bool]) -> Vec<MatrixId> {
    p.matrix_ids()
        .filter(|&(m, d)| {
            d.role == Role::Output
                && !p.statements.iter().enumerate().any(|(s, st)| {
                    !never.get(s).copied().unwrap_or(false)
                        && st.writes.iter().any(|w| w.matrix == m)
                })
        })
        .map(|(m, _)| m)
        .collect()
}

/// The warning at the output's declaration.
pub(crate) fn diagnostic(decl: &hir::Matrix) -> Diagnostic {
    Diagnostic::warning(
        CODE,
        format!("output `{}` is never written", decl.name),
        decl.name_span,
    )
    .with_primary_message("declared as an output here")
    .with_note("no statement that can run writes any of its tiles")
    .with_help("write its tiles, or declare it as `input` or `matrix`")
}
