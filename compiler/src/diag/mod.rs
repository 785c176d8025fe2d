//! Diagnostics: the one value every phase's errors become, and its two
//! renderings, rustc-style text through codespan-reporting and the JSON of
//! `docs/cli.md`. Phases never format diagnostics themselves; they implement
//! `to_diagnostic()` and this module does the rest.

pub mod codes;
mod render;

pub use codes::Code;

use codespan_reporting::term;
use lpk_grammar::ast::{FileId, Span};
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
///
/// Each file keeps, computed once when it is added, the byte offsets where
/// its lines start and those of its UTF-8 continuation bytes, so that a
/// line and column lookup is two binary searches and never rescans the
/// text (a file may hold thousands of diagnostics on one long line).
#[derive(Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

/// One file of a [`SourceMap`] and its lookup tables.
struct SourceFile {
    name: String,
    text: String,
    /// Byte offsets where lines start; the first is 0.
    line_starts: Vec<usize>,
    /// Byte offsets of UTF-8 continuation bytes, ascending: a column in
    /// characters is a column in bytes less those in between.
    continuation: Vec<usize>,
}

impl SourceFile {
    /// The 0-based index of the line holding byte `offset` (the last line
    /// past the end).
    fn line_index(&self, offset: usize) -> usize {
        self.line_starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1)
    }

    /// The byte range of line `index` without its `\n` (empty past the
    /// last line).
    fn line_content(&self, index: usize) -> std::ops::Range<usize> {
        let len = self.text.len();
        let start = self.line_starts.get(index).copied().unwrap_or(len);
        let end = match self.line_starts.get(index + 1) {
            Some(&next) => next.saturating_sub(1),
            None => len,
        };
        start..end.max(start)
    }

    /// The number of characters in the bytes `range`.
    fn chars_in(&self, range: std::ops::Range<usize>) -> usize {
        let before = |o: usize| self.continuation.partition_point(|&c| c < o);
        let bytes = range.end.saturating_sub(range.start);
        bytes.saturating_sub(before(range.end).saturating_sub(before(range.start)))
    }
}

impl SourceMap {
    /// An empty map.
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    /// Adds a file and returns its id.
    pub fn add(&mut self, name: impl Into<String>, source: impl Into<String>) -> FileId {
        let text = source.into();
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let continuation = text
            .bytes()
            .enumerate()
            .filter(|&(_, b)| b & 0xC0 == 0x80)
            .map(|(i, _)| i)
            .collect();
        let id = FileId(u32::try_from(self.files.len()).unwrap_or(u32::MAX));
        self.files.push(SourceFile {
            name: name.into(),
            text,
            line_starts,
            continuation,
        });
        id
    }

    fn file(&self, file: FileId) -> Option<&SourceFile> {
        self.files.get(file.0 as usize)
    }

    /// A file's name.
    pub fn name(&self, file: FileId) -> &str {
        self.file(file).map_or("<unknown>", |f| f.name.as_str())
    }

    /// A file's text.
    pub fn source(&self, file: FileId) -> &str {
        self.file(file).map_or("", |f| f.text.as_str())
    }

    /// The 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, file: FileId, offset: u32) -> (u32, u32) {
        let Some(f) = self.file(file) else {
            return (1, 1);
        };
        let offset = (offset as usize).min(f.text.len());
        let line = f.line_index(offset);
        let start = f.line_starts.get(line).copied().unwrap_or(0);
        let col = f.chars_in(start..offset);
        (
            u32::try_from(line + 1).unwrap_or(u32::MAX),
            u32::try_from(col + 1).unwrap_or(u32::MAX),
        )
    }

    /// The text of a 1-based line, without its newline.
    pub fn line_text(&self, file: FileId, line: u32) -> &str {
        let Some(f) = self.file(file) else {
            return "";
        };
        let range = f.line_content((line as usize).saturating_sub(1));
        f.text.get(range).unwrap_or("")
    }

    /// Renders diagnostics as rustc-style text without colour, bounded as
    /// [`SourceMap::emit_stderr`] is, without the closing count.
    pub fn render_plain(&self, diagnostics: &[Diagnostic]) -> String {
        let mut out = term::termcolor::NoColor::new(Vec::new());
        if render::write_text(self, &mut out, diagnostics, false).is_err() {
            return diagnostics
                .iter()
                .map(|d| format!("{:?}: {}\n", d.severity, d.message))
                .collect();
        }
        String::from_utf8_lossy(&out.into_inner()).into_owned()
    }

    /// Renders diagnostics to stderr, in colour when it is a terminal and
    /// `color` allows, and closes with rustc's count (`error: aborting due
    /// to 2 previous errors; 1 warning emitted`). The output is bounded
    /// whatever the input: long lines are cut around their labels, repeats
    /// on one line are collapsed, and at most 100 diagnostics are shown
    /// (the count still counts them all).
    pub fn emit_stderr(&self, diagnostics: &[Diagnostic], color: bool) {
        use std::io::Write;
        use term::termcolor::{BufferedStandardStream, ColorChoice};
        let choice = if color {
            ColorChoice::Auto
        } else {
            ColorChoice::Never
        };
        let mut stream = BufferedStandardStream::stderr(choice);
        // Stderr may be closed; there is nobody left to tell.
        let _ = render::write_text(self, &mut stream, diagnostics, true);
        let _ = stream.flush();
    }

    /// The JSON form of `docs/cli.md`: `{"diagnostics": [...]}`.
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
pub(crate) trait IntoDiagnostic {
    /// The diagnostic for this error.
    fn to_diagnostic(&self) -> Diagnostic;
}
