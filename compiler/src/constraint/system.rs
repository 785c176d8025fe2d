//! Feasibility questions over the index-constraint IR: a conjunction of
//! affine constraints over integer unknowns (loop variables of one or two
//! statement copies, called *sides*, the parameters, and auxiliary
//! quotients), plus disjunctions (from `or`, `!=` and negated
//! conjunctions). Every non-affine term (`2 ** level`, `i * j`,
//! `ceil(log2(N))`, ...) becomes an unknown of its own, with the few facts
//! that always hold for it (`2 ** e >= 1`, `0 <= x % c < c`,
//! `c * (x // c) <= x`, `min(a, b) <= a`). Anything that cannot be
//! expressed is left out. Leaving a constraint out only enlarges the set
//! of solutions, so an infeasible system proves that the situation it
//! describes never happens; a feasible one proves nothing.
//!
//! Bounds: parameters range over `[-2^20, 2^20]` ([`super::PARAM_CEILING`]),
//! loop variables and auxiliaries over the solver's `i32` range; non-affine
//! terms are unbounded. Every unknown is an integer (non-affine terms come
//! from int expressions).
//!
//! Deciding, cheapest first, each step exact or a relaxation:
//! 1. *translation*: a monotone term compared with a constant becomes the
//!    exact threshold on its argument (`ceil(log2(M - p)) > 3` is
//!    `M - p >= 9`, see [`super::mono`]), which is how a case-split loop
//!    variable meets `range(ceil(log2(..)))`;
//! 2. disjunctions: constant alternatives decided, then unit propagation,
//!    then a depth-first search of the rest;
//! 3. each conjunction is decided by [`super::integer::solve`]: gcd tests,
//!    elimination, Fourier-Motzkin, bound propagation, then microlp.

use super::affine::{decompose, Affine, Side, Term, Q};
use super::integer::solve;
use super::mono::Mono;
use super::PARAM_CEILING;
use lpk_model::expr::{BinOp, Env, ExprPool, ExprRef, Func, Func2, Node, UnOp, Value};
use lpk_model::program::{DomainItem, Program, Statement};
use std::collections::BTreeMap;

/// Most alternatives a condition may expand to before it is relaxed away.
const MAX_ALTERNATIVES: usize = 16;
/// Most solver calls one feasibility question may make.
const MAX_COMBINATIONS: usize = 1000;
/// Most solver calls the case split of [`System::feasible_by_cases`] may make over
/// all its cases (each case may use what the ones before left).
const SPLIT_COMBINATIONS: usize = 3000;

pub(crate) use super::dense::Constraint;

/// `(c, x, q, r)`: `x = c·q + r` with `0 <= r < c`.
type Division = (i64, Affine, Affine, Affine);

/// Alternatives, each a conjunction: a condition in disjunctive form.
pub(crate) type Dnf = Vec<Vec<Constraint>>;

/// A feasibility question.
#[derive(Clone, Debug, Default)]
pub(crate) struct System {
    conj: Vec<Constraint>,
    disj: Vec<Dnf>,
    aux: u32,
    /// Atoms whose facts were added already.
    seen: Vec<Term>,
    /// Monotone atoms of one affine argument, for exact thresholds.
    mono: BTreeMap<Term, (Mono, Affine)>,
    /// What holds for the values of non-affine terms.
    facts: Vec<Constraint>,
    /// Facts that are disjunctions (`min(a, b)` is `a` or `b`), each
    /// satisfiable by some value of its term whatever its arguments (so
    /// they hold even for a term that is not evaluated); never translated.
    fact_disj: Vec<Dnf>,
    /// Every division by a constant the system has named, `(c, x, q, r)`
    /// with `x = c·q + r`, `0 <= r < c` (a `%` atom is its `r`, a `//`
    /// atom its `q`): a second division of the same `x`, or of `x` plus a
    /// multiple of `c`, has the same remainder, which the integer
    /// reductions would not see through two separate definitions.
    divs: Vec<Division>,
    /// The slots each non-affine term of loop variables mentions, for
    /// congruence: one expression on both sides with equal slots has one
    /// value.
    atom_slots: BTreeMap<ExprRef, Vec<u32>>,
    /// Whether the last `feasible` answered "may be feasible" because it
    /// reached [`MAX_COMBINATIONS`] (for reporting why a proof stopped).
    gave_up: std::cell::Cell<bool>,
}

/// Where a [`System`] stood, to undo what was added since
/// ([`System::mark`], [`System::rollback`]): everything a system holds is
/// only ever appended to, so lengths (and the two small maps) say it.
pub(crate) struct Mark {
    conj: usize,
    disj: usize,
    aux: u32,
    seen: usize,
    facts: usize,
    fact_disj: usize,
    divs: usize,
    mono: BTreeMap<Term, (Mono, Affine)>,
    atom_slots: BTreeMap<ExprRef, Vec<u32>>,
}

/// The largest value a logarithm `m` (`ceil`/`floor` of `log_b`) of a
/// form over the parameters alone takes while every parameter lies in
/// `[-PARAM_CEILING, PARAM_CEILING]` (lint's "proved" range): `None` when
/// the form mentions anything else or is never >= 1.
fn log_ceiling(m: Mono, x: &Affine) -> Option<i64> {
    if !matches!(m, Mono::CeilLog(_) | Mono::FloorLog(_)) {
        return None;
    }
    let c = x.constant_part();
    let mut top: i128 = c.n.checked_add(c.d - 1)?.checked_div(c.d)?;
    for (t, q) in x.iter() {
        if !matches!(t, Term::Param(_)) {
            return None;
        }
        let most = q.n.checked_abs()?.checked_mul(PARAM_CEILING as i128)?;
        top = top.checked_add(most.checked_add(q.d - 1)?.checked_div(q.d)?)?;
    }
    if top < 1 {
        return None;
    }
    let mut k: i128 = 0;
    while k < 128 && m.threshold(k + 1).is_some_and(|th| th <= top) {
        k += 1;
    }
    i64::try_from(k).ok()
}

/// `a - b - k >= 0`.
fn ge_diff(a: &Affine, b: &Affine, k: i64) -> Option<Constraint> {
    let f = a.plus(b, -1)?.plus(&Affine::constant(1), -k)?;
    Some(Constraint::Ge(f))
}

impl System {
    /// An empty system (no constraint: feasible).
    pub(crate) fn new() -> System {
        System::default()
    }

    /// Where the system stands now (see [`System::rollback`]): cheaper than
    /// a clone, which copies every constraint.
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            conj: self.conj.len(),
            disj: self.disj.len(),
            aux: self.aux,
            seen: self.seen.len(),
            facts: self.facts.len(),
            fact_disj: self.fact_disj.len(),
            divs: self.divs.len(),
            mono: self.mono.clone(),
            atom_slots: self.atom_slots.clone(),
        }
    }

    /// Forgets everything added since `mark` was taken: the system is
    /// as it was then.
    pub(crate) fn rollback(&mut self, mark: Mark) {
        self.conj.truncate(mark.conj);
        self.disj.truncate(mark.disj);
        self.aux = mark.aux;
        self.seen.truncate(mark.seen);
        self.facts.truncate(mark.facts);
        self.fact_disj.truncate(mark.fact_disj);
        self.divs.truncate(mark.divs);
        self.mono = mark.mono;
        self.atom_slots = mark.atom_slots;
    }

    /// The non-affine terms the system holds as unknowns of their own (in
    /// the order their facts were added): what a feasible question could
    /// not see through, for reporting why a proof stopped.
    pub(crate) fn atoms(&self) -> Vec<Term> {
        self.seen
            .iter()
            .copied()
            .filter(|t| matches!(t, Term::Atom(..) | Term::Known(_)))
            .collect()
    }

    /// Adds `a == b`.
    pub(crate) fn eq(&mut self, a: &Affine, b: &Affine) {
        if let Some(f) = a.plus(b, -1) {
            self.conj.push(Constraint::Eq(f));
        }
    }

    /// Adds `a >= b + k`.
    pub(crate) fn ge_by(&mut self, a: &Affine, b: &Affine, k: i64) {
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
    pub(crate) fn fresh(&mut self) -> Affine {
        self.aux += 1;
        Affine::term(Term::Aux(self.aux))
    }

    /// The quotient and remainder of `x` divided by `c > 0` as
    /// unknowns: those of a division of the same `x` (or of `x` minus a
    /// multiple `k·c`: quotient `+ k`) the system named already, else
    /// fresh ones, defined by `x = c·q + r`, `0 <= r < c` (facts: some
    /// integers satisfy them whatever `x` is).
    pub(crate) fn division(&mut self, c: i64, x: &Affine) -> (Affine, Affine) {
        if let Some(known) = self.known_division(c, x) {
            return known;
        }
        let (q, r) = (self.fresh(), self.fresh());
        self.define_division(c, x, &q, &r);
        (q, r)
    }

    /// Makes the term `me` the quotient (`quotient`) or the remainder of
    /// `x` divided by `c > 0`: equal to that of a division named already,
    /// else the defining unknown of a new one.
    fn divide_as(&mut self, c: i64, x: &Affine, me: &Affine, quotient: bool) {
        if let Some((q, r)) = self.known_division(c, x) {
            self.fact_eq(me, if quotient { &q } else { &r });
        } else {
            let other = self.fresh();
            if quotient {
                self.define_division(c, x, me, &other);
            } else {
                self.define_division(c, x, &other, me);
            }
        }
    }

    /// The quotient and remainder of a division of `x` by `c` the system
    /// named already (of `x` itself, or of `x - k·c`: quotient `+ k`).
    fn known_division(&self, c: i64, x: &Affine) -> Option<(Affine, Affine)> {
        for (c2, x2, q2, r2) in &self.divs {
            if *c2 != c {
                continue;
            }
            let Some(diff) = x.plus(x2, -1) else {
                continue;
            };
            let m = diff.constant_part();
            if diff.is_constant() && m.d == 1 && m.n % i128::from(c) == 0 {
                let k = i64::try_from(m.n / i128::from(c)).ok()?;
                return Some((q2.plus(&Affine::constant(k), 1)?, r2.clone()));
            }
        }
        None
    }

    /// Defines `x = c·q + r`, `0 <= r < c` and registers the division.
    fn define_division(&mut self, c: i64, x: &Affine, q: &Affine, r: &Affine) {
        if let Some(rhs) = Affine::default().plus(q, c).and_then(|f| f.plus(r, 1)) {
            self.fact_eq(x, &rhs);
        }
        self.fact_ge(r, &Affine::constant(0), 0);
        self.fact_ge(&Affine::constant(c - 1), r, 0);
        self.divs.push((c, x.clone(), q.clone(), r.clone()));
    }

    /// The affine form of an int expression of `side` (`None` when it is
    /// not int-valued or too large); non-affine terms get their facts.
    pub(crate) fn form(&mut self, pool: &ExprPool, side: Side, e: ExprRef) -> Option<Affine> {
        let lin = decompose(pool, e, side, &|_| true)?;
        let mut f = Affine::rational(lin.constant_part());
        // Slots, then atoms, then known terms, each in pool order: the
        // facts (and their auxiliaries) come in that order.
        for (t, q) in lin.iter() {
            match t {
                Term::Atom(_, a) => {
                    f.set(t, q);
                    self.facts(pool, side, t, a);
                }
                Term::Known(a) => {
                    // A constant (`ceil(log2(3))`) is its value.
                    let none = Env {
                        params: &[],
                        slots: &[],
                    };
                    if let Ok(Value::Int(v)) = pool.eval(a, none) {
                        f = f.plus_q(&Affine::constant(v), q)?;
                        continue;
                    }
                    let k = match pool.get(a) {
                        Some(Node::Param(i)) => Term::Param(*i),
                        _ => t,
                    };
                    f.set(k, q);
                    self.facts(pool, side, k, a);
                }
                _ => f.set(t, q),
            }
        }
        Some(f)
    }

    /// Adds the fact `a >= b + k` (kept apart from the constraints: facts
    /// describe a term's value and are never translated into conditions
    /// on its argument, which might not have been evaluated).
    fn fact_ge(&mut self, a: &Affine, b: &Affine, k: i64) {
        if let Some(c) = ge_diff(a, b, k) {
            self.facts.push(c);
        }
    }

    /// Registers a monotone term `key = m(x)`; one already registered with
    /// the same function of the same argument form (two expressions that
    /// only look different, `ceil(log2(N + 2 - i))` and a writer's
    /// `ceil(log2(N + 1 - (i - 1)))`) has the same value: the fact
    /// `key == other` (satisfiable whether they are evaluated or not).
    fn monotone(&mut self, key: Term, m: Mono, x: Affine) {
        let same: Vec<Term> = self
            .mono
            .iter()
            .filter(|(k, (m2, x2))| **k != key && *m2 == m && *x2 == x)
            .map(|(k, _)| *k)
            .collect();
        for other in same {
            self.fact_eq(&Affine::term(key), &Affine::term(other));
        }
        self.mono.insert(key, (m, x));
    }

    /// Adds the fact `me <= K` for a logarithm of a form over the
    /// parameters, `K` its value at the largest argument lint's "proved"
    /// range allows (`ceil(log2(N)) <= 20`). It holds for `me = 0` too, so
    /// whether the term is evaluated or not.
    fn log_bounded(&mut self, me: &Affine, m: Mono, x: &Affine) {
        if let Some(k) = log_ceiling(m, x) {
            self.fact_ge(&Affine::constant(k), me, 0);
        }
    }

    /// Adds a disjunctive fact.
    fn fact_any(&mut self, alternatives: Vec<Option<Constraint>>) {
        // An alternative that cannot be expressed leaves the fact out.
        let alts: Option<Dnf> = alternatives
            .into_iter()
            .map(|c| c.map(|c| vec![c]))
            .collect();
        if let Some(alts) = alts {
            self.fact_disj.push(alts);
        }
    }

    /// Adds the fact `a == b`.
    fn fact_eq(&mut self, a: &Affine, b: &Affine) {
        if let Some(f) = a.plus(b, -1) {
            self.facts.push(Constraint::Eq(f));
        }
    }

    /// What always holds for a non-affine term in an executing task.
    fn facts(&mut self, pool: &ExprPool, side: Side, key: Term, e: ExprRef) {
        if self.seen.contains(&key) {
            return;
        }
        self.seen.push(key);
        if let Term::Atom(_, a) = key {
            self.atom_slots.entry(a).or_insert_with(|| {
                let mut slots = Vec::new();
                pool.slots_of(a, &mut slots);
                slots.sort_unstable();
                slots.dedup();
                slots
            });
        }
        let me = Affine::term(key);
        let Some(node) = pool.get(e).copied() else {
            return;
        };
        match node {
            // An exponent is never negative in a task that runs (it would
            // be an evaluation error), so a power of b >= 1 is >= 1.
            Node::Binary(BinOp::Pow, b, e) => self.pow_facts(pool, side, key, b, e),
            Node::Binary(BinOp::Mod, a, b) => {
                if let (Some(Node::Int(c)), Some(x)) =
                    (pool.get(b).copied(), self.form(pool, side, a))
                {
                    if c > 0 {
                        // x = c·q + r with 0 <= r < c: `me` is r.
                        self.divide_as(c, &x, &me, false);
                    }
                }
            }
            Node::Binary(BinOp::FloorDiv, a, b) => {
                if let (Some(Node::Int(c)), Some(x)) =
                    (pool.get(b).copied(), self.form(pool, side, a))
                {
                    if c > 0 {
                        // x = c·q + r with 0 <= r < c: `me` is q.
                        self.divide_as(c, &x, &me, true);
                    }
                }
            }
            Node::Binary(op @ (BinOp::Min | BinOp::Max), a, b) => {
                self.min_max_facts(pool, side, &me, op, [a, b]);
            }
            Node::Call(f @ (Func::CeilLog2 | Func::FloorLog2), a) => {
                self.log2_facts(pool, side, key, f == Func::CeilLog2, a);
            }
            Node::Call2(f @ (Func2::CeilLogB | Func2::FloorLogB), a, b) => {
                if let (Some(Node::Int(b)), Some(x)) =
                    (pool.get(b).copied(), self.form(pool, side, a))
                {
                    if b >= 2 {
                        self.fact_ge(&me, &Affine::constant(0), 0);
                        let m = if f == Func2::CeilLogB {
                            Mono::CeilLog(b)
                        } else {
                            Mono::FloorLog(b)
                        };
                        self.log_bounded(&me, m, &x);
                        self.monotone(key, m, x);
                    }
                }
            }
            Node::Call2(Func2::CeilDiv, a, b) => self.ceil_div_facts(pool, side, &me, a, b),
            Node::Call(Func::Abs, _) => self.fact_ge(&me, &Affine::constant(0), 0),
            _ => {}
        }
    }

    /// The facts of `key` = `b ** e`: at least 1 when `b >= 1`, and
    /// increasing in `e` when `b >= 2`.
    fn pow_facts(&mut self, pool: &ExprPool, side: Side, key: Term, b: ExprRef, e: ExprRef) {
        // An exponent is never negative in a task that runs (it would
        // be an evaluation error), so a power of b >= 1 is >= 1.
        if let Some(Node::Int(b)) = pool.get(b).copied() {
            if b >= 1 {
                self.fact_ge(&Affine::term(key), &Affine::constant(1), 0);
            }
            if b >= 2 {
                if let Some(x) = self.form(pool, side, e) {
                    self.monotone(key, Mono::Pow(b), x);
                }
            }
        }
    }

    /// The facts of `me` = `op(args)` for `min` or `max`: on the right side
    /// of each argument, and equal to one of them.
    fn min_max_facts(
        &mut self,
        pool: &ExprPool,
        side: Side,
        me: &Affine,
        op: BinOp,
        args: [ExprRef; 2],
    ) {
        let mut forms = Vec::new();
        for arg in args {
            if let Some(x) = self.form(pool, side, arg) {
                if op == BinOp::Min {
                    self.fact_ge(&x, me, 0);
                } else {
                    self.fact_ge(me, &x, 0);
                }
                forms.push(x);
            }
        }
        // And it is one of them (the case split of min and max).
        if let [x, y] = forms.as_slice() {
            let is = |x: &Affine| me.plus(x, -1).map(Constraint::Eq);
            self.fact_any(vec![is(x), is(y)]);
        }
    }

    /// The facts of `me` = `ceil_div(a, b)` for a positive constant `b`.
    fn ceil_div_facts(&mut self, pool: &ExprPool, side: Side, me: &Affine, a: ExprRef, b: ExprRef) {
        if let (Some(Node::Int(c)), Some(x)) = (pool.get(b).copied(), self.form(pool, side, a)) {
            if c > 0 {
                // c·d - c + 1 <= x <= c·d.
                if let Some(cd) = Affine::default().plus(me, c) {
                    self.fact_ge(&cd, &x, 0);
                    self.fact_ge(&x, &cd, 1 - c);
                }
            }
        }
    }

    /// The facts of `key` = `ceil(log2(a))` (or, unless `ceil`,
    /// `floor(log2(a))`).
    fn log2_facts(&mut self, pool: &ExprPool, side: Side, key: Term, ceil: bool, a: ExprRef) {
        let me = Affine::term(key);
        self.fact_ge(&me, &Affine::constant(0), 0);
        if let Some(x) = self.form(pool, side, a) {
            // Where it is defined (x >= 1): log <= x - 1, and
            // log >= 1 once x >= 2; ceil(log2(x)) <= (x + 1) / 2.
            // Each alternative set holds for log = 0 when x <= 0,
            // so the facts hold whether the term is evaluated or
            // not.
            let one = Affine::constant(1);
            let x_le = |k: i64| ge_diff(&Affine::constant(k), &x, 0);
            self.fact_any(vec![x_le(0), ge_diff(&x, &me, 1)]);
            self.fact_any(vec![x_le(1), ge_diff(&me, &one, 0)]);
            if ceil {
                let two_me = Affine::default().plus(&me, 2);
                let x1 = x.plus(&one, 1);
                if let (Some(t), Some(x1)) = (two_me, x1) {
                    self.fact_any(vec![x_le(0), ge_diff(&x1, &t, 0)]);
                }
            }
            let m = if ceil {
                Mono::CeilLog(2)
            } else {
                Mono::FloorLog(2)
            };
            self.log_bounded(&me, m, &x);
            self.monotone(key, m, x);
        }
    }

    /// A condition (or its negation) in disjunctive form over `side`; parts
    /// that cannot be expressed are relaxed to "true".
    pub(crate) fn cond(&mut self, pool: &ExprPool, side: Side, e: ExprRef, positive: bool) -> Dnf {
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
    pub(crate) fn assume(&mut self, pool: &ExprPool, side: Side, e: ExprRef, positive: bool) {
        // A conjunction (`a and b`, `not (a or b)`) is added part by part:
        // each part's disjunction stays whole, where expanding the
        // product in [`System::cond`] would relax past MAX_ALTERNATIVES.
        match pool.get(e).copied() {
            Some(Node::Unary(UnOp::Not, a)) => return self.assume(pool, side, a, !positive),
            Some(Node::Binary(op @ (BinOp::And | BinOp::Or), a, b))
                if (op == BinOp::And) == positive =>
            {
                self.assume(pool, side, a, positive);
                self.assume(pool, side, b, positive);
                return;
            }
            _ => {}
        }
        let d = self.cond(pool, side, e, positive);
        self.any(d);
    }

    /// Adds the program's `require`s.
    pub(crate) fn requires(&mut self, program: &Program) {
        for &r in &program.requires {
            self.assume(&program.exprs, Side::First, r, true);
        }
    }

    /// Adds one domain item of a statement copy.
    pub(crate) fn item(&mut self, pool: &ExprPool, side: Side, item: &DomainItem) {
        match *item {
            DomainItem::Loop { slot, lo, hi, step } => {
                let x = Affine::term(Term::Slot(side, slot));
                if let Some(lo) = self.form(pool, side, lo) {
                    self.ge_by(&x, &lo, 0);
                    // A constant stride: x = lo + step·q, q >= 0.
                    if let Some(Node::Int(s)) = pool.get(step).copied() {
                        if s > 1 {
                            let q = self.fresh();
                            self.ge_by(&q, &Affine::constant(0), 0);
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
    pub(crate) fn domain(&mut self, pool: &ExprPool, side: Side, st: &Statement) {
        for item in &st.domain {
            self.item(pool, side, item);
        }
    }

    /// Adds everything `other` holds (its auxiliaries renamed apart from
    /// this system's), as if its constraints had been added here.
    pub(crate) fn merge(&mut self, other: &System) {
        let offset = self.aux;
        let rename = |f: &Affine| -> Affine {
            if offset == 0 || !f.terms().any(|k| matches!(k, Term::Aux(_))) {
                return f.clone();
            }
            f.rename_injective(|k| match k {
                Term::Aux(i) => Term::Aux(i + offset),
                k => k,
            })
        };
        let rename_c = |c: &Constraint| c.map(rename);
        self.conj.extend(other.conj.iter().map(rename_c));
        self.facts.extend(other.facts.iter().map(rename_c));
        for d in &other.fact_disj {
            self.fact_disj.push(
                d.iter()
                    .map(|alt| alt.iter().map(rename_c).collect())
                    .collect(),
            );
        }
        for (c, x, q, r) in &other.divs {
            self.divs.push((*c, rename(x), rename(q), rename(r)));
        }
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
        for (k, v) in &other.atom_slots {
            self.atom_slots.entry(*k).or_insert_with(|| v.clone());
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
            if matches!(k, Term::Known(_) | Term::Param(_)) {
                self.mono.entry(*k).or_insert_with(|| v.clone());
            }
        }
    }

    /// A constraint with its monotone atom compared to a constant replaced
    /// by the exact threshold on the atom's argument (`ceil(log2(x)) >= 3`
    /// becomes `x >= 5`, kept with the comparison itself): a conjunction,
    /// `None` when it cannot hold, empty when it always holds. A comparison that holds was evaluated, so the
    /// argument is in the atom's domain there.
    fn translate(&self, c: &Constraint) -> Option<Vec<Constraint>> {
        if let Some(holds) = c.constant_holds() {
            return holds.then(Vec::new);
        }
        let (form, is_eq) = c.parts();
        let mut keys = form.iter();
        let (Some((k, a)), None) = (keys.next(), keys.next()) else {
            return Some(vec![c.clone()]);
        };
        let Some((m, x)) = self.mono.get(&k) else {
            return Some(vec![c.clone()]);
        };
        let keep = || Some(vec![c.clone()]);
        // a·f + b (>= or ==) 0.
        let b = form.constant_part();
        let Some(ratio) = b.negated().checked_div(a) else {
            return keep();
        };
        let at_least = |t: i128| -> Option<Option<Constraint>> {
            // x >= threshold(t); None inside: never.
            let th = m.threshold(t)?;
            let th = i64::try_from(th).ok()?;
            Some(Some(Constraint::Ge(x.plus(&Affine::constant(th), -1)?)))
        };
        let below = |t: i128| -> Option<Option<Constraint>> {
            // f < t, i.e. x < threshold(t): always when t is never reached.
            match m.threshold(t) {
                None => Some(None),
                Some(th) => {
                    let th = i64::try_from(th).ok()?;
                    Some(Some(Constraint::Ge(Affine::constant(th - 1).plus(x, -1)?)))
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
            let t = ratio.ceil();
            m.threshold(t)?;
            match at_least(t) {
                Some(Some(c)) => out.push(c),
                _ => return keep(),
            }
        } else {
            let t = ratio.floor();
            match below(t + 1) {
                Some(Some(c)) => out.push(c),
                Some(None) => {}
                None => return keep(),
            }
        }
        // The comparison itself holds too: keeping it ties the term to
        // the other constraints that mention it (`i - 2 >= L` on one side
        // of a question, `L >= c - 1` translated on the other). One that
        // always holds stays empty.
        if !out.is_empty() {
            out.push(c.clone());
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
        self.feasible_once(MAX_COMBINATIONS).0
    }

    /// [`System::feasible`], and when that stops at its search limit, by
    /// cases on the value of a logarithm of the parameters: for the
    /// questions a proof rests on (the case split may cost a few times
    /// the search limit).
    pub(crate) fn feasible_by_cases(&self) -> bool {
        let (feasible, _) = self.feasible_once(MAX_COMBINATIONS);
        if !feasible || !self.gave_up.get() {
            return feasible;
        }
        // Past the search limit: one case per value of a logarithm of the
        // parameters, which decides the alternatives that compare it with
        // constants (a reduction tree's split levels) before the search.
        let split = self.split_on_log();
        self.gave_up.set(split != Some(false));
        split != Some(false)
    }

    /// The logarithm of the parameters (`ceil(log2(N))`) that most
    /// disjunctions mention, with its function, argument and largest
    /// value under the ceiling.
    fn log_to_split(&self) -> Option<(Term, Mono, Affine, i64)> {
        let mut best: Option<(usize, Term, Mono, Affine, i64)> = None;
        for (&k, (m, x)) in &self.mono {
            if !matches!(k, Term::Known(_)) {
                continue;
            }
            let Some(top) = log_ceiling(*m, x) else {
                continue;
            };
            let uses = self
                .disj
                .iter()
                .filter(|d| {
                    d.iter().flatten().any(|c| match c {
                        Constraint::Ge(f) | Constraint::Eq(f) => !f.coefficient(k).is_zero(),
                    })
                })
                .count();
            if uses > 0 && best.as_ref().is_none_or(|b| uses > b.0) {
                best = Some((uses, k, *m, x.clone(), top));
            }
        }
        best.map(|(_, k, m, x, top)| (k, m, x, top))
    }

    /// Decides the system by cases on the value of a logarithm `L = m(x)`
    /// of the parameters: for each `v` from 0 to its largest value, `x`
    /// in `[threshold(v), threshold(v + 1))` with `L` replaced by `v`
    /// everywhere, and last `x <= 0` (no value: the system as it is).
    /// The cases cover every solution, so `Some(false)` (each case
    /// infeasible) is a proof; `None` when no logarithm qualifies or some
    /// case may be feasible.
    fn split_on_log(&self) -> Option<bool> {
        let (key, m, x, top) = self.log_to_split()?;
        let mut budget = SPLIT_COMBINATIONS;
        // One case: infeasible (`Some(false)`), or stop (`None`).
        let mut decide = |case: &System| -> Option<bool> {
            let (feasible, calls) = case.feasible_once(budget);
            budget = budget.saturating_sub(calls);
            (!feasible).then_some(false)
        };
        let sub = |c: &Constraint, v: &Affine| c.try_map(|f| f.substitute(key, v));
        for v in 0..=top {
            let value = Affine::constant(v);
            let mut case = self.clone();
            case.conj = self
                .conj
                .iter()
                .map(|c| sub(c, &value))
                .collect::<Option<_>>()?;
            case.facts = self
                .facts
                .iter()
                .map(|c| sub(c, &value))
                .collect::<Option<_>>()?;
            let dnf = |d: &Dnf| -> Option<Dnf> {
                d.iter()
                    .map(|alt| alt.iter().map(|c| sub(c, &value)).collect())
                    .collect()
            };
            case.disj = self.disj.iter().map(dnf).collect::<Option<_>>()?;
            case.fact_disj = self.fact_disj.iter().map(dnf).collect::<Option<_>>()?;
            let lo = i64::try_from(m.threshold(i128::from(v))?).ok()?;
            case.conj
                .push(Constraint::Ge(x.plus(&Affine::constant(lo), -1)?));
            if let Some(hi) = m.threshold(i128::from(v) + 1) {
                let hi = i64::try_from(hi).ok()?;
                case.conj
                    .push(Constraint::Ge(Affine::constant(hi - 1).plus(&x, -1)?));
            }
            decide(&case)?;
        }
        let mut undefined = self.clone();
        undefined.conj.push(Constraint::Ge(x.scale(Q::int(-1))?));
        decide(&undefined)
    }

    /// [`System::feasible`] without the case split, within `limit` solver
    /// calls: the answer and the calls it made.
    fn feasible_once(&self, limit: usize) -> (bool, usize) {
        self.gave_up.set(false);
        let Some(mut base) = self.translate_all(&self.conj) else {
            return (false, 0);
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
                return (false, 0);
            }
            if alts.len() == 1 {
                base.extend(alts.into_iter().flatten());
            } else {
                disj.push(alts);
            }
        }
        // Disjunctive facts, untranslated.
        disj.extend(self.fact_disj.iter().cloned());
        disj.extend(self.congruences());
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
                    if calls > limit {
                        self.gave_up.set(true);
                        return (true, calls);
                    }
                    let all: Vec<&Constraint> = base.iter().chain(&alt).collect();
                    if solve(&all) {
                        kept.push(alt);
                    }
                }
                match kept.len() {
                    0 => return (false, calls),
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
        let feasible = search(&base, &refs, &mut calls, limit);
        self.gave_up.set(calls > limit);
        (feasible, calls)
    }

    /// Congruence of the terms on both sides: `e` on side 0 equals `e` on
    /// side 1, or some slot of `e` differs between the sides (a function
    /// of equal arguments has one value; parameters are shared).
    fn congruences(&self) -> Vec<Dnf> {
        let mut out = Vec::new();
        for (&e, slots) in &self.atom_slots {
            let (a, b) = (Term::Atom(Side::First, e), Term::Atom(Side::Second, e));
            if !self.seen.contains(&a) || !self.seen.contains(&b) {
                continue;
            }
            let Some(same) = Affine::term(a).plus(&Affine::term(b), -1) else {
                continue;
            };
            let mut alts: Dnf = vec![vec![Constraint::Eq(same)]];
            for &s in slots {
                let (x, y) = (
                    Affine::term(Term::Slot(Side::First, s)),
                    Affine::term(Term::Slot(Side::Second, s)),
                );
                if let (Some(lt), Some(gt)) = (ge_diff(&y, &x, 1), ge_diff(&x, &y, 1)) {
                    alts.push(vec![lt]);
                    alts.push(vec![gt]);
                }
            }
            out.push(alts);
        }
        out
    }

    /// Whether the last [`System::feasible`] stopped at its search limit.
    pub(crate) fn gave_up(&self) -> bool {
        self.gave_up.get()
    }
}

fn search(chosen: &[&Constraint], rest: &[&Dnf], calls: &mut usize, limit: usize) -> bool {
    *calls += 1;
    // Cancelled: "may be feasible", as at the limit (`crate::cancel`).
    if *calls > limit || crate::cancel::cancelled() {
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
        if search(&next, rest, calls, limit) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constant_term_is_its_value() {
        let (mut pool, [three, zero]) = crate::constraint::pool_of([Node::Int(3), Node::Int(0)]);
        let l = pool.add(Node::Call(Func::CeilLog2, three));
        let bad = pool.add(Node::Call(Func::CeilLog2, zero));
        let mut sys = System::new();
        assert_eq!(sys.form(&pool, Side::First, l), Some(Affine::constant(2)));
        // One that fails to evaluate stays a term (a task evaluating it
        // fails; lint does not pretend it has a value).
        let f = sys.form(&pool, Side::First, bad).unwrap_or_default();
        assert!(!f.is_constant());
    }

    #[test]
    fn divisions_of_one_value_share_their_quotient_and_remainder() {
        let mut sys = System::new();
        let x = Affine::term(Term::Slot(Side::First, 0));
        let shift = |k: i64| x.plus(&Affine::constant(k), 1).unwrap_or_default();
        let (q, r) = sys.division(4, &x);
        // x + 8 = 4·(q + 2) + r: the same remainder, the quotient shifted.
        let (q8, r8) = sys.division(4, &shift(8));
        assert_eq!(r8, r);
        assert_eq!(q8, q.plus(&Affine::constant(2), 1).unwrap_or_default());
        let (again, _) = sys.division(4, &x);
        assert_eq!(again, q);
        // An offset that is no multiple of the divisor, or another
        // divisor: a division of its own.
        let (_, r1) = sys.division(4, &shift(1));
        assert_ne!(r1, r);
        let (_, r3) = sys.division(3, &x);
        assert_ne!(r3, r);
        // A rollback forgets the divisions named after the mark.
        let mark = sys.mark();
        let y = Affine::term(Term::Slot(Side::First, 1));
        let (_, ry) = sys.division(2, &y);
        sys.rollback(mark);
        assert!(sys.known_division(2, &y).is_none());
        assert_ne!(ry, Affine::default());
    }

    #[test]
    fn a_log_of_the_parameters_is_bounded_by_its_value_at_the_ceiling() {
        let n = Affine::term(Term::Param(0));
        let two_n = Affine::default().plus(&n, 2).unwrap_or_default();
        let n_minus_1 = n.plus(&Affine::constant(1), -1).unwrap_or_default();
        // 2^20 is the largest N: ceil(log2(2^20)) = 20, log2(2^21) = 21.
        assert_eq!(log_ceiling(Mono::CeilLog(2), &n), Some(20));
        assert_eq!(log_ceiling(Mono::CeilLog(2), &two_n), Some(21));
        assert_eq!(log_ceiling(Mono::FloorLog(2), &n_minus_1), Some(19));
        assert_eq!(log_ceiling(Mono::CeilLog(4), &n), Some(10));
        // Anything but parameters (a loop variable) has no bound here.
        let slot = Affine::term(Term::Slot(Side::First, 0));
        assert_eq!(log_ceiling(Mono::CeilLog(2), &slot), None);
        assert_eq!(log_ceiling(Mono::Pow(2), &n), None);
        // Never >= 1: nothing to bound.
        let minus = Affine::default().plus(&n, -1).unwrap_or_default();
        let never = minus
            .plus(&Affine::constant(PARAM_CEILING), -1)
            .unwrap_or_default();
        assert_eq!(log_ceiling(Mono::CeilLog(2), &never), None);
    }

    #[test]
    fn translation_is_exact_at_the_threshold() {
        // ceil(log2(N)) >= 3  <=>  N >= 5.
        let leaves = [Node::Param(0), Node::Int(3), Node::Int(0)];
        let (mut pool, [n, three, zero]) = crate::constraint::pool_of(leaves);
        let l = pool.add(Node::Call(Func::CeilLog2, n));
        let mut sys = System::new();
        let lf = sys.form(&pool, Side::First, l).unwrap_or_default();
        let tf = sys.form(&pool, Side::First, three).unwrap_or_default();
        sys.ge_by(&lf, &tf, 0);
        assert_feasible_for_n(&sys, &[(4, false), (5, true), (1 << 20, true)]);
        // ceil(log2(N)) == 0  <=>  N == 1.
        let mut sys = System::new();
        let lf = sys.form(&pool, Side::First, l).unwrap_or_default();
        let zf = sys.form(&pool, Side::First, zero).unwrap_or_default();
        sys.eq(&lf, &zf);
        assert_feasible_for_n(&sys, &[(0, false), (1, true), (2, false)]);
    }

    /// Whether `sys` is feasible with parameter 0 (`N`) set to each value
    /// is as each case says.
    #[track_caller]
    fn assert_feasible_for_n(sys: &System, cases: &[(i64, bool)]) {
        for &(v, feasible) in cases {
            let mut s = sys.clone();
            s.eq(&Affine::term(Term::Param(0)), &Affine::constant(v));
            assert_eq!(s.feasible(), feasible, "N = {v}");
        }
    }
}
