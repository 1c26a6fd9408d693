//! Latency tools: occupancy and what limits it, registers, warp stalls,
//! barriers, spills, launch overhead, tail waves.

use super::ToolInput;
use super::input::{gain_from_saved_share, pct};
use kernelpro_model::{Code, Finding, Severity};

pub fn occupancy_limiter(inp: &ToolInput) -> Vec<Finding> {
    let Some(achieved) = inp.num("sm__warps_active.avg.pct_of_peak_sustained_active") else {
        return vec![];
    };
    if achieved >= inp.thresholds.occupancy_min_pct {
        return vec![];
    }
    let limits = [
        ("registers", "launch__occupancy_limit_registers"),
        ("shared memory", "launch__occupancy_limit_shared_mem"),
        ("warps per block", "launch__occupancy_limit_warps"),
        ("blocks per SM", "launch__occupancy_limit_blocks"),
        ("barriers", "launch__occupancy_limit_barriers"),
    ];
    let limiter = limits.iter().filter_map(|(n, m)| Some((*n, inp.num(m)?))).min_by(|a, b| a.1.total_cmp(&b.1));
    let theoretical = inp.num("sm__maximum_warps_per_active_cycle_pct");
    let mut f = inp
        .finding(Code::OccupancyLimiter, Severity::Warning, None, format!("achieved occupancy is {achieved:.0}%"))
        .with_evidence("achieved_occupancy", pct(achieved));
    if let Some(t) = theoretical {
        f = f.with_evidence("theoretical_occupancy", pct(t));
    }
    let regs = inp.num("launch__registers_per_thread").unwrap_or(0.0);
    let smem = inp.num("launch__shared_mem_per_block").unwrap_or(0.0);
    let guidance = match (theoretical, limiter) {
        (Some(t), _) if t - achieved > 20.0 => format!(
            "theoretical occupancy is {t:.0}% but only {achieved:.0}% is reached: the grid is too small or unbalanced; launch more blocks (at least a few per SM) or give warps equal work"
        ),
        (_, Some(("registers", b))) => format!(
            "registers limit an SM to {b:.0} blocks: cut the {regs:.0} registers/thread with __launch_bounds__(threads, minBlocks) or -maxrregcount"
        ),
        (_, Some(("shared memory", b))) => format!(
            "shared memory limits an SM to {b:.0} blocks: use less than the {smem:.0} bytes/block, e.g. smaller tiles or fewer stages"
        ),
        (_, Some(("warps per block", b))) => {
            format!("block size limits an SM to {b:.0} blocks: use a block size that divides 2048 threads, e.g. 256")
        }
        (_, Some((name, b))) => format!("{name} limit an SM to {b:.0} blocks: use more threads per block"),
        (_, None) => "launch more, fuller blocks".into(),
    };
    if let Some((name, b)) = limiter {
        f = f.with_evidence("limiter", format!("{name} ({b:.0} blocks/SM)"));
    }
    vec![f.with_guidance(guidance)]
}

pub fn high_register_usage(inp: &ToolInput) -> Vec<Finding> {
    let Some(regs) = inp.num("launch__registers_per_thread") else {
        return vec![];
    };
    if regs <= inp.thresholds.registers_per_thread {
        return vec![];
    }
    let blocks = inp.num("launch__occupancy_limit_registers");
    let mut f = inp
        .finding(Code::HighRegisterUsage, Severity::Information, None, format!("{regs:.0} registers per thread"))
        .with_evidence("registers_per_thread", regs);
    if let Some(b) = blocks {
        f = f.with_evidence("blocks_per_sm_by_registers", b);
    }
    vec![f.with_guidance("cap registers with __launch_bounds__(threads, minBlocksPerSM) or -maxrregcount, and shorten live ranges (fewer values kept across the loop, smaller unroll)")]
}

pub fn warp_stall(inp: &ToolInput) -> Vec<Finding> {
    let t = inp.thresholds;
    let Some((reason, share)) = inp.stall_shares().into_iter().next() else {
        return vec![];
    };
    if share <= t.dominant_stall_pct {
        return vec![];
    }
    let severity = if share > t.critical_stall_pct { Severity::Warning } else { Severity::Information };
    let hot = inp.hottest_line(reason.column);
    // Contended atomics: ContendedAtomics names them on the atomic's line.
    if super::atomics::explains_stall(inp, reason.key, hot.map(|(l, _)| l.line)) {
        return vec![];
    }
    let mut f = inp
        .finding(
            Code::WarpStall,
            severity,
            hot.map(|(l, _)| l.line),
            format!("{share:.0}% of warp samples stall {} ({})", reason.meaning, reason.key),
        )
        .with_evidence("stall_reason", reason.key)
        .with_evidence("stall_share", pct(share));
    if let (Some((_, samples)), Some(total)) = (hot, inp.sample_total()) {
        f = f.with_evidence("line_share_of_samples", pct(samples * 100.0 / total));
    }
    vec![f.with_guidance(inp.stall_guidance(reason, hot.map(|(l, _)| l.line)))]
}

pub fn barrier_stall(inp: &ToolInput) -> Vec<Finding> {
    let Some(share) = inp.stall_share("barrier") else {
        return vec![];
    };
    if share <= inp.thresholds.barrier_stall_pct {
        return vec![];
    }
    let line = inp.hottest_line("stall_barrier").map(|(l, _)| l.line);
    vec![inp
        .finding(Code::BarrierStall, Severity::Warning, line, format!("{share:.0}% of warp samples wait at a barrier"))
        .with_evidence("barrier_stalls", pct(share))
        .with_guidance("warps wait for the slowest warp of the block: balance the work between __syncthreads(), drop barriers that guard nothing, or use smaller blocks")]
}

/// Needs nsys (API launch time vs GPU busy time); ncu alone cannot see it.
pub fn launch_overhead(inp: &ToolInput) -> Vec<Finding> {
    match inp.launch_overhead_pct {
        None => vec![inp.finding(
            Code::LaunchOverhead,
            Severity::Hint,
            None,
            "launch overhead not measured: it needs nsys, which is unavailable".into(),
        )],
        Some(share) if share > inp.thresholds.launch_overhead_pct => vec![inp
            .finding(Code::LaunchOverhead, Severity::Warning, None, format!("{share:.0}% of wall time goes to kernel launches"))
            .with_evidence("launch_overhead", pct(share))
            .with_guidance("launch fewer, larger kernels: fuse consecutive kernels, batch small launches, or capture the sequence in a CUDA graph")
            .with_gain(gain_from_saved_share(share / 100.0).unwrap_or(1.0))],
        Some(_) => vec![],
    }
}

/// Spills matter when they cost latency (case A) or memory bandwidth (case B).
pub fn register_spill(inp: &ToolInput) -> Vec<Finding> {
    let t = inp.thresholds;
    let spill_rows: Vec<_> = inp
        .instructions()
        .iter()
        .filter(|r| matches!(r.opcode().split('.').next(), Some("LDL" | "STL")))
        .filter(|r| r.num("Instructions Executed").is_some_and(|n| n > 0.0))
        .collect();
    let counted = inp.profile.first(&["sass__inst_executed_register_spilling"]).unwrap_or(0.0)
        + ["ld", "st"]
            .iter()
            .filter_map(|op| inp.num(&format!("smsp__sass_inst_executed_op_local_{op}.sum")))
            .sum::<f64>();
    if counted <= 0.0 && spill_rows.is_empty() {
        return vec![];
    }
    let long_sb = inp.stall_share("long_scoreboard").unwrap_or(0.0);
    let (sm, mem) = (inp.sm_pct().unwrap_or(0.0), inp.mem_pct().unwrap_or(0.0));
    let local: f64 =
        ["ld", "st"].iter().filter_map(|op| inp.num(&format!("l1tex__t_sectors_pipe_lsu_mem_local_op_{op}.sum"))).sum();
    let global: f64 = ["ld", "st"]
        .iter()
        .filter_map(|op| inp.num(&format!("l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum")))
        .sum();
    let local_share = if local + global > 0.0 { local * 100.0 / (local + global) } else { 0.0 };
    let case_a = long_sb > t.spill_long_scoreboard_pct && sm < t.spill_idle_max_pct && mem < t.spill_idle_max_pct;
    let case_b = mem > t.spill_memory_pct && local_share > t.spill_local_share_pct;
    if !(case_a || case_b) {
        return vec![];
    }
    let hot = spill_rows.iter().max_by(|a, b| {
        a.num("Instructions Executed").unwrap_or(0.0).total_cmp(&b.num("Instructions Executed").unwrap_or(0.0))
    });
    let why = if case_a {
        "latency: warps wait on the spilled values"
    } else {
        "bandwidth: local-memory traffic competes with global loads"
    };
    vec![inp
        .finding(Code::RegisterSpill, Severity::Warning, hot.and_then(|r| inp.own_line(r)), format!("register spills cost {why}"))
        .with_evidence("local_traffic_share", pct(local_share))
        .with_evidence("long_scoreboard_stalls", pct(long_sb))
        .with_guidance("keep the values in registers: shrink per-thread arrays or index them only with compile-time constants, unroll less, or raise the register cap (__launch_bounds__ with fewer minBlocks)")]
}

/// A last wave that fills few SMs leaves the rest idle.
pub fn tail_effect(inp: &ToolInput) -> Vec<Finding> {
    let Some(waves) = inp.num("launch__waves_per_multiprocessor").filter(|&w| w > 0.0) else {
        return vec![];
    };
    let full = waves.ceil();
    let idle = (full - waves) * 100.0 / full;
    if idle <= inp.thresholds.tail_idle_pct {
        return vec![];
    }
    let per_wave = match (
        inp.num("launch__sm_count"),
        inp.profile.first(&["launch__occupancy_limit_warps"]).zip(
            [
                "launch__occupancy_limit_registers",
                "launch__occupancy_limit_shared_mem",
                "launch__occupancy_limit_blocks",
            ]
            .iter()
            .filter_map(|m| inp.num(m))
            .reduce(f64::min),
        ),
    ) {
        (Some(sms), Some((w, other))) => Some(sms * w.min(other)),
        _ => None,
    };
    let mut f = inp
        .finding(
            Code::TailEffect,
            Severity::Information,
            None,
            format!("{waves:.2} waves: the last one leaves {idle:.0}% of the SM time idle"),
        )
        .with_evidence("waves_per_sm", format!("{waves:.2}"));
    if let Some(g) = gain_from_saved_share(idle / 100.0) {
        f = f.with_gain(g);
    }
    vec![f.with_guidance(match per_wave {
        Some(b) => format!("size the grid to a multiple of {b:.0} blocks (one full wave), or use a grid-stride loop over exactly that many blocks"),
        None => "size the grid to a whole number of waves, or use a grid-stride loop".into(),
    })]
}
