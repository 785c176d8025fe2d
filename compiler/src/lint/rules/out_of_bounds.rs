//! E0505: every index of every read and write lies inside the declared
//! extents. Oracle: `Violation::OutOfBounds`.
//!
//! Proof, over all parameter values:
//! for every access and dimension, "the index is negative" and "the index
//! is at least the extent" are each an integer feasibility question over
//! the statement's domain and the `require`s.

use super::FindingText;
use crate::constraint::affine::Affine;
use crate::constraint::affine::Side;
use crate::constraint::system::System;
use crate::diag::Code;
use crate::lint::split::Split;
use model::expr::{ExprPool, ExprRef};
use model::program::{Access, Program, Statement};

/// The rule's code.
pub(crate) const CODE: Code = Code::E0505;
/// The rule, as a noun phrase.
pub(crate) const RULE: &str = "indices inside the extents";
/// What a finding says.
pub(crate) const TEXT: FindingText = FindingText {
    here: "index outside the extents",
    there: "",
    help: "check the loop bounds against the matrix's declared extents",
};

/// Whether every index of every access stays inside the extents (proved
/// when true). A split statement is asked as a whole first; only the
/// questions it does not refute are asked again per variant.
pub(crate) fn proved(p: &Program, sp: &Split) -> bool {
    let pool = &sp.exprs;
    for (s, st) in p.statements.iter().enumerate() {
        let Some(vs) = sp.variants.get(s) else {
            return false;
        };
        let whole = sp.whole(s);
        let bases: Vec<_> = (0..vs.len())
            .map(|i| sp.with_domain(s, i, Side::First))
            .collect();
        let accesses = st.writes.len() + st.reads.len();
        for a in 0..accesses {
            let pick = |st: &Statement| access(st, a).cloned();
            let Some(acc) = pick(st) else {
                return false;
            };
            let Some(m) = p.get_matrix(acc.matrix) else {
                return false;
            };
            for (d, &ext) in m.extents.iter().enumerate() {
                for above in [false, true] {
                    if let Some(w) = &whole {
                        if !may_leave(pool, w, &acc, d, ext, above) {
                            continue;
                        }
                    }
                    for (v, base) in vs.iter().zip(&bases) {
                        let Some(acc) = pick(&v.st) else {
                            return false;
                        };
                        if may_leave(pool, base, &acc, d, ext, above) {
                            return false;
                        }
                    }
                }
            }
        }
    }
    true
}

/// Write accesses first, then reads.
fn access(st: &Statement, a: usize) -> Option<&Access> {
    if a < st.writes.len() {
        st.writes.get(a)
    } else {
        st.reads.get(a - st.writes.len())
    }
}

/// Whether index `d` of `acc` may be negative (or, `above`, at least the
/// extent) under `base`.
fn may_leave(
    pool: &ExprPool,
    base: &System,
    acc: &Access,
    d: usize,
    ext: ExprRef,
    above: bool,
) -> bool {
    let Some(&idx) = acc.indices.get(d) else {
        return true;
    };
    let mut sys = base.clone();
    let Some(i) = sys.form(pool, Side::First, idx) else {
        return true;
    };
    if above {
        let Some(e) = sys.form(pool, Side::First, ext) else {
            return true;
        };
        sys.ge_by(&i, &e, 0);
    } else {
        sys.ge_by(&Affine::constant(-1), &i, 0);
    }
    sys.feasible()
}
