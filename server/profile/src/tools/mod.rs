//! Stage 2: micro-profiling tools. Each tool detects one problem from ncu
//! counters, analyses it, and recommends a concrete change, on the source
//! line that causes it (the paper's detect -> analyze -> recommend pattern;
//! raw counters are never the output).

mod atomics;
mod compute;
mod input;
mod latency;
mod memory;
mod stalls;

pub use atomics::{AtomicSite, AtomicWait, Spread, atomic_wait};
pub use input::ToolInput;
pub use stalls::{STALL_REASONS, StallReason};

use crate::ncu_args::{Collection, ProfileOptions, profile_args};
use crate::triage::Class;
use kernelpro_model::{Code, Finding};
use serde::{Deserialize, Serialize};

/// A micro-profiling tool: what it serves, what it needs from ncu, and its analysis.
pub struct Tool {
    /// Its registry code: the code of every finding it reports.
    pub code: Code,
    /// The kernel classes it is run for (balanced kernels run every tool).
    pub classes: &'static [Class],
    pub sections: &'static [&'static str],
    pub metrics: &'static [&'static str],
    run: fn(&ToolInput) -> Vec<Finding>,
}

impl Tool {
    pub fn name(&self) -> &'static str {
        self.code.as_str()
    }
    pub fn analyze(&self, input: &ToolInput) -> Vec<Finding> {
        (self.run)(input)
    }
    pub fn serves(&self, class: Class) -> bool {
        class == Class::Balanced || self.classes.contains(&class)
    }
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool").field("code", &self.code).field("classes", &self.classes).finish()
    }
}

/// Trigger levels of every tool; the defaults are the paper's where it gives one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Thresholds {
    /// MemoryCoalescing: L1 hit rate below this (%) ...
    pub coalescing_l1_hit_max_pct: f64,
    /// ... and long-scoreboard stalls above this share of samples (%).
    pub coalescing_stall_min_pct: f64,
    /// Uncoalesced: sectors per request above this multiple of ideal.
    pub uncoalesced_over_ideal: f64,
    pub dram_throughput_pct: f64,
    pub occupancy_min_pct: f64,
    pub registers_per_thread: f64,
    pub dominant_stall_pct: f64,
    pub critical_stall_pct: f64,
    pub barrier_stall_pct: f64,
    pub launch_overhead_pct: f64,
    /// RegisterSpill case A: long-scoreboard share above this, SM and memory
    /// throughput both below `spill_idle_max_pct`.
    pub spill_long_scoreboard_pct: f64,
    pub spill_idle_max_pct: f64,
    /// RegisterSpill case B: memory throughput above this and local traffic
    /// above `spill_local_share_pct` of L1 traffic.
    pub spill_memory_pct: f64,
    pub spill_local_share_pct: f64,
    /// SharedMemTiling: L1 throughput above this with no shared memory in use.
    pub tiling_l1_pct: f64,
    pub tiling_l1_hit_min_pct: f64,
    /// Vectorization: memory throughput above this: the triage's busy
    /// threshold less its band (`TriageThresholds`), so a kernel the triage
    /// calls memory-bound from just under 60% is busy enough here too.
    pub vectorize_memory_pct: f64,
    /// SharedBankConflicts: average ways per shared request above this.
    pub bank_conflict_ways: f64,
    /// ThreadDivergence: a branch whose taken share lies inside this band.
    pub divergent_branch_min_share: f64,
    pub nonfused_fp32_share_pct: f64,
    pub nonfused_fma_pipe_min_pct: f64,
    /// TailEffect: share of SM time idle in the last wave.
    pub tail_idle_pct: f64,
    /// ContendedAtomics: share of warp samples (%) that wait on global
    /// atomics (on them, draining at exit, at fences) ...
    pub atomic_wait_pct: f64,
    /// ... or half that share with the busiest L2 slice's atomic unit this
    /// many times busier than the average slice.
    pub atomic_slice_concentration: f64,
    /// The busiest L2 slice's atomic unit active this share (%) of the kernel's
    /// duration, on one slice: the atomics pace the kernel even where no warp
    /// waits on them (fire-and-forget `RED`s back up behind the loads instead).
    pub atomic_unit_busy_pct: f64,
    /// SharedBankConflicts without the per-line N-way column: shared
    /// wavefronts above this multiple of the ideal.
    pub shared_wavefronts_over_ideal: f64,
    /// ThreadDivergence: share of a line's branch executions that diverge.
    pub divergent_branch_share: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            coalescing_l1_hit_max_pct: 30.0,
            coalescing_stall_min_pct: 40.0,
            uncoalesced_over_ideal: 1.2,
            dram_throughput_pct: 80.0,
            occupancy_min_pct: 50.0,
            registers_per_thread: 96.0,
            dominant_stall_pct: 40.0,
            critical_stall_pct: 60.0,
            barrier_stall_pct: 30.0,
            launch_overhead_pct: 20.0,
            spill_long_scoreboard_pct: 15.0,
            spill_idle_max_pct: 50.0,
            spill_memory_pct: 60.0,
            spill_local_share_pct: 10.0,
            tiling_l1_pct: 60.0,
            tiling_l1_hit_min_pct: 50.0,
            vectorize_memory_pct: {
                let triage = crate::triage::TriageThresholds::default();
                triage.busy_pct - triage.busy_margin_pct
            },
            bank_conflict_ways: 2.0,
            divergent_branch_min_share: 0.125,
            nonfused_fp32_share_pct: 25.0,
            nonfused_fma_pipe_min_pct: 20.0,
            tail_idle_pct: 10.0,
            atomic_wait_pct: 20.0,
            atomic_slice_concentration: 8.0,
            atomic_unit_busy_pct: 70.0,
            shared_wavefronts_over_ideal: 1.3,
            divergent_branch_share: 0.1,
        }
    }
}

use Class::{ComputeBound as C, LatencyBound as L, MemoryBound as M};

/// Every tool, in report order. A tool names the metrics it reads, not the
/// ncu sections that happen to contain them: whole sections cost replay
/// passes for tables no tool reads (MemoryWorkloadAnalysis_Tables alone is
/// ~30 passes a kernel on the H200). Stage 1's sections (SpeedOfLight,
/// LaunchStats, Occupancy and the roofline counters) are merged into every
/// kernel's stage-2 data, so the launch and occupancy tools need nothing more.
/// SourceCounters gives the per-line source page, the sampled stall reasons
/// (`smsp__pcsamp_warps_issue_stalled_*`, so WarpStateStats' passes are not
/// needed) and the theoretical-sector and shared-wavefront counters.
pub static TOOLS: &[Tool] = &[
    Tool {
        code: Code::MemoryCoalescing,
        classes: &[M],
        sections: &["SourceCounters"],
        metrics: &["l1tex__t_sector_hit_rate.pct", "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio"],
        run: memory::memory_coalescing,
    },
    Tool {
        code: Code::Uncoalesced,
        classes: &[M, L],
        sections: &["SourceCounters"],
        metrics: &["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"],
        run: memory::uncoalesced,
    },
    Tool {
        code: Code::HighDRAMThroughput,
        classes: &[M],
        sections: &["SourceCounters"],
        metrics: &["lts__t_sector_hit_rate.pct"],
        run: memory::high_dram_throughput,
    },
    Tool {
        code: Code::SharedMemTiling,
        classes: &[M],
        sections: &["SourceCounters"],
        metrics: &["smsp__sass_inst_executed_op_shared.sum", "l1tex__t_sector_hit_rate.pct"],
        run: memory::shared_mem_tiling,
    },
    Tool {
        code: Code::Vectorization,
        classes: &[M],
        sections: &["SourceCounters"],
        metrics: &[],
        run: memory::vectorization,
    },
    Tool {
        code: Code::SharedBankConflicts,
        classes: &[M, C, L],
        sections: &["SourceCounters"],
        metrics: &[
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
        ],
        run: memory::shared_bank_conflicts,
    },
    // Every class: a contended atomic makes a kernel look latency-bound
    // (the histogram) or memory-bound alike. The names are those the
    // H200's --set full lists (tests/fixtures/h200-probe/full_raw.csv).
    Tool {
        code: Code::ContendedAtomics,
        classes: &[M, C, L],
        sections: &["SourceCounters"],
        metrics: &[
            "smsp__inst_executed_op_global_red.sum",
            "smsp__inst_executed_op_generic_atom_dot_alu.sum",
            "lts__t_sectors_srcunit_tex_op_red.sum",
            "lts__t_sectors_srcunit_tex_op_atom.sum",
            "lts__d_atomic_input_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "lts__d_atomic_input_cycles_active.max.pct_of_peak_sustained_elapsed",
            "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
            "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
        ],
        run: atomics::atomic_contention,
    },
    Tool {
        code: Code::OccupancyLimiter,
        classes: &[C, L],
        sections: &[],
        metrics: &[],
        run: latency::occupancy_limiter,
    },
    Tool {
        code: Code::HighRegisterUsage,
        classes: &[C, L],
        sections: &[],
        metrics: &[],
        run: latency::high_register_usage,
    },
    Tool {
        code: Code::WarpStall,
        classes: &[M, C, L],
        sections: &["SourceCounters"],
        metrics: &[],
        run: latency::warp_stall,
    },
    Tool {
        code: Code::BarrierStall,
        classes: &[L],
        sections: &["SourceCounters"],
        metrics: &[],
        run: latency::barrier_stall,
    },
    Tool { code: Code::LaunchOverhead, classes: &[L], sections: &[], metrics: &[], run: latency::launch_overhead },
    Tool {
        code: Code::RegisterSpill,
        classes: &[C, L, M],
        sections: &["SourceCounters"],
        metrics: &[
            "smsp__sass_inst_executed_op_local_ld.sum",
            "smsp__sass_inst_executed_op_local_st.sum",
            "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
            "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
            "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
        ],
        run: latency::register_spill,
    },
    Tool { code: Code::TailEffect, classes: &[C, L, M], sections: &[], metrics: &[], run: latency::tail_effect },
    Tool {
        code: Code::TensorCore,
        classes: &[C],
        sections: &["SourceCounters"],
        metrics: &["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"],
        run: compute::tensor_core,
    },
    Tool {
        code: Code::ThreadDivergence,
        // Memory-bound too: a reduction's divergent steps run on L1/shared.
        classes: &[M, C, L],
        sections: &["SourceCounters"],
        metrics: &[
            "smsp__thread_inst_executed_per_inst_executed.ratio",
            "smsp__sass_branch_targets_threads_divergent.sum",
            "smsp__sass_average_branch_targets_threads_uniform.pct",
        ],
        run: compute::thread_divergence,
    },
    Tool {
        code: Code::FP64Math,
        classes: &[C, L, M],
        sections: &["SourceCounters"],
        metrics: &[],
        run: compute::fp64_math,
    },
    Tool {
        code: Code::NonFusedFP32,
        classes: &[C],
        sections: &["SourceCounters"],
        metrics: &["sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed"],
        run: compute::non_fused_fp32,
    },
];

/// The tool-affinity filter: only the tools that serve the kernel's class
/// (memory-bound skips tensor-core checks, compute-bound skips coalescing).
pub fn select_tools(class: Class) -> Vec<&'static Tool> {
    TOOLS.iter().filter(|t| t.serves(class)).collect()
}

pub fn tool(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.code.as_str() == name)
}

/// The union of the sections and metrics the tools need, without repeats.
pub fn stage2_collection(tools: &[&Tool]) -> Collection {
    tools.iter().fold(Collection::default(), |c, t| {
        c.with(&Collection {
            sections: t.sections.iter().map(|s| s.to_string()).collect(),
            metrics: t.metrics.iter().map(|m| m.to_string()).collect(),
            full_set: false,
        })
    })
}

/// Triage and every tool's counters in one launch: the triage's class picks
/// the tools afterwards, from counters already there. Collecting every tool's
/// metrics rather than a predicted class's costs no extra ncu start-up, and a
/// wrong prediction would cost a second pass (`bench/probes/ncu_one_pass.sh`).
pub fn one_pass_collection() -> Collection {
    crate::ncu_args::stage1_collection().with(&stage2_collection(&TOOLS.iter().collect::<Vec<_>>()))
}

/// The ncu arguments of the stage-2 pass for the selected tools.
pub fn stage2_args(tools: &[&Tool], opts: &ProfileOptions) -> Vec<String> {
    profile_args(&stage2_collection(tools), opts)
}

/// Runs the given tools on one kernel, most severe findings first, each
/// group in tool order.
pub fn analyze(tools: &[&Tool], input: &ToolInput) -> Vec<Finding> {
    let mut out: Vec<Finding> = tools.iter().flat_map(|t| t.analyze(input)).collect();
    out.sort_by_key(|f| f.severity);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one launch collects what stage 1 and every class's stage 2 would:
    /// whatever class the triage then picks, its tools find their counters.
    #[test]
    fn one_pass_collects_both_stages_for_every_class() {
        let one = one_pass_collection();
        let stage1 = crate::ncu_args::stage1_collection();
        for class in [Class::MemoryBound, Class::ComputeBound, Class::LatencyBound, Class::Balanced] {
            let two = stage1.clone().with(&stage2_collection(&select_tools(class)));
            for s in &two.sections {
                assert!(one.sections.contains(s), "{class:?}: section {s}");
            }
            for m in &two.metrics {
                assert!(one.metrics.contains(m), "{class:?}: metric {m}");
            }
        }
        assert_eq!(one.sections.iter().filter(|s| *s == "SourceCounters").count(), 1);
    }
}
