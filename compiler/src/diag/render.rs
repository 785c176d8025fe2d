//! The text rendering of diagnostics, bounded whatever the input.
//!
//! codespan-reporting draws each diagnostic, but not from the whole file:
//! from an [`Excerpt`] that holds only the lines the diagnostic shows, each
//! long line cut to a window around its labels (`...` on the cut sides),
//! so that drawing one costs what it prints, not what its file holds.
//! Diagnostics with one code and message on one line collapse into the
//! first (with a note counting the others), at most [`MAX_RENDERED`] are
//! drawn, and a report closes with rustc's count of errors and warnings.
//! Line numbers and columns are always those of the real file.

use super::{Diagnostic, Severity, SourceFile, SourceMap};
use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::{Error as FilesError, Files};
use codespan_reporting::term::{self, termcolor::WriteColor};
use lpk_grammar::ast::FileId;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::ops::Range;

/// Lines up to this many bytes are shown whole.
const LONG_LINE: usize = 140;
/// How much of a longer line is shown around its labels, in bytes.
const WINDOW: usize = 120;
/// What stands for the cut part of a line.
const CUT: &str = "...";
/// How many diagnostics (after collapsing repeats) are drawn.
const MAX_RENDERED: usize = 100;

/// Writes `diagnostics` as text: each drawn from its excerpt, repeats
/// collapsed, at most [`MAX_RENDERED`], then (with `summary`) the closing
/// count, which counts every diagnostic given.
pub(super) fn write_text<W: WriteColor>(
    map: &SourceMap,
    w: &mut W,
    diagnostics: &[Diagnostic],
    summary: bool,
) -> Result<(), FilesError> {
    let config = term::Config::default();
    let shown = collapse(map, diagnostics);
    for &(i, more) in shown.iter().take(MAX_RENDERED) {
        let Some(d) = diagnostics.get(i) else {
            continue;
        };
        let (excerpt, mut drawn) = Excerpt::of(map, d);
        if more > 0 {
            drawn
                .notes
                .push(format!("and {more} more like this on this line"));
        }
        term::emit_to_write_style(w, &config, &excerpt, &drawn)?;
    }
    let hidden: usize = shown
        .iter()
        .skip(MAX_RENDERED)
        .map(|&(_, more)| 1 + more)
        .sum();
    if hidden > 0 {
        let (severity, kind) = if diagnostics.iter().any(|d| d.severity == Severity::Error) {
            (cs::Severity::Error, "errors")
        } else {
            (cs::Severity::Warning, "warnings")
        };
        let message = format!(
            "too many {kind}; stopping after {MAX_RENDERED} diagnostics ({hidden} more not shown)"
        );
        write_line(map, w, severity, message)?;
    }
    if summary {
        if let Some((severity, message)) = closing(diagnostics) {
            write_line(map, w, severity, message)?;
        }
    }
    Ok(())
}

/// Writes a diagnostic that is only a message (`error: MESSAGE`).
fn write_line<W: WriteColor>(
    map: &SourceMap,
    w: &mut W,
    severity: cs::Severity,
    message: String,
) -> Result<(), FilesError> {
    let nothing = Excerpt {
        map,
        files: Vec::new(),
    };
    let line = cs::Diagnostic::new(severity).with_message(message);
    term::emit_to_write_style(w, &term::Config::default(), &nothing, &line)
}

/// rustc's closing line: `aborting due to 2 previous errors; 1 warning
/// emitted` when there are errors, `3 warnings emitted` when there are
/// only warnings, nothing otherwise.
fn closing(diagnostics: &[Diagnostic]) -> Option<(cs::Severity, String)> {
    let count = |s: Severity| diagnostics.iter().filter(|d| d.severity == s).count();
    let (errors, warnings) = (count(Severity::Error), count(Severity::Warning));
    let some = |n: usize, word: &str| {
        if n == 1 {
            format!("1 {word}")
        } else {
            format!("{n} {word}s")
        }
    };
    match (errors, warnings) {
        (0, 0) => None,
        (0, w) => Some((
            cs::Severity::Warning,
            format!("{} emitted", some(w, "warning")),
        )),
        (e, 0) => Some((
            cs::Severity::Error,
            format!("aborting due to {}", some(e, "previous error")),
        )),
        (e, w) => Some((
            cs::Severity::Error,
            format!(
                "aborting due to {}; {} emitted",
                some(e, "previous error"),
                some(w, "warning")
            ),
        )),
    }
}

/// The diagnostics to draw, in order, as (index, how many later ones with
/// the same severity, code and message on the same line were folded into
/// it).
fn collapse<'d>(map: &SourceMap, diagnostics: &'d [Diagnostic]) -> Vec<(usize, usize)> {
    type Key<'d> = (FileId, u32, Severity, super::Code, &'d str);
    let key = |d: &'d Diagnostic| -> Option<Key<'d>> {
        let span = d.primary_span()?;
        let line = map.line_col(span.file, span.start).0;
        Some((span.file, line, d.severity, d.code, d.message.as_str()))
    };
    // Two alike on a line are both shown (they point at different places);
    // from COLLAPSE_FROM on, they are repeats.
    let mut count: BTreeMap<Key<'d>, usize> = BTreeMap::new();
    for k in diagnostics.iter().filter_map(key) {
        *count.entry(k).or_default() += 1;
    }
    let mut shown: Vec<(usize, usize)> = Vec::new();
    let mut first: BTreeMap<Key<'d>, usize> = BTreeMap::new();
    for (i, d) in diagnostics.iter().enumerate() {
        if let Some(k) = key(d).filter(|k| count.get(k).is_some_and(|&n| n >= COLLAPSE_FROM)) {
            match first.entry(k) {
                Entry::Occupied(at) => {
                    if let Some(s) = shown.get_mut(*at.get()) {
                        s.1 += 1;
                    }
                    continue;
                }
                Entry::Vacant(at) => {
                    at.insert(shown.len());
                }
            }
        }
        shown.push((i, 0));
    }
    shown
}

/// How many diagnostics alike on one line are collapsed into one.
const COLLAPSE_FROM: usize = 3;

/// What a label needs shown on one line, in bytes from the line's start.
struct Mark {
    primary: bool,
    lo: usize,
    hi: usize,
}

/// The lines one diagnostic shows, of each file it points into, as
/// codespan-reporting's [`Files`]: line indices (and so line numbers) and
/// columns are the real file's, byte offsets are into the excerpt's text.
struct Excerpt<'m> {
    map: &'m SourceMap,
    files: Vec<ExcerptFile>,
}

/// The shown lines of one file.
struct ExcerptFile {
    id: FileId,
    /// The shown lines, each (cut and) ending in `\n`.
    text: String,
    /// Ascending by line index.
    lines: Vec<ExcerptLine>,
}

/// One shown line: which part of the real line, and where it is in the
/// excerpt's text.
struct ExcerptLine {
    /// The real 0-based line index.
    index: usize,
    /// Its bytes in the excerpt's text, with the `\n`.
    at: Range<usize>,
    /// Where the real line starts in the file.
    line_start: usize,
    /// The part of the real line shown, in bytes from its start.
    window: Range<usize>,
    /// Whether the line goes on past each side of the window.
    cut_left: bool,
    cut_right: bool,
}

impl ExcerptLine {
    /// Where the window starts in the excerpt's text.
    fn shown_start(&self) -> usize {
        self.at.start + if self.cut_left { CUT.len() } else { 0 }
    }

    /// The excerpt offset of `rel` bytes into the real line; a position
    /// outside the window lands on the `...` of its side (a label's start
    /// at its beginning, its end past it, so the label covers the cut).
    fn to_excerpt(&self, rel: usize, is_end: bool) -> usize {
        let shown = self.shown_start();
        if rel < self.window.start {
            if is_end {
                shown
            } else {
                self.at.start
            }
        } else if rel > self.window.end && self.cut_right {
            let cut = shown + self.window.len();
            if is_end {
                cut + CUT.len()
            } else {
                cut
            }
        } else {
            (shown + (rel - self.window.start)).min(self.at.end.saturating_sub(1))
        }
    }

    /// The real file offset of an excerpt offset on this line.
    fn to_real(&self, offset: usize) -> usize {
        let into = offset
            .saturating_sub(self.shown_start())
            .min(self.window.len());
        self.line_start + self.window.start + into
    }
}

impl ExcerptFile {
    fn line(&self, index: usize) -> Option<&ExcerptLine> {
        self.lines
            .binary_search_by_key(&index, |l| l.index)
            .ok()
            .and_then(|k| self.lines.get(k))
    }
}

impl<'m> Excerpt<'m> {
    /// The excerpt `d` is drawn from, and `d` as codespan draws it from
    /// there. Labels in files the map does not hold are left out.
    fn of(map: &'m SourceMap, d: &Diagnostic) -> (Excerpt<'m>, cs::Diagnostic<usize>) {
        // Per file, the lines to show and what each must show.
        let mut wanted: BTreeMap<FileId, BTreeMap<usize, Vec<Mark>>> = BTreeMap::new();
        let mut spans = Vec::new();
        for label in &d.labels {
            let Some(f) = map.file(label.span.file) else {
                continue;
            };
            let len = f.text.len();
            let start = (label.span.start as usize).min(len);
            let end = (label.span.end as usize).clamp(start, len);
            let (first, last) = (f.line_index(start), f.line_index(end));
            let rel =
                |line: usize, at: usize| at - f.line_starts.get(line).copied().unwrap_or(0).min(at);
            let lines = wanted.entry(label.span.file).or_default();
            // codespan shows a multi-line label's first lines and its last
            // two, and a single line between two shown ones: keep one more
            // line on each side of those.
            let (around_first, around_last) = if first == last {
                (first.saturating_sub(1)..first + 2, 0..0)
            } else {
                (
                    first.saturating_sub(1)..first + 5,
                    last.saturating_sub(2)..last + 2,
                )
            };
            for index in around_first.chain(around_last) {
                if index < f.line_starts.len() {
                    lines.entry(index).or_default();
                }
            }
            let mark = |lo: usize, hi: usize| Mark {
                primary: label.primary,
                lo,
                hi,
            };
            if first == last {
                let m = mark(rel(first, start), rel(first, end));
                lines.entry(first).or_default().push(m);
            } else {
                let lo = rel(first, start);
                lines.entry(first).or_default().push(mark(lo, lo + 1));
                let hi = rel(last, end);
                lines
                    .entry(last)
                    .or_default()
                    .push(mark(hi.saturating_sub(1), hi));
            }
            spans.push((label, first, start, last, end));
        }
        let files: Vec<ExcerptFile> = wanted
            .iter()
            .filter_map(|(&id, lines)| Some(excerpt_file(id, map.file(id)?, lines)))
            .collect();
        let labels = spans
            .into_iter()
            .filter_map(|(label, first, start, last, end)| {
                let k = files.iter().position(|f| f.id == label.span.file)?;
                let f = files.get(k)?;
                let line_start = |line: &ExcerptLine| line.line_start;
                let a = f.line(first)?;
                let b = f.line(last)?;
                let from = a.to_excerpt(start - line_start(a), false);
                let to = b.to_excerpt(end - line_start(b), true).max(from);
                let style = if label.primary {
                    cs::LabelStyle::Primary
                } else {
                    cs::LabelStyle::Secondary
                };
                Some(cs::Label::new(style, k, from..to).with_message(label.message.clone()))
            })
            .collect();
        let severity = match d.severity {
            Severity::Error => cs::Severity::Error,
            Severity::Warning => cs::Severity::Warning,
            Severity::Note => cs::Severity::Note,
        };
        let drawn = cs::Diagnostic::new(severity)
            .with_code(d.code.as_str())
            .with_message(d.message.clone())
            .with_labels(labels)
            .with_notes(d.notes.clone());
        (Excerpt { map, files }, drawn)
    }

    fn file(&self, id: usize) -> Result<&ExcerptFile, FilesError> {
        self.files.get(id).ok_or(FilesError::FileMissing)
    }
}

/// The excerpt of one file: `lines` (index to marks), each cut to its
/// window.
fn excerpt_file(id: FileId, f: &SourceFile, lines: &BTreeMap<usize, Vec<Mark>>) -> ExcerptFile {
    let mut text = String::new();
    let mut shown = Vec::with_capacity(lines.len());
    for (&index, marks) in lines {
        let content = f.line_content(index);
        let line_start = content.start;
        let line = f.text.get(content).unwrap_or("");
        let window = window(line, marks);
        let cut_left = window.start > 0;
        let cut_right = window.end < line.len();
        let begin = text.len();
        if cut_left {
            text.push_str(CUT);
        }
        text.push_str(line.get(window.clone()).unwrap_or(""));
        if cut_right {
            text.push_str(CUT);
        }
        text.push('\n');
        shown.push(ExcerptLine {
            index,
            at: begin..text.len(),
            line_start,
            window,
            cut_left,
            cut_right,
        });
    }
    ExcerptFile {
        id,
        text,
        lines: shown,
    }
}

/// The part of `line` to show: all of it when it is short, else
/// [`WINDOW`] bytes centred on its marks (on the first primary one when
/// they are further apart than that), on character boundaries.
fn window(line: &str, marks: &[Mark]) -> Range<usize> {
    let len = line.len();
    if len <= LONG_LINE {
        return 0..len;
    }
    let mut lo = marks.iter().map(|m| m.lo).min().unwrap_or(0);
    let mut hi = marks.iter().map(|m| m.hi).max().unwrap_or(0).max(lo);
    if hi - lo > WINDOW {
        if let Some(m) = marks.iter().find(|m| m.primary).or(marks.first()) {
            lo = m.lo;
            hi = m.hi.clamp(lo, lo + WINDOW);
        }
    }
    let slack = WINDOW.saturating_sub(hi - lo);
    let mut start = lo.saturating_sub(slack / 2).min(len);
    let mut end = (start + WINDOW).min(len);
    start = start.min(end.saturating_sub(WINDOW));
    while start > 0 && !line.is_char_boundary(start) {
        start -= 1;
    }
    while end < len && !line.is_char_boundary(end) {
        end += 1;
    }
    start..end
}

impl<'a> Files<'a> for Excerpt<'_> {
    type FileId = usize;
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, id: usize) -> Result<&'a str, FilesError> {
        Ok(self.map.name(self.file(id)?.id))
    }

    fn source(&'a self, id: usize) -> Result<&'a str, FilesError> {
        Ok(self.file(id)?.text.as_str())
    }

    fn line_index(&'a self, id: usize, byte_index: usize) -> Result<usize, FilesError> {
        let f = self.file(id)?;
        let k = f
            .lines
            .partition_point(|l| l.at.start <= byte_index)
            .saturating_sub(1);
        Ok(f.lines.get(k).map_or(0, |l| l.index))
    }

    fn line_range(&'a self, id: usize, line_index: usize) -> Result<Range<usize>, FilesError> {
        let f = self.file(id)?;
        // A line inside a long multi-line label that codespan does not
        // show: it only asks for its range.
        let end = f.text.len();
        Ok(f.line(line_index).map_or(end..end, |l| l.at.clone()))
    }

    fn column_number(
        &'a self,
        id: usize,
        line_index: usize,
        byte_index: usize,
    ) -> Result<usize, FilesError> {
        let f = self.file(id)?;
        let real = f.line(line_index).map_or(0, |l| l.to_real(byte_index));
        let offset = u32::try_from(real).unwrap_or(u32::MAX);
        Ok(self.map.line_col(f.id, offset).1 as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Code;
    use lpk_grammar::ast::Span;

    fn span(file: FileId, text: &str, needle: &str) -> Span {
        let at = text.find(needle).expect("the needle");
        Span::new(file, at, at + needle.len())
    }

    #[test]
    fn columns_count_characters_without_rescanning_the_line() {
        let mut map = SourceMap::new();
        let text = "é = 1;\nαβγ x\n";
        let file = map.add("f.lpk", text);
        let x = text.find('x').expect("x") as u32;
        assert_eq!(map.line_col(file, x), (2, 5));
        assert_eq!(map.line_col(file, 0), (1, 1));
        assert_eq!(map.line_col(file, text.len() as u32), (3, 1));
        assert_eq!(map.line_text(file, 2), "αβγ x");
    }

    #[test]
    fn a_multi_line_label_between_long_lines_is_cut_at_both_ends() {
        let mut map = SourceMap::new();
        let pad = "x".repeat(300);
        let text = format!("{pad} start(\n  middle\n{pad}) end {pad}\n");
        let file = map.add("f.lpk", text.as_str());
        let from = text.find("start").expect("start");
        let to = text.find(") end").expect("end") + 1;
        let d = Diagnostic::error(Code::E0002, "across", Span::new(file, from, to))
            .with_primary_message("here");
        let out = map.render_plain(&[d]);
        assert!(out.contains("f.lpk:1:302"), "{out}");
        for number in ["1 │", "3 │"] {
            let shown = out
                .lines()
                .find(|l| l.starts_with(number))
                .unwrap_or_else(|| panic!("line {number} in\n{out}"));
            assert!(shown.chars().count() < 140, "{shown}");
            assert!(shown.contains("..."), "{shown}");
        }
        assert!(out.contains("2 │ │   middle"), "{out}");
    }

    #[test]
    fn a_label_at_the_end_of_a_long_line_leaves_no_cut_after_it() {
        let mut map = SourceMap::new();
        let text = format!("{} bad;\n", "y".repeat(500));
        let file = map.add("f.lpk", text.as_str());
        let d = Diagnostic::error(Code::E0002, "bad", span(file, &text, "bad"));
        let out = map.render_plain(&[d]);
        let shown = out
            .lines()
            .find(|l| l.starts_with("1 │"))
            .expect("the line");
        assert!(
            shown.starts_with("1 │ ...") && shown.ends_with(" bad;"),
            "{shown}"
        );
        assert_eq!(shown.chars().count(), "1 │ ...".chars().count() + WINDOW);
    }

    #[test]
    fn the_closing_count_says_rustcs_words() {
        let mut map = SourceMap::new();
        let file = map.add("f.lpk", "a b\nc\n");
        let e =
            |line: &str| Diagnostic::error(Code::E0002, line.to_string(), Span::new(file, 0, 1));
        let w = || Diagnostic::warning(Code::W0509, "w", Span::new(file, 4, 5));
        let said = |ds: &[Diagnostic]| closing(ds).map(|(_, m)| m);
        assert_eq!(said(&[]), None);
        assert_eq!(
            said(&[e("1")]).as_deref(),
            Some("aborting due to 1 previous error")
        );
        assert_eq!(
            said(&[e("1"), e("2"), w()]).as_deref(),
            Some("aborting due to 2 previous errors; 1 warning emitted")
        );
        assert_eq!(said(&[w(), w()]).as_deref(), Some("2 warnings emitted"));
    }
}
