//! W0509: two kernel calls that start on one line, whose task names
//! (`kernel@LINE(...)`) then clash. Syntactic; no oracle violation.

use crate::diag::{Code, Diagnostic};
use crate::lint::span;
use lpk_grammar::ast::FileId;
use lpk_model::program::Program;
use std::collections::BTreeMap;

/// The rule's code.
pub(crate) const CODE: Code = Code::W0509;

/// A warning for every kernel call that starts on the line of an earlier
/// one, in statement order, pointing at the first call of the line. One
/// pass: the first call of each line is looked up, not searched for (a
/// generated line may hold thousands of calls).
pub(crate) fn diagnostics(p: &Program, file: FileId) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut first_on_line = BTreeMap::new();
    for (s, st) in p.statements.iter().enumerate() {
        let first = *first_on_line.entry(st.line).or_insert(s);
        if let Some(first) = p.statements.get(first).filter(|_| first != s) {
            out.push(
                Diagnostic::warning(
                    CODE,
                    format!("two kernel calls start on line {}", st.line),
                    span(file, st.span),
                )
                .with_primary_message("this call")
                .with_label(span(file, first.span), "and this one")
                .with_note(format!(
                    "their tasks are told apart as `kernel@{}:COLUMN(...)` only",
                    st.line
                ))
                .with_help("put each kernel call on its own line"),
            );
        }
    }
    out
}
