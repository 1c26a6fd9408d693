//! `#pragma unroll` before innermost `for` loops: full unrolling for a
//! compile-time bound, `#pragma unroll 4` for a runtime one.

use crate::edit::Edits;
use crate::kernel::Kernel;
use crate::syntax::{descendants, indent_at, starts_line};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use tree_sitter::Node;

pub struct PragmaUnroll;

/// The most iterations a loop may have to be unrolled fully.
const FULL_UNROLL_MAX: i64 = 64;

/// The bound of `for (...; i < BOUND; ...)` when it is a literal or an upper-case (macro or constexpr) name.
fn compile_time_bound(for_node: Node, text: &str) -> Option<String> {
    let cond = for_node.child_by_field_name("condition")?;
    let bound = cond.child_by_field_name("right")?;
    let b = &text[bound.byte_range()];
    let literal = b.parse::<i64>().is_ok_and(|v| v <= FULL_UNROLL_MAX);
    let constant = b.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    (literal || constant).then(|| b.to_string())
}

/// A `#pragma` line directly above, which the preprocessor keeps as a sibling `preproc_call`.
fn has_pragma(for_node: Node) -> bool {
    for_node.prev_sibling().is_some_and(|p| p.kind() == "preproc_call" || p.kind().starts_with("preproc"))
}

impl Recipe for PragmaUnroll {
    fn name(&self) -> &'static str {
        "PragmaUnroll"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Micro
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::WarpStall, Code::NonFusedFP32, Code::LaunchOverhead]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else { return Vec::new() };
        let mut edits = Edits::default();
        let mut notes = Vec::new();
        for f in descendants(k.body()) {
            let innermost =
                f.kind() == "for_statement" && !descendants(f).iter().skip(1).any(|n| n.kind() == "for_statement");
            // A pragma must start its own line and the loop must be a statement of a block.
            if !innermost || has_pragma(f) || f.parent().is_none_or(|p| p.kind() != "compound_statement") {
                continue;
            }
            let pragma = match compile_time_bound(f, text) {
                Some(_) => "#pragma unroll",
                None => "#pragma unroll 4",
            };
            let indent = indent_at(text, f.start_byte());
            let inserted = if starts_line(text, f.start_byte()) {
                format!("{pragma}\n{indent}")
            } else {
                format!("\n{indent}{pragma}\n{indent}")
            };
            edits.insert(f.start_byte(), inserted);
            notes.push(format!("{pragma} at line {}", f.start_position().row + 1));
        }
        if edits.is_empty() {
            return Vec::new();
        }
        let note = notes.join(", ");
        edits.apply(text).map(|source| Rewrite { source, note }).into_iter().collect()
    }
}
