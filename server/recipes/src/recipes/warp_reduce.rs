//! Warp-shuffle reductions: the last 32 steps of a shared-memory tree
//! reduction, and per-element `atomicAdd` into one address, go through
//! `__shfl_down_sync` (one atomic per warp).

use crate::kernel::Kernel;
use crate::syntax::{atomic_add, compact, descendants, guarded, indent_at, single_statement, statements};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use tree_sitter::Node;

pub struct WarpShuffleReduce;

pub(crate) const SHUFFLE: &str =
    "for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);";
const REDUCIBLE: &[&str] = &["float", "double", "int", "unsigned", "unsigned int"];

/// `tid` when it is `threadIdx.x` or a local initialized to it.
pub(crate) fn is_thread_x(k: &Kernel, tid: &str) -> bool {
    tid == "threadIdx.x"
        || descendants(k.body()).into_iter().any(|n| {
            n.kind() == "init_declarator"
                && n.child_by_field_name("declarator").is_some_and(|d| k.text_of(d) == tid)
                && n.child_by_field_name("value").is_some_and(|v| compact(k.text, v) == "threadIdx.x")
        })
}

/// The element type of the `__shared__` array `name` declared in the kernel.
pub(crate) fn shared_type(k: &Kernel, name: &str) -> Option<String> {
    descendants(k.body()).into_iter().filter(|n| n.kind() == "declaration").find_map(|d| {
        let shared = descendants(d).iter().any(|n| k.text_of(*n) == "__shared__");
        let declares = descendants(d.child_by_field_name("declarator")?)
            .iter()
            .any(|n| n.kind() == "identifier" && k.text_of(*n) == name);
        if shared && declares { Some(k.text_of(d.child_by_field_name("type")?).to_string()) } else { None }
    })
}

/// `for (s = blockDim.x / 2; s > 0; s >>= 1) { if (tid < s) sd[tid] += sd[tid + s]; __syncthreads(); }`:
/// the condition node, `tid`, `sd` and the element type.
pub(crate) fn tree_reduction<'t>(k: &'t Kernel, f: Node<'t>) -> Option<(Node<'t>, String, String, String)> {
    let t = k.text;
    let init =
        descendants(f.child_by_field_name("initializer")?).into_iter().find(|n| n.kind() == "init_declarator")?;
    let s = k.text_of(init.child_by_field_name("declarator")?);
    let cond = f.child_by_field_name("condition")?;
    let update = compact(t, f.child_by_field_name("update")?);
    let halves = [format!("{s}>>=1"), format!("{s}/=2"), format!("{s}={s}/2"), format!("{s}={s}>>1")];
    if !["blockDim.x/2", "blockDim.x>>1"].contains(&compact(t, init.child_by_field_name("value")?).as_str())
        || compact(t, cond) != format!("{s}>0")
        || !halves.contains(&update)
    {
        return None;
    }
    let [step, sync] = statements(f.child_by_field_name("body")?)[..] else { return None };
    let guard = compact(t, step.child_by_field_name("condition")?.child_by_field_name("value")?);
    let (tid, bound) = guard.split_once('<')?;
    let add = compact(t, single_statement(step.child_by_field_name("consequence")?)?);
    let sd = add.split('[').next()?.to_string();
    let ty = shared_type(k, &sd)?;
    let shape_ok = step.kind() == "if_statement"
        && step.child_by_field_name("alternative").is_none()
        && compact(t, sync) == "__syncthreads();";
    let add_ok = bound == s
        && add == format!("{sd}[{tid}]+={sd}[{tid}+{s}];")
        && is_thread_x(k, tid)
        && REDUCIBLE.contains(&ty.as_str());
    (shape_ok && add_ok).then(|| (cond, tid.to_string(), sd, ty))
}

/// Whether every launch has a 1D power-of-two block of at least 64 threads (the tree's last 32 steps are then one warp's).
fn last_warp_is_warp_zero(k: &Kernel) -> bool {
    k.all_launches().is_some_and(|ls| {
        ls.iter().all(|l| l.block[0] >= 64 && l.block[0].is_power_of_two() && l.block[1] == 1 && l.block[2] == 1)
    })
}

fn shared_rewrite(k: &Kernel) -> Option<Rewrite> {
    if !last_warp_is_warp_zero(k) {
        return None;
    }
    let f =
        descendants(k.body()).into_iter().find(|n| n.kind() == "for_statement" && tree_reduction(k, *n).is_some())?;
    let (cond, tid, sd, ty) = tree_reduction(k, f)?;
    let s = &k.text_of(cond)[..k.text_of(cond).find('>')?];
    let ind = indent_at(k.text, f.start_byte());
    let tail = format!(
        "\n{ind}if ({tid} < 32) {{\n{ind}  {ty} kp_v = {sd}[{tid}] + {sd}[{tid} + 32];\n{ind}  {SHUFFLE}\n{ind}  if ({tid} == 0) {sd}[0] = kp_v;\n{ind}}}\n{ind}__syncthreads();"
    );
    let mut source = k.text.to_string();
    source.insert_str(f.end_byte(), &tail);
    source.replace_range(cond.byte_range(), &format!("{} > 32", s.trim()));
    Some(Rewrite { source, note: format!("warp-shuffle reduction of the last 32 partial sums of {sd}") })
}

/// A top-level `atomicAdd(ADDR, VAL);`, possibly under `if (COND)`: (statement, COND, ADDR, VAL, element type).
fn atomic_site<'t>(k: &'t Kernel, st: Node<'t>) -> Option<(Option<Node<'t>>, Node<'t>, Node<'t>, String)> {
    let (cond, call_st) = guarded(st).map_or((None, st), |(c, s)| (Some(c), s));
    let (addr, val) = atomic_add(k.text, call_st)?;
    // One address for the whole warp: only pointer parameters, literals and blockIdx in it.
    let mut pointer = None;
    for n in descendants(addr) {
        match n.kind() {
            "identifier" => match k.param(k.text_of(n)) {
                Some(p) if p.pointer => pointer = Some(p.base.clone()),
                _ if k.text_of(n) == "blockIdx" => {}
                _ => return None,
            },
            "field_expression" if !k.text_of(n).starts_with("blockIdx") => return None,
            _ => {}
        }
    }
    let ty = pointer.filter(|t| REDUCIBLE.contains(&t.as_str()))?;
    Some((cond, addr, val, ty))
}

fn atomic_rewrite(k: &Kernel) -> Option<Rewrite> {
    let full_warps = k.all_launches().is_some_and(|ls| ls.iter().all(|l| l.block[0] % 32 == 0));
    if !full_warps {
        return None;
    }
    // Every lane must reach the shuffle: a top-level statement with no `return` before it.
    let st = statements(k.body())
        .into_iter()
        .take_while(|s| !descendants(*s).iter().any(|n| n.kind() == "return_statement"))
        .find(|s| atomic_site(k, *s).is_some())?;
    let (cond, addr, val, ty) = atomic_site(k, st)?;
    let ind = indent_at(k.text, st.start_byte());
    let load = match cond {
        Some(c) => format!("if ({}) kp_v = {};", k.text_of(c), k.text_of(val)),
        None => format!("kp_v = {};", k.text_of(val)),
    };
    let block = format!(
        "{{\n{ind}  {ty} kp_v = 0;\n{ind}  {load}\n{ind}  {SHUFFLE}\n{ind}  if ((threadIdx.x & 31) == 0) atomicAdd({}, kp_v);\n{ind}}}",
        k.text_of(addr)
    );
    let mut source = k.text.to_string();
    source.replace_range(st.byte_range(), &block);
    Some(Rewrite { source, note: format!("one atomicAdd per warp into {} after a shuffle reduction", k.text_of(addr)) })
}

impl Recipe for WarpShuffleReduce {
    fn name(&self) -> &'static str {
        "WarpShuffleReduce"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Rewrite
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::BarrierStall, Code::WarpStall, Code::SharedBankConflicts, Code::SyncInDivergentBranch]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else { return Vec::new() };
        [shared_rewrite(&k), atomic_rewrite(&k)].into_iter().flatten().collect()
    }
}
