//! Deciding one conjunction of affine constraints over the integers:
//! exact integer reductions (gcd tests on equations — the parity arguments
//! of strided trees —, elimination of unit-coefficient unknowns, gcd
//! tightening of inequalities), Fourier-Motzkin elimination and bound
//! propagation, which refute nearly every infeasible system, and only then
//! the LP back end ([`super::lp`]). "Feasible" is always the safe answer:
//! every step gives up towards it.

use super::affine::gcd;
use super::dense::{Constraint, Dense, COEFF_LIMIT};
use super::lp::solve_lp;

/// Whether the conjunction may be satisfiable by integers (true when the
/// solver cannot tell): exact integer reductions first, then the real
/// relaxation (microlp).
pub(crate) fn solve(constraints: &[&Constraint]) -> bool {
    // Constant constraints decide themselves.
    let mut pending: Vec<&Constraint> = Vec::with_capacity(constraints.len());
    for &c in constraints {
        match c.constant_holds() {
            Some(false) => return false,
            Some(true) => {}
            None => pending.push(c),
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
                    // Every unknown is an integer (see `dense`).
                    if k > 0.0 {
                        let b = (bound - 1e-9).ceil();
                        if b > l + 1e-9 {
                            if let Some(v) = lo.get_mut(j) {
                                *v = b;
                            }
                            changed = true;
                        }
                    } else {
                        let b = (bound + 1e-9).floor();
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
    let n = d.cols.len();
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
        if drop_constant_rows(&mut rows) {
            return true;
        }
        let Some(j) = cheapest_unknown(&rows, &mut alive) else {
            return false;
        };
        if let Some(x) = alive.get_mut(j) {
            *x = false;
        }
        let Some(next) = eliminate(rows, j, n) else {
            return false;
        };
        rows = next;
    }
}

/// Divides row `a·x + c >= 0` by the gcd of its coefficients, rounding the
/// constant down; `None` when a number reaches [`COEFF_LIMIT`].
fn normalize_row(mut a: Vec<i128>, mut c: i128) -> Option<(Vec<i128>, i128)> {
    // Every unknown is an integer (see `dense`): dividing by the gcd
    // and rounding the constant down keeps every integer solution.
    let g = a.iter().fold(0i128, |g, &x| gcd(g, x));
    if g > 1 {
        a.iter_mut().for_each(|x| *x /= g);
        c = c.div_euclid(g);
    }
    if a.iter().any(|x| x.abs() >= COEFF_LIMIT) || c.abs() >= COEFF_LIMIT {
        return None;
    }
    Some((a, c))
}

/// Drops the constant rows, which decide themselves; `true` when one of
/// them is false.
fn drop_constant_rows(rows: &mut Vec<(Vec<i128>, i128)>) -> bool {
    let mut next = Vec::with_capacity(rows.len());
    for (a, c) in rows.drain(..) {
        if a.iter().all(|&x| x == 0) {
            if c < 0 {
                return true;
            }
        } else {
            next.push((a, c));
        }
    }
    *rows = next;
    false
}

/// The live unknown whose elimination makes the fewest new rows; unknowns
/// no row mentions are marked dead on the way.
fn cheapest_unknown(rows: &[(Vec<i128>, i128)], alive: &mut [bool]) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for j in 0..alive.len() {
        if !alive.get(j).copied().unwrap_or(false) {
            continue;
        }
        let (mut pos, mut neg) = (0usize, 0usize);
        for (a, _) in rows {
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
    best.map(|(j, _)| j)
}

/// The rows without unknown `j` (of `n`): those that do not mention it and
/// the combinations of each lower with each upper bound; `None` (give up)
/// past a small limit or on overflow.
fn eliminate(rows: Vec<(Vec<i128>, i128)>, j: usize, n: usize) -> Option<Vec<(Vec<i128>, i128)>> {
    const MAX_ROWS: usize = 400;
    let (mut lower, mut upper, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    for (a, c) in rows {
        match a.get(j).copied().unwrap_or(0).signum() {
            1 => lower.push((a, c)),
            -1 => upper.push((a, c)),
            _ => rest.push((a, c)),
        }
    }
    if rest.len() + lower.len() * upper.len() > MAX_ROWS {
        return None;
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
                let v = q
                    .checked_mul(x)
                    .and_then(|u| p.checked_mul(y).and_then(|w| u.checked_add(w)))?;
                a.push(v);
            }
            let c = q
                .checked_mul(*lc)
                .and_then(|u| p.checked_mul(*uc).and_then(|w| u.checked_add(w)))?;
            rest.push(normalize_row(a, c)?);
        }
    }
    keep_tightest(&mut rest);
    Some(rest)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constraint::affine::{Affine, Side, Term};
    use crate::constraint::PARAM_CEILING;
    use lpk_model::expr::ExprRef;

    fn ge(terms: &[(Term, i64)], c: i64) -> Constraint {
        let mut f = Affine::constant(c);
        for &(k, q) in terms {
            f = f.plus(&Affine::term(k), q).unwrap_or_default();
        }
        Constraint::Ge(f)
    }

    fn eq(terms: &[(Term, i64)], c: i64) -> Constraint {
        match ge(terms, c) {
            Constraint::Ge(f) => Constraint::Eq(f),
            c => c,
        }
    }

    const X: Term = Term::Slot(Side::First, 0);
    const Y: Term = Term::Slot(Side::Second, 0);
    const A: Term = Term::Aux(1);
    const B: Term = Term::Aux(2);

    #[test]
    fn parity_without_branch_and_bound() {
        // 2a - 4b = 1: no integer solution, though reals abound.
        let cs = [eq(&[(A, 2), (B, -4)], -1)];
        assert!(!solve(&cs.iter().collect::<Vec<_>>()));
        // x = 16a, x = 4b + r, 1 <= r <= 3: x is a multiple of 4.
        let r = Term::Aux(3);
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
        let n = Term::Param(0);
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
        let atom = Term::Known(ExprRef(0));
        let cs = [ge(&[(atom, 2)], -1), ge(&[(atom, -2)], 1)];
        assert!(!solve(&cs.iter().collect::<Vec<_>>()));
        let cs = [ge(&[(atom, 2)], -2), ge(&[(atom, -2)], 2)];
        assert!(solve(&cs.iter().collect::<Vec<_>>()));
    }

    #[test]
    fn parameters_keep_their_ceiling_when_eliminated() {
        // N = x with x >= 2^20 + 1 has no solution within the ceiling.
        let n = Term::Param(0);
        let cs = [eq(&[(n, 1), (X, -1)], 0), ge(&[(X, 1)], -PARAM_CEILING - 1)];
        assert!(!solve(&cs.iter().collect::<Vec<_>>()));
        let cs = [eq(&[(n, 1), (X, -1)], 0), ge(&[(X, 1)], -PARAM_CEILING)];
        assert!(solve(&cs.iter().collect::<Vec<_>>()));
    }
}
