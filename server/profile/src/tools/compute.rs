//! Compute tools: tensor cores, thread divergence, FP64 promotion, non-fused
//! FP32 arithmetic. The per-line ones read the SASS rows of the source page.

use super::ToolInput;
use super::input::{pct, round2};
use crate::csv_pages::SassRow;
use crate::triage::flop_counts;
use kernelpro_model::{Code, Finding, Severity};

fn executed(r: &SassRow) -> f64 {
    r.num("Instructions Executed").unwrap_or(0.0)
}

/// A multiply-accumulate loop over loaded data on CUDA cores while the
/// tensor pipe idles.
pub fn tensor_core(inp: &ToolInput) -> Vec<Finding> {
    let tensor = inp.profile.first(&[
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    ]);
    if tensor.is_some_and(|t| t >= 1.0) {
        return vec![];
    }
    let warps = inp.num("launch__thread_count").map(|t| t / 32.0).filter(|&w| w > 0.0);
    let Some(source) = inp.source else { return vec![] };
    let mac_line = source
        .own_lines()
        .filter(|l| {
            let rows: Vec<_> = source.instructions_of(l.line).filter(|r| executed(r) > 0.0).collect();
            let fma = rows.iter().any(|r| matches!(r.opcode().split('.').next(), Some("FFMA" | "HFMA2")));
            let load = rows.iter().any(|r| r.opcode().starts_with("LDG") || r.opcode().starts_with("LDS"));
            // Executed many times per warp: the line is a loop body.
            let looped = rows.iter().map(|r| executed(r)).fold(0.0, f64::max) > 16.0 * warps.unwrap_or(f64::INFINITY);
            fma && load && looped
        })
        .max_by(|a, b| {
            let n = |l: u32| source.instructions_of(l).map(executed).sum::<f64>();
            n(a.line).total_cmp(&n(b.line))
        });
    let Some(line) = mac_line else { return vec![] };
    vec![inp
        .finding(Code::TensorCore, Severity::Information, Some(line.line), "a multiply-accumulate loop runs on the FP32 pipe while the tensor cores idle".into())
        .with_evidence("tensor_pipe", pct(tensor.unwrap_or(0.0)))
        .with_guidance("compute the product on tensor cores: wmma/mma.sync fragments with TF32 or BF16 inputs and FP32 accumulators, or call cuBLAS/CUTLASS for the GEMM")]
}

/// A condition that splits the lanes of a warp. Three signs, per line:
/// - a BRA that ncu counts as divergent ("Divergent Branches", against the
///   BRA's executions); pages without that column fall back to a BRA whose
///   predicated-on threads are a middling share of its threads;
/// - predicated code (nvcc turns a short `if` body into `@P` instructions,
///   as in the interleaved reduction) that runs with most lanes off, under a
///   condition that tests the thread index with `%` or `&` (a split inside
///   every warp; `tid < s` only splits one warp, so it is not counted).
pub fn thread_divergence(inp: &ToolInput) -> Vec<Finding> {
    let t = inp.thresholds;
    let efficiency = inp.num("smsp__thread_inst_executed_per_inst_executed.ratio").map(|r| r / 32.0);
    let compute_bound = inp.triage.is_some_and(|tr| tr.class == crate::triage::Class::ComputeBound);
    let gain = efficiency.filter(|_| compute_bound).map(|e| round2(1.0 / e)).filter(|&g| g > 1.05);
    // (line, evidence name, value)
    let mut found: Vec<(u32, &'static str, String)> = Vec::new();
    for r in inp.instructions().iter().filter(|r| r.opcode().starts_with("BRA") && executed(r) > 0.0) {
        let Some(line) = inp.own_line(r) else { continue };
        let splits = match r.num("Divergent Branches") {
            Some(d) => d / executed(r) >= t.divergent_branch_share,
            None => {
                let (Some(threads), Some(taken)) =
                    (r.num("Avg. Threads Executed"), r.num("Avg. Predicated-On Threads Executed"))
                else {
                    continue;
                };
                let share = if threads > 0.0 { taken / threads } else { 0.0 };
                share > t.divergent_branch_min_share && share < 1.0 - t.divergent_branch_min_share
            }
        };
        if splits && !found.iter().any(|(l, ..)| *l == line) {
            let evidence = match r.num("Divergent Branches") {
                Some(d) => ("divergent_branches", format!("{d:.0} of {:.0}", executed(r))),
                None => ("divergent_branches", "a middling share of threads take it".to_string()),
            };
            found.push((line, evidence.0, evidence.1));
        }
    }
    let slots: f64 = inp.instructions().iter().map(|r| executed(r) * 32.0).sum();
    for l in inp.lines() {
        if found.iter().any(|(x, ..)| *x == l.line) || !splits_lanes(&inp.quote(l.line)) {
            continue;
        }
        let rows: Vec<_> = inp.rows_of(l.line).filter(|r| r.text.trim_start().starts_with('@')).collect();
        let exec: f64 = rows.iter().map(|r| executed(r)).sum();
        let on: f64 = rows.iter().filter_map(|r| r.num("Predicated-On Thread Instructions Executed")).sum();
        if exec <= 0.0 || slots <= 0.0 {
            continue;
        }
        let lanes = on / exec;
        let idle_share = (exec * 32.0 - on) / slots;
        if lanes < 32.0 * (1.0 - t.divergent_branch_min_share) && idle_share >= 0.05 {
            found.push((l.line, "lanes_on_per_predicated_instruction", format!("{lanes:.1} of 32")));
        }
    }
    found.sort_by_key(|(l, ..)| *l);
    let uniform = inp.num("smsp__sass_average_branch_targets_threads_uniform.pct");
    // Active threads per warp count predicated-off lanes as active: evidence for branches only.
    let with_common = |f: Finding, text: &str, line: Option<u32>, branch: bool| {
        let mut f = match efficiency.filter(|_| branch) {
            Some(e) => f.with_evidence("active_threads_per_warp", format!("{:.1} of 32", e * 32.0)),
            None => f,
        };
        if let Some(u) = uniform {
            f = f.with_evidence("uniform_branches", pct(u));
        }
        if let Some(g) = gain {
            f = f.with_gain(g);
        }
        // A modulo by a variable is an integer division in SASS (I2F.U32.RP, MUFU.RCP, F2I).
        let division = line.is_some_and(|l| {
            let ops: Vec<&str> = inp.rows_of(l).map(|r| r.opcode()).collect();
            ops.iter().any(|o| o.starts_with("I2F.U32.RP")) && ops.iter().any(|o| o.starts_with("MUFU.RCP"))
        });
        if division {
            f = f.with_evidence(
                "integer_division",
                "the modulo by a variable compiles to a division sequence on every step",
            );
        }
        f.with_guidance(divergence_advice(text))
    };
    if inp.source.is_some() {
        return found
            .into_iter()
            .map(|(l, name, value)| {
                let text = inp.quote(l);
                let message = if name == "divergent_branches" {
                    "divergent branch: the threads of a warp take different paths".to_string()
                } else {
                    format!(
                        "the condition splits the lanes of every warp: {value} lanes do the work of its predicated body"
                    )
                };
                let f =
                    inp.finding(Code::ThreadDivergence, Severity::Warning, Some(l), message).with_evidence(name, value);
                with_common(f, &text, Some(l), name == "divergent_branches")
            })
            .collect();
    }
    match (inp.num("smsp__sass_branch_targets_threads_divergent.sum"), efficiency) {
        (Some(d), Some(e)) if d > 0.0 && e < 0.8 => {
            let f = inp.finding(
                Code::ThreadDivergence,
                Severity::Warning,
                None,
                format!("{d:.0} divergent branch targets; warps run {:.0}% full", e * 100.0),
            );
            vec![with_common(f, "", None, true)]
        }
        _ => vec![],
    }
}

/// A condition that tests the thread index with `%` or `&` (not `&&`), and
/// not on warp granularity (`/ 32`, `>> 5`, a warp id): it splits the
/// lanes of every warp.
fn splits_lanes(text: &str) -> bool {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(cond) = condition(&compact) else { return false };
    let cond = cond.replace("&&", " ");
    let thread = ["threadIdx", "tid", "lane"].iter().any(|v| cond.contains(v));
    let warp_granular = cond.contains("/32") || cond.contains(">>5") || cond.contains("warp");
    thread && !warp_granular && (cond.contains('%') || cond.contains('&'))
}

/// The condition of an `if (…)` (balanced parentheses) or of a `c ? a : b`.
fn condition(compact: &str) -> Option<String> {
    if let Some(rest) = compact.strip_prefix("if(") {
        let mut depth = 1;
        for (i, c) in rest.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(rest[..i].to_string());
                    }
                }
                _ => {}
            }
        }
        return None;
    }
    let (before, _) = compact.split_once('?')?;
    Some(before.rsplit(['=', '(']).next().unwrap_or(before).to_string())
}

/// The fix for the condition's shape: a modulo of the thread index in a
/// reduction is Harris' interleaved addressing; other lane tests want a
/// warp-uniform condition.
fn divergence_advice(text: &str) -> &'static str {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let thread_test = ["threadIdx.x", "tid", "lane"].iter().any(|v| compact.contains(v));
    if compact.contains('%') && compact.contains("+=") && thread_test {
        "the modulo test keeps every (2*s)-th thread working, so all warps stay busy with a few active lanes: use sequential addressing instead, for (s = blockDim.x / 2; s > 0; s >>= 1) { if (tid < s) sdata[tid] += sdata[tid + s]; __syncthreads(); }, which keeps the working threads contiguous so whole warps finish early (and neighbouring lanes read neighbouring words)"
    } else if thread_test && (compact.contains('%') || compact.contains('&')) {
        "the condition splits every warp by threadIdx.x: make it uniform per warp (branch on threadIdx.x / 32, i.e. the warp index) or reorder the data so each warp takes one path"
    } else {
        "make the branch condition uniform across each warp of 32 threads, or sort the work so that threads taking the same path sit in the same warp"
    }
}

fn is_fp64(op: &str) -> bool {
    let base = op.split('.').next().unwrap_or("");
    matches!(base, "DADD" | "DMUL" | "DFMA" | "DSETP" | "DMNMX" | "DSET" | "DMMA")
        || (matches!(base, "F2F" | "I2F" | "F2I") && op.contains("F64"))
}

/// FP64 instructions in a float kernel: usually a `double` literal or function
/// promoting float math. ncu's own rules do not flag it.
pub fn fp64_math(inp: &ToolInput) -> Vec<Finding> {
    if inp.profile.signature.contains("double") {
        return vec![];
    }
    let mut by_line: Vec<(Option<u32>, Vec<&SassRow>)> = Vec::new();
    for r in inp.instructions().iter().filter(|r| is_fp64(r.opcode()) && executed(r) > 0.0) {
        let line = inp.own_line(r);
        match by_line.iter_mut().find(|(l, _)| *l == line) {
            Some((_, rows)) => rows.push(r),
            None => by_line.push((line, vec![r])),
        }
    }
    if inp.source.is_none() {
        let fp64 = flop_counts(inp.profile).map(|(_, d)| d).unwrap_or(0.0);
        if fp64 > 0.0 {
            return vec![inp
                .finding(Code::FP64Math, Severity::Warning, None, "the kernel executes FP64 arithmetic".into())
                .with_evidence("fp64_flops", fp64)
                .with_guidance("a double operand promotes float math to FP64: use float literals (2.0f) and float functions (sinf, expf)")];
        }
    }
    by_line
        .into_iter()
        .map(|(line, rows)| {
            let text = line.map(|l| inp.quote(l)).unwrap_or_default();
            let ops: Vec<&str> = rows.iter().map(|r| r.opcode()).collect();
            let guidance = match double_literal(&text) {
                Some(lit) => format!("replace {lit} with {lit}f: the double literal promotes the float expression to FP64 (F2F conversions and DFMA at a fraction of the FP32 rate)"),
                None => "a double operand (variable, literal or a math function like sin instead of sinf) promotes this float math to FP64: keep it in float".into(),
            };
            inp.finding(Code::FP64Math, Severity::Warning, line, format!("float math promoted to FP64 ({})", ops.join(", ")))
                .with_evidence("fp64_instructions", ops.join(" "))
                .with_guidance(guidance)
        })
        .collect()
}

/// The first floating literal without an `f` suffix: `2.0`, `1e-3`, `.5`.
fn double_literal(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        let starts = (c.is_ascii_digit() || (c == '.' && bytes.get(i + 1).is_some_and(|b| b.is_ascii_digit())))
            && (i == 0 || !((bytes[i - 1] as char).is_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b'.'));
        if !starts {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len()
            && ((bytes[i] as char).is_ascii_alphanumeric()
                || bytes[i] == b'.'
                || ((bytes[i] == b'-' || bytes[i] == b'+') && matches!(bytes[i - 1], b'e' | b'E')))
        {
            i += 1;
        }
        let lit = &text[start..i];
        let floating = !lit.starts_with("0x") && (lit.contains('.') || lit.contains(['e', 'E']));
        if floating && !lit.ends_with(['f', 'F']) {
            return Some(lit.to_string());
        }
    }
    None
}

/// Separate FMUL/FADD where FFMA would do, in a kernel busy on the FMA pipe.
pub fn non_fused_fp32(inp: &ToolInput) -> Vec<Finding> {
    let t = inp.thresholds;
    let cycles = inp.num("smsp__cycles_elapsed.avg");
    let count = |op: &str| {
        let base = format!("smsp__sass_thread_inst_executed_op_{op}_pred_on.sum");
        inp.num(&base).or_else(|| Some(inp.num(&format!("{base}.per_cycle_elapsed"))? * cycles?))
    };
    let (Some(fadd), Some(fmul), Some(ffma)) = (count("fadd"), count("fmul"), count("ffma")) else {
        return vec![];
    };
    let total = fadd + fmul + ffma;
    let share = if total > 0.0 { (fadd + fmul) * 100.0 / total } else { 0.0 };
    let fma_pipe = inp.num("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed").unwrap_or(0.0);
    if share <= t.nonfused_fp32_share_pct || fma_pipe <= t.nonfused_fma_pipe_min_pct {
        return vec![];
    }
    let hot = inp
        .instructions()
        .iter()
        .filter(|r| matches!(r.opcode().split('.').next(), Some("FADD" | "FMUL")))
        .max_by(|a, b| executed(a).total_cmp(&executed(b)));
    vec![inp
        .finding(Code::NonFusedFP32, Severity::Information, hot.and_then(|r| inp.own_line(r)), format!("{share:.0}% of FP32 arithmetic is separate multiplies and adds"))
        .with_evidence("non_fused_share", pct(share))
        .with_evidence("fma_pipe", pct(fma_pipe))
        .with_guidance("write multiply-then-add as one expression (a * b + c, or fmaf(a, b, c)) so nvcc emits FFMA, and make sure -fmad=false is not set")]
}

#[cfg(test)]
mod tests {
    use super::{double_literal, splits_lanes};

    #[test]
    fn lane_splitting_conditions() {
        assert!(splits_lanes("if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];"));
        assert!(splits_lanes("if ((threadIdx.x & 1) == 0) { v = sinf(v); }"));
        assert!(!splits_lanes("if (tid < s) sdata[tid] += sdata[tid + s];"));
        assert!(!splits_lanes("if (((threadIdx.x / 32) & 1) == 0) { v = sinf(v); }"));
        assert!(!splits_lanes("if (i < n && tid < s) x += 1;"));
        // Only the condition counts, not the body's indices.
        assert!(splits_lanes("if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = s;"));
        assert!(!splits_lanes("if (i < n) y[i] = x[threadIdx.x % 4];"));
    }

    #[test]
    fn finds_unsuffixed_float_literals() {
        assert_eq!(double_literal("y[i] = a * x[i] + y[i] * 2.0;").as_deref(), Some("2.0"));
        assert_eq!(double_literal("v = sinf(v) * 1.0001f; k < 64"), None);
        assert_eq!(double_literal("x1 = 1e-3 * y").as_deref(), Some("1e-3"));
    }
}
