//! Exact rationals and the one affine form of the compiler: `Σ q·term + c`
//! over the [`Term`]s of a question (loop variables of a statement copy,
//! non-affine subterms, terms over the parameters, parameters and
//! auxiliaries), with exact rational coefficients.
//!
//! An int expression is decomposed relative to a set of *unknown* slots:
//! unknown slots become [`Term::Slot`], a maximal non-affine subterm that
//! mentions an unknown (`2 ** level`, `i * j`, `i // 2`, `min(..)`, ...)
//! becomes a [`Term::Atom`], and a maximal subterm that mentions no unknown
//! (a parameter, an input, `ceil(log2(N))`, ...) a [`Term::Known`]. The
//! plan builder decomposes relative to the slots it has not assigned yet;
//! lint and pair pruning relative to every slot. No computer-algebra system
//! is involved; the algebra needed is this small.

use lpk_model::expr::{BinOp, ExprPool, ExprRef, Func, Func2, Node, UnOp};
use std::collections::BTreeMap;

/// An exact rational with a positive denominator, in lowest terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Q {
    /// Numerator.
    pub(crate) n: i128,
    /// Denominator (positive).
    pub(crate) d: i128,
}

pub(crate) fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Bound on rational parts, far inside `i128`, so products of two never
/// overflow and every emitted coefficient fits an `i64`.
pub(crate) const LIMIT: i128 = 1 << 60;

impl Q {
    /// Zero.
    pub(crate) const ZERO: Q = Q { n: 0, d: 1 };
    /// One.
    pub(crate) const ONE: Q = Q { n: 1, d: 1 };

    /// An integer.
    pub(crate) fn int(v: i64) -> Q {
        Q { n: v as i128, d: 1 }
    }

    /// `n / d`, or `None` when it is too large or `d` is zero.
    pub(crate) fn new(n: i128, d: i128) -> Option<Q> {
        if d == 0 {
            return None;
        }
        let g = gcd(n, d).max(1);
        let (mut n, mut d) = (n / g, d / g);
        if d < 0 {
            n = -n;
            d = -d;
        }
        (n.abs() < LIMIT && d < LIMIT).then_some(Q { n, d })
    }

    /// Whether it is zero.
    pub(crate) fn is_zero(self) -> bool {
        self.n == 0
    }

    /// Sum.
    pub(crate) fn checked_add(self, o: Q) -> Option<Q> {
        Q::new(self.n * o.d + o.n * self.d, self.d * o.d)
    }

    /// Difference.
    pub(crate) fn checked_sub(self, o: Q) -> Option<Q> {
        self.checked_add(o.negated())
    }

    /// Product.
    pub(crate) fn checked_mul(self, o: Q) -> Option<Q> {
        Q::new(self.n * o.n, self.d * o.d)
    }

    /// Quotient.
    pub(crate) fn checked_div(self, o: Q) -> Option<Q> {
        Q::new(self.n * o.d, self.d * o.n)
    }

    /// Negation.
    pub(crate) fn negated(self) -> Q {
        Q {
            n: -self.n,
            d: self.d,
        }
    }

    /// `ceil(q)`.
    pub(crate) fn ceil(self) -> i128 {
        -((-self.n).div_euclid(self.d))
    }

    /// `floor(q)`.
    pub(crate) fn floor(self) -> i128 {
        self.n.div_euclid(self.d)
    }

    /// The value as a float (for the LP back end).
    pub(crate) fn to_f64(self) -> f64 {
        self.n as f64 / self.d as f64
    }
}

impl Default for Q {
    fn default() -> Q {
        Q::ZERO
    }
}

/// Which copy of a statement a loop variable or atom belongs to: a
/// question about two tasks (a writer and a reader, two writers) puts each
/// statement's variables on a side of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Side {
    /// The first task of a question (the writer; the only side of a
    /// question about one task).
    First,
    /// The second task (the reader, or the other writer).
    Second,
}

impl Side {
    /// Both sides, in order.
    pub(crate) const BOTH: [Side; 2] = [Side::First, Side::Second];
    /// 0 for the first side, 1 for the second (an index into per-side
    /// tables).
    pub(crate) fn index(self) -> usize {
        match self {
            Side::First => 0,
            Side::Second => 1,
        }
    }
}

/// An unknown of an affine form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Term {
    /// A loop variable (slot) of one side.
    Slot(Side, u32),
    /// A non-affine term mentioning unknown slots of one side.
    Atom(Side, ExprRef),
    /// A term mentioning no unknown slot (over the parameters, or over
    /// slots the plan already knows), e.g. `ceil(log2(N))`.
    Known(ExprRef),
    /// An auxiliary integer (a quotient of a stride or a `%`).
    Aux(u32),
    /// A program parameter (lint names parameters apart from other known
    /// terms, because they range over the ceiling).
    Param(u32),
}

/// An affine form `Σ q·term + constant` with exact rational coefficients,
/// never holding a zero coefficient.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Affine {
    terms: BTreeMap<Term, Q>,
    constant: Q,
}

impl Affine {
    /// An integer constant.
    pub(crate) fn constant(v: i64) -> Affine {
        Affine::rational(Q::int(v))
    }

    /// A rational constant.
    pub(crate) fn rational(q: Q) -> Affine {
        Affine {
            terms: BTreeMap::new(),
            constant: q,
        }
    }

    /// One term.
    pub(crate) fn term(t: Term) -> Affine {
        let mut f = Affine::default();
        f.terms.insert(t, Q::ONE);
        f
    }

    /// `self + k · other`.
    pub(crate) fn plus(&self, other: &Affine, k: i64) -> Option<Affine> {
        self.plus_q(other, Q::int(k))
    }

    /// `self + k · other` with a rational `k`.
    pub(crate) fn plus_q(&self, other: &Affine, k: Q) -> Option<Affine> {
        let mut out = self.clone();
        for (&t, &q) in &other.terms {
            let e = out.terms.entry(t).or_insert(Q::ZERO);
            *e = e.checked_add(q.checked_mul(k)?)?;
            if e.is_zero() {
                out.terms.remove(&t);
            }
        }
        out.constant = out.constant.checked_add(other.constant.checked_mul(k)?)?;
        Some(out)
    }

    /// `k · self`.
    pub(crate) fn scale(&self, k: Q) -> Option<Affine> {
        Affine::default().plus_q(self, k)
    }

    /// The constant.
    pub(crate) fn constant_part(&self) -> Q {
        self.constant
    }

    /// The coefficient of a term (zero when absent).
    pub(crate) fn coefficient(&self, t: Term) -> Q {
        self.terms.get(&t).copied().unwrap_or(Q::ZERO)
    }

    /// The terms with non-zero coefficients, in order.
    pub(crate) fn terms(&self) -> impl Iterator<Item = Term> + '_ {
        self.terms.keys().copied()
    }

    /// The terms with their coefficients, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Term, Q)> + '_ {
        self.terms.iter().map(|(&t, &q)| (t, q))
    }

    /// Whether the form is a constant.
    pub(crate) fn is_constant(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether every coefficient and the constant are integers.
    pub(crate) fn is_integral(&self) -> bool {
        self.constant.d == 1 && self.terms.values().all(|q| q.d == 1)
    }

    /// The form with one term replaced by another form.
    pub(crate) fn substitute(&self, t: Term, by: &Affine) -> Option<Affine> {
        let q = self.coefficient(t);
        if q.is_zero() {
            return Some(self.clone());
        }
        let mut rest = self.clone();
        rest.terms.remove(&t);
        rest.plus_q(by, q)
    }

    /// Sets a term's coefficient, replacing what it had.
    pub(crate) fn set(&mut self, t: Term, q: Q) {
        if q.is_zero() {
            self.terms.remove(&t);
        } else {
            self.terms.insert(t, q);
        }
    }

    /// The form with every term renamed by `f`, which must be injective
    /// on the form's terms.
    pub(crate) fn rename_injective(&self, f: impl Fn(Term) -> Term) -> Affine {
        Affine {
            terms: self.terms.iter().map(|(&t, &q)| (f(t), q)).collect(),
            constant: self.constant,
        }
    }

    /// The slots of a side with their coefficients, in slot order.
    pub(crate) fn slots(&self, side: Side) -> impl Iterator<Item = (u32, Q)> + '_ {
        self.iter().filter_map(move |(t, q)| match t {
            Term::Slot(s, v) if s == side => Some((v, q)),
            _ => None,
        })
    }

    /// The atoms (of any side) with their coefficients.
    pub(crate) fn atoms(&self) -> impl Iterator<Item = (ExprRef, Q)> + '_ {
        self.iter().filter_map(|(t, q)| match t {
            Term::Atom(_, a) => Some((a, q)),
            _ => None,
        })
    }

    /// The known terms with their coefficients, in pool order.
    pub(crate) fn known(&self) -> impl Iterator<Item = (ExprRef, Q)> + '_ {
        self.iter().filter_map(|(t, q)| match t {
            Term::Known(k) => Some((k, q)),
            _ => None,
        })
    }

    /// The form without its slots and atoms: its known terms and constant.
    pub(crate) fn known_part(&self) -> Affine {
        Affine {
            terms: self
                .terms
                .iter()
                .filter(|(t, _)| matches!(t, Term::Known(_)))
                .map(|(&t, &q)| (t, q))
                .collect(),
            constant: self.constant,
        }
    }

    /// The form scaled by the least common denominator of its coefficients
    /// and constant, with that (positive) denominator; `None` when it grows
    /// past [`LIMIT`] or a coefficient leaves `i64`.
    pub(crate) fn integer_multiple(&self) -> Option<(Affine, i64)> {
        let mut den: i128 = self.constant.d;
        for q in self.terms.values() {
            den = den / gcd(den, q.d) * q.d;
            if den >= LIMIT {
                return None;
            }
        }
        let scale = |q: Q| -> Option<Q> {
            let v = i64::try_from(q.n * (den / q.d)).ok()?;
            Some(Q::int(v))
        };
        let mut terms = BTreeMap::new();
        for (&t, &q) in &self.terms {
            terms.insert(t, scale(q)?);
        }
        Some((
            Affine {
                terms,
                constant: scale(self.constant)?,
            },
            i64::try_from(den).ok()?,
        ))
    }
}

/// The static type of a pool expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NumTy {
    Int,
    Real,
    Bool,
}

/// The static type of a node (pool expressions come from typed programs).
pub(crate) fn type_of(pool: &ExprPool, r: ExprRef) -> NumTy {
    let join = |a: NumTy, b: NumTy| {
        if a == NumTy::Real || b == NumTy::Real {
            NumTy::Real
        } else {
            NumTy::Int
        }
    };
    match pool.get(r) {
        Some(Node::Int(_)) | Some(Node::Param(_)) | Some(Node::Slot(_)) => NumTy::Int,
        Some(Node::Real(_)) => NumTy::Real,
        Some(Node::Bool(_)) => NumTy::Bool,
        Some(Node::Unary(UnOp::Not, _)) => NumTy::Bool,
        Some(Node::Unary(UnOp::Neg, a)) => type_of(pool, *a),
        Some(Node::Binary(op, a, b)) => match op {
            op if op.gives_bool() => NumTy::Bool,
            BinOp::Div => NumTy::Real,
            _ => join(type_of(pool, *a), type_of(pool, *b)),
        },
        Some(Node::Call(f, a)) => match f {
            Func::Ceil | Func::Floor | Func::CeilLog2 | Func::FloorLog2 => NumTy::Int,
            Func::Log | Func::Log2 => NumTy::Real,
            Func::Abs => type_of(pool, *a),
        },
        Some(Node::Call2(Func2::CeilDiv | Func2::CeilLogB | Func2::FloorLogB, _, _)) => NumTy::Int,
        None => NumTy::Bool,
    }
}

/// Decomposes an int expression relative to the unknown slots, whose slots
/// and atoms are put on `side`. `None` when the expression is not
/// int-valued or a coefficient grows too large.
pub(crate) fn decompose(
    pool: &ExprPool,
    r: ExprRef,
    side: Side,
    unknown: &dyn Fn(u32) -> bool,
) -> Option<Affine> {
    if type_of(pool, r) != NumTy::Int {
        return None;
    }
    let mentions = |r: ExprRef| pool.mentions_slot(r, unknown);
    let node = *pool.get(r)?;
    let opaque = |r: ExprRef| -> Option<Affine> {
        Some(Affine::term(if mentions(r) {
            Term::Atom(side, r)
        } else {
            Term::Known(r)
        }))
    };
    let sub = |a: ExprRef| decompose(pool, a, side, unknown);
    match node {
        Node::Int(v) => Some(Affine::constant(v)),
        Node::Slot(s) if unknown(s) => Some(Affine::term(Term::Slot(side, s))),
        Node::Unary(UnOp::Neg, a) => sub(a)?.scale(Q::int(-1)),
        Node::Binary(BinOp::Add, a, b) => sub(a)?.plus_q(&sub(b)?, Q::ONE),
        Node::Binary(BinOp::Sub, a, b) => sub(a)?.plus_q(&sub(b)?, Q::int(-1)),
        Node::Binary(BinOp::Mul, a, b) => {
            let (la, lb) = (sub(a)?, sub(b)?);
            if la.is_constant() {
                lb.scale(la.constant)
            } else if lb.is_constant() {
                la.scale(lb.constant)
            } else {
                opaque(r)
            }
        }
        _ => opaque(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rationals_stay_reduced() {
        let a = Q::new(2, 4).unwrap();
        assert_eq!(a, Q { n: 1, d: 2 });
        assert_eq!(a.checked_add(a), Some(Q::ONE));
        assert_eq!(Q::new(1, -3), Some(Q { n: -1, d: 3 }));
        assert_eq!(Q::new(1, 0), None);
    }

    #[test]
    fn affine_decomposition_separates_unknowns_atoms_and_knowns() {
        let leaves = [Node::Slot(0), Node::Slot(1), Node::Param(0), Node::Int(2)];
        let (mut pool, [i, j, n, two]) = crate::constraint::pool_of(leaves);
        let two_i = pool.add(Node::Binary(BinOp::Mul, two, i));
        let pow = pool.add(Node::Binary(BinOp::Pow, two, j));
        let s = pool.add(Node::Binary(BinOp::Add, two_i, pow));
        let s = pool.add(Node::Binary(BinOp::Sub, s, n));
        // unknown: both slots
        let l = decompose(&pool, s, Side::First, &|s| s < 2).unwrap();
        assert_eq!(l.coefficient(Term::Slot(Side::First, 0)), Q::int(2));
        assert_eq!(l.coefficient(Term::Atom(Side::First, pow)), Q::ONE);
        assert_eq!(l.coefficient(Term::Known(n)), Q::int(-1));
        // slot 1 known: the power is a known term
        let l = decompose(&pool, s, Side::First, &|s| s == 0).unwrap();
        assert_eq!(l.atoms().count(), 0);
        assert_eq!(l.coefficient(Term::Known(pow)), Q::ONE);
    }
}
