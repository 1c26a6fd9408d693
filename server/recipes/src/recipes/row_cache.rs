//! A second pass over a short row that reads what the first pass read, from
//! registers instead of memory: a norm's "sum the squares, then scale each
//! element" reads its row from DRAM twice where the row is too long for the
//! caches between the passes (a thread per position, its 64 features strided
//! by the plane).
//!
//! ```text
//! for (int f = 0; f < C; ++f) s += x[E] * x[E];      T kp_row0[CAP];
//! ...                                          ==>   #pragma unroll
//! for (int f = 0; f < C; ++f) y[E] = x[E] * r;       for (int f = 0; f < CAP; ++f) if (f < C) { kp_row0[f] = x[E]; }
//!                                                    #pragma unroll
//!                                                    for (int f = 0; f < CAP; ++f) { if (!(f < C)) break; s += kp_row0[f] * kp_row0[f]; }
//!                                                    ...
//!                                                    #pragma unroll
//!                                                    for (int f = 0; f < CAP; ++f) { if (!(f < C)) break; y[E] = kp_row0[f] * r; }
//! ```
//!
//! Both loops count `f` from 0 by one under the same bound `C`, a literal up to
//! 64 or a scalar every launch of the spec sets to at most 64 (`CAP`, their
//! largest; the kernel then takes this form only where `C <= CAP`, else runs as
//! written). A read is cached where it is a `const` pointer parameter's, at an
//! index whose other names nothing in the two loops (or between them) assigns
//! and the first loop's body does not declare, and the second loop reads the
//! same text, one of the two on every step (not under a condition): a loop of
//! its own before the first pass then loads it for every step under the bound
//! (addresses the original read too), all loads at once, and the passes read
//! the registers. Fully unrolled, every index is a constant, so the row
//! stays in registers.

use crate::kernel::Kernel;
use crate::syntax::{descendants, edited_within};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use kernelpro_source::units::recognize::{assigned_in, names_in};
use tree_sitter::Node;

pub struct RowInRegisters;

/// The longest row kept in registers (a float each).
const MAX_ROW: i64 = 64;

/// `for (int f = 0; f < B; ++f)`: (f, B), with nothing but that header's update changing `f`.
fn counted<'t>(k: &Kernel<'t>, lp: Node<'t>) -> Option<(&'t str, Node<'t>)> {
    let init = lp.child_by_field_name("initializer").filter(|i| i.kind() == "declaration")?;
    let decl = init.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let var = k.text_of(decl.child_by_field_name("declarator")?);
    if k.text_of(decl.child_by_field_name("value")?).trim() != "0" {
        return None;
    }
    let cond = kernelpro_source::units::recognize::strip_parens(lp.child_by_field_name("condition")?);
    let op = cond.child_by_field_name("operator").map(|o| k.text_of(o));
    if cond.kind() != "binary_expression" || op != Some("<") || k.text_of(cond.child_by_field_name("left")?) != var {
        return None;
    }
    let update: String = k.text_of(lp.child_by_field_name("update")?).split_whitespace().collect();
    if ![format!("++{var}"), format!("{var}++"), format!("{var}+=1")].contains(&update) {
        return None;
    }
    let body = lp.child_by_field_name("body")?;
    if assigns(k, body, var) {
        return None;
    }
    Some((var, cond.child_by_field_name("right")?))
}

/// Whether anything under `node` assigns the local `name`.
fn assigns(k: &Kernel, node: Node, name: &str) -> bool {
    assigned_in(k, node).contains(&name)
}

/// The bound's largest value: a literal, or a scalar parameter's over every launch of the spec.
fn cap(k: &Kernel, bound: Node) -> Option<(i64, bool)> {
    let text = k.text_of(bound).trim();
    if let Ok(n) = text.parse::<i64>() {
        return (1..=MAX_ROW).contains(&n).then_some((n, false));
    }
    k.param(text).filter(|p| !p.pointer)?;
    let values = k.scalar_values(text)?;
    let most = *values.iter().max()?;
    (values.iter().all(|v| (1..=MAX_ROW).contains(v))).then_some((most, true))
}

/// Whether `node` runs on every step of the loop whose body is `body`: no condition, loop or
/// short-circuit between them.
fn every_step(node: Node, body: Node) -> bool {
    let mut at = node;
    while let Some(p) = at.parent() {
        let short_circuit = p.kind() == "binary_expression"
            && p.child_by_field_name("operator").is_some_and(|o| matches!(o.kind(), "&&" | "||"));
        if short_circuit
            || matches!(
                p.kind(),
                "if_statement"
                    | "conditional_expression"
                    | "for_statement"
                    | "while_statement"
                    | "do_statement"
                    | "switch_statement"
                    | "lambda_expression"
            )
        {
            return false;
        }
        if p == body {
            return true;
        }
        at = p;
    }
    false
}

/// The reads of `const` pointer parameters under `node`.
fn const_reads<'t>(k: &Kernel, node: Node<'t>) -> Vec<Node<'t>> {
    descendants(node)
        .into_iter()
        .filter(|d| d.kind() == "subscript_expression")
        // Never a store: nothing is stored through a `const` pointer.
        .filter(|d| {
            let buffer = d.child_by_field_name("argument").map(|a| k.text_of(a)).unwrap_or("");
            k.param(buffer).is_some_and(|p| p.pointer && p.is_const)
        })
        .collect()
}

/// The expression whose value a read gives: the read, or the load intrinsic around its address
/// (`__ldg(&x[i])`, as Ldg writes it: caching `x[i]` alone would pass a register's address to a
/// global load); `None` where its address is taken for anything else.
fn value_of<'t>(k: &Kernel, r: Node<'t>) -> Option<Node<'t>> {
    let Some(p) = r.parent().filter(|p| p.kind() == "pointer_expression") else { return Some(r) };
    let args = p.parent().filter(|a| a.kind() == "argument_list" && a.named_child_count() == 1)?;
    let call = args.parent().filter(|c| c.kind() == "call_expression")?;
    k.text_of(call.child_by_field_name("function")?).starts_with("__ld").then_some(call)
}

fn no_jumps(body: Node) -> bool {
    !descendants(body)
        .into_iter()
        .any(|d| matches!(d.kind(), "break_statement" | "continue_statement" | "return_statement" | "goto_statement"))
}

/// The kernel with its first pair of passes over one row sharing the row's reads.
fn rewrite(k: &Kernel) -> Option<Rewrite> {
    let body = k.body();
    for block in descendants(body).into_iter().filter(|n| n.kind() == "compound_statement") {
        let loops: Vec<Node> =
            block.named_children(&mut block.walk()).filter(|n| n.kind() == "for_statement").collect();
        for (i, first) in loops.iter().enumerate() {
            for second in &loops[i + 1..] {
                if let Some(r) = pair(k, block, *first, *second) {
                    return Some(r);
                }
            }
        }
    }
    None
}

fn pair(k: &Kernel, block: Node, first: Node, second: Node) -> Option<Rewrite> {
    let header = |lp: Node| -> Option<String> {
        let b = lp.child_by_field_name("body")?;
        Some(k.text[lp.start_byte()..b.start_byte()].split_whitespace().collect())
    };
    if header(first)? != header(second)? {
        return None;
    }
    let (var, bound) = counted(k, first)?;
    counted(k, second)?;
    let (most, runtime) = cap(k, bound)?;
    let (body1, body2) = (first.child_by_field_name("body")?, second.child_by_field_name("body")?);
    if !no_jumps(body1) || !no_jumps(body2) {
        return None;
    }
    // Between the passes and in them: what an index names must not change.
    let region_start = first.start_byte();
    let region_end = second.end_byte();
    let region: Vec<Node> = block
        .named_children(&mut block.walk())
        .filter(|n| n.start_byte() >= region_start && n.end_byte() <= region_end)
        .collect();
    let key = |n: Node| -> String { k.text_of(n).split_whitespace().collect() };
    let reads = |lp_body| const_reads(k, lp_body);
    let (reads1, reads2) = (reads(body1), reads(body2));
    let inner: Vec<String> = kernelpro_source::units::recognize::declared_in(k, body1);
    let mut cached: Vec<(String, String)> = Vec::new(); // (read's text, element type)
    for &r in &reads1 {
        let buffer = k.text_of(r.child_by_field_name("argument")?);
        let names = names_in(k, r.child_by_field_name("indices")?);
        let index_names: Vec<&str> = names.iter().copied().filter(|n| *n != var).collect();
        if !names.contains(&var)
            || index_names.iter().any(|n| region.iter().any(|s| assigns(k, *s, n)) || inner.iter().any(|d| d == n))
            || cached.iter().any(|(t, _)| *t == key(r))
        {
            continue;
        }
        // The first pass loads it on every step: one of the passes must read it on every step,
        // so that no address is read that the original did not read.
        let again: Vec<Node> = reads2.iter().copied().filter(|r2| key(*r2) == key(r)).collect();
        let always = reads1.iter().any(|r1| key(*r1) == key(r) && every_step(*r1, body1))
            || again.iter().any(|r2| every_step(*r2, body2));
        if again.is_empty()
            || !always
            || reads1.iter().chain(&reads2).any(|x| key(*x) == key(r) && value_of(k, *x).is_none())
        {
            continue;
        }
        let ty = k.param(buffer)?.base.clone();
        cached.push((key(r), ty));
    }
    if cached.is_empty() {
        return None;
    }
    let slot = |t: &str| cached.iter().position(|(c, _)| c == t);
    let bound_text = k.text_of(bound);
    let ind = crate::syntax::indent_at(k.text, first.start_byte());
    // Before the first pass, the registers; each pass fully unrolled to CAP steps, leaving at its bound.
    let mut edits: Vec<(std::ops::Range<usize>, String)> = cached
        .iter()
        .enumerate()
        .map(|(n, (_, ty))| (first.start_byte()..first.start_byte(), format!("{ty} kp_row{n}[{most}];\n{ind}")))
        .collect();
    for (lp, lp_body, lp_reads, loads) in [(first, body1, &reads1, true), (second, body2, &reads2, false)] {
        let at = lp.start_byte();
        edits.push((at..at, format!("#pragma unroll\n{}", crate::syntax::indent_at(k.text, at))));
        let cond = kernelpro_source::units::recognize::strip_parens(lp.child_by_field_name("condition")?);
        edits.push((cond.child_by_field_name("right")?.byte_range(), most.to_string()));
        let exit = format!("if (!({var} < {bound_text})) break;");
        let compound = lp_body.kind() == "compound_statement";
        if compound {
            edits.push((lp_body.start_byte() + 1..lp_body.start_byte() + 1, format!(" {exit}")));
        } else {
            edits.push((lp_body.start_byte()..lp_body.start_byte(), format!("{{ {exit} ")));
        }
        let occurrences: Vec<(Node, usize)> = lp_reads.iter().filter_map(|&r| Some((r, slot(&key(r))?))).collect();
        if loads {
            // Every cached read loaded in a loop of its own before the first pass, under the bound
            // but with no exit between the loads: they all issue at once. Loaded where the first
            // pass reads them, a `break` before each step kept every load waiting for the last.
            let mut header = k.text[lp.start_byte()..lp_body.start_byte()].to_string();
            let right = cond.child_by_field_name("right")?.byte_range();
            header.replace_range(right.start - lp.start_byte()..right.end - lp.start_byte(), &most.to_string());
            let mut stores = String::new();
            for n in 0..cached.len() {
                let (r, _) = occurrences.iter().find(|(_, m)| *m == n)?;
                stores.push_str(&format!(" kp_row{n}[{var}] = {};", k.text_of(value_of(k, *r)?)));
            }
            edits
                .push((at..at, format!("{header}if ({var} < {bound_text}) {{{stores} }}\n{ind}#pragma unroll\n{ind}")));
        }
        for (r, n) in occurrences {
            edits.push((value_of(k, r)?.byte_range(), format!("kp_row{n}[{var}]")));
        }
        if !compound {
            edits.push((lp_body.end_byte()..lp_body.end_byte(), " }".to_string()));
        }
    }
    let body = k.body();
    let b = body.byte_range();
    let new_body = edited_within(k.text, b.clone(), edits);
    let old_body = &k.text[b.clone()];
    let replaced = if runtime {
        let outer = crate::syntax::indent_at(k.text, body.start_byte());
        format!(
            "{{\n{outer}  // rows of up to {most} in registers; a longer row as written (kernelpro).\n{outer}  if ({bound_text} <= {most}) {new_body} else {old_body}\n{outer}}}"
        )
    } else {
        new_body
    };
    let mut source = k.text.to_string();
    source.replace_range(b, &replaced);
    let names: Vec<&str> = cached.iter().map(|(t, _)| t.as_str()).collect();
    let note =
        format!("the row's second pass reads {} from registers, not memory (rows of up to {most})", names.join(", "));
    Some(Rewrite { source, note })
}

impl Recipe for RowInRegisters {
    fn name(&self) -> &'static str {
        "RowInRegisters"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Rewrite
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::HighDRAMThroughput]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else { return Vec::new() };
        rewrite(&k).into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    const SPEC: &str = "// kernelpro: let C = 64\n// kernelpro: grid = 16\n// kernelpro: block = 256\n\
                        // kernelpro: y = out float[4096 * C]\n// kernelpro: x = in float[4096 * C] uniform(0, 1)\n\
                        // kernelpro: n = 4096\n// kernelpro: c = C\n";

    /// The kernel's rewrite (its body only), or why there is none.
    fn rewritten(kernel: &str) -> String {
        let text = format!("{SPEC}{kernel}");
        match RowInRegisters.rewrite(&text, "norm").first() {
            Some(r) => format!("## {}\n{}", r.note, &r.source[r.source.find("__global__").unwrap()..]),
            None => "no rewrite".into(),
        }
    }

    /// After Ldg (`__ldg(&x[i])`) the whole load is what the register keeps: a register's address
    /// given to `__ldg` failed on the H100 (CUDA_ERROR_INVALID_ADDRESS_SPACE, 36_RMSNorm); an
    /// address taken for anything else keeps the read as written.
    #[test]
    fn a_read_through_ldg_is_cached_whole() {
        let ldg = "__global__ void norm(float* y, const float* x, int n, int c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = 0.0f;
  for (int f = 0; f < c; ++f) { float v = __ldg(&x[(size_t)f * n + i]); s += v * v; }
  float r = rsqrtf(s / c);
  for (int f = 0; f < c; ++f) y[(size_t)f * n + i] = __ldg(&x[(size_t)f * n + i]) * r;
}
";
        let got = rewritten(ldg);
        assert!(got.contains("kp_row0[f] = __ldg(&x[(size_t)f * n + i]);"), "{got}");
        assert!(got.contains("y[(size_t)f * n + i] = kp_row0[f] * r;") && !got.contains("&kp_row"), "{got}");
        let other = ldg.replace("__ldg(&x[(size_t)f * n + i]) * r", "*(&x[(size_t)f * n + i]) * r");
        assert!(!rewritten(&other).contains("&kp_row"), "{}", rewritten(&other));
    }

    #[test]
    fn a_norms_second_pass_reads_its_row_from_registers() {
        let got = rewritten(
            "__global__ void norm(float* y, const float* x, int n, int c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = 0.0f;
  for (int f = 0; f < c; ++f) s += x[(size_t)f * n + i] * x[(size_t)f * n + i];
  float r = rsqrtf(s / c);
  for (int f = 0; f < c; ++f) y[(size_t)f * n + i] = x[(size_t)f * n + i] * r;
}
",
        );
        expect![[r#"
            ## the row's second pass reads x[(size_t)f*n+i] from registers, not memory (rows of up to 64)
            __global__ void norm(float* y, const float* x, int n, int c) {
              // rows of up to 64 in registers; a longer row as written (kernelpro).
              if (c <= 64) {
              int i = blockIdx.x * blockDim.x + threadIdx.x;
              if (i >= n) return;
              float s = 0.0f;
              float kp_row0[64];
              #pragma unroll
              for (int f = 0; f < 64; ++f) if (f < c) { kp_row0[f] = x[(size_t)f * n + i]; }
              #pragma unroll
              for (int f = 0; f < 64; ++f) { if (!(f < c)) break; s += kp_row0[f] * kp_row0[f]; }
              float r = rsqrtf(s / c);
              #pragma unroll
              for (int f = 0; f < 64; ++f) { if (!(f < c)) break; y[(size_t)f * n + i] = kp_row0[f] * r; }
            } else {
              int i = blockIdx.x * blockDim.x + threadIdx.x;
              if (i >= n) return;
              float s = 0.0f;
              for (int f = 0; f < c; ++f) s += x[(size_t)f * n + i] * x[(size_t)f * n + i];
              float r = rsqrtf(s / c);
              for (int f = 0; f < c; ++f) y[(size_t)f * n + i] = x[(size_t)f * n + i] * r;
            }
            }
        "#]]
        .assert_eq(&got);
    }

    #[test]
    fn reads_it_cannot_keep_are_left_as_written() {
        // Both passes reading under a condition, an index that changes between the passes,
        // a buffer that is not const, a row past 64: no rewrite.
        let cases = [
            "  for (int f = 0; f < c; ++f) if (f > 2) s += x[f * n + i];\n  for (int f = 0; f < c; ++f) if (f > 2) y[f * n + i] = x[f * n + i] * s;\n",
            "  for (int f = 0; f < c; ++f) s += x[f * n + i];\n  i += 1;\n  for (int f = 0; f < c; ++f) y[f * n + i] = x[f * n + i] * s;\n",
            "  for (int f = 0; f < 65; ++f) s += x[f * n + i];\n  for (int f = 0; f < 65; ++f) y[f * n + i] = x[f * n + i] * s;\n",
            "  for (int f = 0; f < c; ++f) s += x[f * n + i];\n  for (int f = 1; f < c; ++f) y[f * n + i] = x[f * n + i] * s;\n",
        ];
        for body in cases {
            let kernel = format!(
                "__global__ void norm(float* y, const float* x, int n, int c) {{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  float s = 0.0f;\n{body}}}\n"
            );
            assert_eq!(rewritten(&kernel), "no rewrite", "{body}");
        }
        let not_const = "__global__ void norm(float* y, float* x, int n, int c) {\n  int i = threadIdx.x;\n  float s = 0.0f;\n  for (int f = 0; f < c; ++f) s += x[f * n + i];\n  for (int f = 0; f < c; ++f) y[f * n + i] = x[f * n + i] * s;\n}\n";
        assert_eq!(rewritten(not_const), "no rewrite");
    }

    /// A literal bound needs no run-time check, and the rewrite compiles with the registers kept.
    #[test]
    fn a_literal_row_compiles_without_local_memory() {
        let text = format!(
            "{SPEC}__global__ void norm(float* y, const float* x, int n, int c) {{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n  float m = 0.0f;\n  for (int f = 0; f < 32; f++) m = fmaxf(m, x[f * n + i]);\n  for (int f = 0; f < 32; f++) y[f * n + i] = x[f * n + i] / m;\n}}\n"
        );
        let r = RowInRegisters.rewrite(&text, "norm");
        assert_eq!(r.len(), 1);
        assert!(!r[0].source.contains("<= 32"), "{}", r[0].source);
        assert_eq!(crate::structural::tests::compile_errors(&r[0].source), None);
    }
}
