//! Thread-per-unit kernels made grid-stride.
//!
//! [`GridStrideMap`]: a map (no loop long enough for a warp, see
//! [`super::WarpUnits`]) walks its units with a grid stride, so the tuner may
//! launch a few waves of full blocks instead of one thread per element.
//!
//! [`BlockReduce`]: a kernel whose only store is one `atomicAdd(ADDR, V)` into
//! an address that is the same for every unit (a sum into `out[0]`) adds its
//! units' values in a register instead, then combines them with warp
//! shuffles, a shared array of warp sums and one atomic per block: on a 16M
//! element sum, 16M atomics on one address become a few hundred.

use super::launch::{Tuning, launch_variants};
use super::units_text::{UnitsText, render};
use super::{BLOCK_THREADS, BLOCK_TID};
use crate::kernel::Kernel;
use crate::syntax::{atomic_add, descendants, indent_at, uses};
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use kernelpro_source::units::recognize::{Piece, Units, assigned_in, names_in, stores, units, whole_warps};
use tree_sitter::Node;

pub struct GridStrideMap;
pub struct BlockReduce;

/// Types `atomicAdd` and `__shfl_down_sync` both take.
const SUM_TYPES: &[&str] = &[
    "float",
    "double",
    "int",
    "unsigned",
    "unsigned int",
    "unsigned long long",
    "unsigned long long int",
    "long long",
];

/// The type a file-level `typedef T name;` names (`typedef float real;`), spaces collapsed.
fn typedef_of(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("typedef ")?.trim_end().strip_suffix(';')?;
        let (ty, n) = rest.rsplit_once(char::is_whitespace)?;
        (n == name).then(|| ty.split_whitespace().collect::<Vec<_>>().join(" "))
    })
}

/// The unit loop around `lines` (each already indented text), re-binding the user's indices.
pub(super) fn unit_loop(k: &Kernel, u: &Units, lines: &[String], head: &str, tail: &str, label: &str) -> String {
    unit_loop_dividing(k, u, lines, head, tail, label, &IndexDivisions::default())
}

/// The unit's statements as a loop body indented by `ind`: the user's indices bound from `kp_u`,
/// then `lines`.
fn unit_body(u: &Units, lines: &[String], ind: &str) -> String {
    u.rebind("kp_u").lines().map(str::to_string).chain(lines.iter().cloned()).map(|l| format!("{ind}{l}\n")).collect()
}

/// [`unit_loop`] where `lines` name the counters of `divisions` (the unit's remainder, quotient
/// and quotient's remainder by divisors the same for every unit): kept up to date as the loop
/// strides, not divided.
fn unit_loop_dividing(
    k: &Kernel,
    u: &Units,
    lines: &[String],
    head: &str,
    tail: &str,
    label: &str,
    divisions: &IndexDivisions,
) -> String {
    let body = k.body();
    let outer = indent_at(k.text, body.start_byte());
    let ind = format!("{outer}  ");
    let ind2 = format!("{ind}  ");
    let inner = unit_body(u, lines, &ind2);
    let head: String = head.lines().map(|l| format!("{ind}{l}\n")).collect();
    let tail: String = tail.lines().map(|l| format!("{ind}{l}\n")).collect();
    let prologue = u.prologue(k, &ind).unwrap_or_default();
    let (tid, threads) = (u.grid_tid(), u.grid_threads());
    let (counters, step) = divisions.counters(&ind, &tid, &threads);
    format!(
        "{{\n{ind}// {label} (kernelpro).\n{prologue}{head}{counters}{ind}for (long long kp_u = {tid}; kp_u < {}; kp_u += {threads}{step}) {{\n{inner}{ind}}}\n{tail}{outer}}}",
        u.count(),
    )
}

/// A unit's index divided (`i / cols`) or reduced (`i % cols`, `(i / w) % h`) by divisors the
/// same for every unit, as in a broadcast (`t[i % cols]`) or an index split into coordinates:
/// each a 64-bit division per unit where the index is wide, dozens of instructions, though the
/// loop only ever adds the grid's size to the index. `edits` name counters instead, which
/// [`unit_loop_dividing`] keeps up to date; a divisor that is not positive (or past `long long`)
/// takes the division as written.
#[derive(Default)]
struct IndexDivisions {
    /// Each divisor's text and whether the body takes its quotient.
    divisors: Vec<(String, bool)>,
    /// `(i / divisors[j]) % d`: (j, d's text).
    nested: Vec<(usize, String)>,
    edits: Vec<(std::ops::Range<usize>, String)>,
}

impl IndexDivisions {
    fn of(k: &Kernel, u: &Units, nodes: &[Node]) -> IndexDivisions {
        let mut out = IndexDivisions::default();
        let ([index], true) = (&u.indices[..], u.fixed.is_empty()) else { return out };
        // The index must be the unit's own throughout: not declared again in an inner scope, not assigned.
        let shadowed =
            nodes.iter().any(|n| kernelpro_source::units::recognize::declared_in(k, *n).contains(&index.name));
        let assigned = nodes.iter().any(|n| assigned_in(k, *n).contains(&index.name.as_str()));
        if shadowed || assigned {
            return out;
        }
        let is_index = |n: Node| n.kind() == "identifier" && k.text_of(n) == index.name;
        let text = |n: Node| k.text_of(n).split_whitespace().collect::<Vec<_>>().join(" ");
        for d in nodes.iter().flat_map(|n| descendants(*n)) {
            // An expression already rewritten holds this one (`i / w` in `(i / w) % h`).
            if out.edits.iter().any(|(r, _)| r.contains(&d.start_byte())) {
                continue;
            }
            let expr = k.text_of(d);
            let split = |d, want| split_invariant(k, u, d, want);
            let quotient = |q| split(q, "/").filter(|(l, _)| is_index(*l)).map(|(_, by)| by);
            let edit = if let Some((by, m)) = split(d, "%").and_then(|(q, m)| Some((quotient(q)?, m))) {
                let j = out.divisor(text(by), false);
                out.nested.push((j, text(m)));
                let n = out.nested.len() - 1;
                format!("(kp_dok{j} && kp_nok{n} ? (decltype({expr}))kp_qm{n} : ({expr}))")
            } else if let Some((_, by)) = split(d, "%").filter(|(l, _)| is_index(*l)) {
                let j = out.divisor(text(by), false);
                format!("(kp_dok{j} ? (decltype({expr}))kp_r{j} : ({expr}))")
            } else if let Some(by) = quotient(d) {
                let j = out.divisor(text(by), true);
                format!("(kp_dok{j} ? (decltype({expr}))kp_q{j} : ({expr}))")
            } else {
                continue;
            };
            out.edits.push((d.byte_range(), edit));
        }
        out
    }

    /// The index of divisor `d`, added where new; `quotient`: the body takes the quotient.
    fn divisor(&mut self, d: String, quotient: bool) -> usize {
        let j = self.divisors.iter().position(|x| x.0 == d).unwrap_or_else(|| {
            self.divisors.push((d, false));
            self.divisors.len() - 1
        });
        self.divisors[j].1 |= quotient;
        j
    }

    /// The edits inside `range`.
    fn within(&self, range: std::ops::Range<usize>) -> Vec<(std::ops::Range<usize>, String)> {
        self.edits.iter().filter(|(r, _)| range.start <= r.start && r.end <= range.end).cloned().collect()
    }

    /// The counters' declarations before the loop (the first unit `tid`), and what the loop's
    /// step (the grid's `threads`) adds to them after `kp_u += threads`.
    fn counters(&self, ind: &str, tid: &str, threads: &str) -> (String, String) {
        let (mut decls, mut step) = (String::new(), String::new());
        // Each nested counter's step first; a remainder's wrap then carries into it.
        for (n, (j, m)) in self.nested.iter().enumerate() {
            decls.push_str(&format!(
                "{ind}const long long kp_nd{n} = (long long)({m});\n{ind}const bool kp_nok{n} = kp_nd{n} > 0;\n{ind}const long long kp_ndd{n} = kp_nok{n} ? kp_nd{n} : 1;\n"
            ));
            let _ = j;
            step.push_str(&format!(", kp_qm{n} += kp_qms{n}"));
        }
        for (j, (d, quotient)) in self.divisors.iter().enumerate() {
            decls.push_str(&format!(
                "{ind}const long long kp_d{j} = (long long)({d});\n{ind}const bool kp_dok{j} = kp_d{j} > 0;\n{ind}const long long kp_dd{j} = kp_dok{j} ? kp_d{j} : 1;\n{ind}long long kp_r{j} = {tid} % kp_dd{j};\n{ind}const long long kp_rs{j} = {threads} % kp_dd{j};\n"
            ));
            let mut carry: Vec<String> = Vec::new();
            if *quotient {
                decls.push_str(&format!(
                    "{ind}long long kp_q{j} = {tid} / kp_dd{j};\n{ind}const long long kp_qs{j} = {threads} / kp_dd{j};\n"
                ));
                step.push_str(&format!(", kp_q{j} += kp_qs{j}"));
                carry.push(format!("++kp_q{j}"));
            }
            for (n, _) in self.nested.iter().enumerate().filter(|(_, (of, _))| of == &j) {
                decls.push_str(&format!(
                    "{ind}long long kp_qm{n} = ({tid} / kp_dd{j}) % kp_ndd{n};\n{ind}const long long kp_qms{n} = ({threads} / kp_dd{j}) % kp_ndd{n};\n"
                ));
                carry.push(format!("++kp_qm{n}"));
            }
            step.push_str(&format!(", kp_r{j} += kp_rs{j}"));
            match carry.is_empty() {
                true => step.push_str(&format!(", kp_r{j} -= kp_r{j} >= kp_dd{j} ? kp_dd{j} : 0LL")),
                false => {
                    step.push_str(&format!(", kp_r{j} >= kp_dd{j} ? (kp_r{j} -= kp_dd{j}, {}) : 0LL", carry.join(", ")))
                }
            }
        }
        for n in 0..self.nested.len() {
            step.push_str(&format!(", kp_qm{n} -= kp_qm{n} >= kp_ndd{n} ? kp_ndd{n} : 0LL"));
        }
        (decls, step)
    }
}

fn map_rewrites(k: &Kernel) -> Vec<Rewrite> {
    let Some(u) = units(k) else { return Vec::new() };
    let ind2 = format!("{}    ", indent_at(k.text, k.body().start_byte()));
    let divisions = IndexDivisions::of(k, &u, &u.nodes());
    let (mut lines, mut counted) = (Vec::new(), Vec::new());
    for p in &u.body {
        // A long loop per unit is WarpUnits' case; a map's loops are short or absent.
        if let Piece::Node(n) = p
            && descendants(*n).into_iter().any(|d| d.kind() == "for_statement" && !short_loop(k, d))
        {
            return Vec::new();
        }
        let edits = match p {
            Piece::Node(n) => divisions.within(n.byte_range()),
            _ => Vec::new(),
        };
        let (Some(text), Some(counted_text)) = (render(k, *p, &[], &ind2), render(k, *p, &edits, &ind2)) else {
            return Vec::new();
        };
        lines.push(text);
        counted.push(counted_text);
    }
    let mut out = Vec::new();
    // The float4 form, one or two float4 a thread a step (a parameter of the form: two keep the
    // same bytes in flight with half the threads).
    for (per, what, tuning) in
        [(1, "four units a step", Tuning::Vec4Threads), (2, "two float4 of units a thread a step", Tuning::Vec4Pairs)]
    {
        let Some(text) = vectorized(k, &u, &lines, per) else { continue };
        let mut source = k.text.to_string();
        source.replace_range(k.body().byte_range(), &text);
        let note = format!(
            "grid-stride map over ({}), {what} through 128-bit streaming loads and stores",
            u.names().join(", ")
        );
        out.extend(launch_variants(k, &Rewrite { source, note }, &u, tuning));
    }
    let text = unit_loop_dividing(k, &u, &counted, "", "", "grid-stride over the units", &divisions);
    let mut source = k.text.to_string();
    source.replace_range(k.body().byte_range(), &text);
    let note = format!("grid-stride map over ({})", u.names().join(", "));
    out.extend(launch_variants(k, &Rewrite { source, note }, &u, Tuning::Threads));
    out
}

/// The map with four consecutive units a step: every buffer is `float` and
/// touched only at the unit's own index (`x[i]`), stores are unconditional
/// top-level `y[i] = e;` and a stored buffer is read only before its first
/// store. Loads become one `float4` (`__ldcs`), each unit's statements run on
/// its component, stores gather into a `float4` (`__stcs`); the units past the
/// last multiple of four run the original statements. `lines` is the scalar
/// body for that tail.
fn vectorized(k: &Kernel, u: &Units, lines: &[String], per: usize) -> Option<String> {
    let [index] = &u.indices[..] else { return None };
    if !u.fixed.is_empty() {
        return None;
    }
    let i = index.name.as_str();
    let nodes: Vec<Node> = u.only_nodes()?;
    let mut reads: Vec<String> = Vec::new();
    let mut writes: Vec<(String, usize)> = Vec::new();
    let mut edits_of: Vec<Vec<(std::ops::Range<usize>, String)>> = vec![Vec::new(); nodes.len()];
    for (at, n) in nodes.iter().enumerate() {
        if descendants(*n).iter().any(|d| {
            matches!(
                d.kind(),
                "return_statement"
                    | "continue_statement"
                    | "break_statement"
                    | "goto_statement"
                    | "pointer_expression"
                    | "update_expression"
            )
        }) {
            return None;
        }
        for d in descendants(*n) {
            if d.kind() == "assignment_expression"
                && d.child_by_field_name("left").is_some_and(|l| l.kind() == "subscript_expression")
            {
                let top = d.parent().is_some_and(|p| p.kind() == "expression_statement" && p == *n);
                if !top || d.child_by_field_name("operator").is_none_or(|o| k.text_of(o) != "=") {
                    return None;
                }
            }
            if d.kind() != "subscript_expression" {
                continue;
            }
            let p = k.text_of(d.child_by_field_name("argument")?);
            let idx = d
                .child_by_field_name("indices")
                .and_then(|x| x.named_child(0))
                .map(|x| kernelpro_source::units::recognize::flat(k, x))?;
            if idx != i || k.param(p).is_none_or(|q| !q.pointer || q.base != "float") {
                return None;
            }
            let stored = d
                .parent()
                .is_some_and(|a| a.kind() == "assignment_expression" && a.child_by_field_name("left") == Some(d));
            if stored {
                if !writes.iter().any(|(w, _)| w == p) {
                    writes.push((p.to_string(), d.parent()?.end_byte()));
                }
                edits_of[at].push((d.byte_range(), format!("kp_o_{p}.kp_c")));
            } else {
                if writes.iter().any(|(w, end)| w == p && d.start_byte() > *end) {
                    return None;
                }
                if !reads.iter().any(|r| r == p) {
                    reads.push(p.to_string());
                }
                edits_of[at].push((d.byte_range(), format!("kp_i_{p}.kp_c")));
            }
        }
    }
    if writes.is_empty() {
        return None;
    }
    let outer = indent_at(k.text, k.body().start_byte());
    let ind = format!("{outer}  ");
    let ind2 = format!("{ind}  ");
    let ind3 = format!("{ind2}  ");
    let units = u.count();
    // One float4 step of vector `v` (`kp_v`, `kp_w`, ...) with names suffixed `sfx`: its loads, its
    // units' statements on their components, its stores, each indented by `at`.
    let index_used = nodes
        .iter()
        .zip(&edits_of)
        .any(|(n, edits)| uses(*n, k.text, i).iter().any(|u| !edits.iter().any(|(r, _)| r.contains(&u.start_byte()))));
    let parts = |v: &str, sfx: &str, at: &str| -> Option<(String, String, String)> {
        let at2 = format!("{at}  ");
        let mut loads = String::new();
        for r in &reads {
            loads.push_str(&format!(
                "{at}const float4 kp_i_{r}{sfx} = __ldcs(reinterpret_cast<const float4*>({r}) + {v});\n"
            ));
        }
        let mut compute = String::new();
        for (w, _) in &writes {
            compute.push_str(&format!("{at}float4 kp_o_{w}{sfx};\n"));
        }
        // The unit's index is bound in each component only where a statement still names it
        // outside the loads and stores that became components: an unused local is an nvcc
        // warning (#177-D) on every candidate.
        for (lane, c) in ["x", "y", "z", "w"].iter().enumerate() {
            compute.push_str(&format!("{at}{{\n"));
            if index_used {
                compute.push_str(&format!("{at2}const {} {i} = ({})({v} * 4 + {lane});\n", index.ty, index.ty));
            }
            for (n_at, n) in nodes.iter().enumerate() {
                let edits: Vec<_> = edits_of[n_at]
                    .iter()
                    .map(|(r, w)| (r.clone(), w.replace(".kp_c", &format!("{sfx}.{c}"))))
                    .collect();
                compute.push_str(&format!("{at2}{}\n", render(k, Piece::Node(*n), &edits, &at2)?));
            }
            compute.push_str(&format!("{at}}}\n"));
        }
        let mut stores = String::new();
        for (w, _) in &writes {
            stores.push_str(&format!("{at}__stcs(reinterpret_cast<float4*>({w}) + {v}, kp_o_{w}{sfx});\n"));
        }
        Some((loads, compute, stores))
    };
    let (tid, threads) = (u.grid_tid(), u.grid_threads());
    let (step, what, stride) = if per <= 1 {
        let (loads, compute, stores) = parts("kp_v", "", &ind2)?;
        (format!("{loads}{compute}{stores}"), "four a step".to_string(), threads.clone())
    } else {
        // `per` vectors a step, the grid's threads adjacent for each (coalesced): where all are in
        // range, every load first (all in flight at once), then the units, then the stores; the
        // step past the last whole one takes its vectors one at a time.
        let names: Vec<String> =
            (0..per).map(|p| if p == 0 { "kp_v".to_string() } else { format!("kp_v{p}") }).collect();
        let mut whole = String::new();
        let (mut loads, mut compute, mut stores) = (String::new(), String::new(), String::new());
        for (p, v) in names.iter().enumerate().skip(1) {
            whole.push_str(&format!("{ind2}const long long {v} = kp_v + {p}LL * ({threads});\n"));
        }
        for (p, v) in names.iter().enumerate() {
            let (l, c, st) = parts(v, &format!("_{p}"), &ind3)?;
            loads.push_str(&l);
            compute.push_str(&c);
            stores.push_str(&st);
        }
        let ind4 = format!("{ind3}  ");
        let (l, c, st) = parts("kp_w", "", &ind4)?;
        let last = names.last().expect("per > 1");
        let step = format!(
            "{whole}{ind2}if ({last} < kp_n4) {{\n{loads}{compute}{stores}{ind2}}} else {{\n{ind3}for (long long kp_w = kp_v; kp_w < kp_n4; kp_w += {threads}) {{\n{l}{c}{st}{ind3}}}\n{ind2}}}\n"
        );
        (step, format!("{per} float4 a thread a step"), format!("{per}LL * ({threads})"))
    };
    let tail = unit_body(u, lines, &ind2);
    // Every buffer a float4 touches must be 16-byte aligned: else every unit takes the scalar loop.
    let aligned = crate::access::aligned_16(reads.iter().chain(writes.iter().map(|(w, _)| w)).map(String::as_str));
    Some(format!(
        "{{\n{ind}// grid-stride over the units, {what} through float4 where aligned (kernelpro).\n{}{ind}const long long kp_n4 = {aligned} ? ({units}) / 4 : 0;\n{ind}for (long long kp_v = {tid}; kp_v < kp_n4; kp_v += {stride}) {{\n{step}{ind}}}\n{ind}for (long long kp_u = kp_n4 * 4 + {tid}; kp_u < {units}; kp_u += {threads}) {{\n{tail}{ind}}}\n{outer}}}",
        u.prologue(k, &ind)?,
    ))
}

/// A `for` bounded by an integer literal below 64, or by a scalar parameter every launch of the
/// spec sets below 64 (a pooling window's `k`): a few steps per unit, a map's work.
fn short_loop(k: &Kernel, f: Node) -> bool {
    let cond = f.child_by_field_name("condition").map(kernelpro_source::units::recognize::strip_parens);
    let Some(bound) = cond.and_then(|c| c.child_by_field_name("right")) else { return false };
    let text = k.text_of(bound).trim();
    if let Ok(n) = text.parse::<i64>() {
        return n < 64;
    }
    k.param(text).is_some_and(|p| !p.pointer)
        && k.scalar_values(text).is_some_and(|vs| vs.iter().all(|v| (0..64).contains(v)))
}

fn reduce_rewrites(k: &Kernel) -> Vec<Rewrite> {
    let Some(u) = units(k) else { return Vec::new() };
    if !whole_warps(k) {
        return Vec::new();
    }
    let nodes: Vec<Node> = u.nodes();
    let all_stores: Vec<_> = nodes.iter().flat_map(|n| stores(k, *n)).collect();
    let [(f, call)] = &all_stores[..] else {
        return Vec::new();
    };
    if f != "atomicAdd" {
        return Vec::new();
    }
    let Some(st) = call.parent().filter(|s| s.kind() == "expression_statement") else {
        return Vec::new();
    };
    let Some((addr, value)) = atomic_add(k.text, st) else {
        return Vec::new();
    };
    // The address is the same for every unit: parameters and literals only, or
    // what the model sees as a constant offset from a buffer (`T* acc = result + 0;`).
    let addr_names = names_in(k, addr);
    // A launch's fixed row (`row = blockIdx.y`) is the same for all of a block's units too.
    let (addr_text, buffer) = if addr_names.iter().all(|n| k.param(n).is_some() || u.fixed.iter().any(|f| f.0 == *n))
        && !descendants(addr).iter().any(|d| d.kind() == "call_expression")
    {
        let Some(p) = addr_names.iter().find_map(|n| k.param(n).filter(|p| p.pointer)) else { return Vec::new() };
        (k.text_of(addr).to_string(), p.name.clone())
    } else {
        let model = k.model();
        let found = model.as_ref().and_then(|m| {
            m.accesses.iter().find(|a| {
                a.is_atomic()
                    && a.text.split_whitespace().collect::<String>()
                        == k.text_of(*call).split_whitespace().collect::<String>()
            })
        });
        let Some((base, c)) = found
            .and_then(|a| Some((a.base.clone(), a.index.as_constant()?)))
            .filter(|(b, _)| k.param(b).is_some_and(|p| p.pointer))
        else {
            return Vec::new();
        };
        (format!("&{base}[{c}]"), base)
    };
    let Some(p) = k.param(&buffer) else { return Vec::new() };
    // A template's element type is the one the spec instantiates.
    let ty = p.base.clone();
    if !(SUM_TYPES.contains(&ty.as_str())
        || k.func.is_template && k.buffer_type(&buffer).is_some_and(|t| SUM_TYPES.contains(&t))
        || typedef_of(k.text, &ty).is_some_and(|t| SUM_TYPES.contains(&t.as_str())))
    {
        return Vec::new();
    }
    let ind2 = format!("{}    ", indent_at(k.text, k.body().start_byte()));
    // A floating sum's divisor that is the same for every unit (a mean's `/ n`) divides the
    // thread's sum once, not every term: a division per element is dozens of instructions.
    let float_sum = FLOAT_SUMS.contains(&ty.as_str())
        || k.func.is_template && k.buffer_type(&buffer).is_some_and(|t| FLOAT_SUMS.contains(&t))
        || typedef_of(k.text, &ty).is_some_and(|t| FLOAT_SUMS.contains(&t.as_str()));
    let (term_node, divisor) = match invariant_divisor(k, &u, value) {
        Some((num, den)) if float_sum => (num, Some(k.text_of(den))),
        _ => (value, None),
    };
    let term = k.text_of(term_node);
    // The body as written (for the four-a-step form's tail) and with its index divisions
    // kept as counters (the unit loop's).
    let divisions = IndexDivisions::of(k, &u, &nodes);
    let (mut lines, mut counted) = (Vec::new(), Vec::new());
    for p in &u.body {
        let (edits, counted_edits) = match p {
            Piece::Node(n) if n.byte_range().contains(&st.start_byte()) => {
                let counted_term = crate::syntax::edited_within(
                    k.text,
                    term_node.byte_range(),
                    divisions.within(term_node.byte_range()),
                );
                let mut around = divisions.within(n.byte_range());
                around.retain(|(r, _)| r.end <= st.start_byte() || r.start >= st.end_byte());
                around.push((st.byte_range(), format!("kp_acc += {counted_term};")));
                (vec![(st.byte_range(), format!("kp_acc += {term};"))], around)
            }
            Piece::Node(n) => (vec![], divisions.within(n.byte_range())),
            _ => (vec![], vec![]),
        };
        let (Some(text), Some(counted_text)) = (render(k, *p, &edits, &ind2), render(k, *p, &counted_edits, &ind2))
        else {
            return Vec::new();
        };
        lines.push(text);
        counted.push(counted_text);
    }
    let head = format!("{ty} kp_acc = 0;\n");
    let addr = addr_text.as_str();
    let divide = divisor.map(|d| format!("kp_acc = kp_acc / ({d});\n")).unwrap_or_default();
    let tail = format!(
        "{divide}__shared__ {ty} kp_part[32];\n\
         const unsigned kp_tid = {BLOCK_TID};\n\
         for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_acc += __shfl_down_sync(0xffffffffu, kp_acc, kp_o);\n\
         if ((kp_tid & 31u) == 0) kp_part[kp_tid >> 5] = kp_acc;\n\
         __syncthreads();\n\
         if (kp_tid < 32u) {{\n  {ty} kp_v = kp_tid < {BLOCK_THREADS} / 32u ? kp_part[kp_tid] : ({ty})0;\n  for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);\n  if (kp_tid == 0) atomicAdd({addr}, kp_v);\n}}\n"
    );
    let text = unit_loop_dividing(
        k,
        &u,
        &counted,
        &head,
        &tail,
        "grid-stride sum, warp shuffles, one atomic per block",
        &divisions,
    );
    let mut source = k.text.to_string();
    source.replace_range(k.body().byte_range(), &text);
    let note = format!("hierarchical reduction into {addr}: register sum, warp shuffles, one atomicAdd per block");
    let mut out = launch_variants(k, &Rewrite { source, note }, &u, Tuning::Reduce);
    if let Some(text) = vectorized_sum(k, &u, st, term_node, &lines, &head, &tail) {
        let mut source = k.text.to_string();
        source.replace_range(k.body().byte_range(), &text);
        let note = format!(
            "hierarchical reduction into {addr}: register sum of four units a step through 128-bit loads, warp shuffles, one atomicAdd per block"
        );
        out.extend(launch_variants(k, &Rewrite { source, note }, &u, Tuning::Reduce));
    }
    out
}

/// The sum with four consecutive units a step, as [`vectorized`] does a map: every buffer the
/// body reads is `float` at the unit's own index (`x[i]`) and nothing is stored but the sum
/// (`st`, the atomic, becomes `kp_acc += term;`). Loads become one `float4` each where every
/// buffer read is 16-byte aligned (checked at run time: else every unit takes the scalar loop),
/// each unit's statements run on its component; the units past the last multiple of four run
/// `lines`, the scalar body.
fn vectorized_sum(
    k: &Kernel,
    u: &Units,
    st: Node,
    term: Node,
    lines: &[String],
    head: &str,
    tail: &str,
) -> Option<String> {
    let [index] = &u.indices[..] else { return None };
    if !u.fixed.is_empty() || !u.restored.is_empty() {
        return None;
    }
    let i = index.name.as_str();
    let nodes: Vec<Node> = u.only_nodes()?;
    let mut reads: Vec<String> = Vec::new();
    // Per node: each read's byte range and its buffer.
    let mut reads_of: Vec<Vec<(std::ops::Range<usize>, String)>> = vec![Vec::new(); nodes.len()];
    let float = |base: &str| base == "float" || typedef_of(k.text, base).is_some_and(|t| t == "float");
    // The atomic's address is the sum's, not a unit's read.
    let address = |d: Node| st.byte_range().contains(&d.start_byte()) && !term.byte_range().contains(&d.start_byte());
    for (at, n) in nodes.iter().enumerate() {
        for d in descendants(*n) {
            if address(d) {
                continue;
            }
            match d.kind() {
                "return_statement" | "continue_statement" | "break_statement" | "goto_statement"
                | "pointer_expression" | "update_expression" => return None,
                "assignment_expression" if d.child_by_field_name("left").is_some_and(|l| l.kind() != "identifier") => {
                    return None;
                }
                "subscript_expression" => {
                    let p = k.text_of(d.child_by_field_name("argument")?);
                    let idx = d
                        .child_by_field_name("indices")
                        .and_then(|x| x.named_child(0))
                        .map(|x| kernelpro_source::units::recognize::flat(k, x))?;
                    if idx != i || k.param(p).is_none_or(|q| !q.pointer || !float(&q.base)) {
                        return None;
                    }
                    if !reads.iter().any(|r| r == p) {
                        reads.push(p.to_string());
                    }
                    reads_of[at].push((d.byte_range(), p.to_string()));
                }
                _ => {}
            }
        }
    }
    if reads.is_empty() {
        return None;
    }
    let outer = indent_at(k.text, k.body().start_byte());
    let ind = format!("{outer}  ");
    let ind2 = format!("{ind}  ");
    let ind3 = format!("{ind2}  ");
    let units = u.count();
    let aligned = crate::access::aligned_16(reads.iter().map(String::as_str));
    let mut step = String::new();
    for r in &reads {
        step.push_str(&format!("{ind2}const float4 kp_i_{r} = __ldcs(reinterpret_cast<const float4*>({r}) + kp_v);\n"));
    }
    let index_used = nodes
        .iter()
        .zip(&reads_of)
        .any(|(n, reads)| uses(*n, k.text, i).iter().any(|u| !reads.iter().any(|(r, _)| r.contains(&u.start_byte()))));
    for (lane, c) in ["x", "y", "z", "w"].iter().enumerate() {
        step.push_str(&format!("{ind2}{{\n"));
        if index_used {
            step.push_str(&format!("{ind3}const {} {i} = ({})(kp_v * 4 + {lane});\n", index.ty, index.ty));
        }
        for (at, n) in nodes.iter().enumerate() {
            let component = |range: std::ops::Range<usize>| -> Vec<(std::ops::Range<usize>, String)> {
                reads_of[at]
                    .iter()
                    .filter(|(r, _)| range.start <= r.start && r.end <= range.end)
                    .map(|(r, p)| (r.clone(), format!("kp_i_{p}.{c}")))
                    .collect()
            };
            let edits: Vec<_> = if n.byte_range().contains(&st.start_byte()) {
                // The atomic's own reads are the term's; the others stay around it.
                let term_text = crate::syntax::edited_within(k.text, term.byte_range(), component(term.byte_range()));
                let mut e: Vec<_> = component(n.byte_range())
                    .into_iter()
                    .filter(|(r, _)| r.end <= st.start_byte() || r.start >= st.end_byte())
                    .collect();
                e.push((st.byte_range(), format!("kp_acc += {term_text};")));
                e
            } else {
                component(n.byte_range())
            };
            step.push_str(&format!("{ind3}{}\n", render(k, Piece::Node(*n), &edits, &ind3)?));
        }
        step.push_str(&format!("{ind2}}}\n"));
    }
    let scalar = unit_body(u, lines, &ind2);
    let head: String = head.lines().map(|l| format!("{ind}{l}\n")).collect();
    let tail: String = tail.lines().map(|l| format!("{ind}{l}\n")).collect();
    Some(format!(
        "{{\n{ind}// grid-stride sum, four units a step through float4 loads where aligned, warp shuffles, one atomic per block (kernelpro).\n{}{head}{ind}const long long kp_n4 = {aligned} ? ({units}) / 4 : 0;\n{ind}for (long long kp_v = {}; kp_v < kp_n4; kp_v += {}) {{\n{step}{ind}}}\n{ind}for (long long kp_u = kp_n4 * 4 + {}; kp_u < {units}; kp_u += {}) {{\n{scalar}{ind}}}\n{tail}{outer}}}",
        u.prologue(k, &ind)?,
        u.grid_tid(),
        u.grid_threads(),
        u.grid_tid(),
        u.grid_threads()
    ))
}

/// `L op R` (parentheses around L dropped) where R is the same for every unit ([`invariant`]).
fn split_invariant<'t>(k: &Kernel, u: &Units, d: Node<'t>, want: &str) -> Option<(Node<'t>, Node<'t>)> {
    let op = d.child_by_field_name("operator").map(|o| k.text_of(o));
    let (l, r) = (d.child_by_field_name("left")?, d.child_by_field_name("right")?);
    (d.kind() == "binary_expression" && op == Some(want) && invariant(k, u, r))
        .then_some((kernelpro_source::units::recognize::strip_parens(l), r))
}

/// The sums a divisor can leave: a float's (an integer sum of quotients is not the quotient of the sum).
const FLOAT_SUMS: &[&str] = &["float", "double"];

/// `value` as `N / D` where D is the same for every unit ([`invariant`]).
fn invariant_divisor<'t>(k: &Kernel<'t>, u: &Units<'t>, value: Node<'t>) -> Option<(Node<'t>, Node<'t>)> {
    let value = kernelpro_source::units::recognize::strip_parens(value);
    if value.kind() != "binary_expression" || value.child_by_field_name("operator").map(|o| k.text_of(o)) != Some("/") {
        return None;
    }
    let (num, den) = (value.child_by_field_name("left")?, value.child_by_field_name("right")?);
    invariant(k, u, den).then_some((num, den))
}

/// Whether `expr` is the same for every unit: literals, scalar parameters, the head's uniform
/// declarations and the fixed block indices, none assigned in the body, with no call or memory read.
fn invariant(k: &Kernel, u: &Units, expr: Node) -> bool {
    let uniform: Vec<String> = u
        .head
        .iter()
        .flat_map(|h| kernelpro_source::units::recognize::declared_in(k, *h))
        .chain(u.fixed.iter().map(|f| f.0.clone()))
        .collect();
    let assigned: Vec<&str> = u.nodes().into_iter().flat_map(|n| assigned_in(k, n)).collect();
    descendants(expr).into_iter().all(|n| match n.kind() {
        "identifier" => {
            let name = k.text_of(n);
            (k.param(name).is_some_and(|p| !p.pointer) || uniform.iter().any(|h| h == name))
                && !assigned.contains(&name)
        }
        "subscript_expression"
        | "call_expression"
        | "assignment_expression"
        | "update_expression"
        | "pointer_expression"
        | "field_expression" => false,
        _ => true,
    })
}

impl Recipe for GridStrideMap {
    fn name(&self) -> &'static str {
        "GridStrideMap"
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[kernelpro_source::kernel_model::pattern::Pattern::Map]
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::TailEffect, Code::LaunchOverhead, Code::OccupancyLimiter]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        super::with_units_view(text, kernel, |k| {
            // Kernels that store through an atomic are BlockReduce's or the histogram recipe's.
            if units(k).is_some_and(|u| {
                u.body
                    .iter()
                    .any(|p| matches!(p, Piece::Node(n) if stores(k, *n).iter().any(|(f, _)| f.starts_with("atomic"))))
            }) {
                return Vec::new();
            }
            map_rewrites(k)
        })
    }
}

impl Recipe for BlockReduce {
    fn name(&self) -> &'static str {
        "BlockReduce"
    }
    fn expert_for(&self) -> &'static [kernelpro_source::kernel_model::pattern::Pattern] {
        &[kernelpro_source::kernel_model::pattern::Pattern::ScalarReduction]
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Structural
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::AtomicContention, Code::ContendedAtomics, Code::WarpStall]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let direct = super::with_units_view(text, kernel, reduce_rewrites);
        if !direct.is_empty() {
            return direct;
        }
        // A block tree whose root is added to a shared address: the same sum, one atomic per element.
        let Some(view) = super::tree_atomic::per_element(text, kernel) else { return direct };
        super::with_units_view(&view, kernel, reduce_rewrites)
            .into_iter()
            .map(|rw| Rewrite {
                source: rw.source,
                note: format!(
                    "each block's shared-memory tree into one atomic read as every element added to the shared address, then {}",
                    rw.note
                ),
            })
            .collect()
    }
}
