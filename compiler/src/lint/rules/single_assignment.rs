//! E0501, single assignment: each tile is written by at most one task
//! (guards and `else` respected). Oracle: `Violation::DoubleWrite`.
//!
//! Proof: two write accesses of one matrix can name the same tile at two
//! different tasks only if their system (both domains, the `require`s, the
//! index equations and "the tasks differ") is feasible.

use super::{blocked, blocked_by, constant_clash, Blocked, ErrorRule};
use crate::constraint::affine::Side;
use crate::constraint::affine::{Affine, Term};
use crate::constraint::system::System;
use crate::diag::Code;
use crate::lint::split::Split;
use lpk_model::expr::ExprPool;
use lpk_model::program::{Access, Program, Statement};

/// The rule: its code, its name and what its findings say.
pub(crate) const RULE: ErrorRule = ErrorRule {
    code: Code::E0501,
    name: "single assignment",
    here: "written again here",
    there: "first written here",
    help: "every tile may be written by one task only; make the index maps disjoint (check the loop bounds, strides and guards)",
};

/// Whether no two tasks can ever write one tile (proved when true).
pub(crate) fn proved(p: &Program, sp: &Split) -> Result<(), Blocked> {
    let pool = &sp.exprs;
    let writes: Vec<(usize, usize)> = p
        .statements
        .iter()
        .enumerate()
        .flat_map(|(s, st)| (0..st.writes.len()).map(move |a| (s, a)))
        .collect();
    for (i, &(s1, a1)) in writes.iter().enumerate() {
        for &(s2, a2) in writes.iter().skip(i) {
            let (Some(st1), Some(st2)) = (p.statements.get(s1), p.statements.get(s2)) else {
                continue;
            };
            let (Some(w1), Some(w2)) = (st1.writes.get(a1), st2.writes.get(a2)) else {
                continue;
            };
            if w1.matrix != w2.matrix {
                continue;
            }
            let same_access = s1 == s2 && a1 == a2;
            if same_access && st1.depth() == 0 {
                continue;
            }
            let (Some(vs1), Some(vs2)) = (sp.variants.get(s1), sp.variants.get(s2)) else {
                return Err(blocked_by(&[s1, s2], "no variants".into()));
            };
            // Variants partition each statement's iterations. For one
            // access, two different variants are different iterations
            // whatever their order, so unordered pairs do; within one
            // variant, "side 0 comes first" covers both orders.
            for (i1, v1) in vs1.iter().enumerate() {
                for (i2, v2) in vs2.iter().enumerate() {
                    if same_access && i2 < i1 {
                        continue;
                    }
                    let (Some(w1), Some(w2)) = (v1.st.writes.get(a1), v2.st.writes.get(a2)) else {
                        return Err(blocked_by(&[s1, s2], "no such access".into()));
                    };
                    if constant_clash(pool, w1, w2) {
                        continue;
                    }
                    let mut sys = sp.with_domain(s1, i1, Side::First);
                    sp.add_domain(&mut sys, s2, i2, Side::Second);
                    let ordered = same_access && i1 == i2;
                    if may_write_twice(&mut sys, pool, &v1.st, w1, w2, ordered) {
                        return Err(blocked(p, pool, &sys, &[s1, s2]));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Whether two write accesses may name one tile at two different tasks;
/// `sys` holds the `require`s and both domains. `ordered`: the same access
/// of the same iterations on both sides, so the tasks must differ.
fn may_write_twice(
    sys: &mut System,
    pool: &ExprPool,
    st1: &Statement,
    w1: &Access,
    w2: &Access,
    ordered: bool,
) -> bool {
    for (&x, &y) in w1.indices.iter().zip(&w2.indices) {
        if let (Some(fx), Some(fy)) = (
            sys.form(pool, Side::First, x),
            sys.form(pool, Side::Second, y),
        ) {
            sys.eq(&fx, &fy);
        }
    }
    if ordered {
        // Two different iterations: the first differing loop variable is
        // smaller on side 0 (without loss of generality).
        let mut alternatives = Vec::new();
        for k in 0..st1.depth() as u32 {
            let mut alt = System::new();
            for j in 0..k {
                alt.eq(
                    &Affine::term(Term::Slot(Side::First, j)),
                    &Affine::term(Term::Slot(Side::Second, j)),
                );
            }
            alt.ge_by(
                &Affine::term(Term::Slot(Side::Second, k)),
                &Affine::term(Term::Slot(Side::First, k)),
                1,
            );
            alternatives.push(alt.into_conjunction());
        }
        sys.any(alternatives);
    }
    sys.feasible_by_cases()
}
