//! E0504: a tile is read only after a task earlier in sequential order
//! wrote it (a task reading a tile it writes itself counts as a
//! violation). Oracle: `Violation::ReadBeforeWrite`.
//!
//! Proof: shared with E0503. [`super::read_unwritten::proved`] shows that
//! every read is covered by a writer iteration that comes *earlier*, which
//! proves both rules at once; `lint::analyze` runs it once for both.

use super::ErrorRule;
use crate::diag::Code;

/// The rule: its code, its name and what its findings say.
pub(crate) const RULE: ErrorRule = ErrorRule {
    code: Code::E0504,
    name: "every read comes after its write",
    here: "read here",
    there: "written later here",
    help: "a tile must be written by an earlier task; reorder the statements or fix the indices",
};
