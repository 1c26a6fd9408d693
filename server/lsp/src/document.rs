//! One open document's text: a rope, its version's line index, and the
//! conversion of positions between the client (UTF-16) and the core (UTF-8
//! byte columns). Everything else the server knows about the document (its
//! version, analysis, profile and the edits since) is `kernelpro_session`'s
//! [`kernelpro_session::Document`], reached through `Deref`.

use crate::syntax::KeptTree;
use kernelpro_model::{Pos, Span};
use kernelpro_session::LineChange;
use ropey::Rope;
use std::sync::{Arc, OnceLock};
use tower_lsp_server::ls_types::{Position, Range, TextDocumentContentChangeEvent};

/// A text's documentSymbol answer, serialized once (`handlers/document_symbol.rs`).
pub type SymbolsCell = std::sync::Arc<tokio::sync::OnceCell<std::sync::Arc<[u8]>>>;

pub struct Document {
    text: Rope,
    /// Where core lines start, computed once per text (see [`CoreLines`]).
    lines: OnceLock<Arc<CoreLines>>,
    /// The document's symbols, worked out once per text (see [`Document::symbols`]).
    symbols: SymbolsCell,
    /// The last syntax tree parsed of the text, with the changes since applied
    /// (documentSymbol re-parses from it: `syntax.rs`).
    tree: KeptTree,
    /// Counts the text's changes (to tell whether an index built off the lock is still of it).
    generation: u64,
    /// The protocol-free rest: version, analysis, profile, edits.
    state: kernelpro_session::Document,
}

impl std::ops::Deref for Document {
    type Target = kernelpro_session::Document;
    fn deref(&self) -> &Self::Target {
        &self.state
    }
}

impl std::ops::DerefMut for Document {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.state
    }
}

impl Document {
    pub fn new(text: &str, version: i32) -> Self {
        Document {
            text: Rope::from_str(text),
            lines: OnceLock::new(),
            symbols: Arc::default(),
            tree: KeptTree::default(),
            generation: 0,
            state: kernelpro_session::Document::new(version),
        }
    }

    /// The protocol-free state, for the session's views.
    pub fn state(&self) -> &kernelpro_session::Document {
        &self.state
    }

    pub fn text(&self) -> &Rope {
        &self.text
    }

    /// Replaces the whole text (a save that sent its text).
    pub fn set_text(&mut self, text: &str) {
        if self.text != text {
            let old = self.text.to_string();
            self.state.record_replacement(&old, text);
        }
        self.text = Rope::from_str(text);
        self.lines = OnceLock::new();
        self.symbols = Arc::default();
        self.tree.forget();
        self.generation += 1;
    }

    /// The text and its line index as of now, to read without holding the
    /// documents' lock (cheap: the rope is shared, not copied).
    pub fn snapshot(&self) -> TextSnapshot {
        TextSnapshot {
            text: self.text.clone(),
            lines: self.lines.get_or_init(|| Arc::new(CoreLines::of(&self.text))).clone(),
        }
    }

    /// The text now, for a snapshot made off the documents' lock
    /// ([`LazySnapshot::snapshot`]: the line index of a large file costs a
    /// scan, which must not hold every other request).
    pub fn lazy_snapshot(&self) -> LazySnapshot {
        LazySnapshot { text: self.text.clone(), lines: self.lines.get().cloned(), generation: self.generation }
    }

    /// Takes a line index built off the lock from [`Document::lazy_snapshot`],
    /// if the text has not changed since.
    pub fn offer_lines(&self, snapshot: &LazySnapshot, lines: Arc<CoreLines>) -> bool {
        if snapshot.generation == self.generation {
            let _ = self.lines.set(lines);
            return true;
        }
        false
    }

    /// The cell holding this text's symbols: filled by the first
    /// documentSymbol request after a change, shared by every later one
    /// (and by those running at the same time) until the text changes again.
    pub fn symbols(&self) -> SymbolsCell {
        self.symbols.clone()
    }

    /// The tree to parse the text from: the last one parsed, with the changes
    /// since applied; none if there is none (see [`KeptTree`]).
    pub fn tree(&self) -> Option<tree_sitter::Tree> {
        self.tree.get()
    }

    /// Keeps the tree parsed from [`Document::lazy_snapshot`]'s text (one
    /// without a lone "\r", `syntax.rs`) if the text has not changed since.
    /// A tree not kept, or replaced, is freed off the lock (`syntax::free`).
    pub fn offer_tree(&mut self, snapshot: &LazySnapshot, tree: tree_sitter::Tree) {
        if snapshot.generation == self.generation {
            self.tree.set(tree);
        } else {
            crate::syntax::free(Some(tree));
        }
    }

    /// Applies one change of the edit that made `self.version`.
    pub fn apply_change(&mut self, change: &TextDocumentContentChangeEvent) {
        match change.range {
            None => {
                let old = self.text.to_string();
                self.state.record_replacement(&old, &change.text);
            }
            Some(r) => self.state.record(LineChange::from_range(
                (r.start.line, r.start.character),
                (r.end.line, r.end.character),
                &change.text,
            )),
        }
        self.lines = OnceLock::new();
        self.symbols = Arc::default();
        self.generation += 1;
        match change.range {
            None => {
                self.text = Rope::from_str(&change.text);
                self.tree.forget();
            }
            Some(range) => {
                let start = self.char_index(range.start);
                let end = self.char_index(range.end).max(start);
                let start_byte = self.text.char_to_byte(start);
                self.tree.edit(&self.text, start_byte, self.text.char_to_byte(end), &change.text);
                self.text.remove(start..end);
                self.text.insert(start, &change.text);
                self.tree.check(&self.text, start_byte, change.text.len());
            }
        }
    }

    /// The char index of an LSP position, clamped into the document (a client
    /// that sends a position past the end gets the end, not a panic).
    pub fn char_index(&self, pos: Position) -> usize {
        char_index(&self.text, pos)
    }

    /// LSP position for a 0-based line and UTF-8 byte column (clamped to the line).
    pub fn position(&self, pos: Pos) -> Position {
        self.snapshot().position(pos)
    }

    pub fn range(&self, span: Span) -> Range {
        self.snapshot().range(span)
    }

    /// UTF-8 byte column of an LSP position, for the core ("\n" lines).
    pub fn pos(&self, position: Position) -> Pos {
        self.snapshot().pos(position)
    }
}

/// Core lines (tree-sitter, nvcc) end at "\n" only; LSP and the rope also end
/// a line at a lone "\r". Built once per text: where each core line starts and
/// its content ends, and whether it is ASCII (its byte columns are then its
/// UTF-16 columns), so converting a position costs an index, or a binary
/// search and a few rope lookups, never a scan or a copy of the text.
#[derive(Debug)]
pub struct CoreLines {
    /// Byte offset of each core line's start.
    starts: Vec<usize>,
    /// Byte offset where each core line's content ends (before "\n" or "\r\n").
    ends: Vec<usize>,
    /// The LSP line each core line starts on (after the lone "\r" above it).
    lsp_lines: Vec<u32>,
    /// The line's content is ASCII without "\r": byte columns are UTF-16 columns.
    plain: Vec<bool>,
    /// Some "\r" is not followed by "\n": rope lines are not core lines.
    lone_cr: bool,
}

impl CoreLines {
    fn of(text: &Rope) -> CoreLines {
        let mut lines =
            CoreLines { starts: vec![0], ends: Vec::new(), lsp_lines: vec![0], plain: Vec::new(), lone_cr: false };
        let (mut offset, mut plain, mut after_cr, mut lone_crs) = (0, true, false, 0u32);
        for chunk in text.chunks() {
            for (i, b) in chunk.bytes().enumerate() {
                if b == b'\n' {
                    let at = offset + i;
                    lines.ends.push(if after_cr { at - 1 } else { at });
                    lines.plain.push(plain);
                    lines.starts.push(at + 1);
                    lines.lsp_lines.push(lines.starts.len() as u32 - 1 + lone_crs);
                    plain = true;
                } else {
                    if after_cr {
                        lone_crs += 1; // the "\r" before this byte broke an LSP line
                        plain = false;
                    }
                    plain &= b < 0x80;
                }
                after_cr = b == b'\r';
            }
            offset += chunk.len();
        }
        lines.ends.push(offset);
        lines.plain.push(plain && !after_cr);
        lines.lone_cr = lone_crs > 0 || after_cr;
        lines
    }

    /// The LSP line, start and content end of core line `line` when it is plain: the fast case.
    fn plain(&self, line: u32) -> Option<(u32, usize, usize)> {
        let line = line as usize;
        self.plain.get(line)?.then(|| (self.lsp_lines[line], self.starts[line], self.ends[line]))
    }
}

/// A document's text with its line index, detached from the document.
#[derive(Clone)]
/// A text whose line index may still have to be built.
pub struct LazySnapshot {
    text: Rope,
    lines: Option<Arc<CoreLines>>,
    generation: u64,
}

impl LazySnapshot {
    pub fn has_lines(&self) -> bool {
        self.lines.is_some()
    }

    /// The line index of this text (built now if it was not yet).
    pub fn lines(&self) -> Arc<CoreLines> {
        self.lines.clone().unwrap_or_else(|| Arc::new(CoreLines::of(&self.text)))
    }

    pub fn snapshot(self) -> TextSnapshot {
        let lines = self.lines.unwrap_or_else(|| Arc::new(CoreLines::of(&self.text)));
        TextSnapshot { text: self.text, lines }
    }
}

pub struct TextSnapshot {
    pub text: Rope,
    lines: Arc<CoreLines>,
}

impl TextSnapshot {
    /// LSP position for a 0-based line and UTF-8 byte column (clamped to the line).
    pub fn position(&self, pos: Pos) -> Position {
        let text = &self.text;
        if let Some((line, start, end)) = self.lines.plain(pos.line) {
            return Position::new(line, (pos.col as usize).min(end - start) as u32);
        }
        if self.lines.lone_cr {
            let idx = text.byte_to_char(core_to_byte(text, &self.lines.starts, pos));
            let line = text.char_to_line(idx);
            let col = text.slice(text.line_to_char(line)..idx).len_utf16_cu();
            return Position::new(line as u32, col as u32);
        }
        let line = (pos.line as usize).min(text.len_lines().saturating_sub(1));
        let slice = text.line(line);
        let content_chars = line_content_chars(&slice);
        let content_bytes = slice.char_to_byte(content_chars);
        let byte = (pos.col as usize).min(content_bytes);
        let ch = slice.byte_to_char(byte);
        Position::new(line as u32, slice.char_to_utf16_cu(ch) as u32)
    }

    pub fn range(&self, span: Span) -> Range {
        Range::new(self.position(span.start), self.position(span.end))
    }

    /// UTF-8 byte column of an LSP position, for the core ("\n" lines).
    pub fn pos(&self, position: Position) -> Pos {
        // Without a lone "\r", LSP lines are core lines.
        if let Some((_, start, end)) = self.lines.plain(position.line).filter(|_| !self.lines.lone_cr) {
            return Pos::new(position.line, (position.character as usize).min(end - start) as u32);
        }
        let text = &self.text;
        let idx = char_index(text, position);
        let byte = text.char_to_byte(idx);
        if self.lines.lone_cr {
            let starts = &self.lines.starts;
            let line = starts.partition_point(|s| *s <= byte) - 1;
            return Pos::new(line as u32, (byte - starts[line]) as u32);
        }
        let line = text.char_to_line(idx);
        Pos::new(line as u32, (byte - text.line_to_byte(line)) as u32)
    }
}

fn char_index(text: &Rope, pos: Position) -> usize {
    let line = pos.line as usize;
    if line >= text.len_lines() {
        return text.len_chars();
    }
    let slice = text.line(line);
    let content_chars = line_content_chars(&slice);
    let units = (pos.character as usize).min(slice.len_utf16_cu());
    let within = slice.utf16_cu_to_char(units).min(content_chars);
    text.line_to_char(line) + within
}

/// Byte offset of a core position, clamped to the end of its "\n" line
/// (before a "\r\n"); `byte_to_char` then rounds it down to a char boundary.
fn core_to_byte(text: &Rope, starts: &[usize], pos: Pos) -> usize {
    let len = text.len_bytes();
    let Some(&start) = starts.get(pos.line as usize) else {
        return len;
    };
    let mut end = starts.get(pos.line as usize + 1).map_or(len, |next| next - 1);
    if end > start && text.byte(end - 1) == b'\r' && end < len {
        end -= 1; // "\r\n": the "\r" is part of the line break
    }
    start + (pos.col as usize).min(end - start)
}

fn line_content_chars(slice: &ropey::RopeSlice) -> usize {
    let mut n = slice.len_chars();
    while n > 0 && matches!(slice.char(n - 1), '\n' | '\r') {
        n -= 1;
    }
    n
}

/// The file a document stands for; an unsaved buffer has no place on disk
/// (`compile::UNSAVED`: no include dir, no compile_commands.json).
pub fn path_of(uri: &tower_lsp_server::ls_types::Uri) -> std::path::PathBuf {
    let is_file = uri.scheme().as_str().eq_ignore_ascii_case("file");
    is_file
        .then(|| uri.to_file_path().map(|p| p.into_owned()))
        .flatten()
        .unwrap_or_else(|| std::path::PathBuf::from(kernelpro_toolchain::compile::UNSAVED))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelpro_core::analysis::FileAnalysis;
    use kernelpro_session::ProfileState;

    fn change(l0: u32, c0: u32, l1: u32, c1: u32, text: &str) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: Some(Range::new(Position::new(l0, c0), Position::new(l1, c1))),
            range_length: None,
            text: text.into(),
        }
    }

    #[test]
    fn profile_findings_follow_their_lines() {
        let mut d = Document::new("a\nb\nc\nd\n", 1);
        let at = |l| {
            kernelpro_model::Finding::new(
                "ncu",
                kernelpro_model::Severity::Warning,
                kernelpro_model::Span::line(l),
                "x",
            )
        };
        let lines = |d: &Document| d.profile_findings_now().iter().map(|f| f.span.start.line).collect::<Vec<u32>>();
        d.set_profile(ProfileState { findings: vec![at(0), at(2), at(3)], version: 1, ..Default::default() });
        d.version = 2;
        d.apply_change(&change(1, 0, 1, 0, "new\nlines\n"));
        assert_eq!(lines(&d), [0, 4, 5]);
        assert!(d.profile_is_stale());
        // Lines 3 and 4 deleted: the finding that was on line 2 (now 4) is gone.
        d.version = 3;
        d.apply_change(&change(3, 0, 5, 0, ""));
        assert_eq!(lines(&d), [0, 3]);
    }

    #[test]
    fn a_profile_that_lands_after_edits_is_moved_through_them() {
        // The profile measured version 1; two lines were inserted above its finding while it ran.
        let mut d = Document::new("a\nb\nc\n", 1);
        d.version = 2;
        d.apply_change(&change(0, 0, 0, 0, "x\ny\n"));
        let at2 = kernelpro_model::Finding::new(
            "ncu",
            kernelpro_model::Severity::Warning,
            kernelpro_model::Span::line(2),
            "x",
        );
        d.set_profile(ProfileState { findings: vec![at2], version: 1, ..Default::default() });
        assert_eq!(d.profile_findings_now()[0].span.start.line, 4);
        assert!(d.profile_is_stale());
        // An analysis of the current text does not forget the edits the profile has not seen.
        d.set_analysis(2, Arc::new(FileAnalysis::without_tools(std::path::Path::new("a.cu"), "", &Default::default())));
        assert_eq!(d.profile_findings_now()[0].span.start.line, 4);
    }

    #[test]
    fn utf16_edits_and_positions() {
        let mut d = Document::new("a😀b\r\ncafé x\n", 1);
        // 😀 is two UTF-16 units: insert after it.
        d.apply_change(&change(0, 3, 0, 3, "Z"));
        assert_eq!(d.text().to_string(), "a😀Zb\r\ncafé x\n");
        d.apply_change(&change(1, 4, 1, 5, ""));
        assert_eq!(d.text().to_string(), "a😀Zb\r\ncaféx\n");
        // byte col 6 on line 1 ("café" is 5 bytes) -> UTF-16 col 5
        assert_eq!(d.position(Pos::new(1, 6)), Position::new(1, 5));
        assert_eq!(d.pos(Position::new(1, 5)), Pos::new(1, 6));
        // whole-line spans clamp to the end of the content, not into "\r\n"
        assert_eq!(d.position(Pos::new(0, u32::MAX)), Position::new(0, 5));
        // positions past the end clamp
        d.apply_change(&change(99, 0, 99, 5, "!"));
        assert_eq!(d.text().to_string(), "a😀Zb\r\ncaféx\n!");
    }

    #[test]
    fn lone_cr_is_an_lsp_line_break_but_not_a_core_one() {
        // Core line 1 is "b\rcé😀d"; LSP lines are "a", "b", "cé😀d".
        let d = Document::new("a\r\nb\rcé😀d\n", 1);
        assert_eq!(d.position(Pos::new(1, 2)), Position::new(2, 0));
        assert_eq!(d.position(Pos::new(1, 9)), Position::new(2, 4));
        assert_eq!(d.position(Pos::new(1, u32::MAX)), Position::new(2, 5));
        assert_eq!(d.pos(Position::new(2, 4)), Pos::new(1, 9));
        assert_eq!(d.pos(Position::new(0, 1)), Pos::new(0, 1));
    }

    /// The line index agrees with a direct reading of the text at every core
    /// position (past line ends and the last line too), with lone "\r", "\r\n",
    /// multi-byte and astral characters.
    #[test]
    fn line_index_matches_the_text() {
        for text in ["a\rb\r\ncé\r😀d\n\r\rx\ny\r", "ab\r\ncd\n\nxyz", "a\r\r\nb\rc\n"] {
            check_line_index(text);
        }
    }

    fn check_line_index(text: &str) {
        let d = Document::new(text, 1);
        let core: Vec<&str> = text.split('\n').collect();
        for (line, content) in core.iter().enumerate() {
            let content = content.strip_suffix('\r').filter(|_| line + 1 < core.len()).unwrap_or(content);
            for col in 0..=content.len() + 2 {
                let byte = core[..line].iter().map(|l| l.len() + 1).sum::<usize>() + col.min(content.len());
                let byte = (0..=byte).rev().find(|b| text.is_char_boundary(*b)).unwrap();
                let before = &text[..byte];
                let lsp_line = before.matches(['\n', '\r']).count() - before.matches("\r\n").count();
                let lsp_start = before.rfind(['\n', '\r']).map_or(0, |i| i + 1);
                let expected = Position::new(lsp_line as u32, before[lsp_start..].encode_utf16().count() as u32);
                let got = d.position(Pos::new(line as u32, col as u32));
                assert_eq!(got, expected, "core {line}:{col}");
                if col <= content.len()
                    && text.is_char_boundary(byte)
                    && byte == core[..line].iter().map(|l| l.len() + 1).sum::<usize>() + col
                {
                    assert_eq!(d.pos(got), Pos::new(line as u32, col as u32), "back from {got:?}");
                }
            }
        }
        // Past the last line: clamped onto it.
        let lsp_last = text.matches(['\n', '\r']).count() - text.matches("\r\n").count();
        assert_eq!(d.position(Pos::new(99, 0)).line as usize, lsp_last, "{text:?}");
    }
}
