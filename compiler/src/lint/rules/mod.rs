//! The rules of `lpkc lint`, one module each: its code, its name, its
//! proof, the wording of its diagnostic and its help, and (for the error
//! rules) the oracle violation it corresponds to in
//! [`lpk_model::dag::Violation`], which the exhaustive check reports.
//!
//! | module | code | oracle violation |
//! |---|---|---|
//! | [`single_assignment`] | E0501 | `Violation::DoubleWrite` |
//! | [`write_to_input`] | E0502 | `Violation::WriteToInput` |
//! | [`read_unwritten`] | E0503 | `Violation::ReadUnwritten` |
//! | [`read_before_write`] | E0504 | `Violation::ReadBeforeWrite` |
//! | [`out_of_bounds`] | E0505 | `Violation::OutOfBounds` |
//! | [`unsatisfiable_requires`] | E0506 | none (no instance exists) |
//! | [`dead_write`] | W0501 | none |
//! | [`never_runs`] | W0502 | none |
//! | [`unused_names`] | W0503–W0507 | none |
//! | [`unwritten_output`] | W0508 | none |
//! | [`shared_line`] | W0509 | none |
//!
//! Two groupings share one analysis: E0503 and E0504 are proved together
//! by [`read_unwritten::proved`] (a read covered by an *earlier* writer is
//! covered, so one proof settles both), and W0503–W0507 are one walk of
//! the HIR that finds every unused name ([`unused_names`]).

pub(crate) mod dead_write;
pub(crate) mod never_runs;
pub(crate) mod out_of_bounds;
pub(crate) mod read_before_write;
pub(crate) mod read_unwritten;
pub(crate) mod shared_line;
pub(crate) mod single_assignment;
pub(crate) mod unsatisfiable_requires;
pub(crate) mod unused_names;
pub(crate) mod unwritten_output;
pub(crate) mod write_to_input;

use lpk_model::expr::{ExprPool, Node};
use lpk_model::program::Access;

/// An error rule: what it is called and what a finding of it says at its
/// accesses.
pub(crate) struct ErrorRule {
    /// The rule's code.
    pub(crate) code: crate::diag::Code,
    /// The rule, as a noun phrase.
    pub(crate) name: &'static str,
    /// The primary label.
    pub(crate) here: &'static str,
    /// The label of the other access involved, if any.
    pub(crate) there: &'static str,
    /// The help line.
    pub(crate) help: &'static str,
}

/// Whether two accesses name tiles that differ in a constant index (so
/// they can never name the same tile).
pub(crate) fn constant_clash(pool: &ExprPool, a: &Access, b: &Access) -> bool {
    a.matrix != b.matrix
        || a.indices.iter().zip(&b.indices).any(|(&x, &y)| {
            matches!(
                (pool.get(x), pool.get(y)),
                (Some(Node::Int(u)), Some(Node::Int(v))) if u != v
            )
        })
}

/// Why a rule's proof did not close: the statements of the question that
/// stayed feasible and what in it the solver could not see through.
#[derive(Clone, Debug, Default)]
pub(crate) struct Blocked {
    /// The statements of the question (one, or a pair).
    pub(crate) stmts: Vec<usize>,
    /// The atoms (non-affine terms) of the question, or a sentence.
    pub(crate) atoms: Vec<String>,
}

/// Renders an expression of statement `st`'s side (its slots named by
/// its loop variables).
pub(crate) fn expr_text(
    p: &lpk_model::program::Program,
    pool: &ExprPool,
    st: Option<&lpk_model::program::Statement>,
    e: lpk_model::expr::ExprRef,
) -> String {
    let names = |n: Node| -> String {
        match n {
            Node::Param(i) => p
                .params
                .get(i as usize)
                .map(|x| x.name.clone())
                .unwrap_or_else(|| format!("p{i}")),
            Node::Slot(s) => st
                .and_then(|st| st.vars.get(s as usize).cloned())
                .unwrap_or_else(|| format!("v{s}")),
            _ => String::new(),
        }
    };
    let text = pool.display(e, &names).to_string();
    text
}

/// Why a feasible question `sys` over the statements `sides` (side 0,
/// side 1) stopped a proof: its atoms, or "affine" when it has none.
pub(crate) fn blocked(
    p: &lpk_model::program::Program,
    pool: &ExprPool,
    sys: &crate::constraint::system::System,
    sides: &[usize],
) -> Blocked {
    use crate::constraint::affine::{Side, Term};
    let st = |side: Side| {
        sides
            .get(side.index())
            .or(sides.first())
            .and_then(|&s| p.statements.get(s))
    };
    let mut atoms: Vec<String> = Vec::new();
    if sys.gave_up() {
        atoms.push("the search limit (a union of many cases)".to_string());
    }
    for t in sys.atoms() {
        let text = match t {
            Term::Atom(side, e) => expr_text(p, pool, st(side), e),
            Term::Known(e) => expr_text(p, pool, None, e),
            _ => continue,
        };
        if !atoms.contains(&text) {
            atoms.push(text);
        }
    }
    if atoms.is_empty() {
        atoms.push("no atom (an affine question the solver found feasible)".to_string());
    }
    let mut stmts = sides.to_vec();
    stmts.dedup();
    Blocked { stmts, atoms }
}

/// A `Blocked` with a sentence instead of atoms.
pub(crate) fn blocked_by(stmts: &[usize], why: String) -> Blocked {
    let mut stmts = stmts.to_vec();
    stmts.dedup();
    Blocked {
        stmts,
        atoms: vec![why],
    }
}

/// Whether a matrix is an input. It lives here, below the rules and the
/// exhaustive check that both ask it, so that neither imports the other
/// for it.
pub(crate) fn is_input(program: &lpk_model::program::Program, matrix: lpk_model::MatrixId) -> bool {
    program
        .get_matrix(matrix)
        .is_some_and(|m| m.role == lpk_model::program::Role::Input)
}
