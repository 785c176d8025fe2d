//! Affine forms written back into the expression pool, as the plan steps
//! the runtime evaluates: `Σ k·term + c` with integer coefficients, the
//! terms in pool order.

use crate::constraint::affine::{Affine, Term};
use lpk_model::expr::{BinOp, ExprPool, ExprRef, Node, UnOp};

/// Emits an integral affine form into the pool; `None` when a coefficient
/// is not an integer that fits an `i64`, or a term has no expression (an
/// auxiliary of the constraint engine).
pub(crate) fn emit(pool: &mut ExprPool, form: &Affine) -> Option<ExprRef> {
    let int = |q: crate::constraint::affine::Q| -> Option<i64> {
        if q.d != 1 {
            return None;
        }
        i64::try_from(q.n).ok()
    };
    let mut acc: Option<ExprRef> = None;
    for (t, q) in form.iter() {
        let k = int(q)?;
        let t = match t {
            Term::Atom(_, e) | Term::Known(e) => e,
            Term::Slot(_, s) => pool.add(Node::Slot(s)),
            Term::Param(i) => pool.add(Node::Param(i)),
            Term::Aux(_) => return None,
        };
        let (neg, mag) = (k < 0, k.unsigned_abs());
        let term = if mag == 1 {
            t
        } else {
            let c = pool.add(Node::Int(i64::try_from(mag).ok()?));
            pool.add(Node::Binary(BinOp::Mul, c, t))
        };
        acc = Some(match (acc, neg) {
            (None, false) => term,
            (None, true) => pool.add(Node::Unary(UnOp::Neg, term)),
            (Some(a), false) => pool.add(Node::Binary(BinOp::Add, a, term)),
            (Some(a), true) => pool.add(Node::Binary(BinOp::Sub, a, term)),
        });
    }
    let c = int(form.constant_part())?;
    Some(match acc {
        None => pool.add(Node::Int(c)),
        Some(a) if c == 0 => a,
        Some(a) if c > 0 => {
            let k = pool.add(Node::Int(c));
            pool.add(Node::Binary(BinOp::Add, a, k))
        }
        Some(a) => {
            let k = pool.add(Node::Int(i64::try_from(c.unsigned_abs()).ok()?));
            pool.add(Node::Binary(BinOp::Sub, a, k))
        }
    })
}
