//! The dependence solver: for every tile access it builds an *inverse
//! plan*, "given a tile of this matrix, which iterations of the statement
//! touch it through this access?", and it pairs every write access with the
//! read accesses it may feed (children) and every read with the writes it
//! may come from (parents), dropping pairs it proves can never meet.
//!
//! How a plan is built, for a statement with loop variables `x` (slots
//! `0..depth`) and an access with indices `e_k(x)`, given tile `t`
//! (inputs):
//! 1. The equations are `e_k(x) = t_k`, plus every `a == b` guard on the
//!    statement's path. They are decomposed into affine forms over the
//!    still-unknown variables ([`crate::constraint::affine`]).
//! 2. Linear equations are solved by exact rational elimination; a pivot
//!    row with no free variable assigns its variable with a divisibility
//!    check (`SetDiv`).
//! 3. An equation whose only unknown part is one atom `b ** e` is inverted
//!    exactly (`SetLog`, rejecting values that are not powers of `b`), which
//!    adds the linear equation `e = log_b(value)`.
//! 4. When nothing more can be solved, the outermost unknown loop variable
//!    is enumerated over its loop range, narrowed by every constraint that
//!    is affine in it alone (other loops' bounds, comparison guards).
//! 5. Every loop bound and step, every guard and every equation is finally
//!    checked, each as early as its variables are known.
//!
//! Soundness: assignments are consequences of the equations, enumerations
//! cover whole loop ranges, and the final checks test the exact original
//! conditions, so a plan yields exactly the iterations that touch the tile.

use crate::constraint::affine::{decompose, Affine, Side, Term, Q};
use crate::constraint::guard::{guard_equalities, guard_inequalities};
use crate::plan::emit::emit;
use lpk_model::expr::{BinOp, ExprPool, ExprRef, Func2, Node, UnOp};
use lpk_model::plan::{Plan, PlanStep, RangeStep};
use lpk_model::program::{
    Access, AccessPlans, AccessRef, DomainItem, ProgramParts, Statement, StatementPlans,
};
use lpk_model::StmtId;
use std::collections::BTreeSet;

/// The side of every affine form of a plan: one statement.
const SIDE: Side = Side::First;

/// The lowered program with the plans of every statement: `solve` takes it
/// by value and returns it with `plans` filled in and the plans'
/// expressions appended to its pool (earlier nodes keep their ids).
pub fn solve(mut program: ProgramParts) -> ProgramParts {
    let mut plans = Vec::with_capacity(program.statements.len());
    for s in 0..program.statements.len() {
        let st = program.statements[s].clone();
        let writes = access_plans(&mut program.exprs, &st, &st.writes);
        let reads = access_plans(&mut program.exprs, &st, &st.reads);
        plans.push(StatementPlans { writes, reads });
    }
    // Pairs on the same matrix that may meet.
    let statements = program.statements.clone();
    // Lowering gave every statement a `u32` id, so every index has one.
    let ids = || {
        (0..statements.len()).map(|i| {
            let id = StmtId::from_index(i).expect("lowering checked the statement ids");
            (id, i)
        })
    };
    for (ws_id, ws) in ids() {
        for (wa, w) in statements[ws].writes.iter().enumerate() {
            for (rs_id, rs) in ids() {
                for (ra, r) in statements[rs].reads.iter().enumerate() {
                    if w.matrix != r.matrix || never_meet(&program.exprs, w, r) {
                        continue;
                    }
                    if !crate::plan::pairs::may_meet(
                        &mut program.exprs,
                        &program.requires,
                        &statements[ws],
                        w,
                        &statements[rs],
                        r,
                    ) {
                        continue;
                    }
                    plans[ws].writes[wa].partners.push(AccessRef {
                        stmt: rs_id,
                        access: ra as u32,
                    });
                    plans[rs].reads[ra].partners.push(AccessRef {
                        stmt: ws_id,
                        access: wa as u32,
                    });
                }
            }
        }
    }
    program.plans = plans;
    program
}

/// Whether two accesses provably never touch the same tile: some
/// coordinate is a different constant in each.
fn never_meet(pool: &ExprPool, w: &Access, r: &Access) -> bool {
    w.indices
        .iter()
        .zip(&r.indices)
        .any(|(&a, &b)| match (pool.get(a), pool.get(b)) {
            (Some(Node::Int(x)), Some(Node::Int(y))) => x != y,
            _ => false,
        })
}

/// A condition the plan must check, with the slots it needs.
struct Pending {
    step: PlanStep,
    needs: Vec<u32>,
}

struct Builder<'a> {
    pool: &'a mut ExprPool,
    depth: u32,
    /// Next free slot (temporaries).
    next_slot: u32,
    known: BTreeSet<u32>,
    steps: Vec<PlanStep>,
    /// Equations `lhs == rhs`, both int.
    equations: Vec<(ExprRef, ExprRef)>,
    /// Slots enumerated by a `Range` (their own loop check is implied).
    enumerated: BTreeSet<u32>,
    /// Equations that hold by construction of the assignments.
    implied: BTreeSet<usize>,
    /// Power atoms already inverted.
    inverted: BTreeSet<ExprRef>,
}

/// The inverse plan of each of `accesses` (the writes or the reads of
/// `st`), with no partners yet.
fn access_plans(pool: &mut ExprPool, st: &Statement, accesses: &[Access]) -> Vec<AccessPlans> {
    accesses
        .iter()
        .map(|a| AccessPlans {
            inverse: inverse_plan(pool, st, a),
            partners: Vec::new(),
        })
        .collect()
}

/// The inverse plan of one access.
pub(crate) fn inverse_plan(pool: &mut ExprPool, st: &Statement, access: &Access) -> Plan {
    let depth = st.depth() as u32;
    let inputs = access.indices.len() as u32;
    let mut b = Builder {
        pool,
        depth,
        next_slot: depth + inputs,
        known: (depth..depth + inputs).collect(),
        steps: Vec::new(),
        equations: Vec::new(),
        enumerated: BTreeSet::new(),
        implied: BTreeSet::new(),
        inverted: BTreeSet::new(),
    };
    for (k, &e) in access.indices.iter().enumerate() {
        let t = b.pool.add(Node::Slot(depth + k as u32));
        b.equations.push((e, t));
    }
    for item in &st.domain {
        if let DomainItem::Guard { cond, positive } = item {
            for (a, c) in guard_equalities(b.pool, *cond, *positive) {
                b.equations.push((a, c));
            }
        }
    }
    b.solve(st);
    // The checks: every equation, loop and guard, each as early as it can
    // be evaluated.
    let mut pending = Vec::new();
    for k in 0..access.indices.len() {
        let (e, t) = b.equations[k];
        // `x == t` needs no check when the plan set `x := t`.
        let implied = b.implied.contains(&k)
            || b.steps.iter().any(|step| match step {
                PlanStep::Set { slot, value } => {
                    *value == t && b.pool.get(e) == Some(&Node::Slot(*slot))
                }
                _ => false,
            });
        if implied {
            continue;
        }
        let cond = b.pool.add(Node::Binary(BinOp::Eq, e, t));
        pending.push(b.pending(cond));
    }
    for item in &st.domain {
        match *item {
            DomainItem::Loop { slot, lo, hi, step } => {
                if b.enumerated.contains(&slot) {
                    continue;
                }
                let x = b.pool.add(Node::Slot(slot));
                let ge = b.pool.add(Node::Binary(BinOp::Ge, x, lo));
                let lt = b.pool.add(Node::Binary(BinOp::Lt, x, hi));
                let both = b.pool.add(Node::Binary(BinOp::And, ge, lt));
                let mut range = b.pending(both);
                range.step = PlanStep::CheckRange { slot, lo, hi };
                pending.push(range);
                if !matches!(b.pool.get(step), Some(Node::Int(1))) {
                    let diff = b.pool.add(Node::Binary(BinOp::Sub, x, lo));
                    let m = b.pool.add(Node::Binary(BinOp::Mod, diff, step));
                    let zero = b.pool.add(Node::Int(0));
                    let aligned = b.pool.add(Node::Binary(BinOp::Eq, m, zero));
                    pending.push(b.pending(aligned));
                }
            }
            DomainItem::Guard { cond, positive } => {
                let c = if positive {
                    cond
                } else {
                    b.pool.add(Node::Unary(UnOp::Not, cond))
                };
                pending.push(b.pending(c));
            }
        }
    }
    let steps = place_checks(b.steps, pending, depth, inputs);
    Plan {
        depth,
        inputs,
        slots: b.next_slot,
        steps,
    }
}

/// Interleaves checks with the steps: each check goes right after the step
/// that assigns the last slot it needs.
fn place_checks(
    steps: Vec<PlanStep>,
    pending: Vec<Pending>,
    depth: u32,
    inputs: u32,
) -> Vec<PlanStep> {
    let mut known: BTreeSet<u32> = (depth..depth + inputs).collect();
    let mut out = Vec::new();
    let mut placed = vec![false; pending.len()];
    let place = |known: &BTreeSet<u32>, out: &mut Vec<PlanStep>, placed: &mut Vec<bool>| {
        for (i, p) in pending.iter().enumerate() {
            if !placed[i] && p.needs.iter().all(|s| known.contains(s)) {
                out.push(p.step.clone());
                placed[i] = true;
            }
        }
    };
    place(&known, &mut out, &mut placed);
    for step in steps {
        let slot = step.assigned_slot();
        out.push(step);
        if let Some(s) = slot {
            known.insert(s);
        }
        place(&known, &mut out, &mut placed);
    }
    // Every slot is assigned by now, so nothing is left; should a check
    // remain, it still runs, last.
    for (i, p) in pending.iter().enumerate() {
        if !placed[i] {
            out.push(p.step.clone());
        }
    }
    out
}

impl Builder<'_> {
    fn pending(&self, cond: ExprRef) -> Pending {
        let mut needs = Vec::new();
        self.pool.slots_of(cond, &mut needs);
        Pending {
            step: PlanStep::Check { cond },
            needs,
        }
    }

    fn unknown_vars(&self) -> Vec<u32> {
        (0..self.depth)
            .filter(|s| !self.known.contains(s))
            .collect()
    }

    fn is_unknown(&self) -> impl Fn(u32) -> bool + '_ {
        |s| !self.known.contains(&s)
    }

    fn temp(&mut self) -> u32 {
        let s = self.next_slot;
        self.next_slot += 1;
        s
    }

    fn solve(&mut self, st: &Statement) {
        // Each round either solves something or enumerates one variable, so
        // there are at most 2·depth + number of equations rounds.
        let mut guard = 0;
        while !self.unknown_vars().is_empty() && guard < 1000 {
            guard += 1;
            if self.solve_linear() || self.solve_atoms() {
                continue;
            }
            self.enumerate_outermost(st);
        }
        // Whatever is still unknown is enumerated: a plan must assign every
        // slot before it answers.
        while !self.unknown_vars().is_empty() {
            self.enumerate_outermost(st);
        }
    }

    /// The equations as affine forms `lhs - rhs` over the unknowns, with
    /// their indices in `equations`.
    fn forms(&self) -> Vec<(usize, Affine)> {
        let unknown = self.is_unknown();
        self.equations
            .iter()
            .enumerate()
            .filter_map(|(k, &(a, b))| {
                let la = decompose(self.pool, a, SIDE, &unknown)?;
                let lb = decompose(self.pool, b, SIDE, &unknown)?;
                Some((k, la.plus(&lb, -1)?))
            })
            .collect()
    }

    /// Rational elimination on the linear equations; assigns every
    /// variable that a row fixes. Returns whether it assigned any.
    fn solve_linear(&mut self) -> bool {
        // Each row remembers which equations it combines.
        let (mut rows, mut origins): (Vec<Affine>, Vec<Vec<usize>>) = self
            .forms()
            .into_iter()
            .filter(|(_, l)| l.atoms().next().is_none() && l.slots(SIDE).next().is_some())
            .map(|(k, l)| (l, vec![k]))
            .unzip();
        let vars = self.unknown_vars();
        // Gauss-Jordan over the rationals.
        let mut pivot_row = 0;
        for &v in &vars {
            let x = Term::Slot(SIDE, v);
            let Some(p) = (pivot_row..rows.len()).find(|&r| !rows[r].coefficient(x).is_zero())
            else {
                continue;
            };
            rows.swap(pivot_row, p);
            origins.swap(pivot_row, p);
            let c = rows[pivot_row].coefficient(x);
            let Some(inv) = Q::ONE.checked_div(c) else {
                continue;
            };
            let Some(norm) = rows[pivot_row].scale(inv) else {
                return false;
            };
            rows[pivot_row] = norm;
            for r in 0..rows.len() {
                if r == pivot_row {
                    continue;
                }
                let k = rows[r].coefficient(x);
                if !k.is_zero() {
                    match rows[r].plus_q(&rows[pivot_row].clone(), k.negated()) {
                        Some(n) => rows[r] = n,
                        None => return false,
                    }
                    let pivot_origins = origins[pivot_row].clone();
                    for o in pivot_origins {
                        if !origins[r].contains(&o) {
                            origins[r].push(o);
                        }
                    }
                }
            }
            pivot_row += 1;
        }
        let mut progress = false;
        for (row, origin) in rows.iter().zip(&origins) {
            let mut slots = row.slots(SIDE);
            let (Some((v, c)), None) = (slots.next(), slots.next()) else {
                continue;
            };
            if self.known.contains(&v) {
                continue;
            }
            // c·v + known + constant = 0  ⇒  v = -(known + constant) / c
            let Some(neg_c) = Q::ONE.checked_div(c.negated()) else {
                continue;
            };
            let Some(rhs) = row.known_part().scale(neg_c) else {
                continue;
            };
            if self.assign_from(v, &rhs) {
                progress = true;
                // An equation solved on its own holds exactly once its
                // variable is assigned (with the divisibility check).
                if let [k] = origin.as_slice() {
                    self.implied.insert(*k);
                }
            }
        }
        progress
    }

    /// Emits `slot := rhs` for a known affine form, with a divisibility
    /// check when the form has fractions.
    fn assign_from(&mut self, slot: u32, rhs: &Affine) -> bool {
        let Some((form, den)) = rhs.integer_multiple() else {
            return false;
        };
        let Some(num) = emit(self.pool, &form) else {
            return false;
        };
        if den == 1 {
            self.steps.push(PlanStep::Set { slot, value: num });
        } else {
            self.steps.push(PlanStep::SetDiv { slot, num, den });
        }
        self.known.insert(slot);
        true
    }

    /// Inverts an equation whose only unknown part is one power atom
    /// `b ** e` with a constant base `b >= 2`.
    fn solve_atoms(&mut self) -> bool {
        for (_, row) in self.forms() {
            if row.slots(SIDE).next().is_some() {
                continue;
            }
            let mut atoms = row.atoms();
            let (Some((atom, c)), None) = (atoms.next(), atoms.next()) else {
                continue;
            };
            let Some(Node::Binary(BinOp::Pow, base, exponent)) = self.pool.get(atom).copied()
            else {
                continue;
            };
            // Each atom is inverted once; its equation stays non-linear
            // when the exponent itself is not affine.
            if !self.inverted.insert(atom) {
                continue;
            }
            let Some(Node::Int(b)) = self.pool.get(base).copied() else {
                continue;
            };
            if b < 2 {
                continue;
            }
            let Some(neg_c) = Q::ONE.checked_div(c.negated()) else {
                continue;
            };
            let Some(rhs) = row.known_part().scale(neg_c) else {
                continue;
            };
            // value := rhs (exact), k := log_b(value) (exact), e == k.
            let value = self.temp();
            if !self.assign_from(value, &rhs) {
                continue;
            }
            let k = self.temp();
            let v = self.pool.add(Node::Slot(value));
            self.steps.push(PlanStep::SetLog {
                slot: k,
                value: v,
                base: b,
            });
            self.known.insert(k);
            let ks = self.pool.add(Node::Slot(k));
            self.equations.push((exponent, ks));
            return true;
        }
        false
    }

    /// Enumerates the outermost unknown loop variable over its range,
    /// narrowed by the constraints affine in it alone.
    fn enumerate_outermost(&mut self, st: &Statement) {
        let Some(&v) = self.unknown_vars().first() else {
            return;
        };
        let Some((lo, hi, step)) = st.domain.iter().find_map(|d| match *d {
            DomainItem::Loop { slot, lo, hi, step } if slot == v => Some((lo, hi, step)),
            _ => None,
        }) else {
            // A statement's every slot has a loop; mark it known to end.
            self.known.insert(v);
            return;
        };
        let constraints = self.constraints_besides(st, v);
        let mut lower = Vec::new();
        let mut upper = Vec::new();
        for g in constraints {
            match self.bound_on(g, v) {
                Some(Bound::Lower(e)) => lower.push(e),
                Some(Bound::Upper(e)) => upper.push(e),
                None => {}
            }
        }
        lower.sort();
        lower.dedup();
        upper.sort();
        upper.dedup();
        self.steps.push(PlanStep::Range(RangeStep {
            slot: v,
            lo,
            hi,
            step,
            lower,
            upper,
        }));
        self.known.insert(v);
        self.enumerated.insert(v);
    }

    /// The constraints of `st`'s domain other than `v`'s own loop, each as
    /// an expression `>= 0`.
    fn constraints_besides(&mut self, st: &Statement, v: u32) -> Vec<ExprRef> {
        let mut constraints: Vec<ExprRef> = Vec::new();
        for item in &st.domain {
            match *item {
                DomainItem::Loop { slot, lo, hi, .. } if slot != v => {
                    let x = self.pool.add(Node::Slot(slot));
                    constraints.push(self.pool.add(Node::Binary(BinOp::Sub, x, lo)));
                    let d = self.pool.add(Node::Binary(BinOp::Sub, hi, x));
                    let one = self.pool.add(Node::Int(1));
                    constraints.push(self.pool.add(Node::Binary(BinOp::Sub, d, one)));
                }
                DomainItem::Guard { cond, positive } => {
                    constraints.extend(guard_inequalities(self.pool, cond, positive));
                }
                _ => {}
            }
        }
        constraints
    }

    /// The bound constraint `g >= 0` puts on `v`, if it is affine in `v`
    /// alone with everything else known.
    fn bound_on(&mut self, g: ExprRef, v: u32) -> Option<Bound> {
        // Affine in v alone, everything else known.
        let only_v = |s: u32| s == v;
        let l = decompose(self.pool, g, SIDE, &only_v)?;
        if l.atoms().next().is_some() || l.slots(SIDE).count() != 1 {
            return None;
        }
        if l.known().any(|(k, _)| {
            self.pool
                .mentions_slot(k, &|s| !self.known.contains(&s) && s != v)
        }) {
            return None;
        }
        let x = Term::Slot(SIDE, v);
        if l.coefficient(x).is_zero() {
            return None;
        }
        // Integer form of a·v + rest >= 0.
        let (form, _) = l.integer_multiple()?;
        let a = i64::try_from(form.coefficient(x).n).ok()?;
        let mut rest = form;
        rest.set(x, Q::ZERO);
        if a == 1 || a == -1 {
            // v >= -rest  or  v <= rest: no division needed.
            let bound = if a == 1 {
                rest.scale(Q::int(-1))
            } else {
                rest.plus(&Affine::constant(1), 1)
            };
            let e = bound.and_then(|b| emit(self.pool, &b))?;
            return Some(if a == 1 {
                Bound::Lower(e)
            } else {
                Bound::Upper(e)
            });
        }
        let rest_e = emit(self.pool, &rest)?;
        if a > 0 {
            // v >= ceil(-rest / a)
            let neg = self.pool.add(Node::Unary(UnOp::Neg, rest_e));
            let ak = self.pool.add(Node::Int(a));
            Some(Bound::Lower(self.pool.add(Node::Call2(
                Func2::CeilDiv,
                neg,
                ak,
            ))))
        } else {
            // v <= floor(rest / -a), i.e. v < floor(rest / -a) + 1
            let ak = self.pool.add(Node::Int(-a));
            let q = self.pool.add(Node::Binary(BinOp::FloorDiv, rest_e, ak));
            let one = self.pool.add(Node::Int(1));
            Some(Bound::Upper(self.pool.add(Node::Binary(
                BinOp::Add,
                q,
                one,
            ))))
        }
    }
}

/// A bound on a loop variable: `v >= e`, or `v < e`.
enum Bound {
    Lower(ExprRef),
    Upper(ExprRef),
}
