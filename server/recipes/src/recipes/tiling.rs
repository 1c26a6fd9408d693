//! Shared-memory tiling of the naive matrix multiply
//! `for (k) acc += A[row*N+k] * B[k*N+col]` (row, col from .y, .x) with a
//! square 16 or 32 block: tiles of A and B staged through shared memory, with
//! bounds checks so any N and the same grid stay correct.

use crate::kernel::Kernel;
use crate::syntax::{compact, indent_at, single_statement, statements};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use tree_sitter::Node;

pub struct SharedTiling;

struct Matmul<'t> {
    guard: Node<'t>,
    acc_decl: Node<'t>,
    names: [String; 8],
}

fn matches<'t>(k: &'t Kernel) -> Option<Matmul<'t>> {
    let t = k.text;
    let [d1, d2, guard] = statements(k.body())[..] else { return None };
    let (row, col) = (
        k.index_decl(d1, "y").or_else(|| k.index_decl(d2, "y"))?,
        k.index_decl(d1, "x").or_else(|| k.index_decl(d2, "x"))?,
    );
    if guard.kind() != "if_statement" || guard.child_by_field_name("alternative").is_some() {
        return None;
    }
    let cond = compact(t, guard.child_by_field_name("condition")?.child_by_field_name("value")?);
    let n = cond.split_once('<')?.1.split("&&").next()?.to_string();
    if cond != format!("{row}<{n}&&{col}<{n}") && cond != format!("{col}<{n}&&{row}<{n}") {
        return None;
    }
    let [acc_decl, loop_, store] = statements(guard.child_by_field_name("consequence")?)[..] else { return None };
    let acc_init = acc_decl.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let acc = k.text_of(acc_init.child_by_field_name("declarator")?).to_string();
    let ty = k.text_of(acc_decl.child_by_field_name("type")?).to_string();
    let zero = ["0", "0.f", "0.0f", "0.0", "0.", "0.0F", "0.F"]
        .contains(&compact(t, acc_init.child_by_field_name("value")?).as_str());
    let kv = k
        .text_of(
            statements(loop_.child_by_field_name("initializer")?)
                .into_iter()
                .find(|n| n.kind() == "init_declarator")?
                .child_by_field_name("declarator")?,
        )
        .to_string();
    let step = compact(t, loop_.child_by_field_name("update")?);
    let loop_ok = loop_.kind() == "for_statement"
        && compact(t, loop_.child_by_field_name("condition")?) == format!("{kv}<{n}")
        && [format!("++{kv}"), format!("{kv}++"), format!("{kv}+=1")].contains(&step);
    let body = compact(t, single_statement(loop_.child_by_field_name("body")?)?);
    let (a, rest) = body.strip_prefix(&format!("{acc}+="))?.split_once('[')?;
    let (b, _) = rest.split_once("]*")?.1.split_once('[')?;
    let c = compact(t, store).split('[').next()?.to_string();
    let body_ok = body == format!("{acc}+={a}[{row}*{n}+{kv}]*{b}[{kv}*{n}+{col}];")
        && compact(t, store) == format!("{c}[{row}*{n}+{col}]={acc};");
    let typed = |p: &str| k.param(p).is_some_and(|p| p.pointer && p.base == ty);
    let scalar_n = k.param(&n).is_some_and(|p| !p.pointer);
    (zero
        && loop_ok
        && body_ok
        && typed(a)
        && typed(b)
        && typed(&c)
        && scalar_n
        && ["float", "double"].contains(&ty.as_str()))
    .then(|| Matmul { guard, acc_decl, names: [row, col, n, a.to_string(), b.to_string(), c, ty, acc] })
}

impl Recipe for SharedTiling {
    fn name(&self) -> &'static str {
        "SharedTiling"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Rewrite
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::SharedMemTiling, Code::HighDRAMThroughput, Code::MemoryCoalescing, Code::Uncoalesced]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else { return Vec::new() };
        let tile = match k.fixed_block() {
            Some([b, c, 1]) if b == c && (b == 16 || b == 32) => b,
            _ => return Vec::new(),
        };
        let Some(m) = matches(&k) else { return Vec::new() };
        let [row, col, n, a, b, c, ty, acc_name] = &m.names;
        let i = indent_at(text, m.guard.start_byte());
        let acc = k.text_of(m.acc_decl);
        let body = [
            format!("__shared__ {ty} kp_As[{tile}][{tile}];"),
            format!("__shared__ {ty} kp_Bs[{tile}][{tile}];"),
            "const int kp_tx = threadIdx.x, kp_ty = threadIdx.y;".to_string(),
            acc.to_string(),
            format!("for (int kp_t = 0; kp_t < {n}; kp_t += {tile}) {{"),
            format!("  kp_As[kp_ty][kp_tx] = ({row} < {n} && kp_t + kp_tx < {n}) ? {a}[{row} * {n} + kp_t + kp_tx] : {ty}(0);"),
            format!("  kp_Bs[kp_ty][kp_tx] = (kp_t + kp_ty < {n} && {col} < {n}) ? {b}[(kp_t + kp_ty) * {n} + {col}] : {ty}(0);"),
            "  __syncthreads();".to_string(),
            "#pragma unroll".to_string(),
            format!("  for (int kp_k = 0; kp_k < {tile}; ++kp_k) {acc_name} += kp_As[kp_ty][kp_k] * kp_Bs[kp_k][kp_tx];"),
            "  __syncthreads();".to_string(),
            "}".to_string(),
            format!("if ({row} < {n} && {col} < {n}) {c}[{row} * {n} + {col}] = {acc_name};"),
        ]
        .iter()
        .enumerate()
        .map(|(j, l)| if j == 0 || l.starts_with('#') { l.clone() } else { format!("{i}{l}") })
        .collect::<Vec<_>>()
        .join("\n");
        let mut source = text.to_string();
        source.replace_range(m.guard.byte_range(), &body);
        vec![Rewrite { source, note: format!("{tile}x{tile} shared-memory tiles of {a} and {b}") }]
    }
}
