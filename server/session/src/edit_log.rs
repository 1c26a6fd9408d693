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
    #[cfg(test)]
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
    #[cfg(test)]
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

/// One run of the result's lines, from `start` to the next run's start: gone
/// (`delta` is `None`: a change rewrote them) or now at `line + delta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    start: i64,
    delta: Option<i64>,
}

/// The changes made since a result (an analysis, a profile) was computed,
/// composed into one map as they come: runs of the result's lines, each moved
/// by one amount or gone. A change costs a pass over the runs (at most two
/// more per change); mapping a line costs a binary search, however many
/// changes there were (3,000 findings through 3,000 unsaved edits: 3,000
/// searches, not 9 million steps). `None` from a mapping means the line was
/// rewritten: drop what was on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditLog {
    /// Sorted by `start`, the first at 0; the live ones are also in order of
    /// where they are now, so both directions can search.
    runs: Vec<Run>,
    changes: usize,
    /// The whole text was replaced (a full-sync change): nothing maps.
    replaced: bool,
}

impl Default for EditLog {
    fn default() -> Self {
        EditLog { runs: vec![Run { start: 0, delta: Some(0) }], changes: 0, replaced: false }
    }
}

/// Past any line a result can name (lines are u32).
const END: i64 = 1 << 33;

impl EditLog {
    pub fn new() -> EditLog {
        EditLog::default()
    }

    /// Composes one more change (in the lines of the text as it was just
    /// before it) into the map.
    pub fn push(&mut self, change: LineChange) {
        if self.replaced {
            return;
        }
        self.changes += 1;
        let (keep, after, d) = (change.keep_before as i64, change.old_after as i64, change.delta);
        let mut runs: Vec<Run> = Vec::with_capacity(self.runs.len() + 2);
        let add = |runs: &mut Vec<Run>, start: i64, delta: Option<i64>| {
            match runs.last_mut() {
                Some(last) if last.delta == delta => {}
                Some(last) if last.start == start => last.delta = delta,
                _ => runs.push(Run { start, delta }),
            }
            // Two neighbours that now agree are one run.
            if runs.len() >= 2 && runs[runs.len() - 2].delta == runs[runs.len() - 1].delta {
                runs.pop();
            }
        };
        for (i, run) in self.runs.iter().enumerate() {
            let end = self.runs.get(i + 1).map_or(END, |r| r.start);
            let Some(delta) = run.delta else {
                add(&mut runs, run.start, None);
                continue;
            };
            // In the result's lines: where this change's three parts begin.
            let (cut_keep, cut_after) = (keep - delta, after - delta);
            let parts = [
                (run.start, cut_keep.min(end), Some(delta)),
                (run.start.max(cut_keep), cut_after.min(end), None),
                (run.start.max(cut_after), end, Some(delta + d)),
            ];
            for (from, to, delta) in parts {
                if from < to {
                    add(&mut runs, from, delta);
                }
            }
        }
        self.runs = runs;
    }

    /// The client sent the whole text: positions no longer map.
    pub fn replace_all(&mut self) {
        self.replaced = true;
        self.runs = vec![Run { start: 0, delta: None }];
    }

    pub fn is_empty(&self) -> bool {
        !self.replaced && self.changes == 0
    }

    /// Where a line of the result's text is now.
    pub fn to_current(&self, line: u32) -> Option<u32> {
        let line = line as i64;
        let run = self.runs[self.runs.partition_point(|r| r.start <= line) - 1];
        Some((line + run.delta?).clamp(0, u32::MAX as i64) as u32)
    }

    /// Which line of the result's text a line of the current text was.
    pub fn to_original(&self, line: u32) -> Option<u32> {
        let line = line as i64;
        // The live runs are in order of where they are now: the last one that
        // starts at or before `line` holds it, if it reaches that far.
        let live = |i: usize| self.runs[i].delta.map(|d| (self.runs[i].start + d, d));
        let (mut lo, mut hi) = (0, self.runs.len());
        let mut found = None;
        // Binary search over runs, skipping the gone ones by scanning to a live neighbour.
        while lo < hi {
            let mid = (lo + hi) / 2;
            let Some(m) = (mid..hi).find(|&i| live(i).is_some()) else {
                hi = mid;
                continue;
            };
            let (now_start, d) = live(m).unwrap();
            if now_start <= line {
                found = Some((m, d));
                lo = m + 1;
            } else {
                hi = mid;
            }
        }
        let (m, d) = found?;
        let end = self.runs.get(m + 1).map_or(END, |r| r.start);
        let original = line - d;
        (original < end).then(|| original.clamp(0, u32::MAX as i64) as u32)
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

    /// The composed map against the changes applied one by one, over random
    /// edits of every shape `from_range` makes.
    #[test]
    fn the_composed_map_agrees_with_the_changes_one_by_one() {
        let mut seed = 0x9e3779b97f4a7c15u64;
        let mut next = |n: u32| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as u32
        };
        for _ in 0..300 {
            let mut log = EditLog::new();
            let mut changes = Vec::new();
            for _ in 0..next(12) + 1 {
                let (a, b) = ((next(30), next(3) * 4), (next(30), next(3) * 4));
                let text = ["", "x", "\n", "a\nb\n", "\n\n\n", "y\nz"][next(6) as usize];
                let c = LineChange::from_range(a, b, text);
                log.push(c);
                changes.push(c);
            }
            for line in 0..50 {
                let one_by_one = changes.iter().try_fold(line, |l, c| c.forward(l));
                assert_eq!(log.to_current(line), one_by_one, "forward {line} through {changes:?}: {log:?}");
                let back = changes.iter().rev().try_fold(line, |l, c| c.backward(l));
                assert_eq!(log.to_original(line), back, "back {line} through {changes:?}: {log:?}");
            }
        }
    }

    /// 3,000 findings through 3,000 edits: linear in each (was 9 million steps per pass).
    #[test]
    fn three_thousand_findings_through_three_thousand_edits() {
        let started = std::time::Instant::now();
        let mut log = EditLog::new();
        for i in 0..3000u32 {
            // Alternately a line inserted and a character typed, all over the file.
            let line = (i * 7919) % 6000;
            log.push(if i % 2 == 0 {
                LineChange::from_range((line, 0), (line, 0), "x\n")
            } else {
                LineChange::from_range((line, 3), (line, 3), "y")
            });
        }
        let mapped = (0..3000u32).filter(|&l| log.to_current(l * 2).is_some()).count();
        let back = (0..3000u32).filter(|&l| log.to_original(l * 2).is_some()).count();
        let took = started.elapsed();
        println!("3,000 edits composed and 3,000 findings mapped both ways in {took:?}");
        assert!(mapped > 0 && back > 0);
        assert!(took < std::time::Duration::from_secs(2), "{took:?}");
    }
}
