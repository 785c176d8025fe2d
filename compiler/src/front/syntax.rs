//! Diagnostics for the grammar crate's syntax errors (the grammar knows
//! nothing of rendering).

use crate::diag::{Code, Diagnostic, IntoDiagnostic};
use lpk_grammar::ParseError;

impl IntoDiagnostic for ParseError {
    fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::error(code(self), self.to_string(), self.span());
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

/// The code of a syntax error (the grammar crate names its codes as text,
/// since it knows nothing of the registry; the match keeps them in step).
pub fn code(e: &ParseError) -> Code {
    match e {
        ParseError::UnknownChar { .. } => Code::E0001,
        ParseError::UnexpectedToken { .. } | ParseError::MissingSemicolon { .. } => Code::E0002,
        ParseError::UnexpectedEof { .. } => Code::E0003,
        ParseError::IntTooLarge { .. } => Code::E0004,
        ParseError::TooDeep { .. } => Code::E0005,
        ParseError::TooComplex { .. } => Code::E0006,
        ParseError::ChainedComparison { .. } => Code::E0007,
        ParseError::FileTooLarge { .. } => Code::E0008,
    }
}
