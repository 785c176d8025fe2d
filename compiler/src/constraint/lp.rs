//! The LP back end, the one place the compiler calls good_lp (with the
//! pure-Rust microlp solver): the integer program of a dense conjunction
//! for lint's proofs, and the real relaxation pair pruning asks.

use super::affine::Term;
use super::integer::{integral, Dense};
use super::system::Constraint;
use super::PARAM_CEILING;
use good_lp::{
    variable, Expression, ProblemVariables, ResolutionError, Solution, SolverModel, Variable,
    WithTimeLimit,
};
use std::collections::BTreeMap;

/// Seconds a single integer program may take before it counts as feasible.
const TIME_LIMIT: f64 = 0.05;

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
                    Term::Known(_) | Term::Atom(..) => int(variable()),
                    Term::Param(_) => {
                        int(variable().clamp(-PARAM_CEILING as f64, PARAM_CEILING as f64))
                    }
                    Term::Slot(..) | Term::Aux(_) => {
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
pub(super) fn solve_lp(d: &Dense) -> bool {
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

/// Whether the real relaxation of a conjunction may be feasible (false only
/// when microlp proves it infeasible): every term is an unbounded real
/// unknown, and nothing else is assumed. Pair pruning asks this; it is
/// weaker than [`super::integer::solve`] and cheap, and it never drops a
/// solution of the integer question.
pub(crate) fn relaxation_feasible(constraints: &[Constraint]) -> bool {
    if constraints.is_empty() {
        return true;
    }
    let mut vars = ProblemVariables::new();
    let mut map: BTreeMap<Term, Variable> = BTreeMap::new();
    let mut rows = Vec::with_capacity(constraints.len());
    for c in constraints {
        let (f, is_eq) = match c {
            Constraint::Ge(f) => (f, false),
            Constraint::Eq(f) => (f, true),
        };
        let mut e = Expression::from(f.constant_part().to_f64());
        for (t, q) in f.iter() {
            let v = *map.entry(t).or_insert_with(|| vars.add(variable()));
            e += q.to_f64() * v;
        }
        rows.push(if is_eq { e.eq(0.0) } else { e.geq(0.0) });
    }
    let mut model = vars.minimise(Expression::from(0.0)).using(good_lp::microlp);
    for c in rows {
        model = model.with(c);
    }
    !matches!(model.solve(), Err(ResolutionError::Infeasible))
}
