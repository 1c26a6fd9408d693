//! Stage 1: sort each kernel into memory-, compute-, latency-bound or balanced,
//! by two independent methods (the paper's design):
//! (a) measured SM and memory throughput as a percentage of peak;
//! (b) the roofline: arithmetic intensity at each memory level against that
//!     level's ridge point. When they disagree, the roofline wins, since it
//!     reflects the kernel's inherent ceiling.

use crate::csv_pages::KernelProfile;
use crate::peaks::{Peaks, peaks_for};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    MemoryBound,
    ComputeBound,
    LatencyBound,
    Balanced,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::MemoryBound => "memory-bound",
            Class::ComputeBound => "compute-bound",
            Class::LatencyBound => "latency-bound",
            Class::Balanced => "balanced",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemLevel {
    #[serde(rename = "DRAM")]
    Dram,
    L2,
    #[serde(rename = "L1/shared")]
    L1,
}

impl MemLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            MemLevel::Dram => "DRAM",
            MemLevel::L2 => "L2",
            MemLevel::L1 => "L1/shared",
        }
    }
}

/// Where the class boundaries sit (settings may override them).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TriageThresholds {
    /// Below this throughput (% of peak) on both SM and memory, the kernel
    /// is waiting on latency rather than on a unit.
    pub busy_pct: f64,
    /// SM and memory within this many points of each other: balanced.
    pub balance_margin_pct: f64,
    /// Under `busy_pct` by less than this, the measurement cannot tell a
    /// latency-bound kernel from a memory- or compute-bound one, and the
    /// roofline's class (from counts, not rates) decides: the tools' rates
    /// differ by that much on short kernels (on an H100 the in-process
    /// profile's replays ran on an L2 full of the restored buffers' lines and
    /// read 57% where ncu, which flushes, read 61%; ncu's own runs 61 and 68).
    pub busy_margin_pct: f64,
}

impl Default for TriageThresholds {
    fn default() -> Self {
        TriageThresholds { busy_pct: 60.0, balance_margin_pct: 10.0, busy_margin_pct: 7.5 }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Triage {
    pub kernel: String,
    pub class: Class,
    /// The class from measured throughput alone.
    pub measured_class: Class,
    /// The class from the roofline alone, when FLOP and byte counts were recorded.
    pub roofline_class: Option<Class>,
    pub sm_pct: f64,
    pub mem_pct: f64,
    pub dram_pct: Option<f64>,
    pub l2_pct: Option<f64>,
    pub l1_pct: Option<f64>,
    /// The memory level whose throughput is closest to its peak.
    pub closest_level: Option<MemLevel>,
    /// Arithmetic intensity at the binding memory level (the level whose
    /// roof is lowest for this kernel).
    pub ai_flop_per_byte: Option<f64>,
    pub ai_level: Option<MemLevel>,
    /// FLOP/byte where that level's bandwidth roof meets the compute roof.
    pub ridge: Option<f64>,
    pub flops: Option<f64>,
    pub duration_ns: Option<f64>,
    pub agreement: bool,
    pub summary: String,
}

/// Classifies one kernel; `None` when the profile lacks the SpeedOfLight metrics.
pub fn triage(p: &KernelProfile, t: &TriageThresholds) -> Option<Triage> {
    let sm_pct = p.num("sm__throughput.avg.pct_of_peak_sustained_elapsed")?;
    let mem_pct = p.num("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")?;
    let dram_pct = p.first(&[
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    ]);
    let l2_pct = p.num("lts__throughput.avg.pct_of_peak_sustained_elapsed");
    let l1_pct = p.first(&[
        "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
        "l1tex__throughput.avg.pct_of_peak_sustained_active",
    ]);
    let duration_ns = p.base("gpu__time_duration.sum");

    let measured_class = measured(sm_pct, mem_pct, t);
    let closest_level = [(MemLevel::Dram, dram_pct), (MemLevel::L2, l2_pct), (MemLevel::L1, l1_pct)]
        .into_iter()
        .filter_map(|(l, v)| Some((l, v?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(l, _)| l);
    let roof = peaks_for(p).and_then(|peaks| roofline(p, &peaks));
    let roofline_class = roof.as_ref().map(|r| r.class);
    // The roofline only tells memory from compute; latency and balanced
    // verdicts of the measurement do not contradict it.
    let agreement = match roofline_class {
        Some(rc) => !matches!(measured_class, Class::MemoryBound | Class::ComputeBound) || rc == measured_class,
        None => true,
    };
    let near_busy = measured_class == Class::LatencyBound && sm_pct.max(mem_pct) >= t.busy_pct - t.busy_margin_pct;
    let class = match roofline_class {
        Some(rc) if !agreement || near_busy => rc,
        _ => measured_class,
    };

    let mut triage = Triage {
        kernel: p.kernel.clone(),
        class,
        measured_class,
        roofline_class,
        sm_pct,
        mem_pct,
        dram_pct,
        l2_pct,
        l1_pct,
        closest_level,
        ai_flop_per_byte: roof.as_ref().map(|r| r.ai),
        ai_level: roof.as_ref().map(|r| r.level),
        ridge: roof.as_ref().map(|r| r.ridge),
        flops: roof.as_ref().map(|r| r.flops),
        duration_ns,
        agreement,
        summary: String::new(),
    };
    triage.summary = summary(&triage);
    Some(triage)
}

fn measured(sm: f64, mem: f64, t: &TriageThresholds) -> Class {
    if sm.max(mem) < t.busy_pct {
        Class::LatencyBound
    } else if (sm - mem).abs() <= t.balance_margin_pct {
        Class::Balanced
    } else if mem > sm {
        Class::MemoryBound
    } else {
        Class::ComputeBound
    }
}

struct Roof {
    class: Class,
    level: MemLevel,
    ai: f64,
    ridge: f64,
    flops: f64,
}

/// Hierarchical roofline: the attainable FLOP/s is the lowest of the compute
/// peak and AI x bandwidth at each level with recorded traffic.
fn roofline(p: &KernelProfile, peaks: &Peaks) -> Option<Roof> {
    let (fp32, fp64) = flop_counts(p)?;
    let flops = fp32 + fp64;
    let compute_peak = if fp64 > fp32 { peaks.fp64_flops } else { peaks.fp32_flops };
    let levels = [
        (MemLevel::Dram, dram_bytes(p), peaks.dram_bw),
        (MemLevel::L2, l2_bytes(p), peaks.l2_bw),
        (MemLevel::L1, l1_bytes(p), peaks.l1_bw),
    ];
    let (level, bytes, bw) = levels
        .into_iter()
        .filter_map(|(l, b, bw)| Some((l, b.filter(|&b| b > 0.0)?, bw)))
        .min_by(|a, b| (flops / a.1 * a.2).total_cmp(&(flops / b.1 * b.2)))?;
    let ai = flops / bytes;
    let ridge = compute_peak / bw;
    let class = if ai < ridge { Class::MemoryBound } else { Class::ComputeBound };
    Some(Roof { class, level, ai, ridge, flops })
}

const FP32_OPS: [(&str, f64); 3] = [("fadd", 1.0), ("fmul", 1.0), ("ffma", 2.0)];
const FP64_OPS: [(&str, f64); 3] = [("dadd", 1.0), ("dmul", 1.0), ("dfma", 2.0)];

/// FP32 and FP64 FLOPs, from `.sum` counts (stage-1 metrics) or from the
/// roofline section's per-cycle rates times elapsed cycles (`--set full`).
pub fn flop_counts(p: &KernelProfile) -> Option<(f64, f64)> {
    let cycles = p.num("smsp__cycles_elapsed.avg");
    let count = |op: &str| -> Option<f64> {
        let base = format!("smsp__sass_thread_inst_executed_op_{op}_pred_on.sum");
        p.num(&base).or_else(|| Some(p.num(&format!("{base}.per_cycle_elapsed"))? * cycles?))
    };
    let total = |ops: &[(&str, f64)]| -> Option<f64> {
        ops.iter().map(|(op, w)| count(op).map(|c| c * w)).sum::<Option<f64>>()
    };
    Some((total(&FP32_OPS)?, total(&FP64_OPS)?))
}

pub fn dram_bytes(p: &KernelProfile) -> Option<f64> {
    p.base("dram__bytes.sum").or_else(|| Some(p.base("dram__bytes_read.sum")? + p.base("dram__bytes_write.sum")?))
}

pub fn l2_bytes(p: &KernelProfile) -> Option<f64> {
    p.base("lts__t_bytes.sum").or_else(|| Some(p.num("lts__t_sectors.sum")? * 32.0))
}

/// L1 traffic: global and local sectors plus shared-memory wavefronts.
pub fn l1_bytes(p: &KernelProfile) -> Option<f64> {
    if let Some(b) = p.base("l1tex__t_bytes.sum") {
        return Some(b);
    }
    let sectors: f64 = ["global_op_ld", "global_op_st", "local_op_ld", "local_op_st"]
        .iter()
        .filter_map(|k| p.num(&format!("l1tex__t_sectors_pipe_lsu_mem_{k}.sum")))
        .sum();
    let shared: f64 = ["ld", "st"]
        .iter()
        .filter_map(|op| p.num(&format!("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum")))
        .sum();
    (sectors + shared > 0.0).then_some(sectors * 32.0 + shared * 128.0)
}

fn summary(t: &Triage) -> String {
    let mut parts = vec![t.class.as_str().to_string()];
    let level_pct = |l: MemLevel| match l {
        MemLevel::Dram => t.dram_pct,
        MemLevel::L2 => t.l2_pct,
        MemLevel::L1 => t.l1_pct,
    };
    match t.class {
        Class::ComputeBound => parts.push(format!("SM {:.0}% of peak", t.sm_pct)),
        _ => {
            if let Some((level, pct)) = t.closest_level.and_then(|l| Some((l, level_pct(l)?))) {
                parts.push(format!("{} {pct:.0}% of peak", level.as_str()));
            }
        }
    }
    if let Some(ai) = t.ai_flop_per_byte {
        parts.push(format!("{} FLOP/B", sig2(ai)));
    }
    if let Some(ns) = t.duration_ns {
        parts.push(duration(ns));
    }
    // Where the roofline decided (a disagreement, or throughput just under the busy threshold).
    if let (true, Some(rc)) = (t.class != t.measured_class, t.roofline_class) {
        parts.push(format!("throughput says {}, roofline says {}", t.measured_class.as_str(), rc.as_str()));
    }
    parts.join(" · ")
}

/// Two significant digits, without trailing noise: 0.27, 4.0, 370.
fn sig2(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let digits = (1 - v.abs().log10().floor() as i32).max(0) as usize;
    let rounded = {
        let scale = 10f64.powi(v.abs().log10().floor() as i32 - 1);
        (v / scale).round() * scale
    };
    format!("{rounded:.digits$}")
}

fn duration(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}
