//! Diagnostics: the one value every phase's errors become, and its two
//! renderings, rustc-style text through codespan-reporting and the JSON of
//! `spec/cli.md`. Phases never format diagnostics themselves; they implement
//! `to_diagnostic()` and this module does the rest.

pub mod codes;

pub use codes::Code;

use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term;
use grammar::ast::{FileId, Span};
use serde::Serialize;

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Information attached to nothing else.
    Note,
    /// Suspicious but allowed.
    Warning,
    /// The input is wrong.
    Error,
}

/// A span with a message; the primary label is the one the diagnostic is
/// "at".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    /// Where.
    pub span: Span,
    /// What to say there (may be empty).
    pub message: String,
    /// Whether this is the diagnostic's main location.
    pub primary: bool,
}

/// A rendered-ready diagnostic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error, warning or note.
    pub severity: Severity,
    /// Stable code such as `E0101` (see [`crate::diag::codes`]).
    pub code: Code,
    /// One-line message.
    pub message: String,
    /// Labels; the first primary one gives the line and column.
    pub labels: Vec<Label>,
    /// Notes and help lines, in order (a help line starts with `help: `).
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// An error with a primary label.
    pub fn error(code: Code, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic::new(Severity::Error, code, message, span)
    }

    /// A warning with a primary label.
    pub fn warning(code: Code, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic::new(Severity::Warning, code, message, span)
    }

    fn new(severity: Severity, code: Code, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            severity,
            code,
            message: message.into(),
            labels: vec![Label {
                span,
                message: String::new(),
                primary: true,
            }],
            notes: Vec::new(),
        }
    }

    /// Sets the primary label's message.
    pub fn with_primary_message(mut self, message: impl Into<String>) -> Diagnostic {
        if let Some(label) = self.labels.iter_mut().find(|l| l.primary) {
            label.message = message.into();
        }
        self
    }

    /// Adds a secondary label.
    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
            primary: false,
        });
        self
    }

    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    /// Adds a help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.notes.push(format!("help: {}", help.into()));
        self
    }

    /// The primary span.
    pub fn primary_span(&self) -> Option<Span> {
        self.labels.iter().find(|l| l.primary).map(|l| l.span)
    }
}

/// The source files diagnostics point into.
#[derive(Default)]
pub struct SourceMap {
    files: SimpleFiles<String, String>,
    line_starts: Vec<Vec<usize>>,
}

impl SourceMap {
    /// An empty map.
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    /// Adds a file and returns its id.
    pub fn add(&mut self, name: impl Into<String>, source: impl Into<String>) -> FileId {
        let source = source.into();
        let starts = std::iter::once(0)
            .chain(source.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let id = self.files.add(name.into(), source);
        self.line_starts.push(starts);
        FileId(u32::try_from(id).unwrap_or(u32::MAX))
    }

    /// A file's name.
    pub fn name(&self, file: FileId) -> &str {
        self.files
            .get(file.0 as usize)
            .map(|f| f.name().as_str())
            .unwrap_or("<unknown>")
    }

    /// A file's text.
    pub fn source(&self, file: FileId) -> &str {
        self.files
            .get(file.0 as usize)
            .map(|f| f.source().as_str())
            .unwrap_or("")
    }

    /// The 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, file: FileId, offset: u32) -> (u32, u32) {
        let Some(starts) = self.line_starts.get(file.0 as usize) else {
            return (1, 1);
        };
        let offset = offset as usize;
        let line = starts.partition_point(|&s| s <= offset).max(1) - 1;
        let start = starts.get(line).copied().unwrap_or(0);
        let src = self.source(file);
        let col = src
            .get(start..offset.min(src.len()))
            .map(|s| s.chars().count())
            .unwrap_or(0);
        (
            u32::try_from(line + 1).unwrap_or(u32::MAX),
            u32::try_from(col + 1).unwrap_or(u32::MAX),
        )
    }

    /// The text of a 1-based line, without its newline.
    pub fn line_text(&self, file: FileId, line: u32) -> &str {
        let src = self.source(file);
        let Some(starts) = self.line_starts.get(file.0 as usize) else {
            return "";
        };
        let i = (line as usize).saturating_sub(1);
        let start = starts.get(i).copied().unwrap_or(src.len());
        let end = starts.get(i + 1).map(|e| e - 1).unwrap_or(src.len());
        src.get(start..end.max(start)).unwrap_or("")
    }

    fn to_codespan(&self, d: &Diagnostic) -> cs::Diagnostic<usize> {
        let severity = match d.severity {
            Severity::Error => cs::Severity::Error,
            Severity::Warning => cs::Severity::Warning,
            Severity::Note => cs::Severity::Note,
        };
        let labels = d
            .labels
            .iter()
            .map(|l| {
                let style = if l.primary {
                    cs::LabelStyle::Primary
                } else {
                    cs::LabelStyle::Secondary
                };
                cs::Label::new(style, l.span.file.0 as usize, self.clamp(l.span))
                    .with_message(l.message.clone())
            })
            .collect();
        cs::Diagnostic::new(severity)
            .with_code(d.code.as_str())
            .with_message(d.message.clone())
            .with_labels(labels)
            .with_notes(d.notes.clone())
    }

    fn clamp(&self, span: Span) -> std::ops::Range<usize> {
        let len = self.source(span.file).len();
        let start = (span.start as usize).min(len);
        let end = (span.end as usize).clamp(start, len);
        start..end
    }

    /// Renders diagnostics as rustc-style text without colour.
    pub fn render_plain(&self, diagnostics: &[Diagnostic]) -> String {
        let config = term::Config::default();
        let mut out = String::new();
        for d in diagnostics {
            if term::emit_to_string(&mut out, &config, &self.files, &self.to_codespan(d)).is_err() {
                out.push_str(&format!("{:?}: {}\n", d.severity, d.message));
            }
        }
        out
    }

    /// Renders diagnostics to stderr, in colour when it is a terminal and
    /// `color` allows.
    pub fn emit_stderr(&self, diagnostics: &[Diagnostic], color: bool) {
        use term::termcolor::{ColorChoice, StandardStream};
        let choice = if color {
            ColorChoice::Auto
        } else {
            ColorChoice::Never
        };
        let mut stream = StandardStream::stderr(choice);
        let config = term::Config::default();
        for d in diagnostics {
            let _ =
                term::emit_to_write_style(&mut stream, &config, &self.files, &self.to_codespan(d));
        }
    }

    /// The JSON form of `spec/cli.md`: `{"diagnostics": [...]}`.
    pub fn to_json(&self, diagnostics: &[Diagnostic]) -> serde_json::Value {
        let items: Vec<serde_json::Value> = diagnostics
            .iter()
            .map(|d| {
                let (file, line, column) = match d.primary_span() {
                    Some(span) => {
                        let (l, c) = self.line_col(span.file, span.start);
                        (self.name(span.file).to_string(), l, c)
                    }
                    None => (String::new(), 0, 0),
                };
                let labels: Vec<serde_json::Value> = d
                    .labels
                    .iter()
                    .map(|l| {
                        let (line, column) = self.line_col(l.span.file, l.span.start);
                        let (end_line, end_column) = self.line_col(l.span.file, l.span.end);
                        serde_json::json!({
                            "line": line,
                            "column": column,
                            "end_line": end_line,
                            "end_column": end_column,
                            "message": l.message,
                            "primary": l.primary,
                        })
                    })
                    .collect();
                serde_json::json!({
                    "severity": d.severity,
                    "code": d.code.as_str(),
                    "message": d.message,
                    "file": file,
                    "line": line,
                    "column": column,
                    "labels": labels,
                    "notes": d.notes,
                })
            })
            .collect();
        serde_json::json!({ "diagnostics": items })
    }
}

/// Orders diagnostics by their primary position (stable, so diagnostics at
/// one position keep their phase order).
pub fn sort_by_position(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by_key(|d| d.primary_span().map(|s| (s.file, s.start)));
}

/// Conversion of a phase's error into a diagnostic.
pub trait IntoDiagnostic {
    /// The diagnostic for this error.
    fn to_diagnostic(&self) -> Diagnostic;
}
