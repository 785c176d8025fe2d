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
//! non-affine terms are real-valued and unbounded.

use crate::sym::{decompose, Q};
use good_lp::{
    variable, Expression, ProblemVariables, ResolutionError, SolverModel, Variable, WithTimeLimit,
};
use runtime_interp::expr::{BinOp, ExprPool, ExprRef, Func, Node, UnOp};
use runtime_interp::model::{DomainItem, Program, Statement};
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
        self.conj
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
            Node::Binary(BinOp::Pow, b, _) => {
                if let Some(Node::Int(b)) = pool.get(b).copied() {
                    if b >= 1 {
                        self.ge_by(&me, &Form::constant(1), 0);
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
                        self.ge_by(&me, &Form::constant(0), 0);
                        self.ge_by(&Form::constant(c - 1), &me, 0);
                        if let Some(rhs) = Form::default().plus(&q, c).and_then(|f| f.plus(&me, 1))
                        {
                            self.eq(&x, &rhs);
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
                            self.ge_by(&x, &cd, 0);
                            self.ge_by(&cd, &x, 1 - c);
                        }
                    }
                }
            }
            Node::Binary(op @ (BinOp::Min | BinOp::Max), a, b) => {
                for arg in [a, b] {
                    if let Some(x) = self.form(pool, side, arg) {
                        if op == BinOp::Min {
                            self.ge_by(&x, &me, 0);
                        } else {
                            self.ge_by(&me, &x, 0);
                        }
                    }
                }
            }
            Node::Call(Func::CeilLog2 | Func::FloorLog2, _) => {
                self.ge_by(&me, &Form::constant(0), 0);
            }
            Node::Call(Func::Abs, _) => self.ge_by(&me, &Form::constant(0), 0),
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

    /// Whether the system may have a solution: false only when the solver
    /// proved that none exists.
    ///
    /// Disjunctions are searched depth first, most selective first, and a
    /// partial choice whose conjunction is already infeasible is pruned.
    /// Past [`MAX_COMBINATIONS`] solver calls the answer is "may be
    /// feasible", which is always safe.
    pub(crate) fn feasible(&self) -> bool {
        if self.disj.iter().any(|d| d.is_empty()) {
            return false;
        }
        let mut disj: Vec<&Dnf> = self.disj.iter().collect();
        disj.sort_by_key(|d| d.len());
        let base: Vec<&Constraint> = self.conj.iter().collect();
        let mut calls = 0usize;
        search(&base, &disj, &mut calls)
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

fn f(q: Q) -> f64 {
    q.n as f64 / q.d as f64
}

/// Whether the conjunction may be satisfiable by integers (true when the
/// solver cannot tell): the real relaxation first, which is fast, then the
/// integer program under a time limit.
fn solve(constraints: &[&Constraint]) -> bool {
    solve_with(constraints, false) && solve_with(constraints, true)
}

fn solve_with(constraints: &[&Constraint], integer: bool) -> bool {
    // Constant constraints decide themselves.
    let mut pending = Vec::new();
    for c in constraints {
        let (form, is_eq) = match c {
            Constraint::Ge(f) => (f, false),
            Constraint::Eq(f) => (f, true),
        };
        if form.terms.is_empty() {
            let v = form.constant;
            let ok = if is_eq { v.is_zero() } else { v.n >= 0 };
            if !ok {
                return false;
            }
        } else {
            pending.push((form, is_eq));
        }
    }
    if pending.is_empty() {
        return true;
    }
    let mut vars = ProblemVariables::new();
    let mut map: BTreeMap<Key, Variable> = BTreeMap::new();
    let mut exprs = Vec::new();
    for (form, is_eq) in &pending {
        let mut e = Expression::from(f(form.constant));
        for (&k, &q) in &form.terms {
            let v = *map.entry(k).or_insert_with(|| {
                let def = match k {
                    Key::Known(_) | Key::Atom(..) => variable(),
                    Key::Param(_) => {
                        let v = variable().clamp(-PARAM_CEILING as f64, PARAM_CEILING as f64);
                        if integer {
                            v.integer()
                        } else {
                            v
                        }
                    }
                    Key::Slot(..) | Key::Aux(_) => {
                        let v = variable().clamp(i32::MIN as f64 + 1.0, i32::MAX as f64 - 1.0);
                        if integer {
                            v.integer()
                        } else {
                            v
                        }
                    }
                };
                vars.add(def)
            });
            e += f(q) * v;
        }
        exprs.push((e, *is_eq));
    }
    let mut model = vars
        .minimise(Expression::from(0.0))
        .using(good_lp::microlp)
        .with_time_limit(TIME_LIMIT);
    for (e, is_eq) in exprs {
        model = model.with(if is_eq { e.eq(0.0) } else { e.geq(0.0) });
    }
    !matches!(model.solve(), Err(ResolutionError::Infeasible))
}
