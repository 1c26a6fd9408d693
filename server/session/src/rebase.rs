//! A finished search's edit, moved onto the text as it is now.
//!
//! A search takes minutes; the user keeps typing. Its edit replaces whole
//! lines of the text it started from. While those lines are still in the
//! document, unchanged, the edit applies there, wherever they moved; an edit
//! elsewhere (a comment, another kernel) or an undo of a change inside them
//! keeps the result applicable. Only a change to the lines themselves stops it.

use thiserror::Error;

pub use kernelpro_model::LineEdit;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NotApplicable {
    #[error("the lines this result replaces (from line {}) changed since the search: undo the change or run Optimize again", .line + 1)]
    Changed { line: u32 },
    #[error("the result's edits overlap after the lines moved: run Optimize again")]
    Overlap,
}

/// `edits`, made against `original`, re-based onto `current`.
pub fn rebase(original: &str, edits: &[LineEdit], current: &str) -> Result<Vec<LineEdit>, NotApplicable> {
    if original == current {
        return Ok(edits.to_vec());
    }
    let old: Vec<&str> = original.split_inclusive('\n').collect();
    let new: Vec<&str> = current.split_inclusive('\n').collect();
    let mut out = Vec::with_capacity(edits.len());
    for e in edits {
        let e = anchored(e, &old);
        let block = &old[(e.start_line as usize).min(old.len())..(e.end_line as usize).min(old.len())];
        let at = closest_occurrence(&new, block, e.start_line as usize)
            .ok_or(NotApplicable::Changed { line: e.start_line })?;
        let len = (e.end_line - e.start_line) as usize;
        out.push(LineEdit { start_line: at as u32, end_line: (at + len) as u32, text: e.text.clone() });
    }
    out.sort_by_key(|e| e.start_line);
    if out.windows(2).any(|w| w[0].end_line > w[1].start_line) {
        return Err(NotApplicable::Overlap);
    }
    Ok(out)
}

/// `text` with `edits` (non-overlapping, as [`rebase`] returns them) applied.
pub fn apply(text: &str, edits: &[LineEdit]) -> String {
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut sorted: Vec<&LineEdit> = edits.iter().collect();
    sorted.sort_by_key(|e| std::cmp::Reverse(e.start_line));
    for e in sorted {
        let (start, end) = ((e.start_line as usize).min(lines.len()), (e.end_line as usize).min(lines.len()));
        lines.splice(start..end.max(start), [e.text.as_str()]);
    }
    lines.concat()
}

/// A pure insertion replaces nothing, so nothing would locate it: make it
/// replace the line below it (or above, at the end) by itself plus that line.
fn anchored(e: &LineEdit, old: &[&str]) -> LineEdit {
    if e.start_line != e.end_line || old.is_empty() {
        return e.clone();
    }
    let at = e.start_line as usize;
    if at < old.len() {
        LineEdit { start_line: e.start_line, end_line: e.start_line + 1, text: format!("{}{}", e.text, old[at]) }
    } else {
        let last = old[old.len() - 1];
        let sep = if last.ends_with('\n') { "" } else { "\n" };
        LineEdit {
            start_line: old.len() as u32 - 1,
            end_line: old.len() as u32,
            text: format!("{last}{sep}{}", e.text),
        }
    }
}

/// Where `block` occurs in `lines`, nearest to `near` (ties: the earlier).
fn closest_occurrence(lines: &[&str], block: &[&str], near: usize) -> Option<usize> {
    if block.is_empty() {
        return Some(near.min(lines.len()));
    }
    if block.len() > lines.len() {
        return None;
    }
    (0..=lines.len() - block.len()).filter(|&i| lines[i..i + block.len()] == *block).min_by_key(|&i| i.abs_diff(near))
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    const ORIGINAL: &str = "// header\n__global__ void k(float* y) {\n  y[0] = 1;\n}\nint main() {}\n";

    /// The edit replacing the kernel's body line, re-based onto `current` and
    /// applied; or why not.
    fn check(current: &str, expected: Expect) {
        let edit = LineEdit {
            start_line: 1,
            end_line: 3,
            text: "__global__ void k(float* __restrict__ y) {\n  y[0] = 2;\n".into(),
        };
        let got = match rebase(ORIGINAL, &[edit], current) {
            Ok(edits) => apply(current, &edits),
            Err(e) => format!("not applicable: {e}"),
        };
        expected.assert_eq(&got);
    }

    #[test]
    fn unchanged_text_takes_the_edit_as_is() {
        check(
            ORIGINAL,
            expect![[r#"
            // header
            __global__ void k(float* __restrict__ y) {
              y[0] = 2;
            }
            int main() {}
        "#]],
        );
    }

    #[test]
    fn lines_added_above_move_the_edit_down() {
        check(
            "// header\n// a comment\n// another\n__global__ void k(float* y) {\n  y[0] = 1;\n}\nint main() {}\n",
            expect![[r#"
            // header
            // a comment
            // another
            __global__ void k(float* __restrict__ y) {
              y[0] = 2;
            }
            int main() {}
        "#]],
        );
    }

    #[test]
    fn an_edit_below_the_kernel_keeps_it() {
        check(
            "// header\n__global__ void k(float* y) {\n  y[0] = 1;\n}\nint main() { return 0; }\n",
            expect![[r#"
            // header
            __global__ void k(float* __restrict__ y) {
              y[0] = 2;
            }
            int main() { return 0; }
        "#]],
        );
    }

    #[test]
    fn a_change_inside_the_replaced_lines_stops_it() {
        check(
            "// header\n__global__ void k(float* y) {\n  y[0] = 3;\n}\nint main() {}\n",
            expect![[
                r#"not applicable: the lines this result replaces (from line 2) changed since the search: undo the change or run Optimize again"#
            ]],
        );
    }

    #[test]
    fn after_an_undo_it_applies_again() {
        // The undo restores the original text exactly.
        check(
            ORIGINAL,
            expect![[r#"
            // header
            __global__ void k(float* __restrict__ y) {
              y[0] = 2;
            }
            int main() {}
        "#]],
        );
    }

    #[test]
    fn a_duplicate_block_picks_the_nearest() {
        let original = "a\nb\nx\nb\n";
        let edit = LineEdit { start_line: 3, end_line: 4, text: "B\n".into() };
        let edits = rebase(original, &[edit], "a\nb\nx\ny\nb\n").unwrap();
        assert_eq!(apply("a\nb\nx\ny\nb\n", &edits), "a\nb\nx\ny\nB\n");
    }

    #[test]
    fn a_pure_insertion_follows_the_line_below_it() {
        let original = "a\nb\n";
        let edit = LineEdit { start_line: 1, end_line: 1, text: "ins\n".into() };
        let current = "z\na\nb\n";
        let edits = rebase(original, std::slice::from_ref(&edit), current).unwrap();
        assert_eq!(apply(current, &edits), "z\na\nins\nb\n");
        let at_end = LineEdit { start_line: 2, end_line: 2, text: "end\n".into() };
        let edits = rebase(original, &[at_end], current).unwrap();
        assert_eq!(apply(current, &edits), "z\na\nb\nend\n");
    }

    #[test]
    fn two_edits_move_independently() {
        let original = "spec\nx\nkernel\ny\nlaunch\n";
        let edits = [
            LineEdit { start_line: 0, end_line: 1, text: "SPEC\n".into() },
            LineEdit { start_line: 4, end_line: 5, text: "LAUNCH\n".into() },
        ];
        let current = "spec\nx\nnew\nkernel\ny\nlaunch\n";
        let got = rebase(original, &edits, current).unwrap();
        assert_eq!(apply(current, &got), "SPEC\nx\nnew\nkernel\ny\nLAUNCH\n");
    }
}
