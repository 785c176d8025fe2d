//! The exact symbolic layer: rational numbers and affine forms over the
//! unknown slots of an equation, with everything else kept as opaque terms.
//!
//! An int expression is decomposed relative to a set of unknown slots into
//! `Σ c·x + Σ d·atom + Σ k·known + c0`, where the `c`, `d`, `k` and `c0` are
//! exact rationals, `x` are unknown slots, an *atom* is a maximal
//! non-affine subterm that mentions an unknown (`2 ** level`, `i * j`,
//! `i // 2`, `min(..)`, ...), and a *known* term is a maximal subterm that
//! mentions no unknown (a parameter, an input, `ceil(log2(N))`, ...), which
//! the plan evaluates at run time. No computer-algebra system is involved;
//! the algebra needed is this small.

use model::expr::{BinOp, ExprPool, ExprRef, Func, Func2, Node, UnOp};
use std::collections::BTreeMap;

/// An exact rational with a positive denominator, in lowest terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Q {
    /// Numerator.
    pub n: i128,
    /// Denominator (positive).
    pub d: i128,
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Bound on rational parts, far inside `i128`, so products of two never
/// overflow and every emitted coefficient fits an `i64`.
const LIMIT: i128 = 1 << 60;

impl Q {
    /// Zero.
    pub const ZERO: Q = Q { n: 0, d: 1 };
    /// One.
    pub const ONE: Q = Q { n: 1, d: 1 };

    /// An integer.
    pub fn int(v: i64) -> Q {
        Q { n: v as i128, d: 1 }
    }

    /// `n / d`, or `None` when it is too large or `d` is zero.
    pub fn new(n: i128, d: i128) -> Option<Q> {
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
    pub fn is_zero(self) -> bool {
        self.n == 0
    }

    /// Sum.
    pub fn checked_add(self, o: Q) -> Option<Q> {
        Q::new(self.n * o.d + o.n * self.d, self.d * o.d)
    }

    /// Difference.
    pub fn checked_sub(self, o: Q) -> Option<Q> {
        self.checked_add(o.negated())
    }

    /// Product.
    pub fn checked_mul(self, o: Q) -> Option<Q> {
        Q::new(self.n * o.n, self.d * o.d)
    }

    /// Quotient.
    pub fn checked_div(self, o: Q) -> Option<Q> {
        Q::new(self.n * o.d, self.d * o.n)
    }

    /// Negation.
    pub fn negated(self) -> Q {
        Q {
            n: -self.n,
            d: self.d,
        }
    }
}

/// An affine form relative to a set of unknown slots.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lin {
    /// Coefficients of unknown slots.
    pub vars: BTreeMap<u32, Q>,
    /// Non-affine terms mentioning unknowns, with coefficients.
    pub atoms: BTreeMap<ExprRef, Q>,
    /// Terms mentioning no unknown, with coefficients.
    pub known: BTreeMap<ExprRef, Q>,
    /// The constant.
    pub constant: Q,
}

impl Default for Q {
    fn default() -> Q {
        Q::ZERO
    }
}

fn add_to(map: &mut BTreeMap<ExprRef, Q>, k: ExprRef, q: Q) -> Option<()> {
    let e = map.entry(k).or_insert(Q::ZERO);
    *e = e.checked_add(q)?;
    if e.is_zero() {
        map.remove(&k);
    }
    Some(())
}

impl Lin {
    /// A constant form.
    pub fn constant(q: Q) -> Lin {
        Lin {
            constant: q,
            ..Lin::default()
        }
    }

    /// Whether the form has no unknown slots and no atoms.
    pub fn is_known(&self) -> bool {
        self.vars.is_empty() && self.atoms.is_empty()
    }

    /// Whether the form is a constant.
    pub fn is_constant(&self) -> bool {
        self.is_known() && self.known.is_empty()
    }

    /// `self + k · other`.
    pub fn add_scaled(&self, other: &Lin, k: Q) -> Option<Lin> {
        let mut out = self.clone();
        for (&v, &q) in &other.vars {
            let e = out.vars.entry(v).or_insert(Q::ZERO);
            *e = e.checked_add(q.checked_mul(k)?)?;
            if e.is_zero() {
                out.vars.remove(&v);
            }
        }
        for (&a, &q) in &other.atoms {
            add_to(&mut out.atoms, a, q.checked_mul(k)?)?;
        }
        for (&a, &q) in &other.known {
            add_to(&mut out.known, a, q.checked_mul(k)?)?;
        }
        out.constant = out.constant.checked_add(other.constant.checked_mul(k)?)?;
        Some(out)
    }

    /// `k · self`.
    pub fn scale(&self, k: Q) -> Option<Lin> {
        Lin::default().add_scaled(self, k)
    }
}

/// The static type of a pool expression (`None` for bool).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumTy {
    /// Integer valued.
    Int,
    /// Real valued.
    Real,
    /// Boolean.
    Bool,
}

/// The static type of a node (pool expressions come from typed programs).
pub fn type_of(pool: &ExprPool, r: ExprRef) -> NumTy {
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
            BinOp::Eq
            | BinOp::Ne
            | BinOp::Lt
            | BinOp::Le
            | BinOp::Gt
            | BinOp::Ge
            | BinOp::And
            | BinOp::Or => NumTy::Bool,
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

/// Decomposes an int expression relative to the unknown slots. `None` when
/// the expression is not int-valued or a coefficient grows too large.
pub fn decompose(pool: &ExprPool, r: ExprRef, unknown: &dyn Fn(u32) -> bool) -> Option<Lin> {
    if type_of(pool, r) != NumTy::Int {
        return None;
    }
    let mentions = |r: ExprRef| pool.mentions_slot(r, unknown);
    let node = *pool.get(r)?;
    let opaque = |r: ExprRef| -> Option<Lin> {
        let mut l = Lin::default();
        if mentions(r) {
            l.atoms.insert(r, Q::ONE);
        } else {
            l.known.insert(r, Q::ONE);
        }
        Some(l)
    };
    match node {
        Node::Int(v) => Some(Lin::constant(Q::int(v))),
        Node::Slot(s) if unknown(s) => {
            let mut l = Lin::default();
            l.vars.insert(s, Q::ONE);
            Some(l)
        }
        Node::Unary(UnOp::Neg, a) => decompose(pool, a, unknown)?.scale(Q::int(-1)),
        Node::Binary(BinOp::Add, a, b) => {
            decompose(pool, a, unknown)?.add_scaled(&decompose(pool, b, unknown)?, Q::ONE)
        }
        Node::Binary(BinOp::Sub, a, b) => {
            decompose(pool, a, unknown)?.add_scaled(&decompose(pool, b, unknown)?, Q::int(-1))
        }
        Node::Binary(BinOp::Mul, a, b) => {
            let (la, lb) = (decompose(pool, a, unknown)?, decompose(pool, b, unknown)?);
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

/// An integer linear combination ready to be emitted: `Σ k·term + c`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntForm {
    /// Terms with integer coefficients.
    pub terms: Vec<(i64, ExprRef)>,
    /// Integer constant.
    pub constant: i64,
}

/// Scales `Σ q·term + c` by the least common denominator: returns the
/// integer form and the (positive) denominator it was multiplied by.
pub fn integer_form(terms: &BTreeMap<ExprRef, Q>, constant: Q) -> Option<(IntForm, i64)> {
    let mut den: i128 = constant.d;
    for q in terms.values() {
        den = den / gcd(den, q.d) * q.d;
        if den >= LIMIT {
            return None;
        }
    }
    let scale = |q: Q| -> Option<i64> { i64::try_from(q.n * (den / q.d)).ok() };
    let mut out = Vec::new();
    for (&t, &q) in terms {
        out.push((scale(q)?, t));
    }
    Some((
        IntForm {
            terms: out,
            constant: scale(constant)?,
        },
        i64::try_from(den).ok()?,
    ))
}

/// Emits an integer form into the pool.
pub fn emit(pool: &mut ExprPool, form: &IntForm) -> ExprRef {
    let mut acc: Option<ExprRef> = None;
    for &(k, t) in &form.terms {
        let (neg, mag) = (k < 0, k.unsigned_abs());
        let term = if mag == 1 {
            t
        } else {
            let c = pool.add(Node::Int(mag as i64));
            pool.add(Node::Binary(BinOp::Mul, c, t))
        };
        acc = Some(match (acc, neg) {
            (None, false) => term,
            (None, true) => pool.add(Node::Unary(UnOp::Neg, term)),
            (Some(a), false) => pool.add(Node::Binary(BinOp::Add, a, term)),
            (Some(a), true) => pool.add(Node::Binary(BinOp::Sub, a, term)),
        });
    }
    let c = form.constant;
    match acc {
        None => pool.add(Node::Int(c)),
        Some(a) if c == 0 => a,
        Some(a) if c > 0 => {
            let k = pool.add(Node::Int(c));
            pool.add(Node::Binary(BinOp::Add, a, k))
        }
        Some(a) => {
            let k = pool.add(Node::Int(c.unsigned_abs() as i64));
            pool.add(Node::Binary(BinOp::Sub, a, k))
        }
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
        let mut pool = ExprPool::default();
        let i = pool.add(Node::Slot(0));
        let j = pool.add(Node::Slot(1));
        let n = pool.add(Node::Param(0));
        let two = pool.add(Node::Int(2));
        let two_i = pool.add(Node::Binary(BinOp::Mul, two, i));
        let pow = pool.add(Node::Binary(BinOp::Pow, two, j));
        let s = pool.add(Node::Binary(BinOp::Add, two_i, pow));
        let s = pool.add(Node::Binary(BinOp::Sub, s, n));
        // unknown: both slots
        let l = decompose(&pool, s, &|s| s < 2).unwrap();
        assert_eq!(l.vars.get(&0), Some(&Q::int(2)));
        assert_eq!(l.atoms.get(&pow), Some(&Q::ONE));
        assert_eq!(l.known.get(&n), Some(&Q::int(-1)));
        // slot 1 known: the power is a known term
        let l = decompose(&pool, s, &|s| s == 0).unwrap();
        assert!(l.atoms.is_empty());
        assert_eq!(l.known.get(&pow), Some(&Q::ONE));
    }
}
