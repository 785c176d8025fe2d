//! Proofs that a write access and a read access can never touch the same
//! tile, by linear-programming relaxation (good_lp with the pure-Rust
//! microlp back end).
//!
//! The question "is there a writer iteration and a reader iteration, for
//! some parameter values allowed by the `require`s, at which both accesses
//! name the same tile?" becomes a system over the writer's loop variables,
//! the reader's (a separate copy) and the parameters: every affine loop
//! bound, guard, `require` and index equation is a constraint; every
//! non-affine term becomes a free variable of its own. Dropping information
//! only enlarges the feasible set, so when even the relaxation is
//! infeasible, the pair provably never meets. The constraints have integer
//! data and integer margins, far from the solver's tolerances.

use crate::plan::solve::{guard_disequalities, guard_equalities, guard_inequalities};
use crate::plan::sym::decompose;
use good_lp::{
    variable, Expression, ProblemVariables, ResolutionError, Solution, SolverModel, Variable,
};
use model::expr::{ExprPool, ExprRef};
use model::program::{Access, DomainItem, Statement};
use std::collections::HashMap;

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Slot(u8, u32),
    Atom(u8, ExprRef),
    Known(ExprRef),
}

struct Lp<'a> {
    pool: &'a ExprPool,
    vars: ProblemVariables,
    map: HashMap<Key, Variable>,
}

impl Lp<'_> {
    fn var(&mut self, key: Key) -> Variable {
        if let Some(v) = self.map.get(&key) {
            return *v;
        }
        let v = self.vars.add(variable());
        self.map.insert(key, v);
        v
    }

    /// The affine relaxation of an int expression of one side.
    fn affine(&mut self, side: u8, e: ExprRef) -> Option<Expression> {
        let lin = decompose(self.pool, e, &|_| true)?;
        let f = |q: crate::plan::sym::Q| q.n as f64 / q.d as f64;
        let mut out = Expression::from(f(lin.constant));
        for (&s, &q) in &lin.vars {
            out += f(q) * self.var(Key::Slot(side, s));
        }
        for (&a, &q) in &lin.atoms {
            out += f(q) * self.var(Key::Atom(side, a));
        }
        for (&k, &q) in &lin.known {
            out += f(q) * self.var(Key::Known(k));
        }
        Some(out)
    }
}

/// Whether the two accesses may touch the same tile (false only when
/// proved impossible).
pub fn may_meet(
    pool: &mut ExprPool,
    requires: &[ExprRef],
    w_st: &Statement,
    w: &Access,
    r_st: &Statement,
    r: &Access,
) -> bool {
    // Collect the constraints as expressions first (the guard forms add
    // nodes to the pool), then build the LP over a shared borrow.
    let mut ge: Vec<(u8, ExprRef)> = Vec::new();
    let mut eq: Vec<(u8, ExprRef, u8, ExprRef)> = Vec::new();
    // `a != b` is the union of `a - b - 1 >= 0` and `b - a - 1 >= 0`; each
    // is tried (up to a few, the rest are dropped from the relaxation).
    let mut ne: Vec<(u8, ExprRef, ExprRef)> = Vec::new();
    for (side, st) in [(0u8, w_st), (1u8, r_st)] {
        for item in &st.domain {
            match *item {
                DomainItem::Loop { slot, lo, hi, .. } => {
                    use model::expr::{BinOp, Node};
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
            ge.push((0, g));
        }
    }
    for (&a, &b) in w.indices.iter().zip(&r.indices) {
        eq.push((0, a, 1, b));
    }
    ne.truncate(MAX_SPLITS);
    let mut alternatives: Vec<[(u8, ExprRef); 2]> = Vec::new();
    for &(side, a, b) in &ne {
        use model::expr::{BinOp, Node};
        let one = pool.add(Node::Int(1));
        let d1 = pool.add(Node::Binary(BinOp::Sub, a, b));
        let d2 = pool.add(Node::Binary(BinOp::Sub, b, a));
        alternatives.push([
            (side, pool.add(Node::Binary(BinOp::Sub, d1, one))),
            (side, pool.add(Node::Binary(BinOp::Sub, d2, one))),
        ]);
    }
    let pool: &ExprPool = pool;
    for choice in 0..(1u32 << alternatives.len()) {
        let mut ge_all = ge.clone();
        for (k, alt) in alternatives.iter().enumerate() {
            ge_all.push(alt[((choice >> k) & 1) as usize]);
        }
        if feasible(pool, &ge_all, &eq) {
            return true;
        }
    }
    false
}

/// Most `!=` conjuncts split into cases (2^MAX_SPLITS LPs at most).
const MAX_SPLITS: usize = 4;

/// Whether the relaxation of `g >= 0` for every `ge` and `a == b` for
/// every `eq` is feasible (true when the solver cannot tell).
fn feasible(pool: &ExprPool, ge: &[(u8, ExprRef)], eq: &[(u8, ExprRef, u8, ExprRef)]) -> bool {
    let mut lp = Lp {
        pool,
        vars: ProblemVariables::new(),
        map: HashMap::new(),
    };
    let mut constraints = Vec::new();
    for &(side, g) in ge {
        if let Some(e) = lp.affine(side, g) {
            constraints.push(e.geq(0.0));
        }
    }
    for &(sa, a, sb, b) in eq {
        if let (Some(x), Some(y)) = (lp.affine(sa, a), lp.affine(sb, b)) {
            constraints.push(x.eq(y));
        }
    }
    if constraints.is_empty() {
        return true;
    }
    let Lp { vars, .. } = lp;
    let mut model = vars.minimise(Expression::from(0.0)).using(good_lp::microlp);
    for c in constraints {
        model = model.with(c);
    }
    match model.solve() {
        Err(ResolutionError::Infeasible) => false,
        Ok(s) => {
            let _ = s.status();
            true
        }
        Err(_) => true,
    }
}
