//! Indices inside the declared extents, proved over all parameter values:
//! for every access and dimension, "the index is negative" and "the index
//! is at least the extent" are each an integer feasibility question over
//! the statement's domain and the `require`s.

use super::split::Split;
use super::system::Form;
use runtime_interp::model::Program;

/// Whether every index of every access stays inside the extents (proved
/// when true).
pub(crate) fn in_bounds_proved(p: &Program, sp: &Split) -> bool {
    let pool = &sp.exprs;
    for (s, vi, v) in sp.all() {
        let st = &v.st;
        let base = sp.with_domain(s, vi, 0);
        for acc in st.writes.iter().chain(&st.reads) {
            let Some(m) = p.matrices.get(acc.matrix as usize) else {
                return false;
            };
            for (&idx, &ext) in acc.indices.iter().zip(&m.extents) {
                for above in [false, true] {
                    let mut sys = base.clone();
                    let Some(i) = sys.form(pool, 0, idx) else {
                        return false;
                    };
                    if above {
                        let Some(e) = sys.form(pool, 0, ext) else {
                            return false;
                        };
                        sys.ge_by(&i, &e, 0);
                    } else {
                        sys.ge_by(&Form::constant(-1), &i, 0);
                    }
                    if sys.feasible() {
                        return false;
                    }
                }
            }
        }
    }
    true
}
