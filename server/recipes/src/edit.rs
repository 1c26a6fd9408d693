//! Byte-range edits collected against one text and applied together.

use std::ops::Range;

#[derive(Debug, Default)]
pub(crate) struct Edits {
    list: Vec<(Range<usize>, String)>,
}

impl Edits {
    pub fn replace(&mut self, range: Range<usize>, with: impl Into<String>) {
        self.list.push((range, with.into()));
    }

    pub fn insert(&mut self, at: usize, text: impl Into<String>) {
        self.replace(at..at, text);
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The edited text; `None` when two edits overlap (a recipe bug, never a panic in the search).
    pub fn apply(mut self, text: &str) -> Option<String> {
        self.list.sort_by_key(|(r, _)| (r.start, r.end));
        let mut out = String::with_capacity(text.len() + 64);
        let mut at = 0;
        for (range, with) in &self.list {
            if range.start < at {
                return None;
            }
            out.push_str(&text[at..range.start]);
            out.push_str(with);
            at = range.end;
        }
        out.push_str(&text[at..]);
        Some(out)
    }
}
