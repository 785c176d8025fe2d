//! The constraint forms the solvers share: a [`Constraint`] over affine
//! forms, and [`Dense`], a conjunction scaled to integer rows. They sit
//! below `integer`, `lp` and `system`, which all use them, so that none of
//! those imports another that imports it back.
//!
//! Every unknown is an integer: parameters, loop variables and
//! auxiliaries are, and the non-affine terms come from int expressions (an
//! int sum has int summands), so their values are integers too. A term
//! that a task does not evaluate (the right side of an `or` whose left
//! side held) is free, and its facts always admit an integer value, so
//! requiring one loses no solution. The reductions here and in `integer`
//! rely on it (gcd division with the constant rounded down, rounded
//! bounds).

use super::affine::{gcd, Affine, Term, Q};
use super::PARAM_CEILING;

/// `form >= 0` or `form == 0`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Constraint {
    /// `form >= 0`.
    Ge(Affine),
    /// `form == 0`.
    Eq(Affine),
}

impl Constraint {
    /// The form, and whether it is an equation.
    pub(crate) fn parts(&self) -> (&Affine, bool) {
        match self {
            Constraint::Ge(f) => (f, false),
            Constraint::Eq(f) => (f, true),
        }
    }

    /// Whether a constraint of a constant form holds; `None` when the
    /// form is not constant.
    pub(crate) fn constant_holds(&self) -> Option<bool> {
        let (f, is_eq) = self.parts();
        f.is_constant().then(|| {
            let v = f.constant_part();
            if is_eq {
                v.is_zero()
            } else {
                v.n >= 0
            }
        })
    }

    /// The same comparison of `map(form)`.
    pub(crate) fn map(&self, map: impl FnOnce(&Affine) -> Affine) -> Constraint {
        match self {
            Constraint::Ge(f) => Constraint::Ge(map(f)),
            Constraint::Eq(f) => Constraint::Eq(map(f)),
        }
    }

    /// The same comparison of `map(form)`; `None` when `map` gives none.
    pub(crate) fn try_map(
        &self,
        map: impl FnOnce(&Affine) -> Option<Affine>,
    ) -> Option<Constraint> {
        Some(match self {
            Constraint::Ge(f) => Constraint::Ge(map(f)?),
            Constraint::Eq(f) => Constraint::Eq(map(f)?),
        })
    }
}

/// Coefficients far below `i128::MAX`, so one multiply-add never
/// overflows; past it the reduction gives up (and the system is solved
/// as it was).
pub(super) const COEFF_LIMIT: i128 = 1 << 62;

/// A conjunction in dense integer form: `Σ a·x + c (>= or ==) 0`.
pub(super) struct Dense {
    pub(super) cols: Vec<Term>,
    /// Coefficients, constant, and whether the row is an equation.
    pub(super) rows: Vec<(Vec<i128>, i128, bool)>,
}

impl Dense {
    /// The conjunction with every row scaled to integers; `None` on
    /// overflow.
    pub(super) fn new(constraints: &[&Constraint]) -> Option<Dense> {
        let mut cols: Vec<Term> = Vec::new();
        for c in constraints {
            let (Constraint::Ge(f) | Constraint::Eq(f)) = c;
            for k in f.terms() {
                if !cols.contains(&k) {
                    cols.push(k);
                }
            }
        }
        let mut rows = Vec::with_capacity(constraints.len() + 8);
        for c in constraints {
            let (f, is_eq) = c.parts();
            let mut den: i128 = f.constant_part().d;
            for (_, q) in f.iter() {
                den = (den / gcd(den, q.d)).checked_mul(q.d)?;
                if den > COEFF_LIMIT {
                    return None;
                }
            }
            let scale = |q: Q| -> Option<i128> {
                let v = q.n.checked_mul(den / q.d)?;
                (v.abs() < COEFF_LIMIT).then_some(v)
            };
            let mut a = vec![0i128; cols.len()];
            for (k, q) in f.iter() {
                let j = cols.iter().position(|&c| c == k)?;
                *a.get_mut(j)? = scale(q)?;
            }
            rows.push((a, scale(f.constant_part())?, is_eq));
        }
        // Parameters keep their ceiling when they are eliminated.
        for (j, k) in cols.iter().enumerate() {
            if matches!(k, Term::Param(_)) {
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
    pub(super) fn reduce(&mut self) -> Option<bool> {
        let mut done = vec![false; self.rows.len()];
        loop {
            let mut pivot = None;
            for (i, (a, c, is_eq)) in self.rows.iter_mut().enumerate() {
                if !*is_eq || done.get(i).copied().unwrap_or(true) {
                    continue;
                }
                let g = a.iter().fold(0i128, |g, &x| gcd(g, x));
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
            if !is_eq {
                let g = a.iter().fold(0i128, |g, &x| gcd(g, x));
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
