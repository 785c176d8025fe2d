//! Case splits on loop variables with few values: the way lint's proofs
//! handle strides and indices such as `2 ** level`.
//!
//! A loop variable that appears inside a non-affine term (`2 ** level`,
//! `4 ** level`, a non-constant step, ...) makes the index equations
//! non-affine. When interval analysis shows that the variable takes few
//! values for every parameter value up to the ceiling (`level` of a
//! `range(ceil(log2(N)))` loop takes at most 21), the statement is split
//! into one *variant* per value: the variable is replaced by the constant
//! everywhere (and constants folded, so `2 ** (level + 1)` becomes `8`),
//! its loop becomes the guards `lo <= c`, `c < hi` and `(c - lo) % step ==
//! 0`, and the guard `level == c` pins the variable itself. The variants
//! partition the statement's iterations exactly, so a property proved for
//! every variant is proved for the statement.
//!
//! The interval analysis bounds parameters by the ceiling of "proved"
//! ([`crate::constraint::PARAM_CEILING`]) and the loop variables by their
//! loops; a term whose evaluation would fail (`log2` of a value <= 0, a
//! negative exponent) is bounded on the values where it succeeds, since a
//! failing evaluation runs no task.

use crate::constraint::affine::{type_of, NumTy, Side};
use crate::constraint::system::System;
use crate::constraint::PARAM_CEILING;
use lpk_model::expr::{BinOp, Env, ExprPool, ExprRef, Func, Func2, Node, UnOp, Value};
use lpk_model::program::{Access, DomainItem, Program, Statement};
use std::collections::HashMap;

/// Most values one split variable may take.
const MAX_VALUES: i128 = 64;
/// Most variants one statement may split into.
const MAX_VARIANTS: i128 = 64;

/// One part of a statement's iterations: some loop variables fixed.
#[derive(Clone, Debug)]
pub(crate) struct Variant {
    /// The statement with the fixed variables substituted.
    pub st: Statement,
    /// The fixed loop variables (slot, value).
    pub fixed: Vec<(u32, i64)>,
}

impl Variant {
    /// The value a slot is fixed to, if it is.
    pub(crate) fn fixed_value(&self, slot: u32) -> Option<i64> {
        self.fixed
            .iter()
            .find(|&&(s, _)| s == slot)
            .map(|&(_, v)| v)
    }
}

/// The program's statements as variants over one shared expression pool,
/// with their domains as ready-made constraint systems.
#[derive(Clone, Debug)]
pub(crate) struct Split {
    /// The program's pool, extended with the substituted expressions.
    pub exprs: ExprPool,
    /// Per statement, its variants (one, unsplit, when nothing is split;
    /// none when interval analysis shows the statement never runs).
    pub variants: Vec<Vec<Variant>>,
    /// Per statement and variant, its domain on side 0 and on side 1.
    domains: Vec<Vec<[System; 2]>>,
    /// The `require`s.
    requires: System,
    /// Per split statement, its whole (unsplit) domain on side 0 (`None`
    /// for a statement that is not split).
    wholes: Vec<Option<System>>,
}

impl Split {
    /// For a split statement, a system holding the `require`s and its
    /// whole (unsplit) domain on side 0: a question it refutes needs no
    /// variant.
    pub(crate) fn whole(&self, s: usize) -> Option<System> {
        let d = self.wholes.get(s)?.as_ref()?;
        let mut sys = self.base();
        sys.merge(d);
        Some(sys)
    }

    /// A system holding the `require`s.
    pub(crate) fn base(&self) -> System {
        self.requires.clone()
    }

    /// A system holding the `require`s and the domain of variant `v` of
    /// statement `s` on `side`.
    pub(crate) fn with_domain(&self, s: usize, v: usize, side: Side) -> System {
        let mut sys = self.base();
        self.add_domain(&mut sys, s, v, side);
        sys
    }

    /// Adds the domain of variant `v` of statement `s` on `side`.
    pub(crate) fn add_domain(&self, sys: &mut System, s: usize, v: usize, side: Side) {
        if let Some(d) = self
            .domains
            .get(s)
            .and_then(|d| d.get(v))
            .and_then(|d| d.get(side.index()))
        {
            sys.merge(d);
        }
    }

    /// Every variant with its statement's index and its own.
    pub(crate) fn all(&self) -> impl Iterator<Item = (usize, usize, &Variant)> {
        self.variants
            .iter()
            .enumerate()
            .flat_map(|(s, vs)| vs.iter().enumerate().map(move |(i, v)| (s, i, v)))
    }
}

/// Splits every statement of the program.
pub(crate) fn split(p: &Program) -> Split {
    let mut b = Builder::new(p.exprs.clone());
    let mut variants: Vec<Vec<Variant>> = Vec::with_capacity(p.statements.len());
    for st in &p.statements {
        variants.push(b.statement(p, st, &[]));
    }
    // Statements of one loop split together: a loop some statement splits
    // on is split in every statement inside it (when that stays within the
    // limits), so that a question about two of them meets fixed values on
    // both sides (a writer of level `c` against a reader of level `c + 1`
    // is a constant mismatch, not a disjunction to search).
    let loop_of = |st: &Statement, slot: u32| st.order.get(slot as usize).copied();
    // The split loops, with the values they took over the statements
    // splitting them.
    let mut ranges: HashMap<u32, Iv> = HashMap::new();
    for (st, vs) in p.statements.iter().zip(&variants) {
        for v in vs {
            for &(s, value) in &v.fixed {
                if let Some(l) = loop_of(st, s) {
                    let value = i128::from(value);
                    let r = ranges.entry(l).or_insert(Iv::point(value));
                    r.lo = r.lo.min(value);
                    r.hi = r.hi.max(value);
                }
            }
        }
    }
    if !ranges.is_empty() {
        for (st, vs) in p.statements.iter().zip(variants.iter_mut()) {
            let Some(first) = vs.first() else {
                continue;
            };
            let extra: Vec<(u32, Iv)> = (0..st.depth() as u32)
                .filter(|&s| first.fixed_value(s).is_none())
                .filter_map(|s| Some((s, *ranges.get(&loop_of(st, s)?)?)))
                .collect();
            if extra.is_empty() {
                continue;
            }
            let had = first.fixed.len();
            let joint = b.statement(p, st, &extra);
            if joint.first().is_none_or(|v| v.fixed.len() > had) {
                *vs = joint;
            }
        }
    }
    let pool = b.pool;
    let domains = variants
        .iter()
        .map(|vs: &Vec<Variant>| {
            vs.iter()
                .map(|v| {
                    Side::BOTH.map(|side| {
                        let mut sys = System::new();
                        sys.domain(&pool, side, &v.st);
                        sys
                    })
                })
                .collect()
        })
        .collect();
    let mut requires = System::new();
    requires.requires(p);
    let wholes = p
        .statements
        .iter()
        .zip(&variants)
        .map(|(st, vs)| {
            let split = vs.len() != 1 || vs.iter().any(|v| !v.fixed.is_empty());
            split.then(|| {
                let mut sys = System::new();
                sys.domain(&pool, Side::First, st);
                sys
            })
        })
        .collect();
    Split {
        exprs: pool,
        variants,
        domains,
        requires,
        wholes,
    }
}

/// A closed interval of integers; `lo > hi` never occurs (empty intervals
/// are `None` where they matter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Iv {
    lo: i128,
    hi: i128,
}

/// Magnitudes at or beyond this count as unbounded.
const BIG: i128 = 1 << 62;

impl Iv {
    const ANY: Iv = Iv { lo: -BIG, hi: BIG };

    fn point(v: i128) -> Iv {
        Iv { lo: v, hi: v }.clamp()
    }

    fn clamp(self) -> Iv {
        Iv {
            lo: self.lo.clamp(-BIG, BIG),
            hi: self.hi.clamp(-BIG, BIG),
        }
    }

    fn bounded(self) -> bool {
        self.lo > -BIG && self.hi < BIG
    }

    fn of(values: [i128; 4]) -> Iv {
        let lo = values.iter().copied().min().unwrap_or(-BIG);
        let hi = values.iter().copied().max().unwrap_or(BIG);
        Iv { lo, hi }.clamp()
    }
}

struct Builder {
    pool: ExprPool,
    /// Structural index of the pool's nodes, for sharing.
    index: HashMap<NodeKey, ExprRef>,
}

/// A hashable image of a node (reals by their bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum NodeKey {
    Int(i64),
    Real(u64),
    Bool(bool),
    Param(u32),
    Slot(u32),
    Unary(UnOp, u32),
    Binary(BinOp, u32, u32),
    Call(Func, u32),
    Call2(Func2, u32, u32),
}

fn key(n: &Node) -> NodeKey {
    match *n {
        Node::Int(v) => NodeKey::Int(v),
        Node::Real(v) => NodeKey::Real(v.to_bits()),
        Node::Bool(v) => NodeKey::Bool(v),
        Node::Param(i) => NodeKey::Param(i),
        Node::Slot(i) => NodeKey::Slot(i),
        Node::Unary(op, a) => NodeKey::Unary(op, a.0),
        Node::Binary(op, a, b) => NodeKey::Binary(op, a.0, b.0),
        Node::Call(f, a) => NodeKey::Call(f, a.0),
        Node::Call2(f, a, b) => NodeKey::Call2(f, a.0, b.0),
    }
}

fn is_constant(n: Option<&Node>) -> bool {
    matches!(n, Some(Node::Int(_) | Node::Real(_) | Node::Bool(_)))
}

impl Builder {
    fn new(pool: ExprPool) -> Builder {
        let mut index = HashMap::new();
        for (i, n) in pool.nodes().iter().enumerate() {
            index.entry(key(n)).or_insert(ExprRef(i as u32));
        }
        Builder { pool, index }
    }

    fn add(&mut self, n: Node) -> ExprRef {
        let k = key(&n);
        if let Some(&r) = self.index.get(&k) {
            return r;
        }
        let r = self.pool.add_unshared(n);
        self.index.insert(k, r);
        r
    }

    /// `e` with the fixed slots replaced by their values, constants folded.
    fn subst(
        &mut self,
        e: ExprRef,
        fixed: &[(u32, i64)],
        memo: &mut HashMap<u32, ExprRef>,
    ) -> ExprRef {
        if let Some(&r) = memo.get(&e.0) {
            return r;
        }
        let Some(node) = self.pool.get(e).copied() else {
            return e;
        };
        let new = match node {
            Node::Slot(s) => match fixed.iter().find(|&&(k, _)| k == s) {
                Some(&(_, v)) => Node::Int(v),
                None => node,
            },
            _ => node
                .try_map_operands(|x| Some(self.subst(x, fixed, memo)))
                .unwrap_or(node),
        };
        let r = self.fold(new);
        memo.insert(e.0, r);
        r
    }

    /// Adds a node, evaluating it when all its operands are constants
    /// (and the evaluation succeeds).
    fn fold(&mut self, n: Node) -> ExprRef {
        // Identities that keep the type and the evaluation errors:
        // min(a, a) = max(a, a) = a, and for an int `a`,
        // a // 1 = a * 1 = a ** 1 = a (not a % 1 = 0: it would drop the
        // errors of `a`, and a failing evaluation runs no task).
        let int = |b: &Builder, a: ExprRef| type_of(&b.pool, a) == NumTy::Int;
        let one = |b: &Builder, x: ExprRef| matches!(b.pool.get(x), Some(Node::Int(1)));
        match n {
            Node::Binary(BinOp::Min | BinOp::Max, a, b) if a == b => return a,
            Node::Binary(BinOp::FloorDiv | BinOp::Pow, a, b) if one(self, b) && int(self, a) => {
                return a
            }
            Node::Binary(BinOp::Mul, a, b) if one(self, b) && int(self, a) => return a,
            Node::Binary(BinOp::Mul, a, b) if one(self, a) && int(self, b) => return b,
            _ => {}
        }
        let operands_constant = match n {
            Node::Unary(_, a) | Node::Call(_, a) => is_constant(self.pool.get(a)),
            Node::Binary(_, a, b) | Node::Call2(_, a, b) => {
                is_constant(self.pool.get(a)) && is_constant(self.pool.get(b))
            }
            _ => false,
        };
        let r = self.add(n);
        if !operands_constant {
            return r;
        }
        let env = Env {
            params: &[],
            slots: &[],
        };
        match self.pool.eval(r, env) {
            Ok(Value::Int(v)) => self.add(Node::Int(v)),
            Ok(Value::Real(v)) => self.add(Node::Real(v)),
            Ok(Value::Bool(v)) => self.add(Node::Bool(v)),
            Err(_) => r,
        }
    }

    /// The interval of an int expression, given the slots' intervals.
    fn interval(&self, e: ExprRef, slots: &[Option<Iv>]) -> Iv {
        let Some(node) = self.pool.get(e).copied() else {
            return Iv::ANY;
        };
        let iv = |x: ExprRef| self.interval(x, slots);
        let ceiling = PARAM_CEILING as i128;
        match node {
            Node::Int(v) => Iv::point(v as i128),
            Node::Param(_) => Iv {
                lo: -ceiling,
                hi: ceiling,
            },
            Node::Slot(s) => slots.get(s as usize).copied().flatten().unwrap_or(Iv::ANY),
            Node::Unary(UnOp::Neg, a) => {
                let a = iv(a);
                Iv {
                    lo: -a.hi,
                    hi: -a.lo,
                }
            }
            Node::Binary(op, a, b) => {
                let (x, y) = (iv(a), iv(b));
                match op {
                    BinOp::Add => Iv {
                        lo: x.lo + y.lo,
                        hi: x.hi + y.hi,
                    }
                    .clamp(),
                    BinOp::Sub => Iv {
                        lo: x.lo - y.hi,
                        hi: x.hi - y.lo,
                    }
                    .clamp(),
                    BinOp::Mul if x.bounded() && y.bounded() => {
                        Iv::of([x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi])
                    }
                    BinOp::FloorDiv if y.lo > 0 && x.bounded() && y.bounded() => Iv::of([
                        x.lo.div_euclid(y.lo),
                        x.lo.div_euclid(y.hi),
                        x.hi.div_euclid(y.lo),
                        x.hi.div_euclid(y.hi),
                    ]),
                    BinOp::Mod if y.lo > 0 && y.bounded() => Iv {
                        lo: 0,
                        hi: y.hi - 1,
                    },
                    BinOp::Min => Iv {
                        lo: x.lo.min(y.lo),
                        hi: x.hi.min(y.hi),
                    },
                    BinOp::Max => Iv {
                        lo: x.lo.max(y.lo),
                        hi: x.hi.max(y.hi),
                    },
                    BinOp::Pow if x.lo >= 1 && x.bounded() && y.hi >= 0 => {
                        let e_lo = y.lo.max(0);
                        Iv {
                            lo: pow_sat(x.lo, e_lo),
                            hi: if y.bounded() {
                                pow_sat(x.hi, y.hi)
                            } else {
                                BIG
                            },
                        }
                    }
                    _ => Iv::ANY,
                }
            }
            Node::Call(Func::CeilLog2, a) => log_iv(iv(a), 2, true),
            Node::Call(Func::FloorLog2, a) => log_iv(iv(a), 2, false),
            Node::Call2(f @ (Func2::CeilLogB | Func2::FloorLogB), a, b) => {
                match self.pool.get(b).copied() {
                    Some(Node::Int(base)) if base >= 2 => {
                        log_iv(iv(a), base as i128, f == Func2::CeilLogB)
                    }
                    _ => Iv::ANY,
                }
            }
            Node::Call2(Func2::CeilDiv, a, b) => {
                let (x, y) = (iv(a), iv(b));
                if y.lo > 0 && x.bounded() && y.bounded() {
                    let cd = |n: i128, d: i128| -((-n).div_euclid(d));
                    Iv::of([
                        cd(x.lo, y.lo),
                        cd(x.lo, y.hi),
                        cd(x.hi, y.lo),
                        cd(x.hi, y.hi),
                    ])
                } else {
                    Iv::ANY
                }
            }
            _ => Iv::ANY,
        }
    }

    /// Narrows the intervals of loop variables by a guard that holds
    /// where the statement runs: `j < ceil(log2(N - j))` bounds `j` by
    /// 19, so a tree's diagonal read splits like its level loop. Only a
    /// variable (plus a constant) compared with a bounded side, in a
    /// conjunction.
    fn narrow(&self, cond: ExprRef, slots: &mut [Option<Iv>]) {
        let Some(Node::Binary(op, a, b)) = self.pool.get(cond).copied() else {
            return;
        };
        if op == BinOp::And {
            self.narrow(a, slots);
            self.narrow(b, slots);
            return;
        }
        // `slot + offset op other`, mirrored when the variable is on the
        // right.
        let ((s, offset), other, op) = match (self.slot_offset(a), self.slot_offset(b)) {
            (Some(so), _) => (so, b, op),
            (_, Some(so)) => {
                let mirrored = match op {
                    BinOp::Lt => BinOp::Gt,
                    BinOp::Le => BinOp::Ge,
                    BinOp::Gt => BinOp::Lt,
                    BinOp::Ge => BinOp::Le,
                    other => other,
                };
                (so, a, mirrored)
            }
            _ => return,
        };
        let bound = self.interval(other, slots);
        let bound = Iv {
            lo: bound.lo.saturating_sub(offset),
            hi: bound.hi.saturating_sub(offset),
        }
        .clamp();
        let Some(Some(iv)) = slots.get(s as usize).copied() else {
            return;
        };
        let (mut lo, mut hi) = (iv.lo, iv.hi);
        match op {
            BinOp::Lt => hi = hi.min(bound.hi - 1),
            BinOp::Le => hi = hi.min(bound.hi),
            BinOp::Gt => lo = lo.max(bound.lo + 1),
            BinOp::Ge => lo = lo.max(bound.lo),
            BinOp::Eq => {
                lo = lo.max(bound.lo);
                hi = hi.min(bound.hi);
            }
            _ => return,
        }
        // No value: the statement never runs; keep one value, since an
        // interval is never empty (the cases stay a cover).
        if lo > hi {
            hi = lo;
        }
        if let Some(slot) = slots.get_mut(s as usize) {
            *slot = Some(Iv { lo, hi }.clamp());
        }
    }

    /// `e` as a loop variable plus a constant: `i`, `i + c`, `c + i`,
    /// `i - c`.
    fn slot_offset(&self, e: ExprRef) -> Option<(u32, i128)> {
        let int = |x: ExprRef| match self.pool.get(x).copied() {
            Some(Node::Int(c)) => Some(i128::from(c)),
            _ => None,
        };
        let slot = |x: ExprRef| match self.pool.get(x).copied() {
            Some(Node::Slot(s)) => Some(s),
            _ => None,
        };
        match self.pool.get(e).copied()? {
            Node::Slot(s) => Some((s, 0)),
            Node::Binary(BinOp::Add, a, b) => match (slot(a), slot(b)) {
                (Some(s), _) => Some((s, int(b)?)),
                (_, Some(s)) => Some((s, int(a)?)),
                _ => None,
            },
            Node::Binary(BinOp::Sub, a, b) => Some((slot(a)?, -int(b)?)),
            _ => None,
        }
    }

    /// The variants of `st`, split on the slots with non-affine uses and on
    /// `extra`.
    fn statement(&mut self, p: &Program, st: &Statement, extra: &[(u32, Iv)]) -> Vec<Variant> {
        // Unsplit: the statement with its constants folded (`min(0, 0)`,
        // `ceil(log2(3))`, `i // 1` are no atoms).
        let unsplit = |b: &mut Builder| -> Vec<Variant> {
            b.variant(st, Vec::new(), &[]).into_iter().collect()
        };
        let (slots, loops) = self.slot_intervals(st);
        let wanted = self.wanted_slots(p, st, extra);
        let Some(plan) = choose(wanted, &slots, &loops, extra) else {
            return unsplit(self);
        };
        if plan.choices.is_empty() {
            return unsplit(self);
        }
        if plan.count == 0 {
            return Vec::new();
        }
        self.combinations(st, &plan)
    }

    /// The slot intervals of `st`, outermost first: by the loop bounds
    /// alone, and also narrowed by the guards (`(narrowed, loops)`).
    fn slot_intervals(&self, st: &Statement) -> (Vec<Option<Iv>>, Vec<Option<Iv>>) {
        let mut slots: Vec<Option<Iv>> = vec![None; st.depth()];
        let mut loops: Vec<Option<Iv>> = vec![None; st.depth()];
        for item in &st.domain {
            if let DomainItem::Loop { slot, lo, hi, .. } = *item {
                let (l, h) = (self.interval(lo, &slots), self.interval(hi, &slots));
                let iv = Iv {
                    lo: l.lo,
                    hi: h.hi - 1,
                }
                .clamp();
                if let Some(s) = slots.get_mut(slot as usize) {
                    *s = Some(iv);
                }
                if let Some(s) = loops.get_mut(slot as usize) {
                    *s = Some(iv);
                }
            } else if let DomainItem::Guard {
                cond,
                positive: true,
            } = *item
            {
                self.narrow(cond, &mut slots);
            }
        }
        (slots, loops)
    }

    /// The slots `st` would be split on, sorted and deduplicated: those
    /// with non-affine uses, and those of `extra`.
    fn wanted_slots(&self, p: &Program, st: &Statement, extra: &[(u32, Iv)]) -> Vec<u32> {
        let mut wanted = Vec::new();
        let mut note = |e: ExprRef, inside: bool| {
            nonaffine_slots(&self.pool, e, inside, &mut wanted);
        };
        for item in &st.domain {
            match *item {
                DomainItem::Loop { lo, hi, step, .. } => {
                    note(lo, false);
                    note(hi, false);
                    let constant = matches!(p.exprs.get(step), Some(Node::Int(_)));
                    note(step, !constant);
                }
                DomainItem::Guard { cond, .. } => note(cond, false),
            }
        }
        for acc in st.writes.iter().chain(&st.reads) {
            for &i in &acc.indices {
                note(i, false);
            }
        }
        wanted.extend(extra.iter().map(|&(s, _)| s));
        wanted.sort_unstable();
        wanted.dedup();
        wanted
    }

    /// One variant per combination of the values of `plan`'s choices, in
    /// order, the last choice varying fastest.
    fn combinations(&mut self, st: &Statement, plan: &Choices) -> Vec<Variant> {
        let Choices { choices, rest, .. } = plan;
        let mut out = Vec::new();
        let mut values: Vec<i64> = choices.iter().map(|&(_, iv)| iv.lo as i64).collect();
        loop {
            let mut fixed: Vec<(u32, i64)> = Vec::with_capacity(choices.len());
            let mut outside: Vec<(u32, Iv)> = Vec::new();
            for (&(s, _), &v) in choices.iter().zip(&values) {
                match rest.iter().find(|&&(r, _)| r == s) {
                    Some(&(_, iv)) if i128::from(v) > iv.hi => outside.push((s, iv)),
                    _ => fixed.push((s, v)),
                }
            }
            if let Some(v) = self.variant(st, fixed, &outside) {
                out.push(v);
            }
            if !next_combination(choices, &mut values) {
                return out;
            }
        }
    }

    /// The variant of `st` with `fixed` slots and the slots of `outside`
    /// outside their intervals; `None` when a guard folds to false (the
    /// variant has no iteration).
    fn variant(
        &mut self,
        st: &Statement,
        fixed: Vec<(u32, i64)>,
        outside: &[(u32, Iv)],
    ) -> Option<Variant> {
        let mut memo = HashMap::new();
        let mut domain = Vec::with_capacity(st.domain.len() + 3);
        for item in &st.domain {
            match *item {
                DomainItem::Loop { slot, lo, hi, step } => {
                    let lo = self.subst(lo, &fixed, &mut memo);
                    let hi = self.subst(hi, &fixed, &mut memo);
                    let step = self.subst(step, &fixed, &mut memo);
                    match fixed.iter().find(|&&(s, _)| s == slot) {
                        None => domain.push(DomainItem::Loop { slot, lo, hi, step }),
                        Some(&(_, v)) => {
                            let c = self.add(Node::Int(v));
                            let ge = self.fold(Node::Binary(BinOp::Le, lo, c));
                            guard(&self.pool, ge, true, &mut domain)?;
                            let lt = self.fold(Node::Binary(BinOp::Lt, c, hi));
                            guard(&self.pool, lt, true, &mut domain)?;
                            if !matches!(self.pool.get(step), Some(Node::Int(1))) {
                                let d = self.fold(Node::Binary(BinOp::Sub, c, lo));
                                let m = self.fold(Node::Binary(BinOp::Mod, d, step));
                                let zero = self.add(Node::Int(0));
                                let on = self.fold(Node::Binary(BinOp::Eq, m, zero));
                                guard(&self.pool, on, true, &mut domain)?;
                            }
                            let x = self.add(Node::Slot(slot));
                            let pin = self.add(Node::Binary(BinOp::Eq, x, c));
                            domain.push(DomainItem::Guard {
                                cond: pin,
                                positive: true,
                            });
                        }
                    }
                }
                DomainItem::Guard { cond, positive } => {
                    let cond = self.subst(cond, &fixed, &mut memo);
                    guard(&self.pool, cond, positive, &mut domain)?;
                }
            }
        }
        for &(slot, iv) in outside {
            let x = self.add(Node::Slot(slot));
            // (Bounded, so this holds; without the guard the variant
            // would only be larger, never lose an iteration.)
            let (Ok(lo), Ok(hi)) = (i64::try_from(iv.lo), i64::try_from(iv.hi)) else {
                continue;
            };
            let (lo, hi) = (self.add(Node::Int(lo)), self.add(Node::Int(hi)));
            let below = self.add(Node::Binary(BinOp::Lt, x, lo));
            let above = self.add(Node::Binary(BinOp::Gt, x, hi));
            let cond = self.add(Node::Binary(BinOp::Or, below, above));
            domain.push(DomainItem::Guard {
                cond,
                positive: true,
            });
        }
        let mut access = |b: &mut Builder, a: &Access| Access {
            matrix: a.matrix,
            indices: a
                .indices
                .iter()
                .map(|&i| b.subst(i, &fixed, &mut memo))
                .collect(),
            span: a.span,
        };
        let writes = st.writes.iter().map(|a| access(self, a)).collect();
        let reads = st.reads.iter().map(|a| access(self, a)).collect();
        Some(Variant {
            st: Statement {
                domain,
                writes,
                reads,
                ..st.clone()
            },
            fixed,
        })
    }
}

/// The slots a statement is split on, with the intervals of their values.
struct Choices {
    /// Each slot with the interval its variants take, in split order.
    choices: Vec<(u32, Iv)>,
    /// The slots with a remainder: the value one past this interval stands
    /// for all the values outside it.
    rest: Vec<(u32, Iv)>,
    /// The number of combinations of `choices`.
    count: i128,
}

/// The choices to split on among `wanted`, given the narrowed `slots` and
/// the loop-bound `loops` intervals; `None` when there would be too many
/// variants.
fn choose(
    wanted: Vec<u32>,
    slots: &[Option<Iv>],
    loops: &[Option<Iv>],
    extra: &[(u32, Iv)],
) -> Option<Choices> {
    let mut choices: Vec<(u32, Iv)> = Vec::new();
    let mut count: i128 = 1;
    // Variables with many values stay symbolic (their terms remain
    // opaque atoms of the systems).
    let few = |iv: Iv| iv.bounded() && iv.hi - iv.lo < MAX_VALUES;
    let mut narrowed = Vec::new();
    // Choices with a remainder: the values another statement of the
    // loop was split on, and one variant for all the others.
    let mut partial: Vec<(u32, Iv)> = Vec::new();
    for s in wanted {
        let Some(Some(iv)) = slots.get(s as usize).copied() else {
            continue;
        };
        if !few(iv) {
            let joint = extra.iter().find(|&&(e, _)| e == s).map(|&(_, r)| r);
            if let Some(r) = joint.filter(|&r| few(r)) {
                partial.push((s, r));
            }
            continue;
        }
        if !loops.get(s as usize).copied().flatten().is_some_and(few) {
            // Few values only by a guard: split on it after the
            // others, if it fits.
            narrowed.push((s, iv));
            continue;
        }
        count *= (iv.hi - iv.lo + 1).max(0);
        if count > MAX_VARIANTS {
            return None;
        }
        choices.push((s, iv));
    }
    for (s, iv) in narrowed {
        let n = (iv.hi - iv.lo + 1).max(0);
        if count * n <= MAX_VARIANTS {
            count *= n;
            choices.push((s, iv));
        }
    }
    let rest = with_remainders(partial, &mut choices, &mut count);
    Some(Choices {
        choices,
        rest,
        count,
    })
}

/// Adds the `partial` choices that fit to `choices`, each with one more
/// value (one past its range, marked `rest`), and returns them.
fn with_remainders(
    partial: Vec<(u32, Iv)>,
    choices: &mut Vec<(u32, Iv)>,
    count: &mut i128,
) -> Vec<(u32, Iv)> {
    let mut rest: Vec<(u32, Iv)> = Vec::new();
    for (s, iv) in partial {
        let n = iv.hi - iv.lo + 2;
        if *count * n <= MAX_VARIANTS {
            *count *= n;
            choices.push((
                s,
                Iv {
                    lo: iv.lo,
                    hi: iv.hi + 1,
                },
            ));
            rest.push((s, iv));
        }
    }
    rest
}

/// Steps `values` to the next combination of `choices` (the last varying
/// fastest); `false` after the last.
fn next_combination(choices: &[(u32, Iv)], values: &mut [i64]) -> bool {
    let mut i = choices.len();
    loop {
        if i == 0 {
            return false;
        }
        i -= 1;
        let (Some(&(_, iv)), Some(v)) = (choices.get(i), values.get_mut(i)) else {
            return false;
        };
        if (*v as i128) < iv.hi {
            *v += 1;
            for (w, &(_, jv)) in values.iter_mut().zip(choices).skip(i + 1) {
                *w = jv.lo as i64;
            }
            return true;
        }
    }
}

/// Adds a guard unless it folded to a constant: `None` when it is always
/// false (the variant has no iteration).
fn guard(
    pool: &ExprPool,
    cond: ExprRef,
    positive: bool,
    domain: &mut Vec<DomainItem>,
) -> Option<()> {
    match pool.get(cond).copied() {
        Some(Node::Bool(v)) if v == positive => Some(()),
        Some(Node::Bool(_)) => None,
        _ => {
            domain.push(DomainItem::Guard { cond, positive });
            Some(())
        }
    }
}

fn pow_sat(b: i128, e: i128) -> i128 {
    let mut acc: i128 = 1;
    for _ in 0..e.min(200) {
        acc = acc.saturating_mul(b);
        if acc >= BIG {
            return BIG;
        }
    }
    acc
}

/// `ceil(log_b(x))` (or floor) of an interval, over the values where it is
/// defined (`x >= 1`).
fn log_iv(x: Iv, base: i128, ceil: bool) -> Iv {
    let lo = x.lo.max(1);
    if x.hi < 1 {
        return Iv::point(0);
    }
    let f = |v: i128| -> i128 {
        // The smallest e with base^e >= v (ceil) or the largest with
        // base^e <= v (floor).
        let mut e = 0;
        let mut p: i128 = 1;
        while p < v && p < BIG {
            p = p.saturating_mul(base);
            e += 1;
        }
        if ceil || p == v {
            e
        } else {
            e - 1
        }
    };
    Iv {
        lo: f(lo),
        hi: f(x.hi.min(BIG)),
    }
}

/// Adds the slots `e` mentions inside non-affine terms (or anywhere, when
/// `inside`).
fn nonaffine_slots(pool: &ExprPool, e: ExprRef, inside: bool, out: &mut Vec<u32>) {
    let Some(node) = pool.get(e).copied() else {
        return;
    };
    match node {
        Node::Slot(s) => {
            if inside {
                out.push(s);
            }
        }
        Node::Int(_) | Node::Real(_) | Node::Bool(_) | Node::Param(_) => {}
        Node::Unary(_, a) => nonaffine_slots(pool, a, inside, out),
        Node::Binary(op, a, b) => {
            let affine = match op {
                BinOp::Add | BinOp::Sub => true,
                op if op.gives_bool() => true,
                BinOp::Mul => {
                    matches!(pool.get(a), Some(Node::Int(_)))
                        || matches!(pool.get(b), Some(Node::Int(_)))
                }
                _ => false,
            };
            let inner = inside || !affine;
            nonaffine_slots(pool, a, inner, out);
            nonaffine_slots(pool, b, inner, out);
        }
        Node::Call(_, a) => nonaffine_slots(pool, a, true, out),
        Node::Call2(_, a, b) => {
            nonaffine_slots(pool, a, true, out);
            nonaffine_slots(pool, b, true, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Interval analysis against evaluation: every value an expression
    /// takes for parameters and slots inside their intervals lies inside
    /// the expression's interval.
    #[test]
    fn intervals_contain_every_value() {
        let leaves = [
            Node::Param(0),
            Node::Slot(0),
            Node::Int(1),
            Node::Int(2),
            Node::Int(4),
            Node::Int(3),
        ];
        let (mut pool, [n, i, one, two, four, three]) = crate::constraint::pool_of(leaves);
        let n_i = pool.add(Node::Binary(BinOp::Sub, n, i));
        let mut exprs = vec![
            pool.add(Node::Call(Func::CeilLog2, n_i)),
            pool.add(Node::Call(Func::FloorLog2, n)),
            pool.add(Node::Call2(Func2::CeilLogB, n, four)),
            pool.add(Node::Call2(Func2::FloorLogB, n_i, three)),
            pool.add(Node::Call2(Func2::CeilDiv, n_i, three)),
            pool.add(Node::Binary(BinOp::FloorDiv, n_i, three)),
            pool.add(Node::Binary(BinOp::Mod, n_i, four)),
            pool.add(Node::Binary(BinOp::Min, n, i)),
            pool.add(Node::Binary(BinOp::Max, n_i, one)),
            pool.add(Node::Binary(BinOp::Mul, n, i)),
        ];
        let small = pool.add(Node::Call(Func::CeilLog2, n));
        exprs.push(pool.add(Node::Binary(BinOp::Pow, two, small)));
        let b = Builder::new(pool);
        // i in [0, 9]; the parameter sampled across its whole range.
        let slots = [Some(Iv { lo: 0, hi: 9 })];
        let samples = [
            -PARAM_CEILING,
            -7,
            -1,
            0,
            1,
            2,
            3,
            9,
            10,
            1000,
            PARAM_CEILING,
        ];
        for &e in &exprs {
            let iv = b.interval(e, &slots);
            for &nv in &samples {
                for iv_slot in 0..=9 {
                    let env = Env {
                        params: &[nv],
                        slots: &[iv_slot],
                    };
                    if let Ok(v) = b.pool.eval_int(e, env) {
                        let v = v as i128;
                        assert!(
                            iv.lo <= v && v <= iv.hi,
                            "{e:?} = {v} outside {iv:?} at N={nv}, i={iv_slot}"
                        );
                    }
                }
            }
        }
        // Tight where it matters: ceil(log2(N - i)) over the ceiling.
        let iv = b.interval(exprs.first().copied().unwrap_or(ExprRef(0)), &slots);
        assert_eq!((iv.lo, iv.hi), (0, 20));
    }

    #[test]
    fn variants_partition_a_level_loop() {
        let text = "kernel f(a) -> (b);\nprogram t(N: int) {\n  require N >= 1;\n  input A[N];\n  output B[N];\n  for level in range(ceil(log2(N))) {\n    for i in range(0, N, 2 ** (level + 1)) {\n      B[i] = f(A[i]);\n    }\n  }\n}\n";
        let sp = split_text(text);
        // level takes 0..=19 for N up to 2^20.
        let vs = variants_fixing_slot_0(&sp, 0, 20, 20);
        for (c, v) in vs.iter().enumerate() {
            // The inner loop's step folded to a constant.
            let step = v.st.domain.iter().find_map(|d| match *d {
                DomainItem::Loop { slot: 1, step, .. } => Some(step),
                _ => None,
            });
            let step = step.and_then(|s| sp.exprs.get(s).copied());
            assert_eq!(step, Some(Node::Int(1 << (c + 1))));
        }
    }

    /// The `count` variants of statement `s`, of which the first `fixed`
    /// fix slot 0 to their index.
    #[track_caller]
    fn variants_fixing_slot_0(sp: &Split, s: usize, count: usize, fixed: usize) -> Vec<Variant> {
        let vs = sp.variants.get(s).cloned().unwrap_or_default();
        assert_eq!(vs.len(), count);
        for (c, v) in vs.iter().take(fixed).enumerate() {
            assert_eq!(v.fixed, vec![(0, c as i64)]);
        }
        vs
    }

    fn split_text(text: &str) -> Split {
        let mut sources = crate::diag::SourceMap::new();
        let checked = crate::pipeline::check_source(&mut sources, "t.lpk", text);
        let hir = crate::pipeline::select_program(&checked.module, None).ok();
        let Some(hir) = hir else {
            panic!("program");
        };
        let p = crate::pipeline::try_compile_program(&checked.module, hir, &sources)
            .expect("a checked program lowers");
        split(&p)
    }

    #[test]
    fn a_guard_narrows_a_loop_and_its_else_branch_splits_with_a_remainder() {
        // `j < ceil(log2(N - j))` holds only for j <= 19: the `if` branch
        // splits on j = 0..=19; the `else` branch, which runs for any j,
        // splits on the same values plus one variant for j outside them.
        let text = "kernel f(a) -> (b);\nprogram t(N: int) {\n  require N >= 1;\n  input A[N];\n  output B[N];\n  for j in range(N) {\n    if j < ceil(log2(N - j)) {\n      B[j] = f(A[2 ** j - 1]);\n    } else {\n      B[j] = f(A[j]);\n    }\n  }\n}\n";
        let sp = split_text(text);
        variants_fixing_slot_0(&sp, 0, 20, 20);
        let other = variants_fixing_slot_0(&sp, 1, 21, 20);
        // The remainder: j unfixed, with the guard `j < 0 or j > 19`.
        let Some(rest) = other.last() else {
            panic!("no remainder variant");
        };
        assert!(rest.fixed.is_empty());
        let outside = rest.st.domain.iter().any(|d| match *d {
            DomainItem::Guard {
                cond,
                positive: true,
            } => {
                matches!(sp.exprs.get(cond), Some(Node::Binary(BinOp::Or, a, b))
                    if matches!(sp.exprs.get(*a), Some(Node::Binary(BinOp::Lt, _, _)))
                        && matches!(sp.exprs.get(*b), Some(Node::Binary(BinOp::Gt, _, h))
                            if sp.exprs.get(*h) == Some(&Node::Int(19))))
            }
            _ => false,
        });
        assert!(outside, "{:?}", rest.st.domain);
    }
}
