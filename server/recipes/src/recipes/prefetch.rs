//! L2 prefetch for kernels that move a few bytes per thread. Such kernels keep
//! too few DRAM requests in flight: on the H200 a one-float-per-thread copy
//! reaches ~0.65 of a float4 copy's bandwidth, and no rewrite may give a
//! thread more elements, since the launch is the user's. Instead each thread
//! asks L2 (`prefetch.global.L2`, which holds no register) for the element
//! that the same thread of a block about two waves later will load, so DRAM
//! streams ahead of the loads (measured on 64 MiB streams: copy 0.0547 →
//! 0.0436 ms, 2D copy 0.0724 → 0.0481, stencil 0.0646 → 0.0454).
//!
//! Only addresses the kernel itself loads are touched: the later thread is
//! the one with the same `threadIdx` in block `blockIdx.D + kp_ahead` (D the
//! slowest axis with a global index `v = blockIdx.D * S + threadIdx.T`), the
//! prefetch is guarded by that block existing and by the kernel's own guards
//! evaluated for that thread, and the address is the load's index with `v`
//! shifted by `kp_ahead * S`. It goes as early as what it reads allows, ahead
//! of the kernel's early returns. Loads in loops, behind `else`, `&&`/`||`, or
//! after a return the recipe cannot read are left alone.

use crate::access::read_only_loads;
use crate::edit::Edits;
use crate::kernel::Kernel;
use crate::syntax::{compact, descendants, indent_at, statements};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use tree_sitter::Node;

pub struct PrefetchL2;

/// Threads between a load and its prefetch: about two waves of an H200 (132
/// SMs × 2048 threads); 2^18..2^19 measured best on 64 MiB streams.
const THREADS_AHEAD: u32 = 1 << 19;
const AXES: [&str; 3] = ["x", "y", "z"];

/// A global index `v = blockIdx.AXIS * STRIDE + threadIdx.*` declared at the top of the body.
struct Index<'t> {
    name: String,
    axis: usize,
    stride: String,
    decl: Node<'t>,
}

/// `blockIdx.A*S+threadIdx.T` in any order (compact text) → (A, S).
fn index_form(value: &str) -> Option<(usize, String)> {
    let [l, r] = value.split('+').collect::<Vec<_>>()[..] else { return None };
    let product = if r.starts_with("threadIdx.") && r.len() == 11 {
        l
    } else if l.starts_with("threadIdx.") && l.len() == 11 {
        r
    } else {
        return None;
    };
    let [a, b] = product.split('*').collect::<Vec<_>>()[..] else { return None };
    let (block, stride) = if a.starts_with("blockIdx.") { (a, b) } else { (b, a) };
    let axis = AXES.iter().position(|x| block.strip_prefix("blockIdx.") == Some(*x))?;
    let stride_ok = stride.chars().all(|c| c.is_ascii_digit()) && !stride.is_empty()
        || stride.strip_prefix("blockDim.").is_some_and(|x| AXES.contains(&x));
    stride_ok.then(|| (axis, stride.to_string()))
}

fn indices<'t>(k: &'t Kernel, top: &[Node<'t>]) -> Vec<Index<'t>> {
    let mut out = Vec::new();
    for decl in top.iter().filter(|s| s.kind() == "declaration") {
        let mut cursor = decl.walk();
        for init in decl.children_by_field_name("declarator", &mut cursor).filter(|d| d.kind() == "init_declarator") {
            let (Some(name), Some(value)) = (init.child_by_field_name("declarator"), init.child_by_field_name("value"))
            else {
                continue;
            };
            if let (Some((axis, stride)), "identifier") = (index_form(&compact(k.text, value)), name.kind()) {
                out.push(Index { name: k.text_of(name).to_string(), axis, stride, decl: *decl });
            }
        }
    }
    out
}

/// A condition the later thread must meet, and whether it is negated.
type Cond<'t> = (Node<'t>, bool);

/// The top-level statement holding `load` and the conditions on the way down
/// to it; `None` when the load sits where its guard cannot be read off.
fn path<'t>(body: Node<'t>, load: Node<'t>, text: &str) -> Option<(Node<'t>, Vec<Cond<'t>>)> {
    let mut conds = Vec::new();
    let mut node = load;
    loop {
        let parent = node.parent()?;
        let is = |field: &str| parent.child_by_field_name(field) == Some(node);
        match parent.kind() {
            _ if parent == body => return Some((node, conds)),
            "if_statement" if is("consequence") => {
                conds.push((parent.child_by_field_name("condition")?.child_by_field_name("value")?, false))
            }
            "if_statement" if !is("condition") => return None,
            "conditional_expression" if is("consequence") => {
                conds.push((parent.child_by_field_name("condition")?, false))
            }
            "conditional_expression" if is("alternative") => {
                conds.push((parent.child_by_field_name("condition")?, true))
            }
            "binary_expression"
                if is("right")
                    && matches!(
                        parent.child_by_field_name("operator").map(|o| &text[o.byte_range()]),
                        Some("&&" | "||")
                    ) =>
            {
                return None;
            }
            "for_statement" | "for_range_loop" | "while_statement" | "do_statement" | "switch_statement"
            | "case_statement" | "else_clause" | "lambda_expression" => return None,
            _ => {}
        }
        node = parent;
    }
}

/// `if (C) return;` or `if (C) { ...; return; }` → C; `None` for any other statement that may return.
fn early_return<'t>(st: Node<'t>) -> Option<Option<Node<'t>>> {
    let returns = descendants(st).into_iter().filter(|n| n.kind() == "return_statement").count();
    if returns == 0 {
        return Some(None);
    }
    let cons = st
        .child_by_field_name("consequence")
        .filter(|_| st.kind() == "if_statement" && st.child_by_field_name("alternative").is_none())?;
    let last = if cons.kind() == "compound_statement" { *statements(cons).last()? } else { cons };
    (returns == 1 && last.kind() == "return_statement")
        .then(|| st.child_by_field_name("condition")?.child_by_field_name("value"))
        .flatten()
        .map(Some)
}

/// Whether `node` reads only what the later thread sees the same way (or
/// through `v`): literals, scalar parameters, `threadIdx`/`blockDim`/`gridDim`,
/// `blockIdx` off the prefetch axis, `v`, and locals declared before `top`
/// that do not depend on `v` or the axis and are not reassigned before it.
fn portable(k: &Kernel, node: Node, v: &Index, top: Node, locals: &[(String, Node)]) -> bool {
    let axis_block = format!("blockIdx.{}", AXES[v.axis]);
    descendants(node).into_iter().all(|n| match n.kind() {
        "subscript_expression"
        | "call_expression"
        | "assignment_expression"
        | "update_expression"
        | "comma_expression" => false,
        "field_expression" => compact(k.text, n) != axis_block,
        "identifier" => {
            let name = k.text_of(n);
            let local =
                name == v.name || locals.iter().any(|(l, init)| l == name && init.end_byte() <= top.start_byte());
            (local && !reassigned(k, name, top)) || k.param(name).is_some_and(|p| !p.pointer)
        }
        _ => true,
    })
}

/// Whether `name` is assigned or incremented anywhere before `top` ends.
fn reassigned(k: &Kernel, name: &str, top: Node) -> bool {
    descendants(k.body()).into_iter().any(|n| {
        let target = match n.kind() {
            "assignment_expression" => n.child_by_field_name("left"),
            "update_expression" => n.child_by_field_name("argument"),
            _ => None,
        };
        n.start_byte() < top.end_byte() && target.is_some_and(|t| k.text_of(t) == name)
    })
}

/// Locals declared at the top of the body with the node holding their value,
/// minus those whose value depends on `v` or the prefetch axis (directly or through another).
fn independent_locals<'t>(k: &'t Kernel, top_level: &[Node<'t>], v: &Index) -> Vec<(String, Node<'t>)> {
    let axis_block = format!("blockIdx.{}", AXES[v.axis]);
    let mut tainted = vec![v.name.clone()];
    let mut out = Vec::new();
    for decl in top_level.iter().filter(|s| s.kind() == "declaration") {
        let mut cursor = decl.walk();
        for d in decl.children_by_field_name("declarator", &mut cursor) {
            let (name, value) = match d.kind() {
                "init_declarator" => (d.child_by_field_name("declarator"), d.child_by_field_name("value")),
                _ => (Some(d), None),
            };
            let Some(name) = name.filter(|n| n.kind() == "identifier").map(|n| k.text_of(n).to_string()) else {
                continue;
            };
            let depends = value.is_some_and(|v| {
                descendants(v).into_iter().any(|n| {
                    compact(k.text, n) == axis_block
                        || (n.kind() == "identifier" && tainted.contains(&k.text_of(n).to_string()))
                })
            });
            if depends || name == v.name {
                tainted.push(name);
            } else {
                out.push((name, d));
            }
        }
    }
    out
}

/// `node`'s text with every `v` shifted to the later thread's.
fn shifted(k: &Kernel, node: Node, v: &Index, shift: &str) -> String {
    if k.text_of(node) == v.name {
        return format!("{} + {shift}", v.name);
    }
    let start = node.start_byte();
    let mut edits = Edits::default();
    for n in descendants(node).into_iter().filter(|n| n.kind() == "identifier" && k.text_of(*n) == v.name) {
        edits.replace(n.start_byte() - start..n.end_byte() - start, format!("({} + {shift})", v.name));
    }
    let local = k.text_of(node);
    edits.apply(local).unwrap_or_else(|| local.to_string())
}

impl Recipe for PrefetchL2 {
    fn name(&self) -> &'static str {
        "PrefetchL2"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Rewrite
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::HighDRAMThroughput, Code::WarpStall, Code::MemoryCoalescing]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else { return Vec::new() };
        let body = k.body();
        if k.text_of(body).contains("prefetch") {
            return Vec::new();
        }
        let top_level = statements(body);
        let indices = indices(&k, &top_level);
        // The slowest axis the blocks advance on; one index on it.
        let Some(axis) = indices.iter().map(|i| i.axis).max() else { return Vec::new() };
        let [v] = &indices.iter().filter(|i| i.axis == axis).collect::<Vec<_>>()[..] else { return Vec::new() };
        let locals = independent_locals(&k, &top_level, v);
        let a = AXES[axis];
        let stride = if v.stride.starts_with("blockDim.") { format!("(int){}", v.stride) } else { v.stride.clone() };
        let shift = format!("kp_ahead * {stride}");

        let mut prefetches: Vec<(Node, String, String)> = Vec::new();
        for p in k.func.params.iter().filter(|p| p.pointer) {
            let Some(loads) = read_only_loads(&k, &p.name) else { continue };
            let best = loads
                .into_iter()
                .filter_map(|load| {
                    let (top, mut conds) = path(body, load, text)?;
                    let index = load.child_by_field_name("indices")?.named_child(0)?;
                    if top.start_byte() <= v.decl.start_byte() {
                        return None;
                    }
                    // Early returns in source order, then the path's conditions from the outside in.
                    let on_path = conds.len();
                    conds.reverse();
                    let mut returns = Vec::new();
                    for st in top_level.iter().take_while(|s| s.start_byte() < top.start_byte()) {
                        returns.extend(early_return(*st)?.map(|c| (c, true)));
                    }
                    let conds: Vec<Cond> = returns.into_iter().chain(conds).collect();
                    let reads_before = |at: Node| {
                        portable(&k, index, v, at, &locals)
                            && conds.iter().all(|(c, _)| portable(&k, *c, v, at, &locals))
                    };
                    if !reads_before(top) {
                        return None;
                    }
                    // As early as what it reads allows (ahead of the early returns): a
                    // prefetch issued after the kernel's own checks leads its loads by less
                    // (stencil 0.052 ms there, 0.046 ms before them).
                    let after_decls = top_level
                        .iter()
                        .copied()
                        .find(|s| s.start_byte() > v.decl.start_byte() && s.kind() != "declaration");
                    let at = after_decls
                        .filter(|at| at.start_byte() <= top.start_byte() && reads_before(*at))
                        .unwrap_or(top);
                    Some((on_path, top, at, conds, index))
                })
                .min_by_key(|(on_path, top, ..)| (*on_path, top.start_byte()));
            let Some((_, _, top, conds, index)) = best else { continue };
            let mut guard = format!("blockIdx.{a} + kp_ahead < gridDim.{a}");
            for (c, negated) in &conds {
                let c = shifted(&k, *c, v, &shift);
                guard += &if *negated { format!(" && !({c})") } else { format!(" && ({c})") };
            }
            let address = format!("&{}[{}]", p.name, shifted(&k, index, v, &shift));
            prefetches.push((top, guard, address));
        }
        let Some(first) = prefetches.iter().map(|(top, ..)| top.start_byte()).min() else { return Vec::new() };
        // A float reciprocal, not integer division: two runtime divisions put ~40
        // instructions ahead of a short kernel's loads (the stencil ran 0.95x with them).
        let lower = ["", " * gridDim.x", " * gridDim.x * gridDim.y"][axis];
        let mut edits = Edits::default();
        let indent = indent_at(text, first);
        edits.insert(
            first,
            format!("// L2 prefetch of what the same thread of the block kp_ahead blocks later (about two waves) loads.\n{indent}const int kp_ahead = max(1, (int)__fdividef({THREADS_AHEAD}.0f, (float)(blockDim.x * blockDim.y * blockDim.z){lower}));\n{indent}"),
        );
        for (top, guard, address) in &prefetches {
            let indent = indent_at(text, top.start_byte());
            edits.insert(
                top.start_byte(),
                format!("if ({guard}) asm volatile(\"prefetch.global.L2 [%0];\" :: \"l\"({address}));\n{indent}"),
            );
        }
        let names: Vec<&str> =
            prefetches.iter().filter_map(|(_, _, a)| a.trim_start_matches('&').split('[').next()).collect();
        let note = format!("L2 prefetch of {} about two waves ahead (blocks along {a})", names.join(", "));
        edits.apply(text).map(|source| Rewrite { source, note }).into_iter().collect()
    }
}
