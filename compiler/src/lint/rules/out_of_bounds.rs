//! E0505: every index of every read and write lies inside the declared
//! extents. Oracle: `Violation::OutOfBounds`.
//!
//! Proof, over all parameter values:
//! for every access and dimension, "the index is negative" and "the index
//! is at least the extent" are each an integer feasibility question over
//! the statement's domain and the `require`s.

use super::{blocked, blocked_by, Blocked, ErrorRule};
use crate::constraint::affine::Affine;
use crate::constraint::affine::Side;
use crate::constraint::system::System;
use crate::diag::Code;
use crate::lint::split::Split;
use lpk_model::expr::{ExprPool, ExprRef};
use lpk_model::program::{Access, Program, Statement};

/// The rule: its code, its name and what its findings say.
pub(crate) const RULE: ErrorRule = ErrorRule {
    code: Code::E0505,
    name: "indices inside the extents",
    here: "index outside the extents",
    there: "",
    help: "check the loop bounds against the matrix's declared extents",
};

/// Whether every index of every access stays inside the extents (proved
/// when true). A split statement is asked as a whole first; only the
/// questions it does not refute are asked again per variant.
pub(crate) fn proved(p: &Program, sp: &Split) -> Result<(), Blocked> {
    let pool = &sp.exprs;
    for (s, st) in p.statements.iter().enumerate() {
        let Some(vs) = sp.variants.get(s) else {
            return Err(blocked_by(&[s], "no variants".into()));
        };
        let whole = sp.whole(s);
        let bases: Vec<_> = (0..vs.len())
            .map(|i| sp.with_domain(s, i, Side::First))
            .collect();
        let accesses = st.writes.len() + st.reads.len();
        for a in 0..accesses {
            let pick = |st: &Statement| access(st, a).cloned();
            let (Some(acc), Some(m)) =
                (pick(st), pick(st).and_then(|acc| p.get_matrix(acc.matrix)))
            else {
                return Err(blocked_by(&[s], "no such access".into()));
            };
            for (d, &ext) in m.extents.iter().enumerate() {
                for above in [false, true] {
                    if let Some(w) = &whole {
                        if may_leave(pool, w, &acc, d, ext, above).is_none() {
                            continue;
                        }
                    }
                    for (v, base) in vs.iter().zip(&bases) {
                        let Some(acc) = pick(&v.st) else {
                            return Err(blocked_by(&[s], "no such access".into()));
                        };
                        if let Some(why) = may_leave(pool, base, &acc, d, ext, above) {
                            return Err(match why {
                                Ok(sys) => blocked(p, pool, &sys, &[s]),
                                Err(e) => blocked_by(&[s], e),
                            });
                        }
                    }
                }
            }
        }
    }
    Ok(())
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
/// extent) under `base`: `None` when it cannot, else the question that
/// stayed feasible (or why none could be asked).
fn may_leave(
    pool: &ExprPool,
    base: &System,
    acc: &Access,
    d: usize,
    ext: ExprRef,
    above: bool,
) -> Option<Result<System, String>> {
    let Some(&idx) = acc.indices.get(d) else {
        return Some(Err("an index missing".into()));
    };
    let mut sys = base.clone();
    let Some(i) = sys.form(pool, Side::First, idx) else {
        return Some(Err("an index that is not an int expression".into()));
    };
    if above {
        let Some(e) = sys.form(pool, Side::First, ext) else {
            return Some(Err("an extent that is not an int expression".into()));
        };
        sys.ge_by(&i, &e, 0);
    } else {
        sys.ge_by(&Affine::constant(-1), &i, 0);
    }
    sys.feasible_by_cases().then_some(Ok(sys))
}
