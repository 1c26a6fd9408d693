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
use crate::recipes::warp_reduce::{SHUFFLE, is_thread_x, tree_reduction};
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
        let Some(sum) = tree_shape(&k).or_else(|| atomic_shape(&k)) else { return Vec::new() };
        CAPS.iter().filter_map(|cap| rewrite(&k, &sum, *cap)).collect()
    }
}
