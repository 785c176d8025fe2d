//! E0504: a tile is read only after a task earlier in sequential order
//! wrote it (a task reading a tile it writes itself counts as a
//! violation). Oracle: `Violation::ReadBeforeWrite`.
//!
//! Proof: shared with E0503. [`super::read_unwritten::proved`] shows that
//! every read is covered by a writer iteration that comes *earlier*, which
//! proves both rules at once; `lint::analyze` runs it once for both.

use super::FindingText;
use crate::diag::Code;

/// The rule's code.
pub(crate) const CODE: Code = Code::E0504;
/// The rule, as a noun phrase.
pub(crate) const RULE: &str = "every read comes after its write";
/// What a finding says.
pub(crate) const TEXT: FindingText = FindingText {
    here: "read here",
    there: "written later here",
    help: "a tile must be written by an earlier task; reorder the statements or fix the indices",
};
