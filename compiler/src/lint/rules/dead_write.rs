//! W0501, dead write: an access to an intermediate `matrix` whose tiles no
//! read access can ever name. No oracle violation.
//!
//! Proof: for every read access of the matrix, the writer's and the
//! reader's domains, the `require`s and the index equations are
//! infeasible.

use crate::constraint::affine::Side;
use crate::diag::{Code, Diagnostic};
use crate::lint::split::Split;
use crate::lint::{proved_text, span};
use lpk_grammar::ast::FileId;
use lpk_model::program::{Access, Program, Role};
use lpk_model::StmtId;

/// The rule's code.
pub(crate) const CODE: Code = Code::W0501;

/// Write accesses (statement, access) of intermediate matrices that no
/// read access can ever meet, for any parameter value (proved), among
/// statements that may run.
pub(crate) fn dead_writes(p: &Program, sp: &Split, never: &[bool]) -> Vec<(StmtId, u32)> {
    let pool = &sp.exprs;
    let mut out = Vec::new();
    for (id, st) in p.statement_ids() {
        let s = id.index();
        if never.get(s).copied().unwrap_or(false) {
            continue;
        }
        let Some(w_variants) = sp.variants.get(s) else {
            continue;
        };
        for (a, w) in st.writes.iter().enumerate() {
            let temporary = p
                .get_matrix(w.matrix)
                .is_some_and(|m| m.role == Role::Temporary);
            if !temporary {
                continue;
            }
            let may_be_read = w_variants.iter().enumerate().any(|(wi, wv)| {
                sp.all().any(|(rs, ri, rv)| {
                    rv.st.reads.iter().any(|r| {
                        let Some(w) = wv.st.writes.get(a) else {
                            return true;
                        };
                        if r.matrix != w.matrix || super::constant_clash(pool, w, r) {
                            return false;
                        }
                        let mut sys = sp.with_domain(s, wi, Side::First);
                        sp.add_domain(&mut sys, rs, ri, Side::Second);
                        for (&x, &y) in w.indices.iter().zip(&r.indices) {
                            if let (Some(fx), Some(fy)) = (
                                sys.form(pool, Side::First, x),
                                sys.form(pool, Side::Second, y),
                            ) {
                                sys.eq(&fx, &fy);
                            }
                        }
                        sys.feasible()
                    })
                })
            });
            if !may_be_read {
                out.push((id, a as u32));
            }
        }
    }
    out
}

/// The warning at write access `w`.
pub(crate) fn diagnostic(p: &Program, file: FileId, w: &Access) -> Diagnostic {
    let name = p
        .get_matrix(w.matrix)
        .map(|m| m.name.as_str())
        .unwrap_or("?");
    Diagnostic::warning(
        CODE,
        format!("tiles written here are never read, and `{name}` is not an output"),
        span(file, w.span),
    )
    .with_primary_message("dead write")
    .with_note(format!(
        "{}: no read access of `{name}` can name a tile this access writes",
        proved_text(p)
    ))
    .with_help(format!(
        "read the result, declare `{name}` as an `output`, or remove the call"
    ))
}
