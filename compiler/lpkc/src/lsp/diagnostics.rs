//! The compiler's diagnostics as LSP diagnostics: the same code, message,
//! notes and help as `lpkc check` and `lpkc lint` print. The primary label
//! gives the range; the labels' messages become related information (the
//! primary one first, at its own range), so nothing `check` shows is lost;
//! notes and help lines follow the message, one a line. Unused names are
//! tagged `Unnecessary`, which editors draw faded.

use crate::lsp::analysis::Analysis;
use lpk_compiler::diag::{Code, Diagnostic, Severity};
use lsp_types::{
    DiagnosticRelatedInformation, DiagnosticSeverity, DiagnosticTag, Location, NumberOrString, Uri,
};

/// Where a diagnostic came from: the `source` editors show beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Parse, resolve and type errors.
    Check,
    /// The lint's proofs and warnings.
    Lint,
}

/// Converts one diagnostic of `analysis`'s text.
pub(crate) fn to_lsp(
    analysis: &Analysis,
    uri: &Uri,
    d: &Diagnostic,
    origin: Origin,
) -> lsp_types::Diagnostic {
    let range = match d.primary_span() {
        Some(s) => analysis.span_range(s),
        None => analysis.range(0, 0),
    };
    let mut message = d.message.clone();
    for note in &d.notes {
        message.push('\n');
        message.push_str(note);
    }
    let related: Vec<DiagnosticRelatedInformation> = d
        .labels
        .iter()
        .filter(|l| !l.message.is_empty())
        .map(|l| DiagnosticRelatedInformation {
            location: Location {
                uri: uri.clone(),
                range: analysis.span_range(l.span),
            },
            message: l.message.clone(),
        })
        .collect();
    let unused = matches!(
        d.code,
        Code::W0503 | Code::W0504 | Code::W0505 | Code::W0506 | Code::W0507
    );
    lsp_types::Diagnostic {
        range,
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
            Severity::Note => DiagnosticSeverity::INFORMATION,
        }),
        code: Some(NumberOrString::String(d.code.as_str().to_string())),
        code_description: None,
        source: Some(
            match origin {
                Origin::Check => "lpkc",
                Origin::Lint => "lpkc lint",
            }
            .to_string(),
        ),
        message,
        related_information: (!related.is_empty()).then_some(related),
        tags: unused.then(|| vec![DiagnosticTag::UNNECESSARY]),
        data: None,
    }
}

/// Every diagnostic of a version: the check's, then the lint's when it
/// has delivered for this version.
pub(crate) fn all(analysis: &Analysis, uri: &Uri) -> Vec<lsp_types::Diagnostic> {
    let check = analysis
        .checked
        .diagnostics
        .iter()
        .map(|d| to_lsp(analysis, uri, d, Origin::Check));
    let lint = analysis
        .lint
        .iter()
        .flatten()
        .map(|d| to_lsp(analysis, uri, d, Origin::Lint));
    check.chain(lint).collect()
}

/// The compiler's diagnostics of `analysis` whose primary span holds byte
/// `offset`, check and lint alike.
pub(crate) fn at(analysis: &Analysis, offset: usize) -> Vec<&Diagnostic> {
    analysis
        .checked
        .diagnostics
        .iter()
        .chain(analysis.lint.iter().flatten())
        .filter(|d| {
            d.primary_span()
                .is_some_and(|s| s.start as usize <= offset && offset <= s.end as usize)
        })
        .collect()
}
