//! [`ShuffleTree`]: a block's shared-memory tree reduction with interleaved
//! addressing (the stride doubling from 1: `tid % (2 * s) == 0`,
//! `(tid & (2 * s - 1)) == 0`, or `index = 2 * s * tid`), which keeps one
//! thread in `2s` working and diverges in every warp, becomes warp shuffles:
//! each thread keeps the value it stored in a register, every warp sums its
//! values with `__shfl_down_sync`, one shared slot per warp, and the first
//! warp sums those and puts the block's total in the tree's root (`S[0]`),
//! so the user's statements after the tree (`if (tid == 0) out[b] = S[0];`)
//! run unchanged. The launch and the per-block output stay as they are: the
//! block is the unit of these kernels.

use crate::kernel::Kernel;
use crate::syntax::{compact, descendants, indent_at, single_statement, statements};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use tree_sitter::Node;

pub struct ShuffleTree;

/// Element types `__shfl_down_sync` takes.
const REDUCIBLE: &[&str] = &["float", "double", "int", "unsigned", "unsigned int", "long long", "unsigned long long"];

/// Whether `name` is `threadIdx.x` or a local initialised to it (casts allowed).
fn is_thread_x(k: &Kernel, name: &str) -> bool {
    let bare = |s: &str| {
        let s = s.replace(['(', ')', ' '], "");
        ["unsignedint", "unsigned", "int", "long", "size_t"]
            .iter()
            .fold(s, |s, c| s.strip_prefix(c).map(str::to_string).unwrap_or(s))
    };
    name == "threadIdx.x"
        || descendants(k.body()).into_iter().any(|n| {
            n.kind() == "init_declarator"
                && n.child_by_field_name("declarator").is_some_and(|d| k.text_of(d) == name)
                && n.child_by_field_name("value").is_some_and(|v| bare(k.text_of(v)) == "threadIdx.x")
        })
}

/// The `__shared__` array `name` declared in the kernel: (element type, its size as written; `None` for `extern`).
fn shared_array(k: &Kernel, name: &str) -> Option<(String, Option<String>)> {
    descendants(k.body()).into_iter().filter(|n| n.kind() == "declaration").find_map(|d| {
        if !k.text_of(d).contains("__shared__") {
            return None;
        }
        let decl = d.child_by_field_name("declarator")?;
        let id = descendants(decl).into_iter().find(|n| n.kind() == "identifier")?;
        if k.text_of(id) != name || decl.kind() != "array_declarator" {
            return None;
        }
        let size = decl.child_by_field_name("size").map(|s| compact(k.text, s));
        Some((k.text_of(d.child_by_field_name("type")?).to_string(), size))
    })
}

/// The interleaved tree loop `f` over shared array `sd`: (the thread index name it uses).
fn interleaved_tree(k: &Kernel, f: Node, sd: &str, size: Option<&str>) -> Option<String> {
    if f.kind() != "for_statement" {
        return None;
    }
    let t = k.text;
    let init =
        descendants(f.child_by_field_name("initializer")?).into_iter().find(|n| n.kind() == "init_declarator")?;
    let s = k.text_of(init.child_by_field_name("declarator")?);
    if compact(t, init.child_by_field_name("value")?) != "1" {
        return None;
    }
    let update = compact(t, f.child_by_field_name("update")?);
    let doubles = [
        format!("{s}*=2"),
        format!("{s}<<=1"),
        format!("{s}={s}*2"),
        format!("{s}=2*{s}"),
        format!("{s}={s}<<1"),
        format!("{s}+={s}"),
    ];
    if !doubles.contains(&update) {
        return None;
    }
    // The tree spans the block (or the whole array, which the block fills).
    let cond = compact(t, f.child_by_field_name("condition")?);
    let bound = cond.strip_prefix(&format!("{s}<"))?;
    if bound != "blockDim.x" && Some(bound) != size {
        return None;
    }
    let body: Vec<Node> = statements(f.child_by_field_name("body")?);
    let (last, rest) = body.split_last()?;
    if compact(t, *last) != "__syncthreads();" {
        return None;
    }
    let (step, index) = match rest {
        [step] => (*step, None),
        [decl, step] if decl.kind() == "declaration" => {
            let d = decl.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
            (
                *step,
                Some((
                    k.text_of(d.child_by_field_name("declarator")?).to_string(),
                    compact(t, d.child_by_field_name("value")?),
                )),
            )
        }
        _ => return None,
    };
    if step.kind() != "if_statement" || step.child_by_field_name("alternative").is_some() {
        return None;
    }
    let guard = compact(t, step.child_by_field_name("condition")?.child_by_field_name("value")?);
    let add = compact(t, single_statement(step.child_by_field_name("consequence")?)?);
    // `S[a] += S[a + s];` names the slot `a`.
    let a = add.strip_prefix(&format!("{sd}["))?.split_once("]+=")?.0.to_string();
    if add != format!("{sd}[{a}]+={sd}[{a}+{s}];") {
        return None;
    }
    match index {
        // `tid % (2 * s) == 0` or `(tid & (2 * s - 1)) == 0` with a = tid.
        None => {
            let tid = a.clone();
            let forms = [
                format!("{tid}%(2*{s})==0"),
                format!("{tid}%({s}*2)==0"),
                format!("({tid}&(2*{s}-1))==0"),
                format!("({tid}&({s}*2-1))==0"),
                format!("0=={tid}%(2*{s})"),
                format!("!({tid}%(2*{s}))"),
            ];
            (forms.contains(&guard) && is_thread_x(k, &tid)).then_some(tid)
        }
        // `index = 2 * s * tid; if (index < L) S[index] += S[index + s];`
        Some((name, value)) => {
            let tid = ["2*{s}*", "{s}*2*", "2*", "{s}*"].iter().find_map(|p| {
                value.strip_prefix(&p.replace("{s}", s)).filter(|r| !r.contains('*')).map(str::to_string)
            })?;
            let value_ok =
                [format!("2*{s}*{tid}"), format!("{s}*2*{tid}"), format!("2*{tid}*{s}"), format!("{tid}*2*{s}")]
                    .contains(&value);
            let guard_ok = guard == format!("{name}<{bound}");
            (a == name && value_ok && guard_ok && is_thread_x(k, &tid)).then_some(tid)
        }
    }
}

fn rewrite(k: &Kernel) -> Option<Rewrite> {
    if !k.whole_warp_1d_blocks() {
        return None;
    }
    let body = k.body();
    let sts = statements(body);
    let t = k.text;
    // The tree loop, and the array it reduces.
    let (at, f, sd, ty, tid) = sts.iter().enumerate().find_map(|(at, f)| {
        let update = descendants(*f).into_iter().find(|n| {
            n.kind() == "assignment_expression"
                && n.child_by_field_name("operator").is_some_and(|o| k.text_of(o) == "+=")
        })?;
        let sd = compact(t, update.child_by_field_name("left")?).split('[').next()?.to_string();
        let (ty, size) = shared_array(k, &sd)?;
        let tid = interleaved_tree(k, *f, &sd, size.as_deref())?;
        Some((at, *f, sd, ty, tid))
    })?;
    // A template's element type is whatever the instantiation names (the spec's, compiled with it).
    let template_param = k.func.is_template
        && ty.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !["half", "__half", "char", "short", "bool"].contains(&ty.as_str());
    if !REDUCIBLE.contains(&ty.as_str()) && !template_param {
        return None;
    }
    // Before it: `S[tid] = E;` then barriers only.
    let mut p = at.checked_sub(1)?;
    while compact(t, sts[p]) == "__syncthreads();" {
        p = p.checked_sub(1)?;
    }
    let store = sts[p]
        .named_child(0)
        .filter(|e| sts[p].kind() == "expression_statement" && e.kind() == "assignment_expression")?;
    let lhs = compact(t, store.child_by_field_name("left")?);
    if store.child_by_field_name("operator").map(|o| k.text_of(o)) != Some("=")
        || (lhs != format!("{sd}[{tid}]") && lhs != format!("{sd}[threadIdx.x]"))
    {
        return None;
    }
    let value = k.text_of(store.child_by_field_name("right")?);
    // Nothing else writes the array; after the tree only its root is read.
    let writes_elsewhere = sts.iter().enumerate().any(|(i, s)| {
        i != p
            && i != at
            && descendants(*s).into_iter().any(|d| {
                matches!(d.kind(), "assignment_expression" | "update_expression")
                    && compact(t, d.child_by_field_name("left").or(d.child_by_field_name("argument")).unwrap_or(d))
                        .starts_with(&format!("{sd}["))
            })
    });
    let later_reads_ok = sts[at + 1..].iter().all(|s| {
        let c = compact(t, *s);
        c.match_indices(&format!("{sd}[")).all(|(i, m)| c[i + m.len()..].starts_with("0]"))
            && !c.contains(&format!("{sd}+"))
            && !c.contains(&format!("*{sd}"))
    });
    if writes_elsewhere || !later_reads_ok {
        return None;
    }
    let ind = indent_at(t, sts[p].start_byte());
    let shfl = "for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);";
    let text = format!(
        "// Warp shuffles, one shared slot per warp, the first warp finishes (kernelpro ShuffleTree).\n\
         {ind}{ty} kp_v = {value};\n\
         {ind}{shfl}\n\
         {ind}__shared__ {ty} kp_warp[32];\n\
         {ind}if ((threadIdx.x & 31u) == 0) kp_warp[threadIdx.x >> 5] = kp_v;\n\
         {ind}__syncthreads();\n\
         {ind}if (threadIdx.x < 32u) {{\n\
         {ind}  kp_v = threadIdx.x < (blockDim.x >> 5) ? kp_warp[threadIdx.x] : ({ty})0;\n\
         {ind}  {shfl}\n\
         {ind}  if (threadIdx.x == 0) {sd}[0] = kp_v;\n\
         {ind}}}\n\
         {ind}__syncthreads();"
    );
    let mut source = t.to_string();
    source.replace_range(sts[p].start_byte()..f.end_byte(), &text);
    Some(Rewrite {
        source,
        note: format!("the interleaved tree over {sd} as warp shuffles and one shared slot per warp"),
    })
}

impl Recipe for ShuffleTree {
    fn name(&self) -> &'static str {
        "ShuffleTree"
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[kernelpro_source::kernel_model::pattern::Pattern::ScalarReduction]
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[
            Code::DivergentBranch,
            Code::ThreadDivergence,
            Code::SharedBankConflict,
            Code::SharedBankConflicts,
            Code::WarpStall,
        ]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        Kernel::find(text, kernel).and_then(|k| rewrite(&k)).into_iter().collect()
    }
}
