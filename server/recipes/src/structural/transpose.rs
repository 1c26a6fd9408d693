//! Transposes through a padded shared tile. A kernel with one thread per
//! element `(i, j)` whose only load runs along one index (`in[i * C + j]`:
//! `j` a plain term) and whose only store runs along the other
//! (`out[j * R + i]`) reads a 32x32 tile with lanes along the load's axis,
//! keeps it in `__shared__ T tile[32][33]` (the pad keeps the column reads
//! free of bank conflicts) and writes it with lanes along the store's axis.
//! The user's statement is kept: its load is replaced by the tile element, so
//! a scale or a cast in it stays. Tiles are walked with a grid stride over
//! blocks: any launch is correct.

use super::BLOCK_TID;
use super::launch::{Tuning, launch_variants};
use super::units_text::{UnitsText, render};
use crate::kernel::Kernel;
use crate::syntax::{descendants, indent_at};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use kernelpro_source::units::recognize::{Piece, Units, flat, units};
use tree_sitter::Node;

pub struct TiledTranspose;

/// Whether `index` has `name` (cast or not) as one of its top-level terms.
fn plain_term(index: &str, name: &str) -> bool {
    index.split('+').any(|t| {
        let mut t = t.trim_matches(|c| c == '(' || c == ')');
        for cast in ["(int)", "(long)", "(longlong)", "(size_t)", "(unsigned)", "(int64_t)"] {
            t = t.trim_start_matches(cast);
        }
        t.trim_matches(|c| c == '(' || c == ')') == name
    })
}

fn rewrite(k: &Kernel, u: &Units) -> Option<Rewrite> {
    let [i, j] = &u.indices[..] else { return None };
    if !u.fixed.is_empty() {
        return None;
    }
    let nodes: Vec<Node> = u.only_nodes()?;
    let subs: Vec<Node> =
        nodes.iter().flat_map(|n| descendants(*n)).filter(|d| d.kind() == "subscript_expression").collect();
    let [a, b] = subs[..] else { return None };
    let is_store = |s: Node| {
        s.parent().is_some_and(|p| p.kind() == "assignment_expression" && p.child_by_field_name("left") == Some(s))
    };
    let (store, load) = match (is_store(a), is_store(b)) {
        (true, false) => (a, b),
        (false, true) => (b, a),
        _ => return None,
    };
    let assign = store.parent()?;
    if k.text_of(assign.child_by_field_name("operator")?) != "="
        || !assign.parent().is_some_and(|p| p.kind() == "expression_statement" && nodes.contains(&p))
    {
        return None;
    }
    // The statement must be the last piece, declarations before it.
    let (last, before) = nodes.split_last()?;
    if *last != assign.parent()?
        || before.iter().any(|n| n.kind() != "declaration")
        || descendants(*last).iter().any(|d| {
            d.kind() == "call_expression"
                && d.child_by_field_name("function").is_some_and(|f| k.text_of(f).starts_with("atomic"))
        })
    {
        return None;
    }
    let index = |s: Node| s.child_by_field_name("indices").and_then(|x| x.named_child(0)).map(|x| flat(k, x));
    let (li, si) = (index(load)?, index(store)?);
    // Which index is contiguous for the load and for the store; a transpose has them differ.
    let load_j = if plain_term(&li, &j.name) {
        true
    } else if plain_term(&li, &i.name) {
        false
    } else {
        return None;
    };
    let store_j = if plain_term(&si, &j.name) {
        true
    } else if plain_term(&si, &i.name) {
        false
    } else {
        return None;
    };
    if load_j == store_j {
        return None;
    }
    let ty = k.param(k.text_of(load.child_by_field_name("argument")?)).filter(|p| p.pointer)?.base.clone();
    let outer = indent_at(k.text, k.body().start_byte());
    let ind = format!("{outer}  ");
    let deep = format!("{ind}      ");
    let decls: String = before
        .iter()
        .map(|n| render(k, Piece::Node(*n), &[], &deep).map(|t| format!("{deep}{t}\n")))
        .collect::<Option<_>>()?;
    let load_text = k.text_of(load);
    let stmt = render(k, Piece::Node(*last), &[(load.byte_range(), "kp_tile[kp_r][kp_c]".to_string())], &deep)?;
    // Phase 1 lanes walk the load's contiguous index, phase 2 the store's; the tile is [i][j].
    let (l_r, l_c) = if load_j { ("kp_e / 32", "kp_e % 32") } else { ("kp_e % 32", "kp_e / 32") };
    let (s_r, s_c) = if store_j { ("kp_e / 32", "kp_e % 32") } else { ("kp_e % 32", "kp_e / 32") };
    let (ti, tj, iname, jname, mi, nj) = (&i.ty, &j.ty, &i.name, &j.name, &i.bound, &j.bound);
    // The declarations before the units (sizes the same in every thread), once.
    let prologue = u.prologue(k, &ind)?;
    let text = format!(
        r#"{{
{ind}// 32x32 tiles through shared memory padded to 33 columns (kernelpro TiledTranspose).
{prologue}{ind}__shared__ {ty} kp_tile[32][33];
{ind}const int kp_tid = (int){BLOCK_TID};
{ind}const int kp_threads = (int)(blockDim.x * blockDim.y * blockDim.z);
{ind}const long long kp_tiles_j = ((long long)({nj}) + 31) / 32;
{ind}const long long kp_tiles = ((long long)({mi}) + 31) / 32 * kp_tiles_j;
{ind}for (long long kp_t = (long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z); kp_t < kp_tiles; kp_t += (long long)gridDim.x * gridDim.y * gridDim.z) {{
{ind}  const long long kp_i0 = kp_t / kp_tiles_j * 32, kp_j0 = kp_t % kp_tiles_j * 32;
{ind}  for (int kp_e = kp_tid; kp_e < 1024; kp_e += kp_threads) {{
{ind}    const int kp_r = {l_r}, kp_c = {l_c};
{ind}    const {ti} {iname} = ({ti})(kp_i0 + kp_r);
{ind}    const {tj} {jname} = ({tj})(kp_j0 + kp_c);
{ind}    if ({iname} < {mi} && {jname} < {nj}) kp_tile[kp_r][kp_c] = {load_text};
{ind}  }}
{ind}  __syncthreads();
{ind}  for (int kp_e = kp_tid; kp_e < 1024; kp_e += kp_threads) {{
{ind}    const int kp_r = {s_r}, kp_c = {s_c};
{ind}    const {ti} {iname} = ({ti})(kp_i0 + kp_r);
{ind}    const {tj} {jname} = ({tj})(kp_j0 + kp_c);
{ind}    if ({iname} < {mi} && {jname} < {nj}) {{
{decls}{deep}{stmt}
{ind}    }}
{ind}  }}
{ind}  __syncthreads();
{ind}}}
{outer}}}"#
    );
    let mut source = k.text.to_string();
    source.replace_range(k.body().byte_range(), &text);
    Some(Rewrite {
        source,
        note: format!(
            "32x33 shared tiles: loads along {}, stores along {}",
            if load_j { jname } else { iname },
            if store_j { jname } else { iname }
        ),
    })
}

impl Recipe for TiledTranspose {
    fn name(&self) -> &'static str {
        "TiledTranspose"
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[kernelpro_source::kernel_model::pattern::Pattern::Transpose]
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::UncoalescedAccess, Code::Uncoalesced, Code::MemoryCoalescing]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        super::with_units_view(text, kernel, |k| {
            let Some(u) = units(k) else { return Vec::new() };
            rewrite(k, &u)
                .map(|rw| launch_variants(k, &rw, &u, Tuning::Tiles { threads: 256, units: 1024 }))
                .unwrap_or_default()
        })
    }
}
