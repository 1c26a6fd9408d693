//! Compute tools: tensor cores, thread divergence, FP64 promotion, non-fused
//! FP32 arithmetic. The per-line ones read the SASS rows of the source page.

use super::input::{pct, round2};
use super::ToolInput;
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
        .lines
        .iter()
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

/// A branch that splits warps: part of the threads take it, the rest do not.
pub fn thread_divergence(inp: &ToolInput) -> Vec<Finding> {
    let t = inp.thresholds;
    let efficiency = inp.num("smsp__thread_inst_executed_per_inst_executed.ratio").map(|r| r / 32.0);
    let compute_bound = inp.triage.is_some_and(|tr| tr.class == crate::triage::Class::ComputeBound);
    let gain = efficiency.filter(|_| compute_bound).map(|e| round2(1.0 / e)).filter(|&g| g > 1.05);
    let mut branch_lines: Vec<u32> = Vec::new();
    for r in inp.instructions().iter().filter(|r| r.opcode().starts_with("BRA")) {
        let (Some(threads), Some(taken), Some(line)) = (r.num("Avg. Threads Executed"), r.num("Avg. Predicated-On Threads Executed"), r.line) else {
            continue;
        };
        let share = if threads > 0.0 { taken / threads } else { 0.0 };
        let splits = share > t.divergent_branch_min_share && share < 1.0 - t.divergent_branch_min_share;
        if splits && executed(r) > 0.0 && !branch_lines.contains(&line) {
            branch_lines.push(line);
        }
    }
    let with_common = |f: Finding, text: &str| {
        let f = match efficiency {
            Some(e) => f.with_evidence("active_threads_per_warp", format!("{:.1} of 32", e * 32.0)),
            None => f,
        };
        let f = match gain {
            Some(g) => f.with_gain(g),
            None => f,
        };
        f.with_guidance(if text.contains("threadIdx.x %") || text.contains("threadIdx.x&") || text.contains("threadIdx.x &") {
            "the condition splits every warp by threadIdx.x: make it uniform per warp (branch on threadIdx.x / 32, i.e. the warp index) or reorder the data so each warp takes one path"
        } else {
            "make the branch condition uniform across each warp of 32 threads, or sort the work so that threads taking the same path sit in the same warp"
        })
    };
    if inp.source.is_some() {
        return branch_lines
            .into_iter()
            .map(|l| {
                let text = inp.quote(l);
                let f = inp.finding(Code::ThreadDivergence, Severity::Warning, Some(l), "divergent branch: the threads of a warp take different paths".into());
                with_common(f, &text)
            })
            .collect();
    }
    match (inp.num("smsp__sass_branch_targets_threads_divergent.sum"), efficiency) {
        (Some(d), Some(e)) if d > 0.0 && e < 0.8 => {
            let f = inp.finding(Code::ThreadDivergence, Severity::Warning, None, format!("{d:.0} divergent branch targets; warps run {:.0}% full", e * 100.0));
            vec![with_common(f, "")]
        }
        _ => vec![],
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
        match by_line.iter_mut().find(|(l, _)| *l == r.line) {
            Some((_, rows)) => rows.push(r),
            None => by_line.push((r.line, vec![r])),
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
        while i < bytes.len() && ((bytes[i] as char).is_ascii_alphanumeric() || bytes[i] == b'.' || ((bytes[i] == b'-' || bytes[i] == b'+') && matches!(bytes[i - 1], b'e' | b'E'))) {
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
        .finding(Code::NonFusedFP32, Severity::Information, hot.and_then(|r| r.line), format!("{share:.0}% of FP32 arithmetic is separate multiplies and adds"))
        .with_evidence("non_fused_share", pct(share))
        .with_evidence("fma_pipe", pct(fma_pipe))
        .with_guidance("write multiply-then-add as one expression (a * b + c, or fmaf(a, b, c)) so nvcc emits FFMA, and make sure -fmad=false is not set")]
}

#[cfg(test)]
mod tests {
    use super::double_literal;

    #[test]
    fn finds_unsuffixed_float_literals() {
        assert_eq!(double_literal("y[i] = a * x[i] + y[i] * 2.0;").as_deref(), Some("2.0"));
        assert_eq!(double_literal("v = sinf(v) * 1.0001f; k < 64"), None);
        assert_eq!(double_literal("x1 = 1e-3 * y").as_deref(), Some("1e-3"));
    }
}
