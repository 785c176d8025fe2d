//! The constraint engine: affine forms over the index-constraint IR, the
//! constraints and questions built from statements' domains, and how they
//! are decided. Lint's proofs and the plan phase's pair pruning both ask
//! their questions here; nothing else in the compiler builds an affine
//! form or calls an LP solver.
//!
//! - [`affine`]: exact rationals and the one affine form ([`affine::Affine`]
//!   over [`affine::Term`]s), and the decomposition of an int expression;
//! - [`guard`]: the literals of a guard (its conjuncts, as equations,
//!   disequations and inequalities);
//! - [`system`]: feasibility questions with disjunctions and the facts of
//!   non-affine terms, decided exactly over the integers (lint);
//! - [`mono`]: exact thresholds of monotone terms (`ceil(log2(x)) >= t`);
//! - [`integer`]: one conjunction over the integers: gcd tests,
//!   elimination, Fourier–Motzkin, bound propagation;
//! - [`lp`]: the good_lp (microlp) calls: the real relaxation of what the
//!   integer reductions leave, and the one pair pruning asks ([`lp::relaxation_feasible`]).
//!
//! *Invariant:* every answer errs towards "feasible". A constraint that
//! cannot be expressed is left out, a search limit answers
//! "feasible", so "infeasible" is always a proof.

pub(crate) mod affine;
pub(crate) mod dense;
pub(crate) mod guard;
pub(crate) mod integer;
pub(crate) mod lp;
pub(crate) mod mono;
pub(crate) mod system;

/// The ceiling on parameter values under which lint's "proved" holds:
/// every parameter ranges over `[-PARAM_CEILING, PARAM_CEILING]` in the
/// integer questions of [`system`].
pub(crate) const PARAM_CEILING: i64 = 1 << 20;

/// A pool holding `nodes` (leaves, or nodes over earlier entries of the
/// pool), and their references in order: the start of the unit tests'
/// expressions.
#[cfg(test)]
pub(crate) fn pool_of<const N: usize>(
    nodes: [lpk_model::expr::Node; N],
) -> (lpk_model::expr::ExprPool, [lpk_model::expr::ExprRef; N]) {
    let mut pool = lpk_model::expr::ExprPool::default();
    let refs = nodes.map(|n| pool.add(n));
    (pool, refs)
}
