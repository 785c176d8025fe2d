//! Inlay hints: after each kernel call, its task count at the parameter
//! values of the document's `# params: N=8, M=4` comment (the values a
//! user is thinking about, which hover uses too). A document without that
//! comment gets no hints: counts at default values nobody chose would be
//! noise on every line. The counts come from the compiled program, once
//! the background worker has delivered it, by the same counting as `lpkc
//! stats` within a budget; a statement whose count runs past it gets none.

use crate::lsp::analysis::Analysis;
use crate::lsp::plans;
use lsp_types::{InlayHint, InlayHintLabel, InlayHintTooltip};

/// The hints of the statements that end in bytes `start..=end`.
pub(crate) fn hints(a: &Analysis, start: usize, end: usize) -> Vec<InlayHint> {
    let params = a.instance_params();
    if params.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for i in 0..a.checked.module.programs.len() {
        let Some(p) = a.compiled(i) else {
            continue;
        };
        let Some((counts, at)) = plans::counts_at(p, &params) else {
            continue;
        };
        for (id, st) in p.statement_ids() {
            let stop = st.span.1 as usize;
            if stop < start || stop > end {
                continue;
            }
            let Some(&n) = counts.get(id.index()) else {
                continue;
            };
            let label = if n == 1 {
                "1 task".to_string()
            } else {
                format!("{n} tasks")
            };
            out.push(InlayHint {
                position: a.range(stop, stop).end,
                label: InlayHintLabel::String(label),
                kind: None,
                text_edits: None,
                tooltip: Some(InlayHintTooltip::String(format!(
                    "`{}` runs this many tasks at {} (the `# params:` comment)",
                    plans::name(p, id),
                    at.join(", ")
                ))),
                padding_left: Some(true),
                padding_right: None,
                data: None,
            });
        }
    }
    out
}
