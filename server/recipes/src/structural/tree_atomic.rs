//! A block that loads one element a thread into a shared array, sums the array with a halving
//! tree (`for (s = blockDim.x / 2; s > 0; s >>= 1) { if (t < s) S[t] += S[t + s]; __syncthreads(); }`)
//! and adds the root to an address the whole grid shares (`if (t == 0) atomicAdd(y, S[0]);`) adds
//! every element to that address: the sum is the same, only its order differs. Its per-element
//! form (`if (n < N) atomicAdd(y, x[n]);`) is what [`BlockReduce`](super::BlockReduce) turns into
//! the expert form: each thread sums a grid-stride share in a register, warp shuffles, one atomic
//! per block, and a launch of a few waves instead of one block per 128 elements.
//!
//! The tree must be the whole block's (it starts at half the block and halves to one): then the
//! root is the sum of the block's loaded values for a power-of-two block, the launches these
//! kernels are written for.

use crate::kernel::Kernel;
use crate::syntax::{compact, descendants, single_statement, statements};
use kernelpro_source::units::recognize::edited;
use tree_sitter::Node;

/// Whether `name` is `threadIdx.x` or a local initialised to it.
fn is_thread_x(k: &Kernel, name: &str) -> bool {
    name == "threadIdx.x"
        || descendants(k.body()).into_iter().any(|n| {
            n.kind() == "init_declarator"
                && n.child_by_field_name("declarator").is_some_and(|d| k.text_of(d) == name)
                && n.child_by_field_name("value").is_some_and(|v| {
                    let v = compact(k.text, v);
                    v == "threadIdx.x" || v.ends_with(")threadIdx.x")
                })
        })
}

/// `for (s = blockDim.x / 2; s > 0; s /= 2) { if (t < s) S[t] += S[t + s]; __syncthreads(); }`:
/// (t, S).
fn halving_tree(k: &Kernel, f: Node) -> Option<(String, String)> {
    if f.kind() != "for_statement" {
        return None;
    }
    let t = k.text;
    let init = descendants(f.child_by_field_name("initializer")?)
        .into_iter()
        .find(|n| matches!(n.kind(), "init_declarator" | "assignment_expression"))?;
    let (var, value) = match init.kind() {
        "init_declarator" => (init.child_by_field_name("declarator")?, init.child_by_field_name("value")?),
        _ => (init.child_by_field_name("left")?, init.child_by_field_name("right")?),
    };
    let s = k.text_of(var).to_string();
    let value = compact(t, value);
    let block = ["blockDim.x", "BLOCK_SIZE"];
    let half = value
        .strip_suffix("/2")
        .or_else(|| value.strip_suffix(">>1"))
        .map(|b| b.trim_start_matches('(').trim_end_matches(')'))?;
    // The block's size: blockDim.x, or a local equal to it.
    let whole = block.contains(&half)
        || descendants(k.body()).into_iter().any(|n| {
            n.kind() == "init_declarator"
                && n.child_by_field_name("declarator").is_some_and(|d| k.text_of(d) == half)
                && n.child_by_field_name("value").is_some_and(|v| compact(t, v) == "blockDim.x")
        });
    if !whole {
        return None;
    }
    let cond = compact(t, f.child_by_field_name("condition")?);
    let update = compact(t, f.child_by_field_name("update")?);
    let halves = [format!("{s}/=2"), format!("{s}>>=1"), format!("{s}={s}/2"), format!("{s}={s}>>1")];
    if ![format!("{s}>0"), format!("0<{s}"), format!("{s}>=1")].contains(&cond) || !halves.contains(&update) {
        return None;
    }
    let body = statements(f.child_by_field_name("body")?);
    let [step, sync] = &body[..] else { return None };
    if compact(t, *sync) != "__syncthreads();" || step.kind() != "if_statement" {
        return None;
    }
    if step.child_by_field_name("alternative").is_some() {
        return None;
    }
    let guard = compact(t, step.child_by_field_name("condition")?.child_by_field_name("value")?);
    let tid = guard.strip_suffix(&format!("<{s}"))?.to_string();
    let add = compact(t, single_statement(step.child_by_field_name("consequence")?)?);
    let sd = add.split_once('[')?.0.to_string();
    let forms = [format!("{sd}[{tid}]+={sd}[{tid}+{s}];"), format!("{sd}[{tid}]={sd}[{tid}]+{sd}[{tid}+{s}];")];
    (forms.contains(&add) && is_thread_x(k, &tid)).then_some((tid, sd))
}

/// `S[t] = E;` → E's text.
fn slot_store(k: &Kernel, st: Node, tid: &str, sd: &str) -> Option<String> {
    let e = (st.kind() == "expression_statement").then(|| st.named_child(0)).flatten()?;
    if e.kind() != "assignment_expression" || k.text_of(e.child_by_field_name("operator")?) != "=" {
        return None;
    }
    let right = e.child_by_field_name("right")?;
    (compact(k.text, e.child_by_field_name("left")?) == format!("{sd}[{tid}]")).then(|| k.text_of(right).to_string())
}

/// `if (t == 0) atomicAdd(A, S[0]);` → A, where A names no thread index.
fn root_atomic<'t>(k: &Kernel<'t>, st: Node<'t>, tid: &str, sd: &str) -> Option<Node<'t>> {
    if st.kind() != "if_statement" || st.child_by_field_name("alternative").is_some() {
        return None;
    }
    let guard = compact(k.text, st.child_by_field_name("condition")?.child_by_field_name("value")?);
    if ![format!("{tid}==0"), format!("0=={tid}"), format!("!{tid}")].contains(&guard) {
        return None;
    }
    let call = single_statement(st.child_by_field_name("consequence")?)?.named_child(0)?;
    if call.kind() != "call_expression" || k.text_of(call.child_by_field_name("function")?) != "atomicAdd" {
        return None;
    }
    let args = call.child_by_field_name("arguments")?;
    let (addr, value) = (args.named_child(0)?, args.named_child(1)?);
    if args.named_child_count() != 2 || compact(k.text, value) != format!("{sd}[0]") {
        return None;
    }
    let thread_names = descendants(addr).iter().any(|d| {
        let n = k.text_of(*d);
        d.kind() == "identifier" && (n == tid || is_thread_x(k, n)) || n == "threadIdx"
    });
    (!thread_names).then_some(addr)
}

/// `const int t = threadIdx.x;`: (t, what it names), for an index alias never assigned again.
fn alias(k: &Kernel, st: Node) -> Option<(String, String)> {
    if st.kind() != "declaration" {
        return None;
    }
    let d = st.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let name = k.text_of(d.child_by_field_name("declarator").filter(|n| n.kind() == "identifier")?).to_string();
    let value = compact(k.text, d.child_by_field_name("value")?);
    // `blockIdx.y` aliases stay: the unit readers take them as the launch's fixed rows.
    let builtin = ["threadIdx.x", "blockIdx.x", "blockDim.x", "gridDim.x"];
    let assigned = descendants(k.body()).into_iter().any(|n| {
        matches!(n.kind(), "assignment_expression" | "update_expression")
            && n.child_by_field_name("left")
                .or_else(|| n.child_by_field_name("argument"))
                .is_some_and(|l| k.text_of(l) == name)
    });
    (builtin.contains(&value.as_str()) && !assigned).then_some((name, value))
}

/// `p += E;` with `p` a pointer parameter: (p, E).
fn pointer_offset<'t>(k: &Kernel<'t>, st: Node<'t>) -> Option<(String, Node<'t>)> {
    let e = (st.kind() == "expression_statement").then(|| st.named_child(0)).flatten()?;
    if e.kind() != "assignment_expression" || k.text_of(e.child_by_field_name("operator")?) != "+=" {
        return None;
    }
    let p = k.text_of(e.child_by_field_name("left")?);
    k.param(p).filter(|q| q.pointer)?;
    Some((p.to_string(), e.child_by_field_name("right")?))
}

/// The per-element atomic form of a block-tree sum into a shared address, where `kernel` is one.
pub(super) fn per_element(text: &str, kernel: &str) -> Option<String> {
    let k = Kernel::find(text, kernel)?;
    let sts = statements(k.body());
    let (at_tree, (tid, sd)) = sts.iter().enumerate().find_map(|(i, s)| Some((i, halving_tree(&k, *s)?)))?;
    let [sync, ..] = &sts[..at_tree].iter().rev().copied().collect::<Vec<_>>()[..] else { return None };
    if compact(k.text, *sync) != "__syncthreads();" || at_tree < 2 {
        return None;
    }
    let store_at = at_tree - 2;
    slot_store(&k, sts[store_at], &tid, &sd)?;
    let [last] = &sts[at_tree + 1..] else { return None };
    let addr = root_atomic(&k, *last, &tid, &sd)?;
    // The shared array is used nowhere else; the statements before the store write no memory.
    // Index aliases (`const int tid = threadIdx.x;`) are spelt out, as the unit readers expect.
    let uses_sd = |n: Node| descendants(n).iter().any(|d| d.kind() == "identifier" && k.text_of(*d) == sd);
    let aliases: Vec<(String, String)> = sts[..store_at].iter().filter_map(|s| alias(&k, *s)).collect();
    let spelt = |n: Node| {
        let edits: Vec<_> = descendants(n)
            .into_iter()
            .filter(|d| d.kind() == "identifier")
            .filter_map(|d| aliases.iter().find(|(a, _)| a == k.text_of(d)).map(|(_, v)| (d.byte_range(), v.clone())))
            .collect();
        edited(&k, n, &edits)
    };
    // The same with the pointer offsets applied (`p` read as `(p + (E))`).
    let offset_spelt = |n: Node, offsets: &[(String, String)]| {
        let edits: Vec<_> = descendants(n)
            .into_iter()
            .filter(|d| d.kind() == "identifier")
            .filter_map(|d| {
                let name = k.text_of(d);
                let alias = aliases.iter().find(|(a, _)| a == name).map(|(_, v)| v.clone());
                let offset = offsets.iter().find(|(p, _)| p == name).map(|(p, e)| format!("({p} + ({e}))"));
                Some((d.byte_range(), alias.or(offset)?))
            })
            .collect();
        edited(&k, n, &edits)
    };
    // `p += E;` on a pointer parameter before the store: the later uses read `(p + (E))`.
    let mut offsets: Vec<(String, String)> = Vec::new();
    let mut kept = Vec::new();
    for s in &sts[..store_at] {
        if let Some((p, e)) = pointer_offset(&k, *s) {
            if offsets.iter().any(|(q, _)| *q == p) {
                return None;
            }
            offsets.push((p, spelt(e)));
            continue;
        }
        if s.kind() == "declaration" && k.text_of(*s).contains("__shared__") {
            if !uses_sd(*s) {
                return None;
            }
            continue;
        }
        if uses_sd(*s)
            || descendants(*s).iter().any(|d| {
                matches!(d.kind(), "call_expression" | "return_statement" | "for_statement" | "while_statement")
            })
        {
            return None;
        }
        if alias(&k, *s).is_none() {
            kept.push(offset_spelt(*s, &offsets));
        }
    }
    // `cond ? v : 0` loads under the guard; anything else is added as it is.
    let value = sts[store_at].named_child(0)?.child_by_field_name("right")?;
    let addr = offset_spelt(addr, &offsets);
    let add = if value.kind() == "conditional_expression" {
        let mut cond = value.child_by_field_name("condition")?;
        while cond.kind() == "parenthesized_expression" {
            cond = cond.named_child(0)?;
        }
        let zero = compact(k.text, value.child_by_field_name("alternative")?);
        if !["0", "0.0", "0.0f", "0.f", "0.0F", "(real)0", "0.0L"].contains(&zero.as_str()) {
            return None;
        }
        let then = value.child_by_field_name("consequence")?;
        format!("if ({}) atomicAdd({addr}, {});", offset_spelt(cond, &offsets), offset_spelt(then, &offsets))
    } else {
        format!("atomicAdd({addr}, {});", offset_spelt(value, &offsets))
    };
    let mut body = String::from("{\n");
    for s in kept {
        body += &format!("  {s}\n");
    }
    body += &format!("  {add}\n}}");
    Some(k.with_body(&body))
}
