//! Integer feasibility systems over the index-constraint IR: the one place
//! where lint questions become good_lp (microlp) problems.
//!
//! A system is a conjunction of affine constraints over integer unknowns
//! (loop variables of one or two statement copies, called *sides*, the
//! parameters, and auxiliary quotients), plus disjunctions (from `or`,
//! `!=` and negated conjunctions). Every non-affine term (`2 ** level`,
//! `i * j`, `ceil(log2(N))`, ...) becomes an unknown of its own, with the
//! few facts that always hold for it (`2 ** e >= 1`, `0 <= x % c < c`,
//! `c * (x // c) <= x`, `min(a, b) <= a`). Anything that cannot be
//! expressed is left out. Leaving a constraint out only enlarges the set
//! of solutions, so an infeasible system proves that the situation it
//! describes never happens; a feasible one proves nothing.
//!
//! Bounds: parameters range over `[-2^20, 2^20]` (the documented ceiling of
//! "proved"), loop variables and auxiliaries over the solver's `i32` range;
//! non-affine terms are unbounded. Every unknown is an integer (non-affine
//! terms come from int expressions).
//!
//! Solving, cheapest first, each step exact or a relaxation:
//! 1. *translation*: a monotone term compared with a constant becomes the
//!    exact threshold on its argument (`ceil(log2(M - p)) > 3` is
//!    `M - p >= 9`), which is how a case-split loop variable
//!    ([`super::split`]) meets `range(ceil(log2(..)))`;
//! 2. disjunctions: constant alternatives decided, then unit propagation;
//! 3. per conjunction, integer reductions: gcd tests on equations (the
//!    parity arguments of strided trees), elimination of unit-coefficient
//!    unknowns, gcd tightening of inequalities;
//! 4. Fourier-Motzkin elimination (no real solution, so no integer one)
//!    and bound propagation, which refute nearly every infeasible system;
//! 5. microlp: the real relaxation (infeasible, or a rounded solution that
//!    satisfies every row), then the integer program under a time limit,
//!    whose timeout counts as "may be feasible".

use crate::plan::sym::{decompose, Q};
use good_lp::{
    variable, Expression, ProblemVariables, ResolutionError, Solution, SolverModel, Variable,
    WithTimeLimit,
};
use model::expr::{BinOp, ExprPool, ExprRef, Func, Func2, Node, UnOp};
use model::program::{DomainItem, Program, Statement};
use std::collections::BTreeMap;

/// The ceiling on parameter values under which "proved" holds.
pub const PARAM_CEILING: i64 = 1 << 20;

/// Most alternatives a condition may expand to before it is relaxed away.
const MAX_ALTERNATIVES: usize = 16;
/// Most solver calls one feasibility question may make.
const MAX_COMBINATIONS: usize = 400;
/// Seconds a single integer program may take before it counts as feasible.
const TIME_LIMIT: f64 = 0.05;

/// An unknown of a system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Key {
    /// A loop variable of one side.
    Slot(u8, u32),
    /// A non-affine term mentioning loop variables of one side.
    Atom(u8, ExprRef),
    /// A term over the parameters only (a parameter itself, or e.g.
    /// `ceil(log2(N))`).
    Known(ExprRef),
    /// An auxiliary integer (a quotient of a stride or a `%`).
    Aux(u32),
    /// A program parameter.
    Param(u32),
}

/// An affine form `Σ q·key + constant`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Form {
    terms: BTreeMap<Key, Q>,
    constant: Q,
}

impl Form {
    /// A constant.
    pub(crate) fn constant(v: i64) -> Form {
        Form {
            terms: BTreeMap::new(),
            constant: Q::int(v),
        }
    }

    /// One unknown.
    pub(crate) fn key(k: Key) -> Form {
        let mut f = Form::default();
        f.terms.insert(k, Q::ONE);
        f
    }

    /// `self + k · other`.
    pub(crate) fn plus(&self, other: &Form, k: i64) -> Option<Form> {
        self.plus_q(other, Q::int(k))
    }

    /// `self + k · other` with a rational `k`.
    pub(crate) fn plus_q(&self, other: &Form, k: Q) -> Option<Form> {
        let mut out = self.clone();
        for (&key, &q) in &other.terms {
            let e = out.terms.entry(key).or_insert(Q::ZERO);
            *e = e.checked_add(q.checked_mul(k)?)?;
            if e.is_zero() {
                out.terms.remove(&key);
            }
        }
        out.constant = out.constant.checked_add(other.constant.checked_mul(k)?)?;
        Some(out)
    }

    /// The coefficient of a key.
    pub(crate) fn coefficient(&self, k: Key) -> Q {
        self.terms.get(&k).copied().unwrap_or(Q::ZERO)
    }

    /// The keys with non-zero coefficients.
    pub(crate) fn keys(&self) -> impl Iterator<Item = Key> + '_ {
        self.terms.keys().copied()
    }

    /// Whether every coefficient and the constant are integers.
    pub(crate) fn is_integral(&self) -> bool {
        self.constant.d == 1 && self.terms.values().all(|q| q.d == 1)
    }

    /// The form with one key replaced by another form.
    pub(crate) fn substitute(&self, k: Key, by: &Form) -> Option<Form> {
        let q = self.coefficient(k);
        if q.is_zero() {
            return Some(self.clone());
        }
        let mut rest = self.clone();
        rest.terms.remove(&k);
        rest.plus_q(by, q)
    }
}

/// `form >= 0` or `form == 0`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Constraint {
    /// `form >= 0`.
    Ge(Form),
    /// `form == 0`.
    Eq(Form),
}

/// Alternatives, each a conjunction: a condition in disjunctive form.
pub(crate) type Dnf = Vec<Vec<Constraint>>;

/// A feasibility question.
#[derive(Clone, Debug, Default)]
pub(crate) struct System {
    conj: Vec<Constraint>,
    disj: Vec<Dnf>,
    aux: u32,
    /// Atoms whose facts were added already.
    seen: Vec<Key>,
    /// Monotone atoms of one affine argument, for exact thresholds.
    mono: BTreeMap<Key, (Mono, Form)>,
    /// What holds for the values of non-affine terms.
    facts: Vec<Constraint>,
}

/// A non-decreasing integer function of one integer argument, whose
/// thresholds lint knows exactly: the smallest argument with `f(x) >= t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mono {
    /// `ceil(log_b(x))`, defined for `x >= 1`.
    CeilLog(i64),
    /// `floor(log_b(x))`, defined for `x >= 1`.
    FloorLog(i64),
    /// `b ** x`, defined for `x >= 0` (`b >= 2`).
    Pow(i64),
}

impl Mono {
    /// The smallest argument `x` (in the domain) with `f(x) >= t`; `None`
    /// when no 64-bit argument reaches `t`.
    fn threshold(self, t: i128) -> Option<i128> {
        let pow = |b: i64, e: i128| -> Option<i128> {
            let mut acc: i128 = 1;
            for _ in 0..e {
                acc = acc.checked_mul(b as i128)?;
                if acc > i64::MAX as i128 {
                    return None;
                }
            }
            Some(acc)
        };
        match self {
            Mono::CeilLog(b) => {
                if t <= 0 {
                    Some(1)
                } else {
                    Some(pow(b, t - 1)? + 1)
                }
            }
            Mono::FloorLog(b) => {
                if t <= 0 {
                    Some(1)
                } else {
                    pow(b, t)
                }
            }
            Mono::Pow(b) => {
                if t <= 1 {
                    return Some(0);
                }
                let mut e = 0i128;
                let mut acc: i128 = 1;
                while acc < t {
                    acc = acc.checked_mul(b as i128)?;
                    e += 1;
                    if e > 64 {
                        return None;
                    }
                }
                Some(e)
            }
        }
    }
}

/// `ceil(q)` of a rational.
fn ceil_q(q: Q) -> i128 {
    -((-q.n).div_euclid(q.d))
}

/// `floor(q)` of a rational.
fn floor_q(q: Q) -> i128 {
    q.n.div_euclid(q.d)
}

/// `a - b - k >= 0`.
fn ge_diff(a: &Form, b: &Form, k: i64) -> Option<Constraint> {
    let f = a.plus(b, -1)?.plus(&Form::constant(1), -k)?;
    Some(Constraint::Ge(f))
}

impl System {
    /// An empty system (no constraint: feasible).
    pub(crate) fn new() -> System {
        System::default()
    }

    /// Adds `a == b`.
    pub(crate) fn eq(&mut self, a: &Form, b: &Form) {
        if let Some(f) = a.plus(b, -1) {
            self.conj.push(Constraint::Eq(f));
        }
    }

    /// Adds `a >= b + k`.
    pub(crate) fn ge_by(&mut self, a: &Form, b: &Form, k: i64) {
        if let Some(c) = ge_diff(a, b, k) {
            self.conj.push(c);
        }
    }

    /// Adds a disjunction.
    pub(crate) fn any(&mut self, alternatives: Dnf) {
        if alternatives.len() == 1 {
            self.conj.extend(alternatives.into_iter().flatten());
        } else {
            self.disj.push(alternatives);
        }
    }

    /// The system's constraints as one conjunction (its disjunctions must
    /// be empty; they are dropped otherwise, which relaxes it).
    pub(crate) fn into_conjunction(self) -> Vec<Constraint> {
        let mut c = self.conj;
        c.extend(self.facts);
        c
    }

    /// A fresh auxiliary integer.
    pub(crate) fn fresh(&mut self) -> Form {
        self.aux += 1;
        Form::key(Key::Aux(self.aux))
    }

    /// The affine form of an int expression of `side` (`None` when it is
    /// not int-valued or too large); non-affine terms get their facts.
    pub(crate) fn form(&mut self, pool: &ExprPool, side: u8, e: ExprRef) -> Option<Form> {
        let lin = decompose(pool, e, &|_| true)?;
        let mut f = Form {
            terms: BTreeMap::new(),
            constant: lin.constant,
        };
        for (&s, &q) in &lin.vars {
            f.terms.insert(Key::Slot(side, s), q);
        }
        for (&a, &q) in &lin.atoms {
            let k = Key::Atom(side, a);
            f.terms.insert(k, q);
            self.facts(pool, side, k, a);
        }
        for (&a, &q) in &lin.known {
            let k = match pool.get(a) {
                Some(Node::Param(i)) => Key::Param(*i),
                _ => Key::Known(a),
            };
            f.terms.insert(k, q);
            self.facts(pool, side, k, a);
        }
        Some(f)
    }

    /// Adds the fact `a >= b + k` (kept apart from the constraints: facts
    /// describe a term's value and are never translated into conditions
    /// on its argument, which might not have been evaluated).
    fn fact_ge(&mut self, a: &Form, b: &Form, k: i64) {
        if let Some(c) = ge_diff(a, b, k) {
            self.facts.push(c);
        }
    }

    /// Adds the fact `a == b`.
    fn fact_eq(&mut self, a: &Form, b: &Form) {
        if let Some(f) = a.plus(b, -1) {
            self.facts.push(Constraint::Eq(f));
        }
    }

    /// What always holds for a non-affine term in an executing task.
    fn facts(&mut self, pool: &ExprPool, side: u8, key: Key, e: ExprRef) {
        if self.seen.contains(&key) {
            return;
        }
        self.seen.push(key);
        let me = Form::key(key);
        let Some(node) = pool.get(e).copied() else {
            return;
        };
        match node {
            // An exponent is never negative in a task that runs (it would
            // be an evaluation error), so a power of b >= 1 is >= 1.
            Node::Binary(BinOp::Pow, b, e) => {
                if let Some(Node::Int(b)) = pool.get(b).copied() {
                    if b >= 1 {
                        self.fact_ge(&me, &Form::constant(1), 0);
                    }
                    if b >= 2 {
                        if let Some(x) = self.form(pool, side, e) {
                            self.mono.insert(key, (Mono::Pow(b), x));
                        }
                    }
                }
            }
            Node::Binary(BinOp::Mod, a, b) => {
                if let (Some(Node::Int(c)), Some(x)) =
                    (pool.get(b).copied(), self.form(pool, side, a))
                {
                    if c > 0 {
                        // x = c·q + r with 0 <= r < c.
                        let q = self.fresh();
                        self.fact_ge(&me, &Form::constant(0), 0);
                        self.fact_ge(&Form::constant(c - 1), &me, 0);
                        if let Some(rhs) = Form::default().plus(&q, c).and_then(|f| f.plus(&me, 1))
                        {
                            self.fact_eq(&x, &rhs);
                        }
                    }
                }
            }
            Node::Binary(BinOp::FloorDiv, a, b) => {
                if let (Some(Node::Int(c)), Some(x)) =
                    (pool.get(b).copied(), self.form(pool, side, a))
                {
                    if c > 0 {
                        // c·d <= x <= c·d + c - 1.
                        if let Some(cd) = Form::default().plus(&me, c) {
                            self.fact_ge(&x, &cd, 0);
                            self.fact_ge(&cd, &x, 1 - c);
                        }
                    }
                }
            }
            Node::Binary(op @ (BinOp::Min | BinOp::Max), a, b) => {
                for arg in [a, b] {
                    if let Some(x) = self.form(pool, side, arg) {
                        if op == BinOp::Min {
                            self.fact_ge(&x, &me, 0);
                        } else {
                            self.fact_ge(&me, &x, 0);
                        }
                    }
                }
            }
            Node::Call(f @ (Func::CeilLog2 | Func::FloorLog2), a) => {
                self.fact_ge(&me, &Form::constant(0), 0);
                if let Some(x) = self.form(pool, side, a) {
                    let m = if f == Func::CeilLog2 {
                        Mono::CeilLog(2)
                    } else {
                        Mono::FloorLog(2)
                    };
                    self.mono.insert(key, (m, x));
                }
            }
            Node::Call2(f @ (Func2::CeilLogB | Func2::FloorLogB), a, b) => {
                if let (Some(Node::Int(b)), Some(x)) =
                    (pool.get(b).copied(), self.form(pool, side, a))
                {
                    if b >= 2 {
                        self.fact_ge(&me, &Form::constant(0), 0);
                        let m = if f == Func2::CeilLogB {
                            Mono::CeilLog(b)
                        } else {
                            Mono::FloorLog(b)
                        };
                        self.mono.insert(key, (m, x));
                    }
                }
            }
            Node::Call2(Func2::CeilDiv, a, b) => {
                if let (Some(Node::Int(c)), Some(x)) =
                    (pool.get(b).copied(), self.form(pool, side, a))
                {
                    if c > 0 {
                        // c·d - c + 1 <= x <= c·d.
                        if let Some(cd) = Form::default().plus(&me, c) {
                            self.fact_ge(&cd, &x, 0);
                            self.fact_ge(&x, &cd, 1 - c);
                        }
                    }
                }
            }
            Node::Call(Func::Abs, _) => self.fact_ge(&me, &Form::constant(0), 0),
            _ => {}
        }
    }

    /// A condition (or its negation) in disjunctive form over `side`; parts
    /// that cannot be expressed are relaxed to "true".
    pub(crate) fn cond(&mut self, pool: &ExprPool, side: u8, e: ExprRef, positive: bool) -> Dnf {
        let relaxed = || vec![Vec::new()];
        let Some(node) = pool.get(e).copied() else {
            return relaxed();
        };
        match node {
            Node::Bool(b) => {
                if b == positive {
                    relaxed()
                } else {
                    Vec::new()
                }
            }
            Node::Unary(UnOp::Not, a) => self.cond(pool, side, a, !positive),
            Node::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
                let (x, y) = (
                    self.cond(pool, side, a, positive),
                    self.cond(pool, side, b, positive),
                );
                // `and` (or a negated `or`) is a conjunction.
                if (op == BinOp::And) == positive {
                    if x.len() * y.len() > MAX_ALTERNATIVES {
                        return if x.len() <= y.len() { x } else { y };
                    }
                    let mut out = Vec::new();
                    for u in &x {
                        for v in &y {
                            out.push(u.iter().chain(v).cloned().collect());
                        }
                    }
                    out
                } else {
                    if x.len() + y.len() > MAX_ALTERNATIVES {
                        return relaxed();
                    }
                    x.into_iter().chain(y).collect()
                }
            }
            Node::Binary(op, a, b) => {
                let op = match (op, positive) {
                    (op, true) => op,
                    (BinOp::Lt, false) => BinOp::Ge,
                    (BinOp::Le, false) => BinOp::Gt,
                    (BinOp::Gt, false) => BinOp::Le,
                    (BinOp::Ge, false) => BinOp::Lt,
                    (BinOp::Eq, false) => BinOp::Ne,
                    (BinOp::Ne, false) => BinOp::Eq,
                    _ => return relaxed(),
                };
                let (Some(x), Some(y)) = (self.form(pool, side, a), self.form(pool, side, b))
                else {
                    return relaxed();
                };
                let one = |c: Option<Constraint>| match c {
                    Some(c) => vec![vec![c]],
                    None => relaxed(),
                };
                match op {
                    BinOp::Ge => one(ge_diff(&x, &y, 0)),
                    BinOp::Gt => one(ge_diff(&x, &y, 1)),
                    BinOp::Le => one(ge_diff(&y, &x, 0)),
                    BinOp::Lt => one(ge_diff(&y, &x, 1)),
                    BinOp::Eq => match x.plus(&y, -1) {
                        Some(f) => vec![vec![Constraint::Eq(f)]],
                        None => relaxed(),
                    },
                    BinOp::Ne => match (ge_diff(&x, &y, 1), ge_diff(&y, &x, 1)) {
                        (Some(p), Some(q)) => vec![vec![p], vec![q]],
                        _ => relaxed(),
                    },
                    _ => relaxed(),
                }
            }
            _ => relaxed(),
        }
    }

    /// Adds a condition (or its negation).
    pub(crate) fn assume(&mut self, pool: &ExprPool, side: u8, e: ExprRef, positive: bool) {
        let d = self.cond(pool, side, e, positive);
        self.any(d);
    }

    /// Adds the program's `require`s.
    pub(crate) fn requires(&mut self, program: &Program) {
        for &r in &program.requires {
            self.assume(&program.exprs, 0, r, true);
        }
    }

    /// Adds one domain item of a statement copy.
    pub(crate) fn item(&mut self, pool: &ExprPool, side: u8, item: &DomainItem) {
        match *item {
            DomainItem::Loop { slot, lo, hi, step } => {
                let x = Form::key(Key::Slot(side, slot));
                if let Some(lo) = self.form(pool, side, lo) {
                    self.ge_by(&x, &lo, 0);
                    // A constant stride: x = lo + step·q, q >= 0.
                    if let Some(Node::Int(s)) = pool.get(step).copied() {
                        if s > 1 {
                            let q = self.fresh();
                            self.ge_by(&q, &Form::constant(0), 0);
                            if let Some(rhs) = lo.plus(&q, s) {
                                self.eq(&x, &rhs);
                            }
                        }
                    }
                }
                if let Some(hi) = self.form(pool, side, hi) {
                    self.ge_by(&hi, &x, 1);
                }
            }
            DomainItem::Guard { cond, positive } => self.assume(pool, side, cond, positive),
        }
    }

    /// Adds a statement's whole domain on `side`.
    pub(crate) fn domain(&mut self, pool: &ExprPool, side: u8, st: &Statement) {
        for item in &st.domain {
            self.item(pool, side, item);
        }
    }

    /// Adds everything `other` holds (its auxiliaries renamed apart from
    /// this system's), as if its constraints had been added here.
    pub(crate) fn merge(&mut self, other: &System) {
        let offset = self.aux;
        let rename = |f: &Form| -> Form {
            if offset == 0 || !f.terms.keys().any(|k| matches!(k, Key::Aux(_))) {
                return f.clone();
            }
            let mut out = Form {
                terms: BTreeMap::new(),
                constant: f.constant,
            };
            for (&k, &q) in &f.terms {
                let k = match k {
                    Key::Aux(i) => Key::Aux(i + offset),
                    k => k,
                };
                out.terms.insert(k, q);
            }
            out
        };
        let rename_c = |c: &Constraint| match c {
            Constraint::Ge(f) => Constraint::Ge(rename(f)),
            Constraint::Eq(f) => Constraint::Eq(rename(f)),
        };
        self.conj.extend(other.conj.iter().map(rename_c));
        self.facts.extend(other.facts.iter().map(rename_c));
        for d in &other.disj {
            self.disj.push(
                d.iter()
                    .map(|alt| alt.iter().map(rename_c).collect())
                    .collect(),
            );
        }
        for (k, (m, x)) in &other.mono {
            self.mono.entry(*k).or_insert_with(|| (*m, rename(x)));
        }
        for k in &other.seen {
            if !self.seen.contains(k) {
                self.seen.push(*k);
            }
        }
        self.aux += other.aux;
    }

    /// Lets this system translate the monotone atoms `other` registered
    /// (terms over the parameters only, which mean the same on any side).
    pub(crate) fn learn_atoms(&mut self, other: &System) {
        for (k, v) in &other.mono {
            if matches!(k, Key::Known(_) | Key::Param(_)) {
                self.mono.entry(*k).or_insert_with(|| v.clone());
            }
        }
    }

    /// A constraint with its monotone atom compared to a constant replaced
    /// by the exact threshold on the atom's argument (`ceil(log2(x)) >= 3`
    /// becomes `x >= 5`): a conjunction, `None` when it cannot hold, empty
    /// when it always holds. A comparison that holds was evaluated, so the
    /// argument is in the atom's domain there.
    fn translate(&self, c: &Constraint) -> Option<Vec<Constraint>> {
        let (form, is_eq) = match c {
            Constraint::Ge(f) => (f, false),
            Constraint::Eq(f) => (f, true),
        };
        if form.terms.is_empty() {
            let v = form.constant;
            let ok = if is_eq { v.is_zero() } else { v.n >= 0 };
            return ok.then(Vec::new);
        }
        let mut keys = form.terms.iter();
        let (Some((&k, &a)), None) = (keys.next(), keys.next()) else {
            return Some(vec![c.clone()]);
        };
        let Some((m, x)) = self.mono.get(&k) else {
            return Some(vec![c.clone()]);
        };
        let keep = || Some(vec![c.clone()]);
        // a·f + b (>= or ==) 0.
        let b = form.constant;
        let Some(ratio) = b.negated().checked_div(a) else {
            return keep();
        };
        let at_least = |t: i128| -> Option<Option<Constraint>> {
            // x >= threshold(t); None inside: never.
            let th = m.threshold(t)?;
            let th = i64::try_from(th).ok()?;
            Some(Some(Constraint::Ge(x.plus(&Form::constant(th), -1)?)))
        };
        let below = |t: i128| -> Option<Option<Constraint>> {
            // f < t, i.e. x < threshold(t): always when t is never reached.
            match m.threshold(t) {
                None => Some(None),
                Some(th) => {
                    let th = i64::try_from(th).ok()?;
                    Some(Some(Constraint::Ge(Form::constant(th - 1).plus(x, -1)?)))
                }
            }
        };
        let mut out = Vec::new();
        if is_eq {
            if ratio.d != 1 {
                return None;
            }
            let t = ratio.n;
            match at_least(t) {
                Some(Some(c)) => out.push(c),
                _ => {
                    return if m.threshold(t).is_none() {
                        None
                    } else {
                        keep()
                    }
                }
            }
            match below(t + 1) {
                Some(Some(c)) => out.push(c),
                Some(None) => {}
                None => return keep(),
            }
        } else if a.n > 0 {
            let t = ceil_q(ratio);
            m.threshold(t)?;
            match at_least(t) {
                Some(Some(c)) => out.push(c),
                _ => return keep(),
            }
        } else {
            let t = floor_q(ratio);
            match below(t + 1) {
                Some(Some(c)) => out.push(c),
                Some(None) => {}
                None => return keep(),
            }
        }
        Some(out)
    }

    /// The translated conjunction (`None`: it cannot hold).
    fn translate_all<'c>(
        &self,
        cs: impl IntoIterator<Item = &'c Constraint>,
    ) -> Option<Vec<Constraint>> {
        let mut out = Vec::new();
        for c in cs {
            out.extend(self.translate(c)?);
        }
        Some(out)
    }

    /// Whether the system may have a solution: false only when the solver
    /// proved that none exists.
    ///
    /// Constraints are first translated (monotone atoms against constants)
    /// and constant ones decided; an alternative that cannot hold is
    /// dropped and a disjunction with an alternative that always holds is
    /// dropped whole. Then unit propagation: a disjunction with a single
    /// alternative feasible with the base is added to the base. What is
    /// left is searched depth first, most selective first, and a partial
    /// choice whose conjunction is already infeasible is pruned. Past
    /// [`MAX_COMBINATIONS`] solver calls the answer is "may be feasible",
    /// which is always safe.
    pub(crate) fn feasible(&self) -> bool {
        let Some(mut base) = self.translate_all(&self.conj) else {
            return false;
        };
        base.extend(self.facts.iter().cloned());
        let mut disj: Vec<Dnf> = Vec::new();
        for d in &self.disj {
            let mut alts = Vec::new();
            let mut always = false;
            for alt in d {
                if let Some(t) = self.translate_all(alt) {
                    if t.is_empty() {
                        always = true;
                        break;
                    }
                    alts.push(t);
                }
            }
            if always {
                continue;
            }
            if alts.is_empty() {
                return false;
            }
            if alts.len() == 1 {
                base.extend(alts.into_iter().flatten());
            } else {
                disj.push(alts);
            }
        }
        let mut calls = 0usize;
        // Unit propagation.
        loop {
            let mut changed = false;
            let mut i = 0;
            while i < disj.len() {
                let Some(d) = disj.get_mut(i) else {
                    break;
                };
                let mut kept = Vec::new();
                for alt in d.drain(..) {
                    calls += 1;
                    if calls > MAX_COMBINATIONS {
                        return true;
                    }
                    let all: Vec<&Constraint> = base.iter().chain(&alt).collect();
                    if solve(&all) {
                        kept.push(alt);
                    }
                }
                match kept.len() {
                    0 => return false,
                    1 => {
                        base.extend(kept.into_iter().flatten());
                        disj.remove(i);
                        changed = true;
                    }
                    _ => {
                        *d = kept;
                        i += 1;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        disj.sort_by_key(|d| d.len());
        let refs: Vec<&Dnf> = disj.iter().collect();
        let base: Vec<&Constraint> = base.iter().collect();
        search(&base, &refs, &mut calls)
    }
}

fn search(chosen: &[&Constraint], rest: &[&Dnf], calls: &mut usize) -> bool {
    *calls += 1;
    if *calls > MAX_COMBINATIONS {
        return true;
    }
    if !solve(chosen) {
        return false;
    }
    let Some((first, rest)) = rest.split_first() else {
        return true;
    };
    for alt in first.iter() {
        let mut next: Vec<&Constraint> = chosen.to_vec();
        next.extend(alt.iter());
        if search(&next, rest, calls) {
            return true;
        }
    }
    false
}

/// Whether an unknown is an integer. Every one is: parameters, loop
/// variables and auxiliaries are, and the non-affine terms come from int
/// expressions (an int sum has int summands), so their values are
/// integers too. A term that a task does not evaluate (the right side of
/// an `or` whose left side held) is free, and its facts always admit an
/// integer value, so requiring one loses no solution.
fn integral(k: Key) -> bool {
    match k {
        Key::Slot(..) | Key::Aux(_) | Key::Param(_) | Key::Atom(..) | Key::Known(_) => true,
    }
}

fn gcd_i(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Coefficients far below `i128::MAX`, so one multiply-add never
/// overflows; past it the reduction gives up (and the system is solved
/// as it was).
const COEFF_LIMIT: i128 = 1 << 62;

/// A conjunction in dense integer form: `Σ a·x + c (>= or ==) 0`.
struct Dense {
    cols: Vec<Key>,
    /// Coefficients, constant, and whether the row is an equation.
    rows: Vec<(Vec<i128>, i128, bool)>,
}

impl Dense {
    /// The conjunction with every row scaled to integers; `None` on
    /// overflow.
    fn new(constraints: &[&Constraint]) -> Option<Dense> {
        let mut cols: Vec<Key> = Vec::new();
        for c in constraints {
            let (Constraint::Ge(f) | Constraint::Eq(f)) = c;
            for k in f.keys() {
                if !cols.contains(&k) {
                    cols.push(k);
                }
            }
        }
        let mut rows = Vec::with_capacity(constraints.len() + 8);
        for c in constraints {
            let (f, is_eq) = match c {
                Constraint::Ge(f) => (f, false),
                Constraint::Eq(f) => (f, true),
            };
            let mut den: i128 = f.constant.d;
            for q in f.terms.values() {
                den = (den / gcd_i(den, q.d)).checked_mul(q.d)?;
                if den > COEFF_LIMIT {
                    return None;
                }
            }
            let scale = |q: Q| -> Option<i128> {
                let v = q.n.checked_mul(den / q.d)?;
                (v.abs() < COEFF_LIMIT).then_some(v)
            };
            let mut a = vec![0i128; cols.len()];
            for (k, &q) in &f.terms {
                let j = cols.iter().position(|c| c == k)?;
                *a.get_mut(j)? = scale(q)?;
            }
            rows.push((a, scale(f.constant)?, is_eq));
        }
        // Parameters keep their ceiling when they are eliminated.
        for (j, k) in cols.iter().enumerate() {
            if matches!(k, Key::Param(_)) {
                for sign in [1i128, -1] {
                    let mut a = vec![0i128; cols.len()];
                    *a.get_mut(j)? = sign;
                    rows.push((a, PARAM_CEILING as i128, false));
                }
            }
        }
        Some(Dense { cols, rows })
    }

    /// Exact integer reductions; `Some(false)` when there is no integer
    /// solution, `None` on overflow. Equations over integers only are
    /// divided by the gcd of their coefficients (no solution when it does
    /// not divide the constant: `2q - 4r = 1`, which branch and bound may
    /// never settle), an unknown with coefficient ±1 in one is eliminated
    /// everywhere, and inequalities over integers only are divided by their
    /// gcd with the constant rounded down (`16a - 4b - 1 >= 0` becomes
    /// `4a - b - 1 >= 0`), all of which keep exactly the integer solutions.
    fn reduce(&mut self) -> Option<bool> {
        let integral_col: Vec<bool> = self.cols.iter().map(|&k| integral(k)).collect();
        let all_integral = |a: &[i128]| a.iter().zip(&integral_col).all(|(&x, &int)| x == 0 || int);
        let mut done = vec![false; self.rows.len()];
        loop {
            let mut pivot = None;
            for (i, (a, c, is_eq)) in self.rows.iter_mut().enumerate() {
                if !*is_eq || done.get(i).copied().unwrap_or(true) || !all_integral(a) {
                    continue;
                }
                let g = a.iter().fold(0i128, |g, &x| gcd_i(g, x));
                if g == 0 {
                    if *c != 0 {
                        return Some(false);
                    }
                    if let Some(d) = done.get_mut(i) {
                        *d = true;
                    }
                    continue;
                }
                if *c % g != 0 {
                    return Some(false);
                }
                a.iter_mut().for_each(|x| *x /= g);
                *c /= g;
                if let Some(j) = a.iter().position(|x| x.abs() == 1) {
                    pivot = Some((i, j));
                    break;
                }
                if let Some(d) = done.get_mut(i) {
                    *d = true;
                }
            }
            let Some((i, j)) = pivot else {
                break;
            };
            let (pa, pc, _) = self.rows.get(i)?.clone();
            let pj = *pa.get(j)?;
            for (r, (a, c, is_eq)) in self.rows.iter_mut().enumerate() {
                if r == i {
                    continue;
                }
                let k = *a.get(j)?;
                if k == 0 {
                    continue;
                }
                // row -= (k / pj) · pivot row, pj = ±1.
                let m = k * pj;
                for (x, &y) in a.iter_mut().zip(&pa) {
                    *x = x.checked_sub(m.checked_mul(y)?)?;
                    if x.abs() >= COEFF_LIMIT {
                        return None;
                    }
                }
                *c = c.checked_sub(m.checked_mul(pc)?)?;
                if c.abs() >= COEFF_LIMIT {
                    return None;
                }
                if *is_eq {
                    if let Some(d) = done.get_mut(r) {
                        *d = false;
                    }
                }
            }
            // The pivot row is used up.
            self.rows.swap_remove(i);
            done.swap_remove(i);
        }
        let mut kept = Vec::with_capacity(self.rows.len());
        for (mut a, mut c, is_eq) in self.rows.drain(..) {
            if a.iter().all(|&x| x == 0) {
                let ok = if is_eq { c == 0 } else { c >= 0 };
                if !ok {
                    return Some(false);
                }
                continue;
            }
            if !is_eq && all_integral(&a) {
                let g = a.iter().fold(0i128, |g, &x| gcd_i(g, x));
                if g > 1 {
                    a.iter_mut().for_each(|x| *x /= g);
                    c = c.div_euclid(g);
                }
            }
            kept.push((a, c, is_eq));
        }
        self.rows = kept;
        Some(true)
    }
}

/// Whether the conjunction may be satisfiable by integers (true when the
/// solver cannot tell): exact integer reductions first, then the integer
/// program (microlp) under a time limit.
fn solve(constraints: &[&Constraint]) -> bool {
    // Constant constraints decide themselves.
    let mut pending: Vec<&Constraint> = Vec::with_capacity(constraints.len());
    for &c in constraints {
        let (f, is_eq) = match c {
            Constraint::Ge(f) => (f, false),
            Constraint::Eq(f) => (f, true),
        };
        if f.terms.is_empty() {
            let v = f.constant;
            let ok = if is_eq { v.is_zero() } else { v.n >= 0 };
            if !ok {
                return false;
            }
        } else {
            pending.push(c);
        }
    }
    if pending.is_empty() {
        return true;
    }
    let Some(mut dense) = Dense::new(&pending) else {
        return true;
    };
    match dense.reduce() {
        Some(false) => false,
        Some(true) => solve_dense(&dense),
        None => Dense::new(&pending).is_none_or(|d| solve_dense(&d)),
    }
}

/// Bound propagation: each row tightens the bounds of its unknowns from
/// the others' (rounded inward for integers), for a few rounds. Only
/// implied bounds are derived, so crossing bounds prove that no solution
/// exists; anything else is left to the solver.
fn propagation_refutes(d: &Dense) -> bool {
    const ROUNDS: usize = 4;
    let n = d.cols.len();
    let inf = f64::INFINITY;
    let mut lo = vec![-inf; n];
    let mut hi = vec![inf; n];
    let int: Vec<bool> = d.cols.iter().map(|&k| integral(k)).collect();
    for _ in 0..ROUNDS {
        let mut changed = false;
        for (a, c, is_eq) in &d.rows {
            // Σ a·x + c >= 0 (and <= 0 for an equation, as -row >= 0).
            for sign in [1.0f64, -1.0] {
                if sign < 0.0 && !is_eq {
                    continue;
                }
                // max of Σ a·x over the box, per term.
                let mut max_sum = sign * (*c as f64);
                let mut unbounded = 0usize;
                let mut which = usize::MAX;
                for (j, &x) in a.iter().enumerate() {
                    if x == 0 {
                        continue;
                    }
                    let k = sign * x as f64;
                    let (l, h) = (
                        lo.get(j).copied().unwrap_or(-inf),
                        hi.get(j).copied().unwrap_or(inf),
                    );
                    let m = if k > 0.0 { k * h } else { k * l };
                    if m.is_infinite() {
                        unbounded += 1;
                        which = j;
                    } else {
                        max_sum += m;
                    }
                }
                if unbounded == 0 && max_sum < -1e-9 {
                    return true;
                }
                if unbounded > 1 {
                    continue;
                }
                // Tighten each term: k·x_j >= -(max_sum - own term).
                for (j, &x) in a.iter().enumerate() {
                    if x == 0 || (unbounded == 1 && j != which) {
                        continue;
                    }
                    let k = sign * x as f64;
                    let (l, h) = (
                        lo.get(j).copied().unwrap_or(-inf),
                        hi.get(j).copied().unwrap_or(inf),
                    );
                    let own = if unbounded == 1 {
                        0.0
                    } else if k > 0.0 {
                        k * h
                    } else {
                        k * l
                    };
                    let rest = max_sum - own;
                    // k·x + rest >= 0.
                    let bound = -rest / k;
                    let is_int = int.get(j).copied().unwrap_or(false);
                    if k > 0.0 {
                        let b = if is_int { (bound - 1e-9).ceil() } else { bound };
                        if b > l + 1e-9 {
                            if let Some(v) = lo.get_mut(j) {
                                *v = b;
                            }
                            changed = true;
                        }
                    } else {
                        let b = if is_int {
                            (bound + 1e-9).floor()
                        } else {
                            bound
                        };
                        if b < h - 1e-9 {
                            if let Some(v) = hi.get_mut(j) {
                                *v = b;
                            }
                            changed = true;
                        }
                    }
                    if lo.get(j).copied().unwrap_or(-inf) > hi.get(j).copied().unwrap_or(inf) + 1e-9
                    {
                        return true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    false
}

/// Of rows with the same coefficients keeps the tightest (`a·x + c >= 0`
/// with the smallest `c` implies the others).
fn keep_tightest(rows: &mut Vec<(Vec<i128>, i128)>) {
    rows.sort_unstable();
    rows.dedup_by(|later, first| later.0 == first.0);
}

/// Fourier-Motzkin elimination (the "real shadow"): unknowns are
/// eliminated one by one, each pair of a lower and an upper bound giving
/// their combination; a row `0 >= c` with `c > 0` on the way proves that
/// no real (hence no integer) solution exists. Rows over integers only are
/// divided by their gcd, rounding the constant down, which keeps exactly
/// the integer solutions and makes the refutation stronger. Gives up
/// (false) when the rows grow past a small limit.
fn fm_refutes(d: &Dense) -> bool {
    const MAX_ROWS: usize = 400;
    let integral_col: Vec<bool> = d.cols.iter().map(|&k| integral(k)).collect();
    let n = d.cols.len();
    let normalize = |mut a: Vec<i128>, mut c: i128| -> Option<(Vec<i128>, i128)> {
        let int = a.iter().zip(&integral_col).all(|(&x, &i)| x == 0 || i);
        let g = a.iter().fold(0i128, |g, &x| gcd_i(g, x));
        if g > 1 {
            if int {
                a.iter_mut().for_each(|x| *x /= g);
                c = c.div_euclid(g);
            } else if c % g == 0 {
                a.iter_mut().for_each(|x| *x /= g);
                c /= g;
            }
        }
        if a.iter().any(|x| x.abs() >= COEFF_LIMIT) || c.abs() >= COEFF_LIMIT {
            return None;
        }
        Some((a, c))
    };
    // Every row as `Σ a·x + c >= 0`.
    let mut rows: Vec<(Vec<i128>, i128)> = Vec::with_capacity(d.rows.len() * 2);
    for (a, c, is_eq) in &d.rows {
        rows.push((a.clone(), *c));
        if *is_eq {
            rows.push((a.iter().map(|x| -x).collect(), -c));
        }
    }
    keep_tightest(&mut rows);
    let mut alive = vec![true; n];
    loop {
        // Constant rows decide themselves.
        let mut next = Vec::with_capacity(rows.len());
        for (a, c) in rows {
            if a.iter().all(|&x| x == 0) {
                if c < 0 {
                    return true;
                }
            } else {
                next.push((a, c));
            }
        }
        rows = next;
        // The unknown with the fewest new rows.
        let mut best: Option<(usize, usize)> = None;
        for j in 0..n {
            if !alive.get(j).copied().unwrap_or(false) {
                continue;
            }
            let (mut pos, mut neg) = (0usize, 0usize);
            for (a, _) in &rows {
                match a.get(j).copied().unwrap_or(0).signum() {
                    1 => pos += 1,
                    -1 => neg += 1,
                    _ => {}
                }
            }
            if pos + neg == 0 {
                if let Some(x) = alive.get_mut(j) {
                    *x = false;
                }
                continue;
            }
            let cost = pos * neg;
            if best.is_none_or(|(_, c)| cost < c) {
                best = Some((j, cost));
            }
        }
        let Some((j, _)) = best else {
            return false;
        };
        if let Some(x) = alive.get_mut(j) {
            *x = false;
        }
        let (mut lower, mut upper, mut rest) = (Vec::new(), Vec::new(), Vec::new());
        for (a, c) in rows {
            match a.get(j).copied().unwrap_or(0).signum() {
                1 => lower.push((a, c)),
                -1 => upper.push((a, c)),
                _ => rest.push((a, c)),
            }
        }
        if rest.len() + lower.len() * upper.len() > MAX_ROWS {
            return false;
        }
        for (la, lc) in &lower {
            for (ua, uc) in &upper {
                let (p, q) = (
                    la.get(j).copied().unwrap_or(0),
                    -ua.get(j).copied().unwrap_or(0),
                );
                // q·lower + p·upper eliminates x_j (p, q > 0).
                let mut a = Vec::with_capacity(n);
                for (&x, &y) in la.iter().zip(ua) {
                    let Some(v) = q
                        .checked_mul(x)
                        .and_then(|u| p.checked_mul(y).and_then(|w| u.checked_add(w)))
                    else {
                        return false;
                    };
                    a.push(v);
                }
                let Some(c) = q
                    .checked_mul(*lc)
                    .and_then(|u| p.checked_mul(*uc).and_then(|w| u.checked_add(w)))
                else {
                    return false;
                };
                let Some(row) = normalize(a, c) else {
                    return false;
                };
                rest.push(row);
            }
        }
        keep_tightest(&mut rest);
        rows = rest;
    }
}

fn solve_dense(d: &Dense) -> bool {
    if d.rows.is_empty() {
        return true;
    }
    if fm_refutes(d) || propagation_refutes(d) {
        return false;
    }
    solve_lp(d)
}

/// A microlp problem: its unknowns, each column's unknown, and its rows
/// (`== 0` when flagged, else `>= 0`).
type Model = (
    ProblemVariables,
    Vec<Option<Variable>>,
    Vec<(Expression, bool)>,
);

/// The problem of a dense conjunction for microlp, integer or relaxed.
fn model(d: &Dense, integer: bool) -> Option<Model> {
    let mut vars = ProblemVariables::new();
    let mut map: Vec<Option<Variable>> = vec![None; d.cols.len()];
    let mut rows = Vec::with_capacity(d.rows.len());
    for (a, c, is_eq) in &d.rows {
        let mut e = Expression::from(*c as f64);
        for (j, &x) in a.iter().enumerate() {
            if x == 0 {
                continue;
            }
            let (Some(slot), Some(&k)) = (map.get_mut(j), d.cols.get(j)) else {
                return None;
            };
            let v = *slot.get_or_insert_with(|| {
                let int = |v: good_lp::VariableDefinition| if integer { v.integer() } else { v };
                let def = match k {
                    Key::Known(_) | Key::Atom(..) => int(variable()),
                    Key::Param(_) => {
                        int(variable().clamp(-PARAM_CEILING as f64, PARAM_CEILING as f64))
                    }
                    Key::Slot(..) | Key::Aux(_) => {
                        int(variable().clamp(i32::MIN as f64 + 1.0, i32::MAX as f64 - 1.0))
                    }
                };
                vars.add(def)
            });
            e += (x as f64) * v;
        }
        rows.push((e, *is_eq));
    }
    Some((vars, map, rows))
}

/// Whether the rows hold at a point (integer unknowns exactly; the real
/// ones within a small tolerance).
fn holds_at(d: &Dense, value: &[f64]) -> bool {
    d.rows.iter().all(|(a, c, is_eq)| {
        let mut exact: i128 = *c;
        let mut real = 0.0f64;
        for ((&x, &k), &v) in a.iter().zip(&d.cols).zip(value) {
            if x == 0 {
                continue;
            }
            if integral(k) {
                let Some(t) = x.checked_mul(v as i128).and_then(|t| exact.checked_add(t)) else {
                    return false;
                };
                exact = t;
            } else {
                real += x as f64 * v;
            }
        }
        let total = exact as f64 + real;
        if *is_eq {
            total.abs() <= 1e-6
        } else {
            total >= -1e-6
        }
    })
}

/// The solver: the real relaxation first (infeasible: no solution;
/// its solution rounded to integers satisfies every row: a solution),
/// then the integer program under a time limit.
fn solve_lp(d: &Dense) -> bool {
    let Some((vars, map, rows)) = model(d, false) else {
        return true;
    };
    let mut relaxed = vars.minimise(Expression::from(0.0)).using(good_lp::microlp);
    for (e, is_eq) in rows {
        relaxed = relaxed.with(if is_eq { e.eq(0.0) } else { e.geq(0.0) });
    }
    match relaxed.solve() {
        Err(ResolutionError::Infeasible) => return false,
        Ok(sol) => {
            let point: Vec<f64> = map
                .iter()
                .zip(&d.cols)
                .map(|(v, &k)| {
                    let x = v.map(|v| sol.value(v)).unwrap_or(0.0);
                    if integral(k) {
                        x.round()
                    } else {
                        x
                    }
                })
                .collect();
            if holds_at(d, &point) {
                return true;
            }
        }
        Err(_) => {}
    }
    let Some((vars, _, rows)) = model(d, true) else {
        return true;
    };
    let mut m = vars
        .minimise(Expression::from(0.0))
        .using(good_lp::microlp)
        .with_time_limit(TIME_LIMIT);
    for (e, is_eq) in rows {
        m = m.with(if is_eq { e.eq(0.0) } else { e.geq(0.0) });
    }
    !matches!(m.solve(), Err(ResolutionError::Infeasible))
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::expr::{ceil_log, floor_log, int_pow};

    /// The threshold is the smallest argument reaching `t`, checked against
    /// the evaluator's own functions.
    #[test]
    fn thresholds_agree_with_the_evaluator() {
        for b in [2i64, 3, 4, 10] {
            type Case<'a> = (Mono, i64, &'a dyn Fn(i64) -> i64);
            let cases: [Case; 3] = [
                (Mono::CeilLog(b), 1, &|x| ceil_log(x, b).unwrap_or(i64::MIN)),
                (Mono::FloorLog(b), 1, &|x| {
                    floor_log(x, b).unwrap_or(i64::MIN)
                }),
                (Mono::Pow(b), 0, &|x| int_pow(b, x).unwrap_or(i64::MAX)),
            ];
            for (m, min, f) in cases {
                let top = if matches!(m, Mono::Pow(_)) { 40 } else { 5000 };
                for t in -3i128..=12 {
                    let brute = (min..=top).find(|&x| f(x) as i128 >= t);
                    match (m.threshold(t), brute) {
                        (Some(th), Some(x)) => assert_eq!(th, x as i128, "{m:?} t={t}"),
                        (Some(th), None) => assert!(th > top as i128, "{m:?} t={t}"),
                        (None, Some(x)) => panic!("{m:?} t={t}: none, but {x} reaches it"),
                        (None, None) => {}
                    }
                }
            }
        }
        // Beyond 64-bit arguments: never.
        assert_eq!(Mono::CeilLog(2).threshold(64), None);
        assert_eq!(Mono::CeilLog(2).threshold(63), Some((1i128 << 62) + 1));
        assert_eq!(Mono::Pow(2).threshold(1 << 62), Some(62));
    }

    fn ge(terms: &[(Key, i64)], c: i64) -> Constraint {
        let mut f = Form::constant(c);
        for &(k, q) in terms {
            f = f.plus(&Form::key(k), q).unwrap_or_default();
        }
        Constraint::Ge(f)
    }

    fn eq(terms: &[(Key, i64)], c: i64) -> Constraint {
        match ge(terms, c) {
            Constraint::Ge(f) => Constraint::Eq(f),
            c => c,
        }
    }

    const X: Key = Key::Slot(0, 0);
    const Y: Key = Key::Slot(1, 0);
    const A: Key = Key::Aux(1);
    const B: Key = Key::Aux(2);

    #[test]
    fn parity_without_branch_and_bound() {
        // 2a - 4b = 1: no integer solution, though reals abound.
        let cs = [eq(&[(A, 2), (B, -4)], -1)];
        assert!(!solve(&cs.iter().collect::<Vec<_>>()));
        // x = 16a, x = 4b + r, 1 <= r <= 3: x is a multiple of 4.
        let r = Key::Aux(3);
        let cs = [
            eq(&[(X, 1), (A, -16)], 0),
            eq(&[(X, 1), (B, -4), (r, -1)], 0),
            ge(&[(r, 1)], -1),
            ge(&[(r, -1)], 3),
        ];
        assert!(!solve(&cs.iter().collect::<Vec<_>>()));
        // ... but r = 0 is possible.
        let cs = [
            eq(&[(X, 1), (A, -16)], 0),
            eq(&[(X, 1), (B, -4), (r, -1)], 0),
            ge(&[(r, 1)], 0),
            ge(&[(r, -1)], 3),
        ];
        assert!(solve(&cs.iter().collect::<Vec<_>>()));
    }

    #[test]
    fn chains_of_differences() {
        // x >= y + 1 and y >= x, with wide bounds: propagation alone would
        // creep; elimination sees it at once.
        let n = Key::Param(0);
        let cs = [
            ge(&[(X, 1), (Y, -1)], -1),
            ge(&[(Y, 1), (X, -1)], 0),
            ge(&[(n, 1), (X, -1)], 0),
        ];
        assert!(!solve(&cs.iter().collect::<Vec<_>>()));
        // x >= y + 1, y >= 0, x <= N: fine for N >= 1.
        let cs = [
            ge(&[(X, 1), (Y, -1)], -1),
            ge(&[(Y, 1)], 0),
            ge(&[(n, 1), (X, -1)], 0),
        ];
        assert!(solve(&cs.iter().collect::<Vec<_>>()));
        // 2x in [1, 1] over integers: gcd tightening refutes.
        let cs = [ge(&[(X, 2)], -1), ge(&[(X, -2)], 1)];
        assert!(!solve(&cs.iter().collect::<Vec<_>>()));
        // Non-affine terms are integers too.
        let atom = Key::Known(ExprRef(0));
        let cs = [ge(&[(atom, 2)], -1), ge(&[(atom, -2)], 1)];
        assert!(!solve(&cs.iter().collect::<Vec<_>>()));
        let cs = [ge(&[(atom, 2)], -2), ge(&[(atom, -2)], 2)];
        assert!(solve(&cs.iter().collect::<Vec<_>>()));
    }

    #[test]
    fn parameters_keep_their_ceiling_when_eliminated() {
        // N = x with x >= 2^20 + 1 has no solution within the ceiling.
        let n = Key::Param(0);
        let cs = [eq(&[(n, 1), (X, -1)], 0), ge(&[(X, 1)], -PARAM_CEILING - 1)];
        assert!(!solve(&cs.iter().collect::<Vec<_>>()));
        let cs = [eq(&[(n, 1), (X, -1)], 0), ge(&[(X, 1)], -PARAM_CEILING)];
        assert!(solve(&cs.iter().collect::<Vec<_>>()));
    }

    #[test]
    fn translation_is_exact_at_the_threshold() {
        // ceil(log2(N)) >= 3  <=>  N >= 5.
        let mut pool = ExprPool::default();
        let n = pool.add(Node::Param(0));
        let l = pool.add(Node::Call(Func::CeilLog2, n));
        let three = pool.add(Node::Int(3));
        let mut sys = System::new();
        let lf = sys.form(&pool, 0, l).unwrap_or_default();
        let tf = sys.form(&pool, 0, three).unwrap_or_default();
        sys.ge_by(&lf, &tf, 0);
        for (v, feasible) in [(4, false), (5, true), (1 << 20, true)] {
            let mut s = sys.clone();
            s.eq(&Form::key(Key::Param(0)), &Form::constant(v));
            assert_eq!(s.feasible(), feasible, "N = {v}");
        }
        // ceil(log2(N)) == 0  <=>  N == 1.
        let zero = pool.add(Node::Int(0));
        let mut sys = System::new();
        let lf = sys.form(&pool, 0, l).unwrap_or_default();
        let zf = sys.form(&pool, 0, zero).unwrap_or_default();
        sys.eq(&lf, &zf);
        for (v, feasible) in [(0, false), (1, true), (2, false)] {
            let mut s = sys.clone();
            s.eq(&Form::key(Key::Param(0)), &Form::constant(v));
            assert_eq!(s.feasible(), feasible, "N = {v}");
        }
    }
}
