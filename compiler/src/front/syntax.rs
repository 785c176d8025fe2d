//! Diagnostics for the grammar crate's syntax errors (the grammar knows
//! nothing of rendering).

use crate::diag::{Diagnostic, IntoDiagnostic};
use grammar::ParseError;

impl IntoDiagnostic for ParseError {
    fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::error(self.code(), self.to_string(), self.span());
        match self {
            ParseError::UnknownChar { .. } => d
                .with_primary_message("not part of the language")
                .with_note("comments start with `#`"),
            ParseError::MissingSemicolon {
                found, found_span, ..
            } => d
                .with_primary_message("add `;` here")
                .with_label(*found_span, format!("unexpected {found}")),
            ParseError::UnexpectedToken { found, .. } => {
                d.with_primary_message(format!("unexpected {found}"))
            }
            ParseError::ChainedComparison { .. } => d
                .with_primary_message("second comparison")
                .with_help("split it with `and`: `a < b and b < c`"),
            ParseError::UnexpectedEof { .. } => d
                .with_primary_message("the file ends here")
                .with_help("check for a missing `}` or `;`"),
            ParseError::IntTooLarge { .. } => d
                .with_primary_message("does not fit in 64 bits")
                .with_note("integers range from -9223372036854775808 to 9223372036854775807"),
            ParseError::TooDeep { limit, .. } => d
                .with_primary_message(format!("nesting level {} starts here", limit + 1))
                .with_note("lpkc limits nesting so that no input can exhaust its stack")
                .with_help("flatten the expression or the loop nest, e.g. with `let`"),
            ParseError::TooComplex { .. } => d
                .with_primary_message("limit reached here")
                .with_help("split the expression with `let`"),
            ParseError::FileTooLarge { .. } => d,
        }
    }
}
