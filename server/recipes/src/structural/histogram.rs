//! [`PrivateHistogram`]: a kernel whose only store is one
//! `atomicAdd(&BINS[E], V)` (or `BINS + E`) per unit into a data-chosen bin
//! of a buffer small enough for shared memory keeps a private copy of the
//! bins per block: zeroed, updated with shared atomics while the block walks
//! its units with a grid stride, then added into the global bins with one
//! atomic per non-empty bin. A bin outside the private copy goes to the
//! global bins as before. Any unit shape (1D, 2D, grid-stride) the
//! recogniser takes, so `hist[img[y * w + x]]` and `hist + (v >> 2)` alike.

use super::grid_stride::unit_loop;
use super::launch::{Tuning, launch_variants};
use super::units_text::render;
use super::{BLOCK_THREADS, BLOCK_TID};
use crate::kernel::Kernel;
use crate::syntax::{atomic_add, descendants, indent_at};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use kernelpro_source::units::recognize::{Piece, names_in, stores, strip_parens, units};
use tree_sitter::Node;

pub struct PrivateHistogram;

/// The most bins copied into shared memory.
const MAX_BINS: u64 = 4096;
/// Bin types with a shared-memory `atomicAdd`, with their sizes.
const BIN_TYPES: &[(&str, u64)] = &[
    ("unsigned", 4),
    ("unsigned int", 4),
    ("int", 4),
    ("float", 4),
    ("unsigned long long", 8),
    ("unsigned long long int", 8),
];

/// `&P[E]`, `P + E` or `E + P` with `P` a writable pointer parameter: (P, E).
fn bin_address<'t>(k: &Kernel, addr: Node<'t>) -> Option<(String, Node<'t>)> {
    let addr = strip_parens(addr);
    let is_bins = |n: Node| k.param(k.text_of(strip_parens(n))).is_some_and(|p| p.pointer && !p.is_const);
    match addr.kind() {
        "pointer_expression" if k.text_of(addr).starts_with('&') => {
            let sub = strip_parens(addr.child_by_field_name("argument")?);
            let p =
                sub.child_by_field_name("argument").filter(|p| sub.kind() == "subscript_expression" && is_bins(*p))?;
            Some((k.text_of(p).to_string(), sub.child_by_field_name("indices")?.named_child(0)?))
        }
        "binary_expression" if addr.child_by_field_name("operator").is_some_and(|o| k.text_of(o) == "+") => {
            let (l, r) = (addr.child_by_field_name("left")?, addr.child_by_field_name("right")?);
            if is_bins(l) {
                Some((k.text_of(strip_parens(l)).to_string(), r))
            } else if is_bins(r) {
                Some((k.text_of(strip_parens(r)).to_string(), l))
            } else {
                None
            }
        }
        _ => None,
    }
}

fn rewrites(k: &Kernel) -> Vec<Rewrite> {
    let Some(u) = units(k) else { return Vec::new() };
    let nodes: Vec<Node> = u.nodes();
    let all_stores: Vec<_> = nodes.iter().flat_map(|n| stores(k, *n)).collect();
    let [(f, call)] = &all_stores[..] else { return Vec::new() };
    if f != "atomicAdd" {
        return Vec::new();
    }
    let Some(st) = call.parent().filter(|s| s.kind() == "expression_statement") else { return Vec::new() };
    let Some((addr, value)) = atomic_add(k.text, st) else { return Vec::new() };
    let Some((bins, at)) = bin_address(k, addr) else { return Vec::new() };
    // The bin is chosen per unit (BlockReduce takes one fixed address); the value may not read the bins.
    if names_in(k, at).is_empty()
        || names_in(k, value).contains(&bins.as_str())
        || descendants(at).iter().any(|d| d.kind() == "call_expression")
    {
        return Vec::new();
    }
    let Some(ty) = k.param(&bins).map(|p| p.base.clone()) else { return Vec::new() };
    let Some(size) = BIN_TYPES.iter().find(|(t, _)| *t == ty).map(|t| t.1) else { return Vec::new() };
    let Some(count) = k.buffer_count(&bins).filter(|c| (1..=MAX_BINS).contains(c) && c * size <= 32 * 1024) else {
        return Vec::new();
    };
    let ind2 = format!("{}    ", indent_at(k.text, k.body().start_byte()));
    let (at, value) = (k.text_of(at), k.text_of(value));
    let mut lines = Vec::new();
    for p in &u.body {
        let edits = match p {
            Piece::Node(n) if n.byte_range().contains(&st.start_byte()) => vec![(
                st.byte_range(),
                format!(
                    "{{ const long long kp_b = (long long)({at}); if (kp_b >= 0 && kp_b < {count}) atomicAdd(&kp_bins[kp_b], {value}); else atomicAdd(&{bins}[kp_b], {value}); }}"
                ),
            )],
            _ => vec![],
        };
        let Some(text) = render(k, *p, &edits, &ind2) else { return Vec::new() };
        lines.push(text);
    }
    let head = format!(
        "__shared__ {ty} kp_bins[{count}];\nfor (int kp_j = {BLOCK_TID}; kp_j < {count}; kp_j += {BLOCK_THREADS}) kp_bins[kp_j] = 0;\n__syncthreads();\n"
    );
    let tail = format!(
        "__syncthreads();\nfor (int kp_j = {BLOCK_TID}; kp_j < {count}; kp_j += {BLOCK_THREADS}) {{\n  const {ty} kp_c = kp_bins[kp_j];\n  if (kp_c != 0) atomicAdd(&{bins}[kp_j], kp_c);\n}}\n"
    );
    let text = unit_loop(
        k,
        &u,
        &lines,
        &head,
        &tail,
        &format!("{count} bins of {bins} per block in shared memory, one atomic per bin per block"),
    );
    let mut source = k.text.to_string();
    source.replace_range(k.body().byte_range(), &text);
    let note = format!(
        "{count} bins of {bins} privatized per block in shared memory, grid-stride units, one atomicAdd per bin per block"
    );
    launch_variants(k, &Rewrite { source, note }, &u, Tuning::Reduce)
}

impl Recipe for PrivateHistogram {
    fn name(&self) -> &'static str {
        "PrivateHistogram"
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[kernelpro_source::kernel_model::pattern::Pattern::Histogram]
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::AtomicContention, Code::ContendedAtomics, Code::WarpStall]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        super::with_units_view(text, kernel, rewrites)
    }
}
