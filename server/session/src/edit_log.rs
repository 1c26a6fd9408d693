//! Where lines went since a result was computed.

/// One edit in line terms. Lines before `keep_before` stay where they were,
/// lines from `old_after` on move by `delta`, and the lines between were
/// rewritten (what was on them is gone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineChange {
    keep_before: u32,
    old_after: u32,
    delta: i64,
}

impl LineChange {
    /// The text from `start` to `end` (0-based line and column, any order)
    /// replaced by `text`.
    pub fn from_range(start: (u32, u32), end: (u32, u32), text: &str) -> LineChange {
        let (start, end) = (start.min(end), start.max(end));
        let added = text.matches('\n').count() as u32;
        let (first, last) = (start.0, end.0);
        if start.1 == 0 && end.1 == 0 && (text.is_empty() || text.ends_with('\n')) {
            // Whole lines `first..last` replaced by `added` whole lines (an
            // insertion above a line, a deletion of lines): the line at `end` is untouched.
            return LineChange { keep_before: first, old_after: last, delta: added as i64 - (last - first) as i64 };
        }
        if first == last && added == 0 {
            // Within one line: still the same statement (a typo fixed, a qualifier added).
            return LineChange { keep_before: first.saturating_add(1), old_after: first.saturating_add(1), delta: 0 };
        }
        LineChange {
            keep_before: first,
            old_after: last.saturating_add(1),
            delta: added as i64 - (last - first) as i64,
        }
    }

    /// Where `line` (before the change) is after it; `None` when the change rewrote it.
    fn forward(&self, line: u32) -> Option<u32> {
        if line < self.keep_before {
            Some(line)
        } else if line >= self.old_after {
            Some((line as i64 + self.delta).clamp(0, u32::MAX as i64) as u32)
        } else {
            None
        }
    }

    /// Where `line` (after the change) was before it; `None` for a line the change wrote.
    fn backward(&self, line: u32) -> Option<u32> {
        if line < self.keep_before {
            Some(line)
        } else if line as i64 >= self.old_after as i64 + self.delta {
            Some((line as i64 - self.delta).clamp(0, u32::MAX as i64) as u32)
        } else {
            None
        }
    }
}

/// The changes made since a result (an analysis, a profile) was computed, in
/// order. `None` from a mapping means the line was rewritten: drop what was on it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EditLog {
    changes: Vec<LineChange>,
    /// The whole text was replaced (a full-sync change): nothing maps.
    replaced: bool,
}

impl EditLog {
    pub fn new() -> EditLog {
        EditLog::default()
    }

    pub fn push(&mut self, change: LineChange) {
        if !self.replaced {
            self.changes.push(change);
        }
    }

    /// The client sent the whole text: positions no longer map.
    pub fn replace_all(&mut self) {
        self.replaced = true;
        self.changes.clear();
    }

    pub fn is_empty(&self) -> bool {
        !self.replaced && self.changes.is_empty()
    }

    /// Where a line of the result's text is now.
    pub fn to_current(&self, line: u32) -> Option<u32> {
        if self.replaced {
            return None;
        }
        self.changes.iter().try_fold(line, |l, c| c.forward(l))
    }

    /// Which line of the result's text a line of the current text was.
    pub fn to_original(&self, line: u32) -> Option<u32> {
        if self.replaced {
            return None;
        }
        self.changes.iter().rev().try_fold(line, |l, c| c.backward(l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    type Edit<'a> = ((u32, u32), (u32, u32), &'a str);

    /// Applies `edits` (start, end, inserted text) and prints, for each
    /// original line 0..n, where it went, and for each current line where it
    /// came from (`-`: rewritten).
    fn check(n: u32, edits: &[Edit], expected: Expect) {
        let mut log = EditLog::new();
        for &(s, e, t) in edits {
            log.push(LineChange::from_range(s, e, t));
        }
        let show = |v: Option<u32>| v.map_or("-".to_string(), |l| l.to_string());
        let fwd: Vec<String> = (0..n).map(|l| show(log.to_current(l))).collect();
        let back: Vec<String> = (0..n + 2).map(|l| show(log.to_original(l))).collect();
        expected.assert_eq(&format!("forward {}\nback    {}", fwd.join(" "), back.join(" ")));
    }

    #[test]
    fn two_lines_inserted_above_a_line_move_it_and_everything_below() {
        check(
            5,
            &[((2, 0), (2, 0), "a\nb\n")],
            expect![[r#"
            forward 0 1 4 5 6
            back    0 1 - - 2 3 4"#]],
        );
    }

    #[test]
    fn a_line_split_in_the_middle_is_rewritten() {
        check(
            4,
            &[((1, 5), (1, 5), "\n")],
            expect![[r#"
            forward 0 - 3 4
            back    0 - - 2 3 4"#]],
        );
    }

    #[test]
    fn a_change_within_one_line_keeps_its_findings() {
        check(
            4,
            &[((1, 4), (1, 4), "__restrict__ ")],
            expect![[r#"
            forward 0 1 2 3
            back    0 1 2 3 4 5"#]],
        );
    }

    #[test]
    fn deleted_lines_lose_their_findings_and_the_rest_moves_up() {
        check(
            6,
            &[((1, 0), (3, 0), "")],
            expect![[r#"
            forward 0 - - 1 2 3
            back    0 3 4 5 6 7 8 9"#]],
        );
    }

    #[test]
    fn lines_joined_mid_line_are_rewritten() {
        check(
            6,
            &[((1, 3), (3, 2), "x")],
            expect![[r#"
            forward 0 - - - 2 3
            back    0 - 4 5 6 7 8 9"#]],
        );
    }

    #[test]
    fn an_insertion_and_its_undo_map_back_to_the_same_lines() {
        check(
            4,
            &[((1, 0), (1, 0), "a\nb\n"), ((1, 0), (3, 0), "")],
            expect![[r#"
            forward 0 1 2 3
            back    0 1 2 3 4 5"#]],
        );
    }

    #[test]
    fn positions_past_any_real_line_do_not_overflow() {
        let mut log = EditLog::new();
        log.push(LineChange::from_range((u32::MAX, 7), (u32::MAX, 7), "x"));
        log.push(LineChange::from_range((u32::MAX - 1, 0), (u32::MAX, 3), "\n\n\n"));
        assert_eq!(log.to_current(3), Some(3));
        assert_eq!(log.to_original(3), Some(3));
        let _ = log.to_current(u32::MAX);
        let _ = log.to_original(u32::MAX);
    }

    #[test]
    fn a_full_replacement_maps_nothing() {
        let mut log = EditLog::new();
        log.replace_all();
        log.push(LineChange::from_range((0, 0), (0, 0), "x"));
        assert_eq!(log.to_current(0), None);
        assert_eq!(log.to_original(3), None);
        assert!(!log.is_empty());
    }
}
