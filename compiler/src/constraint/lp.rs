//! The LP back end, the one place the compiler calls good_lp (with the
//! pure-Rust microlp solver): the real relaxation of a dense conjunction
//! for lint's proofs, and the one pair pruning asks.

use super::affine::Term;
use super::dense::{Constraint, Dense};
use super::PARAM_CEILING;
use good_lp::{variable, Expression, ProblemVariables, ResolutionError, SolverModel, Variable};
use std::collections::BTreeMap;

/// A microlp problem: its unknowns and its rows (`== 0` when flagged,
/// else `>= 0`).
type Model = (ProblemVariables, Vec<(Expression, bool)>);

/// The real relaxation of a dense conjunction for microlp.
fn model(d: &Dense) -> Option<Model> {
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
                let def = match k {
                    Term::Known(_) | Term::Atom(..) => variable(),
                    Term::Param(_) => variable().clamp(-PARAM_CEILING as f64, PARAM_CEILING as f64),
                    Term::Slot(..) | Term::Aux(_) => {
                        variable().clamp(i32::MIN as f64 + 1.0, i32::MAX as f64 - 1.0)
                    }
                };
                vars.add(def)
            });
            e += (x as f64) * v;
        }
        rows.push((e, *is_eq));
    }
    Some((vars, rows))
}

/// The solver: the real relaxation of what exact integer reasoning left
/// (infeasible: no solution; anything else: "may be feasible"). There is
/// no integer-program stage: branch and bound under a time limit made the
/// answer depend on the machine's speed, cost up to 50 ms a call (30 s on
/// some butterfly trees) and, measured on the generated corpus and every
/// example, refuted nothing the reductions before it had not.
pub(super) fn solve_lp(d: &Dense) -> bool {
    let Some((vars, rows)) = model(d) else {
        return true;
    };
    let mut relaxed = vars.minimise(Expression::from(0.0)).using(good_lp::microlp);
    for (e, is_eq) in rows {
        relaxed = relaxed.with(if is_eq { e.eq(0.0) } else { e.geq(0.0) });
    }
    !matches!(relaxed.solve(), Err(ResolutionError::Infeasible))
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
        let (f, is_eq) = c.parts();
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
