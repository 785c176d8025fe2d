//! Positions: the compiler counts bytes, LSP counts lines and UTF-16 code
//! units. A [`LineIndex`] is built once per document version and converts
//! both ways in a binary search plus a scan of one line.
//!
//! Lines end at `\n`, `\r\n` or a lone `\r`, as LSP says. A character past
//! the end of its line means the end of the line (the protocol's rule); a
//! line past the end of the document is no position at all.

use lsp_types::{Position, Range};

/// Where the lines of one text start.
pub(crate) struct LineIndex {
    /// Byte offsets where lines start; the first is 0.
    starts: Vec<usize>,
    /// The text's length in bytes.
    len: usize,
}

impl LineIndex {
    /// Indexes `text`.
    pub(crate) fn new(text: &str) -> LineIndex {
        let bytes = text.as_bytes();
        let mut starts = vec![0];
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' => starts.push(i + 1),
                b'\r' if bytes.get(i + 1) != Some(&b'\n') => starts.push(i + 1),
                _ => {}
            }
            i += 1;
        }
        LineIndex {
            starts,
            len: text.len(),
        }
    }

    /// The number of lines.
    pub(crate) fn lines(&self) -> usize {
        self.starts.len()
    }

    /// The byte range of line `line` without its line break.
    fn line_range(&self, text: &str, line: usize) -> std::ops::Range<usize> {
        let start = self.starts.get(line).copied().unwrap_or(self.len);
        let mut end = self.starts.get(line + 1).copied().unwrap_or(self.len);
        let bytes = text.as_bytes();
        while end > start && matches!(bytes.get(end - 1), Some(b'\n' | b'\r')) {
            end -= 1;
        }
        start..end
    }

    /// The LSP position of byte `offset` (clamped into the text and back
    /// to a character boundary).
    pub(crate) fn position(&self, text: &str, offset: usize) -> Position {
        let mut offset = offset.min(self.len);
        while offset > 0 && !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self
            .starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        let start = self.starts.get(line).copied().unwrap_or(0);
        let character: usize = text
            .get(start..offset)
            .unwrap_or("")
            .chars()
            .map(char::len_utf16)
            .sum();
        Position {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            character: u32::try_from(character).unwrap_or(u32::MAX),
        }
    }

    /// The LSP range of the bytes `start..end`.
    pub(crate) fn range(&self, text: &str, start: usize, end: usize) -> Range {
        Range {
            start: self.position(text, start),
            end: self.position(text, end.max(start)),
        }
    }

    /// The byte offset of an LSP position, or `None` for a line past the
    /// end of the text.
    pub(crate) fn offset(&self, text: &str, pos: Position) -> Option<usize> {
        let line = pos.line as usize;
        if line >= self.starts.len() {
            return None;
        }
        let range = self.line_range(text, line);
        let mut units = 0usize;
        let line_text = text.get(range.clone()).unwrap_or("");
        for (i, c) in line_text.char_indices() {
            if units >= pos.character as usize {
                return Some(range.start + i);
            }
            units += c.len_utf16();
        }
        Some(range.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, character: u32) -> Position {
        Position { line, character }
    }

    #[test]
    fn utf16_columns_count_astral_characters_twice() {
        let text = "a\n# é𝄞x\r\nb\rc";
        let index = LineIndex::new(text);
        assert_eq!(index.lines(), 4);
        let x = text.find('x').expect("x is there");
        assert_eq!(index.position(text, x), pos(1, 5));
        assert_eq!(index.offset(text, pos(1, 5)), Some(x));
        assert_eq!(index.offset(text, pos(1, 99)), Some(x + 1));
        assert_eq!(index.offset(text, pos(3, 0)), text.find('c'));
        assert_eq!(index.offset(text, pos(4, 0)), None);
    }
}
