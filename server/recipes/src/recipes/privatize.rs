//! Shared-memory privatized histograms: a 1D kernel whose only global write is
//! `if (G) atomicAdd(&BINS[E], V);` for the thread's global index `i`, into a
//! buffer whose element count the spec fixes and shared memory holds. Only
//! the first `CAP` blocks work (the others return before any barrier); each
//! zeroes a shared copy of the bins, walks every original index with a grid
//! stride doing shared atomics, then flushes its non-zero bins with one global
//! atomic each. An index outside the shared copy goes to the global bins as before.

use crate::access::reads_only;
use crate::coarsen::{CAPS, capped_blocks, grid_stride_head};
use crate::kernel::Kernel;
use crate::syntax::{atomic_add, guarded, indent_at, statements};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use tree_sitter::Node;

pub struct PrivatizeAtomics;

/// The most bins copied into shared memory.
const MAX_BINS: u64 = 4096;
/// Element types with a shared-memory `atomicAdd`, with their sizes.
const BIN_TYPES: &[(&str, u64)] = &[
    ("unsigned", 4),
    ("unsigned int", 4),
    ("int", 4),
    ("float", 4),
    ("unsigned long long", 8),
    ("unsigned long long int", 8),
];

struct Histogram<'t> {
    index: String,
    index_ty: String,
    guard: Option<Node<'t>>,
    bins: String,
    bin_ty: String,
    count: u64,
    at: Node<'t>,
    value: Node<'t>,
}

/// `atomicAdd(&P[E], V)` as a statement: (P, E, V).
fn bin_atomic<'t>(k: &'t Kernel, st: Node<'t>) -> Option<(String, Node<'t>, Node<'t>)> {
    let (addr, value) = atomic_add(k.text, st)?;
    let sub = addr.child_by_field_name("argument").filter(|s| {
        addr.kind() == "pointer_expression" && k.text_of(addr).starts_with('&') && s.kind() == "subscript_expression"
    })?;
    let bins = k.text_of(sub.child_by_field_name("argument")?).to_string();
    let at = sub.child_by_field_name("indices")?.named_child(0)?;
    Some((bins, at, value))
}

fn matches<'t>(k: &'t Kernel) -> Option<Histogram<'t>> {
    let one_d = k.all_launches().is_some_and(|ls| ls.iter().all(|l| l.block[1] == 1 && l.block[2] == 1));
    let [decl, site] = statements(k.body())[..] else { return None };
    let index = k.index_decl(decl, "x")?;
    let index_ty = k.text_of(decl.child_by_field_name("type")?).to_string();
    let (guard, st) = guarded(site).map_or((None, site), |(g, s)| (Some(g), s));
    let (bins, at, value) = bin_atomic(k, st)?;
    let bin_ty = k.param(&bins).filter(|p| p.pointer && !p.is_const)?.base.clone();
    let size = BIN_TYPES.iter().find(|(t, _)| *t == bin_ty)?.1;
    let count = k.buffer_count(&bins).filter(|c| (1..=MAX_BINS).contains(c) && c * size <= 32 * 1024)?;
    let locals = [index.as_str()];
    let pure = |n: Node| reads_only(k, n, &locals, &[bins.as_str()]);
    (one_d && guard.is_none_or(pure) && pure(at) && pure(value)).then_some(Histogram {
        index,
        index_ty,
        guard,
        bins,
        bin_ty,
        count,
        at,
        value,
    })
}

fn rewrite(k: &Kernel, h: &Histogram, cap: u32) -> Option<Rewrite> {
    let body = k.body();
    let ind = indent_at(k.text, statements(body).first()?.start_byte());
    let outer = indent_at(k.text, body.start_byte());
    let Histogram { index, index_ty, bins, bin_ty, count, .. } = h;
    let (at, value) = (k.text_of(h.at), k.text_of(h.value));
    let mut b = format!("{{\n{ind}__shared__ {bin_ty} kp_bins[{count}];\n");
    b += &capped_blocks(ind, cap);
    b += &format!(
        "{ind}for (unsigned kp_j = threadIdx.x; kp_j < {count}u; kp_j += blockDim.x) kp_bins[kp_j] = 0;\n{ind}__syncthreads();\n"
    );
    b += &grid_stride_head(ind, index_ty, index);
    let (open, close, inner) = match h.guard {
        Some(g) => (format!("{ind}  if ({}) {{\n", k.text_of(g)), format!("{ind}  }}\n"), format!("{ind}    ")),
        None => (String::new(), String::new(), format!("{ind}  ")),
    };
    b += &open;
    b += &format!("{inner}const auto kp_b = {at};\n");
    b += &format!("{inner}if ((unsigned long long)kp_b < {count}ull) atomicAdd(&kp_bins[kp_b], {value});\n");
    b += &format!("{inner}else atomicAdd(&{bins}[kp_b], {value});\n");
    b += &close;
    b += &format!("{ind}}}\n{ind}__syncthreads();\n");
    b += &format!("{ind}for (unsigned kp_j = threadIdx.x; kp_j < {count}u; kp_j += blockDim.x) {{\n");
    b += &format!(
        "{ind}  const {bin_ty} kp_c = kp_bins[kp_j];\n{ind}  if (kp_c != 0) atomicAdd(&{bins}[kp_j], kp_c);\n{ind}}}\n{outer}}}"
    );
    let source = k.with_body(&b);
    Some(Rewrite {
        source,
        note: format!("{count} bins of {bins} privatized in shared memory, {cap} blocks at most, grid-stride"),
    })
}

impl Recipe for PrivatizeAtomics {
    fn name(&self) -> &'static str {
        "PrivatizeAtomics"
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[kernelpro_source::kernel_model::pattern::Pattern::Histogram]
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Rewrite
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::AtomicContention, Code::ContendedAtomics, Code::WarpStall, Code::LaunchOverhead, Code::TailEffect]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else { return Vec::new() };
        let Some(h) = matches(&k) else { return Vec::new() };
        CAPS.iter().filter_map(|cap| rewrite(&k, &h, *cap)).collect()
    }
}
