//! W0502: a kernel call (so a whole branch, if it is alone there) that
//! runs for no parameter value. No oracle violation.
//!
//! Proof: the statement's domain (every variant of its split) with the
//! `require`s is infeasible ("proved"); otherwise, a statement the
//! exhaustive check never saw run is reported as "checked; not proved".

use crate::constraint::affine::Side;
use crate::diag::{Code, Diagnostic};
use crate::lint::exhaustive::Coverage;
use crate::lint::split::Split;
use crate::lint::{checked_text, proved_text, span};
use lpk_grammar::ast::FileId;
use lpk_model::program::{Program, Statement};

/// The rule's code.
pub(crate) const CODE: Code = Code::W0502;

/// Per statement: whether it provably never runs.
pub(crate) fn never_runs(sp: &Split) -> Vec<bool> {
    sp.variants
        .iter()
        .enumerate()
        .map(|(s, vs)| (0..vs.len()).all(|i| !sp.with_domain(s, i, Side::First).feasible()))
        .collect()
}

/// The warning at statement `st`, proved or only checked.
pub(crate) fn diagnostic(
    p: &Program,
    file: FileId,
    st: &Statement,
    proved: bool,
    coverage: Option<&Coverage>,
) -> Diagnostic {
    let basis = if proved {
        proved_text(p)
    } else {
        coverage
            .map(|c| format!("{}; not proved", checked_text(p, c)))
            .unwrap_or_default()
    };
    Diagnostic::warning(
        CODE,
        "this statement runs for no parameter value",
        span(file, st.span),
    )
    .with_primary_message("never runs")
    .with_note(format!(
        "{basis}: its loops and guards, with the `require`s, admit no iteration"
    ))
    .with_help("check the guards and loop bounds around it, or remove the dead code")
}
