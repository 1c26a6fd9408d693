//! Coarsened sums into one address under a fixed launch. Two shapes:
//! a block's shared-memory tree over one element per thread
//! (`sd[tid] = RHS; __syncthreads(); <tree>; if (tid == 0) atomicAdd(ADDR, sd[0]);`)
//! and one atomic per element (`if (G) atomicAdd(ADDR, V);`). Only the first
//! `CAP` blocks work (the others return before any barrier); each thread sums
//! every original index of a grid stride in a register, then warp shuffles, a
//! 32-slot shared array and one `atomicAdd` per block. The sum's order changes:
//! the spec's tolerance decides whether that is close enough.

use crate::access::reads_only;
use crate::coarsen::{CAPS, capped_blocks, grid_stride_head};
use crate::kernel::Kernel;
use crate::recipes::warp_reduce::{SHUFFLE, is_thread_x, shared_type, tree_reduction};
use crate::syntax::{atomic_add, compact, descendants, guarded, indent_at, statements};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use tree_sitter::Node;

pub struct CoarsenReduce;

/// Types with both `__shfl_down_sync` and `atomicAdd`.
const SUMMABLE: &[&str] =
    &["float", "double", "int", "unsigned", "unsigned int", "unsigned long long", "unsigned long long int"];

struct Sum {
    index: String,
    index_ty: String,
    ty: String,
    /// The statement adding the thread's element `i` to `kp_v`.
    add: String,
    /// The single address summed into.
    addr: String,
}

/// `P` or `&P[literal]` for a pointer parameter `P`: the parameter's name.
fn single_address(k: &Kernel, addr: Node) -> Option<String> {
    let text = compact(k.text, addr);
    let name = match text.strip_prefix('&') {
        Some(rest) => {
            let (p, lit) = rest.strip_suffix(']')?.split_once('[')?;
            lit.chars().all(|c| c.is_ascii_digit()).then_some(p)?
        }
        None => text.as_str(),
    };
    k.param(name).filter(|p| p.pointer && !p.is_const).map(|p| p.name.clone())
}

/// `int i = <global x index>; if (G) atomicAdd(ADDR, V);`
fn atomic_shape(k: &Kernel) -> Option<Sum> {
    let [decl, site] = statements(k.body())[..] else { return None };
    let index = k.index_decl(decl, "x")?;
    let (cond, st) = guarded(site).map_or((None, site), |(c, s)| (Some(c), s));
    let (addr, val) = atomic_add(k.text, st)?;
    let target = single_address(k, addr)?;
    let ty = k.param(&target)?.base.clone();
    let pure = |n: Node| reads_only(k, n, &[index.as_str()], &[target.as_str()]);
    if !SUMMABLE.contains(&ty.as_str()) || !cond.is_none_or(pure) || !pure(val) {
        return None;
    }
    let add = format!("kp_v += ({ty})({});", k.text_of(val));
    let add = match cond {
        Some(c) => format!("if ({}) {add}", k.text_of(c)),
        None => add,
    };
    Some(Sum {
        index,
        index_ty: k.text_of(decl.child_by_field_name("type")?).to_string(),
        ty,
        add,
        addr: k.text_of(addr).to_string(),
    })
}

/// The declared size of the `__shared__` array declaration `decl` with its name, element type and size.
fn shared_array(k: &Kernel, decl: Node) -> Option<(String, String, u64)> {
    if decl.kind() != "declaration" || !descendants(decl).iter().any(|n| k.text_of(*n) == "__shared__") {
        return None;
    }
    let array = decl.child_by_field_name("declarator").filter(|d| d.kind() == "array_declarator")?;
    let name = k.text_of(array.child_by_field_name("declarator")?).to_string();
    let size = k.text_of(array.child_by_field_name("size")?).parse().ok()?;
    Some((name, k.text_of(decl.child_by_field_name("type")?).to_string(), size))
}

/// `__shared__ T sd[S]; tid = threadIdx.x; i = <global x index>; sd[tid] = RHS; __syncthreads(); <tree>; if (tid == 0) atomicAdd(ADDR, sd[0]);`
fn tree_shape(k: &Kernel) -> Option<Sum> {
    let t = k.text;
    let sts = statements(k.body());
    let [a, b, c, store, sync, tree, last] = sts[..] else { return None };
    let (sd, ty, size) = [a, b, c].into_iter().find_map(|d| shared_array(k, d))?;
    let index_decl = [a, b, c].into_iter().find(|d| k.index_decl(*d, "x").is_some())?;
    let index = k.index_decl(index_decl, "x")?;
    let (_, tid, tree_sd, tree_ty) = tree_reduction(k, tree)?;
    let tid_decl = [a, b, c].into_iter().find(|d| {
        d.child_by_field_name("declarator")
            .and_then(|n| n.child_by_field_name("declarator"))
            .is_some_and(|n| k.text_of(n) == tid)
    })?;
    let distinct = [index_decl, tid_decl].iter().all(|d| shared_array(k, *d).is_none()) && index_decl != tid_decl;
    // The tree sums the whole block only for power-of-two blocks that fit the array.
    let blocks_ok = k.whole_warp_1d_blocks()
        && k.all_launches()
            .is_some_and(|ls| ls.iter().all(|l| l.block[0].is_power_of_two() && u64::from(l.block[0]) <= size));
    let assign = store
        .named_child(0)
        .filter(|e| store.kind() == "expression_statement" && e.kind() == "assignment_expression")?;
    let rhs = assign.child_by_field_name("right")?;
    let store_ok = compact(t, assign.child_by_field_name("left")?) == format!("{sd}[{tid}]")
        && k.text_of(assign.child_by_field_name("operator")?) == "=";
    let (cond, st) = guarded(last)?;
    let (addr, val) = atomic_add(k.text, st)?;
    let target = single_address(k, addr)?;
    let last_ok = compact(t, cond) == format!("{tid}==0")
        && compact(t, val) == format!("{sd}[0]")
        && k.param(&target)?.base == ty;
    let ok = distinct
        && blocks_ok
        && store_ok
        && last_ok
        && is_thread_x(k, &tid)
        && tree_sd == sd
        && tree_ty == ty
        && SUMMABLE.contains(&ty.as_str())
        && compact(t, sync) == "__syncthreads();"
        && reads_only(k, rhs, &[index.as_str()], &[target.as_str()]);
    ok.then(|| Sum {
        index,
        index_ty: k.text_of(index_decl.child_by_field_name("type").unwrap()).to_string(),
        add: format!("kp_v += ({ty})({});", k.text_of(rhs)),
        ty,
        addr: k.text_of(addr).to_string(),
    })
}

/// Any block reduction of one value per thread into one address: the declaration `T v = E;`
/// (E reads the index `i`, declared from `blockIdx.x` in any form, e.g. `blockIdx.x * THREADS +
/// tid`), then the user's own block reduction of `v` (shuffles, a shared tree, a library call) with
/// an `atomicAdd` into a single address. Only `E` reads global memory and names `i`, and only the
/// index's declaration names `blockIdx`. The declaration becomes a sum of `E` over the original
/// blocks this block now stands for; the reduction stays as written.
struct ValueSum<'t> {
    /// The statement `T v = E;` or `LHS = E;`.
    value: Node<'t>,
    lhs: Lhs,
    ty: String,
    expr: Node<'t>,
    /// The index's declaration, re-evaluated for each original block.
    index_decl: Node<'t>,
    addr: String,
}

fn value_shape<'t>(k: &'t Kernel) -> Option<ValueSum<'t>> {
    let t = k.text;
    let sts = statements(k.body());
    let mentions_block = |n: Node| {
        descendants(n).iter().any(|d| {
            d.kind() == "field_expression"
                && matches!(compact(t, *d).as_str(), "blockIdx.x" | "blockIdx.y" | "blockIdx.z" | "gridDim.x")
        })
    };
    let [index_decl] = sts.iter().copied().filter(|s| mentions_block(*s)).collect::<Vec<_>>()[..] else {
        return None;
    };
    let mut cursor = index_decl.walk();
    let index_names: Vec<String> = index_decl
        .children_by_field_name("declarator", &mut cursor)
        .filter(|d| d.kind() == "init_declarator")
        .filter_map(|d| d.child_by_field_name("declarator"))
        .map(|n| k.text_of(n).to_string())
        .collect();
    if index_decl.kind() != "declaration" || index_names.is_empty() || compact(t, index_decl).contains("blockIdx.y") {
        return None;
    }
    let at = sts.iter().position(|s| *s == index_decl)?;
    // The value: the first later statement naming the index, `T v = E;` or `LHS = E;` (`sd[tid] = E;`
    // into a shared array, or a local declared before).
    let names_index = |n: Node| index_names.iter().any(|i| !crate::syntax::uses(n, t, i).is_empty());
    let value = sts[at + 1..].iter().copied().find(|s| names_index(*s))?;
    let (lhs, expr, ty) = if value.kind() == "declaration" {
        let mut c = value.walk();
        let declarators: Vec<Node> = value.children_by_field_name("declarator", &mut c).collect();
        let [init] = declarators[..] else { return None };
        let name = init.child_by_field_name("declarator").filter(|n| n.kind() == "identifier")?;
        let ty = k.text_of(value.child_by_field_name("type")?).to_string();
        (init.kind() == "init_declarator").then_some(())?;
        (Lhs::Declared(k.text_of(name).to_string()), init.child_by_field_name("value")?, ty)
    } else {
        let a = value
            .named_child(0)
            .filter(|e| value.kind() == "expression_statement" && e.kind() == "assignment_expression")?;
        (k.text_of(a.child_by_field_name("operator")?) == "=").then_some(())?;
        let left = a.child_by_field_name("left")?;
        if names_index(left) {
            return None;
        }
        let ty = match left.kind() {
            "subscript_expression" => shared_type(k, k.text_of(left.child_by_field_name("argument")?))?,
            "identifier" => sts[..at + 1]
                .iter()
                .find(|d| declared_names(k, **d).iter().any(|n| n == k.text_of(left)))
                .and_then(|d| d.child_by_field_name("type"))
                .map(|ty| k.text_of(ty).to_string())?,
            _ => return None,
        };
        (Lhs::Assigned(k.text_of(left).to_string()), a.child_by_field_name("right")?, ty)
    };
    if !SUMMABLE.contains(&ty.as_str()) {
        return None;
    }
    // The one atomicAdd into a single address, after the value.
    let vat = sts.iter().position(|s| *s == value)?;
    let calls: Vec<Node> = sts[vat + 1..]
        .iter()
        .flat_map(|s| descendants(*s))
        .filter(|d| {
            d.kind() == "call_expression"
                && d.child_by_field_name("function").is_some_and(|f| k.text_of(f).starts_with("atomic"))
        })
        .collect();
    let [call] = calls[..] else { return None };
    if k.text_of(call.child_by_field_name("function")?) != "atomicAdd" {
        return None;
    }
    let [addr, _] = statements(call.child_by_field_name("arguments")?)[..] else { return None };
    let target = single_address(k, addr)?;
    if k.param(&target)?.base != ty && !(ty == "unsigned" && k.param(&target)?.base == "unsigned int") {
        return None;
    }
    let locals: Vec<&str> = index_names.iter().map(String::as_str).collect();
    let declared_before: Vec<String> = sts[..vat].iter().flat_map(|s| declared_names(k, *s)).collect();
    let mut allowed = locals.clone();
    allowed.extend(declared_before.iter().map(String::as_str));
    if !reads_only(k, expr, &allowed, &[target.as_str()]) || mentions_block(expr) {
        return None;
    }
    // Nothing else reads global memory or names the index; the target is written by the atomic alone.
    for s in sts.iter().filter(|s| **s != value && **s != index_decl) {
        if names_index(*s) {
            return None;
        }
        for d in descendants(*s) {
            if d.kind() == "identifier"
                && k.param(k.text_of(d)).is_some_and(|p| p.pointer)
                && !addr.byte_range().contains(&d.start_byte())
            {
                return None;
            }
        }
    }
    Some(ValueSum { value, lhs, ty, expr, index_decl, addr: k.text_of(addr).to_string() })
}

/// Where the value goes: a declaration of its own (`float v = E;`), or an existing place (`sd[tid] = E;`).
enum Lhs {
    Declared(String),
    Assigned(String),
}

/// The names a declaration statement declares.
fn declared_names(k: &Kernel, st: Node) -> Vec<String> {
    if st.kind() != "declaration" {
        return Vec::new();
    }
    let mut c = st.walk();
    st.children_by_field_name("declarator", &mut c)
        .map(|d| d.child_by_field_name("declarator").unwrap_or(d))
        .filter(|n| n.kind() == "identifier")
        .map(|n| k.text_of(n).to_string())
        .collect()
}

fn rewrite_value(k: &Kernel, s: &ValueSum, cap: u32) -> Option<Rewrite> {
    let body = k.body();
    let ind = indent_at(k.text, statements(body).first()?.start_byte());
    let vind = indent_at(k.text, s.value.start_byte());
    // The index's declaration as the original block `kp_b` had it.
    let mut decl = k.text_of(s.index_decl).to_string();
    for d in descendants(s.index_decl).into_iter().rev() {
        if d.kind() == "field_expression" && compact(k.text, d) == "blockIdx.x" {
            let r = (d.start_byte() - s.index_decl.start_byte())..(d.end_byte() - s.index_decl.start_byte());
            decl.replace_range(r, "kp_b");
        }
    }
    let ty = &s.ty;
    let (head, name, tail) = match &s.lhs {
        Lhs::Declared(v) => (format!("{ty} {v} = 0;"), v.as_str(), String::new()),
        Lhs::Assigned(place) => (format!("{ty} kp_v = 0;"), "kp_v", format!("\n{vind}{place} = kp_v;")),
    };
    let sum = format!(
        "{head}\n{vind}for (long long kp_b = blockIdx.x; kp_b < (long long)gridDim.x; kp_b += kp_blocks) {{\n{vind}  {decl}\n{vind}  {name} += ({ty})({});\n{vind}}}{tail}",
        k.text_of(s.expr)
    );
    let mut text = k.text.to_string();
    text.replace_range(s.value.byte_range(), &sum);
    let open = body.start_byte() + 1;
    text.insert_str(open, &format!("\n{}", capped_blocks(ind, cap).trim_end_matches('\n')));
    Some(Rewrite {
        source: text,
        note: format!(
            "coarsened sum into {}: {cap} blocks at most, each summing its value over the original blocks it stands for; the block's reduction as written",
            s.addr
        ),
    })
}

fn rewrite(k: &Kernel, s: &Sum, cap: u32) -> Option<Rewrite> {
    let body = k.body();
    let ind = indent_at(k.text, statements(body).first()?.start_byte());
    let outer = indent_at(k.text, body.start_byte());
    let Sum { index, index_ty, ty, add, addr } = s;
    let mut b = String::from("{\n");
    b += &capped_blocks(ind, cap);
    b += &format!("{ind}{ty} kp_v = 0;\n");
    b += &grid_stride_head(ind, index_ty, index);
    b += &format!("{ind}  {add}\n{ind}}}\n");
    b += &format!("{ind}{SHUFFLE}\n");
    b += &format!(
        "{ind}__shared__ {ty} kp_warp[32];\n{ind}if ((threadIdx.x & 31) == 0) kp_warp[threadIdx.x >> 5] = kp_v;\n{ind}__syncthreads();\n"
    );
    b += &format!(
        "{ind}if (threadIdx.x < 32) {{\n{ind}  kp_v = threadIdx.x < (blockDim.x >> 5) ? kp_warp[threadIdx.x] : ({ty})0;\n"
    );
    b += &format!("{ind}  {SHUFFLE}\n{ind}  if (threadIdx.x == 0) atomicAdd({addr}, kp_v);\n{ind}}}\n{outer}}}");
    let source = k.with_body(&b);
    Some(Rewrite {
        source,
        note: format!(
            "coarsened sum into {addr}: {cap} blocks at most, grid-stride register sums, warp shuffles, one atomicAdd per block"
        ),
    })
}

impl Recipe for CoarsenReduce {
    fn name(&self) -> &'static str {
        "CoarsenReduce"
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[kernelpro_source::kernel_model::pattern::Pattern::ScalarReduction]
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Rewrite
    }
    fn answers(&self) -> &'static [Code] {
        &[
            Code::BarrierStall,
            Code::WarpStall,
            Code::LaunchOverhead,
            Code::TailEffect,
            Code::DivergentBranch,
            Code::ThreadDivergence,
        ]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else { return Vec::new() };
        if !k.whole_warp_1d_blocks() {
            return Vec::new();
        }
        if let Some(sum) = tree_shape(&k).or_else(|| atomic_shape(&k)) {
            return CAPS.iter().filter_map(|cap| rewrite(&k, &sum, *cap)).collect();
        }
        let Some(sum) = value_shape(&k) else { return Vec::new() };
        CAPS.iter().filter_map(|cap| rewrite_value(&k, &sum, *cap)).collect()
    }
}
