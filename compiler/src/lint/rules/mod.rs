//! The rules of `lpkc lint`, one module each: its code, its name, its
//! proof, the wording of its diagnostic and its help, and (for the error
//! rules) the oracle violation it corresponds to in
//! [`model::dag::Violation`], which the exhaustive check reports.
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

use model::expr::{ExprPool, Node};
use model::program::Access;

/// What a finding of an error rule says at its accesses.
pub(crate) struct FindingText {
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
