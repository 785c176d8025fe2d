//! Which write/read pairs of accesses may meet: a pair is dropped only
//! when no writer iteration and reader iteration, for any parameter values
//! the `require`s allow, name the same tile. The question goes to the
//! constraint engine as the real relaxation
//! ([`crate::constraint::lp::relaxation_feasible`]).
//!
//! The system is over the writer's loop variables (side 0), the reader's
//! (side 1) and the terms over the parameters: every affine loop bound,
//! comparison guard (see [`crate::constraint::guard`]), `require` and
//! index equation is a constraint; every non-affine term becomes an
//! unknown of its own, with no facts. Dropping information only enlarges
//! the feasible set, so when even the relaxation is infeasible the pair
//! provably never meets. The constraints have integer data and integer
//! margins, far from the solver's tolerances.

use crate::constraint::affine::{decompose, Affine, Side};
use crate::constraint::guard::{guard_disequalities, guard_equalities, guard_inequalities};
use crate::constraint::lp::relaxation_feasible;
use crate::constraint::system::Constraint;
use lpk_model::expr::{BinOp, ExprPool, ExprRef, Node};
use lpk_model::program::{Access, DomainItem, Statement};

/// Most `!=` conjuncts split into cases (2^MAX_SPLITS LPs at most).
const MAX_SPLITS: usize = 4;

/// The affine form of an int expression of one side, every slot unknown.
fn affine(pool: &ExprPool, side: Side, e: ExprRef) -> Option<Affine> {
    decompose(pool, e, side, &|_| true)
}

/// Whether the two accesses may touch the same tile (false only when
/// proved impossible).
pub(crate) fn may_meet(
    pool: &mut ExprPool,
    requires: &[ExprRef],
    w_st: &Statement,
    w: &Access,
    r_st: &Statement,
    r: &Access,
) -> bool {
    // Collect the constraints as expressions first (the guard forms add
    // nodes to the pool), then build the question over a shared borrow.
    let mut ge: Vec<(Side, ExprRef)> = Vec::new();
    let mut eq: Vec<(Side, ExprRef, Side, ExprRef)> = Vec::new();
    // `a != b` is the union of `a - b - 1 >= 0` and `b - a - 1 >= 0`; each
    // is tried (up to a few, the rest are dropped from the relaxation).
    let mut ne: Vec<(Side, ExprRef, ExprRef)> = Vec::new();
    for (side, st) in [(Side::First, w_st), (Side::Second, r_st)] {
        for item in &st.domain {
            match *item {
                DomainItem::Loop { slot, lo, hi, .. } => {
                    let x = pool.add(Node::Slot(slot));
                    ge.push((side, pool.add(Node::Binary(BinOp::Sub, x, lo))));
                    let d = pool.add(Node::Binary(BinOp::Sub, hi, x));
                    let one = pool.add(Node::Int(1));
                    ge.push((side, pool.add(Node::Binary(BinOp::Sub, d, one))));
                }
                DomainItem::Guard { cond, positive } => {
                    for g in guard_inequalities(pool, cond, positive) {
                        ge.push((side, g));
                    }
                    for (a, b) in guard_equalities(pool, cond, positive) {
                        eq.push((side, a, side, b));
                    }
                    for (a, b) in guard_disequalities(pool, cond, positive) {
                        ne.push((side, a, b));
                    }
                }
            }
        }
    }
    for &req in requires {
        for g in guard_inequalities(pool, req, true) {
            ge.push((Side::First, g));
        }
    }
    for (&a, &b) in w.indices.iter().zip(&r.indices) {
        eq.push((Side::First, a, Side::Second, b));
    }
    ne.truncate(MAX_SPLITS);
    let mut alternatives: Vec<[(Side, ExprRef); 2]> = Vec::new();
    for &(side, a, b) in &ne {
        let one = pool.add(Node::Int(1));
        let d1 = pool.add(Node::Binary(BinOp::Sub, a, b));
        let d2 = pool.add(Node::Binary(BinOp::Sub, b, a));
        alternatives.push([
            (side, pool.add(Node::Binary(BinOp::Sub, d1, one))),
            (side, pool.add(Node::Binary(BinOp::Sub, d2, one))),
        ]);
    }
    let pool: &ExprPool = pool;
    // The common constraints; an expression that is not affine enough to
    // express is left out (a relaxation).
    let mut base: Vec<Constraint> = Vec::new();
    for &(side, g) in &ge {
        if let Some(f) = affine(pool, side, g) {
            base.push(Constraint::Ge(f));
        }
    }
    for &(sa, a, sb, b) in &eq {
        if let (Some(x), Some(y)) = (affine(pool, sa, a), affine(pool, sb, b)) {
            if let Some(d) = x.plus(&y, -1) {
                base.push(Constraint::Eq(d));
            }
        }
    }
    for choice in 0..(1u32 << alternatives.len()) {
        let mut all = base.clone();
        for (k, alt) in alternatives.iter().enumerate() {
            let (side, g) = alt[((choice >> k) & 1) as usize];
            if let Some(f) = affine(pool, side, g) {
                all.push(Constraint::Ge(f));
            }
        }
        if relaxation_feasible(&all) {
            return true;
        }
    }
    false
}
