//! The literals of a statement's guards, for every question built from a
//! domain: a guard (or, on a skipped branch, its negation) as the
//! conjunction of its comparisons, with `not` pushed inwards and `and` (or
//! a negated `or`) split. The plan builder takes its equations and
//! narrowing bounds from here, and pair pruning its constraints; a
//! disjunction stays one literal, which those callers then leave out.

use lpk_model::expr::{BinOp, ExprPool, ExprRef, Node, UnOp};

/// The two sides `(a, b)` of each of some `a == b` (or `a != b`).
type Sides = Vec<(ExprRef, ExprRef)>;

/// The literals a condition (`positive`) or its negation (`!positive`)
/// is a conjunction of: `not` pushed inwards, `and` (or a negated `or`)
/// split, each literal with the polarity it must have.
fn conjuncts(pool: &ExprPool, cond: ExprRef, positive: bool) -> Vec<(Node, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![(cond, positive)];
    while let Some((c, pos)) = stack.pop() {
        let Some(node) = pool.get(c).copied() else {
            continue;
        };
        match node {
            Node::Unary(UnOp::Not, a) => stack.push((a, !pos)),
            Node::Binary(BinOp::And, a, b) if pos => {
                stack.push((a, true));
                stack.push((b, true));
            }
            Node::Binary(BinOp::Or, a, b) if !pos => {
                stack.push((a, false));
                stack.push((b, false));
            }
            literal => out.push((literal, pos)),
        }
    }
    out
}

/// The `a == b` conjuncts a guard imposes (`a != b` when the guard is
/// negated), for use as equations.
pub(crate) fn guard_equalities(pool: &ExprPool, cond: ExprRef, positive: bool) -> Sides {
    equations(pool, cond, positive, true)
}

/// The `a != b` conjuncts a guard imposes (`a == b` when negated).
pub(crate) fn guard_disequalities(pool: &ExprPool, cond: ExprRef, positive: bool) -> Sides {
    equations(pool, cond, positive, false)
}

/// The sides of the conjuncts that say `a == b` (`equal`) or `a != b`: an
/// `==` literal that holds or a `!=` literal that fails, or the reverse.
fn equations(pool: &ExprPool, cond: ExprRef, positive: bool, equal: bool) -> Sides {
    conjuncts(pool, cond, positive)
        .into_iter()
        .filter_map(|lit| match lit {
            (Node::Binary(BinOp::Eq, a, b), pos) if pos == equal => Some((a, b)),
            (Node::Binary(BinOp::Ne, a, b), pos) if pos != equal => Some((a, b)),
            _ => None,
        })
        .collect()
}

/// The `g >= 0` forms of a guard's (or its negation's) comparison conjuncts.
pub(crate) fn guard_inequalities(
    pool: &mut ExprPool,
    cond: ExprRef,
    positive: bool,
) -> Vec<ExprRef> {
    let mut out = Vec::new();
    for lit in conjuncts(pool, cond, positive) {
        let (op, a, b, pos) = match lit {
            (Node::Binary(op, a, b), pos) => (op, a, b, pos),
            _ => continue,
        };
        // Normalise to `x - y - k >= 0`.
        let op = if pos {
            Some(op)
        } else {
            match op {
                BinOp::Lt => Some(BinOp::Ge),
                BinOp::Le => Some(BinOp::Gt),
                BinOp::Gt => Some(BinOp::Le),
                BinOp::Ge => Some(BinOp::Lt),
                BinOp::Ne => Some(BinOp::Eq),
                _ => None,
            }
        };
        let forms: Vec<(ExprRef, ExprRef, i64)> = match op {
            Some(BinOp::Ge) => vec![(a, b, 0)],
            Some(BinOp::Gt) => vec![(a, b, 1)],
            Some(BinOp::Le) => vec![(b, a, 0)],
            Some(BinOp::Lt) => vec![(b, a, 1)],
            Some(BinOp::Eq) => vec![(a, b, 0), (b, a, 0)],
            _ => vec![],
        };
        for (x, y, k) in forms {
            let d = pool.add(Node::Binary(BinOp::Sub, x, y));
            let g = if k == 0 {
                d
            } else {
                let kk = pool.add(Node::Int(k));
                pool.add(Node::Binary(BinOp::Sub, d, kk))
            };
            out.push(g);
        }
    }
    out
}
