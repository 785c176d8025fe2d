//! E0503: a tile read from a non-input matrix is written by some task.
//! Oracle: `Violation::ReadUnwritten`.
//!
//! The proof below settles E0503 and E0504 together (see
//! [`super::read_before_write`]): reads of unwritten tiles and reads before
//! writes, proved over all parameter values when the writers' index maps
//! can be inverted.
//!
//! For a read access of statement `R` at iteration `x` and a write access
//! of statement `W` of the same matrix, solving the index equations for
//! `W`'s loop variables (exact rational elimination) gives the only writer
//! iteration `y = P(x)` that can write the tile. The read is covered by
//! `W` when `P(x)` is integral, satisfies `W`'s domain, and comes earlier
//! in sequential order. The read access is proved correct when "`x` is in
//! `R`'s domain and no writer covers it" is infeasible: the negation of a
//! writer's coverage is a disjunction (one of its conditions fails), so
//! the question is a union of integer feasibility problems. A writer whose
//! map cannot be inverted this way (non-affine in its loop variables, not
//! injective, a non-constant stride or a non-affine guard) covers nothing,
//! so the proof falls back to the exhaustive check.
//!
//! A read of a zero matrix (`matrix T[..] = 0;`) may read a tile no task
//! writes (it reads as a zero tile), so "no writer covers it" is no
//! violation; what remains is E0504: no writer writes the tile at or after
//! the read. For each writer, "`x` is in `R`'s domain, `P(x)` is integral,
//! in `W`'s domain and not earlier than `x`" must be infeasible
//! ([`zero_read_proved`]); a writer that cannot be inverted leaves the
//! read unproved.

use super::{blocked, blocked_by, constant_clash, expr_text, Blocked, ErrorRule};
use crate::constraint::affine::Side;
use crate::constraint::affine::{gcd, Affine, Term, Q};
use crate::constraint::system::{Constraint, Dnf, System};
use crate::diag::Code;
use crate::lint::split::{Split, Variant};
use lpk_model::expr::{BinOp, ExprPool, ExprRef, Node};
use lpk_model::program::{Access, DomainItem, Program, Statement};
use std::collections::HashMap;

/// The rule: its code, its name and what its findings say.
pub(crate) const RULE: ErrorRule = ErrorRule {
    code: Code::E0503,
    name: "every read tile is written",
    here: "reads a tile no task writes",
    there: "",
    help: "check the indices and the guards of this read against its writers",
};

/// Whether every read of a non-input matrix is proved to read a tile an
/// earlier task writes.
pub(crate) fn proved(p: &Program, sp: &Split) -> Result<(), Blocked> {
    for (rs, ri, rv) in sp.all() {
        for r in &rv.st.reads {
            if super::is_input(p, r.matrix) {
                continue;
            }
            let read = Read {
                at: (rs, ri),
                rv,
                r,
            };
            if p.is_zero(r.matrix) {
                zero_read_proved(p, sp, read)?;
            } else {
                read_proved(p, sp, read)?;
            }
        }
    }
    Ok(())
}

/// Read `r` of variant `rv`, the variant `at` (statement, variant) of the
/// split: the read a proof is about.
#[derive(Clone, Copy)]
struct Read<'a> {
    at: (usize, usize),
    rv: &'a Variant,
    r: &'a Access,
}

impl<'a> Read<'a> {
    /// This read against write `w` of variant `wv`.
    fn by(self, wv: &'a Variant, w: &'a Access) -> Cover<'a> {
        Cover {
            wv,
            w,
            r_st: &self.rv.st,
            r: self.r,
        }
    }
}

/// Write `w` of variant `wv` and read `r` of statement `r_st`: whether
/// (and when) the writer covers the read.
#[derive(Clone, Copy)]
struct Cover<'a> {
    wv: &'a Variant,
    w: &'a Access,
    r_st: &'a Statement,
    r: &'a Access,
}

/// The writes that may write read `r`'s tiles, with their statements and
/// variants: every write of its matrix but those a constant index rules
/// out.
fn writers_of<'s>(
    sp: &'s Split,
    pool: &ExprPool,
    r: &Access,
) -> Vec<(usize, &'s Variant, &'s Access)> {
    let mut out = Vec::new();
    for (ws, _, wv) in sp.all() {
        for w in &wv.st.writes {
            if w.matrix == r.matrix && !constant_clash(pool, w, r) {
                out.push((ws, wv, w));
            }
        }
    }
    out
}

/// "Writer `ws`'s map `M[..]` cannot be inverted".
fn not_inverted(p: &Program, sp: &Split, wv: &Variant, w: &Access) -> String {
    let idx: Vec<String> = w
        .indices
        .iter()
        .map(|&e| expr_text(p, &sp.exprs, Some(&wv.st), e))
        .collect();
    let name = p
        .get_matrix(w.matrix)
        .map(|m| m.name.clone())
        .unwrap_or_default();
    format!("writer map {name}[{}] not inverted", idx.join(", "))
}

fn read_proved(p: &Program, sp: &Split, read: Read<'_>) -> Result<(), Blocked> {
    let Read { at, r, .. } = read;
    // A copy of the pool: a writer's terms at the writer iteration become
    // new expressions over the reader's variables ([`Subst::transported`]).
    let mut exprs = sp.exprs.clone();
    let pool = &mut exprs;
    let mut sys = sp.with_domain(at.0, at.1, Side::Second);
    let mut stuck: Vec<(usize, String)> = Vec::new();
    let mut writers: Vec<(Dnf, &Variant, &Access)> = Vec::new();
    for (ws, wv, w) in writers_of(sp, pool, r) {
        if let Some(not_covered) = not_covered(&mut sys, pool, read.by(wv, w)) {
            writers.push((not_covered, wv, w));
        } else {
            // A writer that cannot be inverted covers nothing: no
            // constraint.
            stuck.push((ws, not_inverted(p, sp, wv, w)));
        }
    }
    let mark = sys.mark();
    for (d, _, _) in &writers {
        sys.any(d.clone());
    }
    if !sys.feasible_by_cases() {
        return Ok(());
    }
    // What stopped the proof is said of the question with every writer.
    let why = match stuck.first() {
        Some((ws, why)) => blocked_by(&[*ws, at.0], why.clone()),
        None => blocked(p, pool, &sys, &[at.0, at.0]),
    };
    if sys.gave_up() {
        // Past the search limit: again without the writers that cover no
        // read at all (their alternatives hold everywhere, so leaving
        // them out changes no answer), which may bring the cases within
        // the limit.
        sys.rollback(mark);
        for (d, wv, w) in writers {
            if may_cover(sp, at, pool, read.by(wv, w)) {
                sys.any(d);
            }
        }
        if !sys.feasible() {
            return Ok(());
        }
    }
    Err(why)
}

/// Whether no writer writes the tile of read `a` of a zero matrix at or
/// after the read (the tile may be written by none: it reads as zeros).
fn zero_read_proved(p: &Program, sp: &Split, read: Read<'_>) -> Result<(), Blocked> {
    let Read { at, r, .. } = read;
    let mut exprs = sp.exprs.clone();
    let pool = &mut exprs;
    for (ws, wv, w) in writers_of(sp, pool, r) {
        let mut sys = sp.with_domain(at.0, at.1, Side::Second);
        let Some(late) = covered_late(&mut sys, pool, read.by(wv, w)) else {
            return Err(blocked_by(&[ws, at.0], not_inverted(p, sp, wv, w)));
        };
        for d in late {
            sys.any(d);
        }
        if sys.feasible_by_cases() {
            return Err(blocked(p, pool, &sys, &[ws, at.0]));
        }
    }
    Ok(())
}

/// "The writer writes the reader's tile at `x`, at or after `x`" as a
/// conjunction of alternatives over the reader's side; `None` when the
/// writer cannot be inverted.
fn covered_late(sys: &mut System, pool: &mut ExprPool, c: Cover<'_>) -> Option<Vec<Dnf>> {
    writes_tile(sys, pool, c, not_earlier)
}

/// Whether the writer may write some read tile before its read: false
/// only when "the writer writes the tile at `x`, before `x`" is
/// infeasible over the reader's domain, so the writer covers no read and
/// "not covered by it" holds everywhere (a question it need not join).
fn may_cover(sp: &Split, at: (usize, usize), pool: &mut ExprPool, c: Cover<'_>) -> bool {
    let mut sys = sp.with_domain(at.0, at.1, Side::Second);
    let Some(parts) = writes_tile(&mut sys, pool, c, earlier) else {
        return true;
    };
    for d in parts {
        sys.any(d);
    }
    sys.feasible()
}

/// "The writer writes the reader's tile at `x`, and `when`" as a
/// conjunction of alternatives over the reader's side.
fn writes_tile(
    sys: &mut System,
    pool: &mut ExprPool,
    c: Cover<'_>,
    when: fn(&Statement, &Statement, &[Affine]) -> Option<Dnf>,
) -> Option<Vec<Dnf>> {
    let Cover { wv, r_st, .. } = c;
    let w_st = &wv.st;
    let mut scratch = System::new();
    let (y, residual) = invert(sys, &mut scratch, &*pool, c)?;
    let mut out: Vec<Dnf> = residual
        .into_iter()
        .map(|e| vec![vec![Constraint::Eq(e)]])
        .collect();
    // The writer iteration is a task only where it is integral.
    for yj in &y {
        if let Some((num, d)) = numerator(yj)? {
            out.push(vec![vec![multiple_of(sys, &num, d)?]]);
        }
    }
    let mut sub = Subst {
        pool,
        y: &y,
        sys,
        scratch,
    };
    for item in &w_st.domain {
        match *item {
            DomainItem::Loop { slot, lo, hi, step } => {
                let (yk, lo, hi, step) = sub.writer_loop(slot, lo, hi, step)?;
                // lo <= yk <= hi - 1.
                out.push(vec![vec![Constraint::Ge(yk.plus(&lo, -1)?)]]);
                out.push(vec![vec![Constraint::Ge(
                    hi.plus(yk, -1)?.plus(&Affine::constant(1), -1)?,
                )]]);
                if step > 1 {
                    out.push(vec![vec![multiple_of(sub.sys, &yk.plus(&lo, -1)?, step)?]]);
                }
            }
            DomainItem::Guard { cond, positive } => {
                out.push(sub.guard(cond, positive)?);
            }
        }
    }
    out.push(when(w_st, r_st, &y)?);
    let scratch = sub.scratch;
    sys.learn_atoms(&scratch);
    Some(out)
}

/// Replaces the writer's loop variables (side 0) by `y` in the writer's
/// forms. A `%` or `//` of a constant over the writer's variables
/// (`i // 2 % 2` of a butterfly's guard) becomes fresh integers of the
/// reader's system, defined there by `x = c·q + r`, `0 <= r < c` (which
/// some integers satisfy whatever `x` is, so the definition only names
/// them); any other non-affine term of the writer's variables stops the
/// substitution (`None`).
struct Subst<'a> {
    pool: &'a mut ExprPool,
    y: &'a [Affine],
    /// The reader's system, which receives the definitions.
    sys: &'a mut System,
    /// The writer's forms (side 0).
    scratch: System,
}

impl<'a> Subst<'a> {
    fn form(&mut self, e: ExprRef) -> Option<Affine> {
        let f = self.scratch.form(self.pool, Side::First, e)?;
        self.affine(&f)
    }

    /// The writer's loop `slot` at the writer iteration: its value, its
    /// bounds over the reader's side and its stride; `None` when a bound
    /// is no form or the stride no positive constant.
    fn writer_loop(
        &mut self,
        slot: u32,
        lo: ExprRef,
        hi: ExprRef,
        step: ExprRef,
    ) -> Option<(&'a Affine, Affine, Affine, i64)> {
        let y: &'a [Affine] = self.y;
        let yk = y.get(slot as usize)?;
        let lo = self.form(lo)?;
        let hi = self.form(hi)?;
        match self.pool.get(step).copied() {
            Some(Node::Int(s)) if s >= 1 => Some((yk, lo, hi, s)),
            _ => None,
        }
    }

    fn affine(&mut self, f: &Affine) -> Option<Affine> {
        let mut out = f.clone();
        for (j, yj) in self.y.iter().enumerate() {
            out = out.substitute(Term::Slot(Side::First, j as u32), yj)?;
        }
        let atoms: Vec<ExprRef> = out
            .terms()
            .filter_map(|k| match k {
                Term::Atom(Side::First, e) => Some(e),
                _ => None,
            })
            .collect();
        for e in atoms {
            let v = self.atom(e)?;
            out = out.substitute(Term::Atom(Side::First, e), &v)?;
        }
        if out
            .terms()
            .any(|k| matches!(k, Term::Slot(Side::First, _) | Term::Atom(Side::First, _)))
        {
            return None;
        }
        // A term of the parameters the reader never mentions (the writer's
        // `range(L, N)` with `L = ceil(log2(N))`) brings its facts along.
        let known: Vec<ExprRef> = out
            .terms()
            .filter_map(|k| match k {
                Term::Known(e) => Some(e),
                _ => None,
            })
            .collect();
        for e in known {
            self.sys.form(self.pool, Side::Second, e)?;
        }
        Some(out)
    }

    fn atom(&mut self, e: ExprRef) -> Option<Affine> {
        let (op, a, c) = match self.pool.get(e).copied()? {
            Node::Binary(op @ (BinOp::Mod | BinOp::FloorDiv), a, b) => match self.pool.get(b) {
                Some(Node::Int(c)) if *c > 0 => (op, a, *c),
                _ => return self.transported(e),
            },
            _ => return self.transported(e),
        };
        let x = self.form(a)?;
        let pick = |q: &Affine, r: &Affine| {
            if op == BinOp::Mod {
                r.clone()
            } else {
                q.clone()
            }
        };
        // One division of `x` by `c` per question, shared by the writers
        // (three branches of a butterfly test one `i // 2 % 2`) and with
        // the reader's own `%` and `//` of the same value.
        let (q, r) = self.sys.division(c, &x);
        Some(pick(&q, &r))
    }

    /// Any other writer term, at the writer iteration `y`: the same
    /// expression with each loop variable replaced by its value `y` over
    /// the reader's variables and the parameters (`ceil(log2(N - k))` of a
    /// tree per panel `k`, `2 ** i` at `i = x - 1`), a term of the reader's
    /// side with its facts: expressions are pure, so it has the value the
    /// writer's term has there. `None` when some `y` is not such a form
    /// (a fresh quotient, a fraction).
    fn transported(&mut self, e: ExprRef) -> Option<Affine> {
        let mut slots = Vec::new();
        self.pool.slots_of(e, &mut slots);
        slots.sort_unstable();
        slots.dedup();
        let mut by: Vec<(u32, ExprRef)> = Vec::with_capacity(slots.len());
        for &s in &slots {
            let ys = self.y.get(s as usize)?;
            by.push((s, expr_of(self.pool, ys)?));
        }
        let mut memo = HashMap::new();
        let moved = substitute(self.pool, e, &by, &mut memo)?;
        self.sys.form(self.pool, Side::Second, moved)
    }

    fn constraint(&mut self, c: &Constraint) -> Option<Constraint> {
        c.try_map(|f| self.affine(f))
    }

    fn guard(&mut self, cond: ExprRef, positive: bool) -> Option<Dnf> {
        let d = self.scratch.cond(self.pool, Side::First, cond, positive);
        d.iter()
            .map(|alt| alt.iter().map(|c| self.constraint(c)).collect())
            .collect()
    }
}

/// An int expression of the reader's side with the value of `f` (slots
/// of side 1, parameters, terms of known expressions, integer
/// coefficients); `None` for anything else.
fn expr_of(pool: &mut ExprPool, f: &Affine) -> Option<ExprRef> {
    let c = f.constant_part();
    if c.d != 1 {
        return None;
    }
    // Written as a user would (`i - 1`, not `0 + 1 * i + -1`): stops
    // name these expressions.
    let mut acc: Option<ExprRef> = None;
    for (t, q) in f.iter() {
        if q.d != 1 {
            return None;
        }
        let node = match t {
            Term::Slot(Side::Second, k) => pool.add(Node::Slot(k)),
            Term::Param(i) => pool.add(Node::Param(i)),
            Term::Known(a) | Term::Atom(Side::Second, a) => a,
            _ => return None,
        };
        let n = i64::try_from(q.n).ok()?;
        let (op, times) = if n < 0 {
            (BinOp::Sub, n.checked_neg()?)
        } else {
            (BinOp::Add, n)
        };
        let term = if times == 1 {
            node
        } else {
            let k = pool.add(Node::Int(times));
            pool.add(Node::Binary(BinOp::Mul, k, node))
        };
        acc = Some(match acc {
            None if op == BinOp::Add => term,
            None => {
                let zero = pool.add(Node::Int(0));
                pool.add(Node::Binary(BinOp::Sub, zero, term))
            }
            Some(a) => pool.add(Node::Binary(op, a, term)),
        });
    }
    let c = i64::try_from(c.n).ok()?;
    Some(match acc {
        None => pool.add(Node::Int(c)),
        Some(a) if c == 0 => a,
        Some(a) => {
            let (op, v) = if c < 0 {
                (BinOp::Sub, c.checked_neg()?)
            } else {
                (BinOp::Add, c)
            };
            let k = pool.add(Node::Int(v));
            pool.add(Node::Binary(op, a, k))
        }
    })
}

/// `e` with each slot `s` of `by` replaced by its expression.
fn substitute(
    pool: &mut ExprPool,
    e: ExprRef,
    by: &[(u32, ExprRef)],
    memo: &mut HashMap<ExprRef, ExprRef>,
) -> Option<ExprRef> {
    if let Some(&r) = memo.get(&e) {
        return Some(r);
    }
    let node = *pool.get(e)?;
    let r = match node {
        Node::Slot(s) => match by.iter().find(|&&(k, _)| k == s) {
            Some(&(_, x)) => x,
            None => e,
        },
        Node::Int(_) | Node::Real(_) | Node::Bool(_) | Node::Param(_) => e,
        _ => {
            let n = node.try_map_operands(|x| substitute(pool, x, by, memo))?;
            pool.add(n)
        }
    };
    memo.insert(e, r);
    Some(r)
}

/// "`x` is a multiple of `d`": `x = d·q` with `q` a fresh integer of `sys`.
fn multiple_of(sys: &mut System, x: &Affine, d: i64) -> Option<Constraint> {
    let q = sys.fresh();
    Some(Constraint::Eq(x.plus(&q, -d)?))
}

/// "`x` is no multiple of `d`": `x = d·q + rem` with `1 <= rem <= d - 1`,
/// `q` and `rem` fresh integers of `sys`.
fn not_multiple_of(sys: &mut System, x: &Affine, d: i64) -> Option<Vec<Constraint>> {
    let (q, rem) = (sys.fresh(), sys.fresh());
    let rhs = Affine::default().plus(&q, d)?.plus(&rem, 1)?;
    Some(vec![
        Constraint::Eq(x.plus(&rhs, -1)?),
        Constraint::Ge(rem.plus(&Affine::constant(1), -1)?),
        Constraint::Ge(Affine::constant(d - 1).plus(&rem, -1)?),
    ])
}

/// `(d·f, d)` with `d` the least common denominator of `f`'s
/// coefficients when it is above 1 (so `d·f` is integral), `Some(None)`
/// when `f` is integral, `None` when it overflows.
fn numerator(f: &Affine) -> Option<Option<(Affine, i64)>> {
    if f.is_integral() {
        return Some(None);
    }
    let mut d: i128 = 1;
    for q in f.iter().map(|(_, q)| q).chain([f.constant_part()]) {
        let g = gcd(d, q.d);
        d = d.checked_mul(q.d / g)?;
    }
    let d64 = i64::try_from(d).ok()?;
    Some(Some((f.scale(Q::int(d64))?, d64)))
}

/// `f != 0` as two alternatives.
fn nonzero(f: &Affine) -> Option<Dnf> {
    let minus_one = f.plus(&Affine::constant(1), -1)?;
    let neg = Affine::default()
        .plus(f, -1)?
        .plus(&Affine::constant(1), -1)?;
    Some(vec![
        vec![Constraint::Ge(minus_one)],
        vec![Constraint::Ge(neg)],
    ])
}

/// The writer iteration that can write the reader's tile, as forms over
/// the reader's side (1) and the parameters, and the equations left over
/// (each `== 0`).
fn invert(
    sys: &mut System,
    scratch: &mut System,
    pool: &ExprPool,
    c: Cover<'_>,
) -> Option<(Vec<Affine>, Vec<Affine>)> {
    let Cover { wv, w, r, .. } = c;
    let depth = wv.st.depth();
    let mut rows: Vec<(Vec<Q>, Affine)> = Vec::new();
    for (&wi, &ri) in w.indices.iter().zip(&r.indices) {
        let fw = scratch.form(pool, Side::First, wi)?;
        let fr = sys.form(pool, Side::Second, ri)?;
        let mut coeffs = Vec::with_capacity(depth);
        let mut rest = fw.clone();
        for k in 0..depth as u32 {
            let c = fw.coefficient(Term::Slot(Side::First, k));
            coeffs.push(c);
            rest = rest.substitute(Term::Slot(Side::First, k), &Affine::default())?;
        }
        if rest
            .terms()
            .any(|k| matches!(k, Term::Slot(Side::First, _) | Term::Atom(Side::First, _)))
        {
            return None;
        }
        rows.push((coeffs, fr.plus(&rest, -1)?));
    }
    // Gauss-Jordan elimination over the rationals.
    let mut pivot_of: Vec<Option<usize>> = vec![None; depth];
    let mut used = vec![false; rows.len()];
    for col in 0..depth {
        if wv.fixed_value(col as u32).is_some() {
            continue;
        }
        let pick = (0..rows.len()).find(|&i| {
            !used.get(i).copied().unwrap_or(true)
                && rows
                    .get(i)
                    .is_some_and(|(c, _)| c.get(col).is_some_and(|q| !q.is_zero()))
        })?;
        let (pc, pr) = rows.get(pick)?.clone();
        let lead = *pc.get(col)?;
        let inv = Q::ONE.checked_div(lead)?;
        let pc: Vec<Q> = pc
            .iter()
            .map(|q| q.checked_mul(inv))
            .collect::<Option<_>>()?;
        let pr = Affine::default().plus_q(&pr, inv)?;
        for (i, (c, rhs)) in rows.iter_mut().enumerate() {
            if i == pick {
                continue;
            }
            let k = *c.get(col)?;
            if k.is_zero() {
                continue;
            }
            for (x, &y) in c.iter_mut().zip(&pc) {
                *x = x.checked_sub(y.checked_mul(k)?)?;
            }
            *rhs = rhs.plus_q(&pr, k.negated())?;
        }
        if let Some(row) = rows.get_mut(pick) {
            *row = (pc, pr);
        }
        if let Some(u) = used.get_mut(pick) {
            *u = true;
        }
        if let Some(p) = pivot_of.get_mut(col) {
            *p = Some(pick);
        }
    }
    let mut y = Vec::with_capacity(depth);
    for (col, p) in pivot_of.iter().enumerate() {
        match wv.fixed_value(col as u32) {
            Some(v) => y.push(Affine::constant(v)),
            None => y.push(rows.get((*p)?)?.1.clone()),
        }
    }
    let residual = rows
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|((_, rhs), _)| rhs.clone())
        .collect();
    Some((y, residual))
}

/// "The writer does not cover the read at `x`" as alternatives over the
/// reader's side; `None` when the writer cannot be inverted.
fn not_covered(sys: &mut System, pool: &mut ExprPool, c: Cover<'_>) -> Option<Dnf> {
    let Cover { wv, r_st, .. } = c;
    let w_st = &wv.st;
    let mut scratch = System::new();
    let (y, residual) = invert(sys, &mut scratch, &*pool, c)?;
    let mut out: Dnf = Vec::new();
    for e in &residual {
        out.extend(nonzero(e)?);
    }
    // The definitions of the writer's `%` and `//` terms go into `sys`
    // only when the writer can be inverted: rolled back otherwise (a mark,
    // not a copy: copying the system per writer and read was most of the
    // lint's time on programs with many statements).
    let mark = sys.mark();
    let mut sub = Subst {
        pool,
        y: &y,
        sys,
        scratch,
    };
    let built = outside_writer(&mut sub, w_st, r_st, &y, out);
    let Subst { sys, scratch, .. } = sub;
    match built {
        Some(out) => {
            sys.learn_atoms(&scratch);
            Some(out)
        }
        None => {
            sys.rollback(mark);
            None
        }
    }
}

/// `out` and the alternatives "writer iteration `y` lies outside the
/// writer's domain, or is not earlier than the read".
fn outside_writer(
    sub: &mut Subst<'_>,
    w_st: &Statement,
    r_st: &Statement,
    y: &[Affine],
    mut out: Dnf,
) -> Option<Dnf> {
    // A fractional writer iteration (`j = (i + 2) / 2`) is no task: "not
    // integral" is one way not to be covered.
    for yj in y {
        if let Some((num, d)) = numerator(yj)? {
            out.push(not_multiple_of(sub.sys, &num, d)?);
        }
    }
    for item in &w_st.domain {
        match *item {
            DomainItem::Loop { slot, lo, hi, step } => {
                let (yk, lo, hi, step) = sub.writer_loop(slot, lo, hi, step)?;
                // yk < lo, or yk >= hi.
                out.push(vec![Constraint::Ge(
                    lo.plus(yk, -1)?.plus(&Affine::constant(1), -1)?,
                )]);
                out.push(vec![Constraint::Ge(yk.plus(&hi, -1)?)]);
                if step > 1 {
                    out.push(not_multiple_of(sub.sys, &yk.plus(&lo, -1)?, step)?);
                }
            }
            DomainItem::Guard { cond, positive } => {
                out.extend(sub.guard(cond, !positive)?);
            }
        }
    }
    out.extend(not_earlier(w_st, r_st, y)?);
    Some(out)
}

/// How sequential order compares writer iteration `y` of `w_st` with
/// reader iteration `x` of `r_st`: the loops they share (`common`), "the
/// first `k` shared loop variables agree" for any `k`, "`y_k <= x_k - 1`",
/// and whether the writer comes first in the text when all shared ones
/// agree.
struct Order<'a> {
    y: &'a [Affine],
    common: usize,
    writer_first: bool,
}

impl<'a> Order<'a> {
    fn new(w_st: &Statement, r_st: &Statement, y: &'a [Affine]) -> Order<'a> {
        let common = w_st
            .order
            .iter()
            .zip(&r_st.order)
            .take(w_st.depth().min(r_st.depth()))
            .take_while(|(a, b)| a == b)
            .count();
        let (wo, ro) = (w_st.order.get(common), r_st.order.get(common));
        let writer_first = matches!((wo, ro), (Some(a), Some(b)) if a < b);
        Order {
            y,
            common,
            writer_first,
        }
    }

    fn x(k: usize) -> Affine {
        Affine::term(Term::Slot(Side::Second, k as u32))
    }

    /// `y_j == x_j` for every `j < k`.
    fn agree(&self, k: usize) -> Option<Vec<Constraint>> {
        (0..k)
            .map(|j| Some(Constraint::Eq(self.y.get(j)?.plus(&Self::x(j), -1)?)))
            .collect()
    }

    /// `y_k - x_k >= 1` (`after`) or `x_k - y_k >= 1`.
    fn differ(&self, k: usize, after: bool) -> Option<Constraint> {
        let (yk, xk) = (self.y.get(k)?, Self::x(k));
        let (a, b) = if after { (yk, &xk) } else { (&xk, yk) };
        Some(Constraint::Ge(
            a.plus(b, -1)?.plus(&Affine::constant(1), -1)?,
        ))
    }

    /// Agree before `k`, and the writer later (`after`) or earlier on `k`,
    /// for each shared loop `k`.
    fn first_difference(&self, after: bool) -> Option<Dnf> {
        (0..self.common)
            .map(|k| {
                let mut alt = self.agree(k)?;
                alt.push(self.differ(k, after)?);
                Some(alt)
            })
            .collect()
    }
}

/// "Writer iteration `y` of `w_st` is earlier than reader iteration `x`
/// of `r_st`" as alternatives (the converse of [`not_earlier`]).
fn earlier(w_st: &Statement, r_st: &Statement, y: &[Affine]) -> Option<Dnf> {
    let order = Order::new(w_st, r_st, y);
    let mut out = order.first_difference(false)?;
    if order.writer_first {
        out.push(order.agree(order.common)?);
    }
    Some(out)
}

/// "Writer iteration `y` of `w_st` is not earlier than reader iteration
/// `x` of `r_st`" as alternatives.
fn not_earlier(w_st: &Statement, r_st: &Statement, y: &[Affine]) -> Option<Dnf> {
    let order = Order::new(w_st, r_st, y);
    let mut out = order.first_difference(true)?;
    // Equal on every common loop: earlier only if the writer comes first
    // in the text there.
    if !order.writer_first {
        out.push(order.agree(order.common)?);
    }
    Some(out)
}
