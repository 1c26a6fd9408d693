//! Memory tools: coalescing, DRAM traffic, shared-memory tiling and bank
//! conflicts, vectorized access.

use super::ToolInput;
use super::input::{gain_from_saved_share, pct};
use kernelpro_model::{Code, Finding, Severity};

const EXCESS: &str = "L2 Theoretical Sectors Global Excessive";
const SECTORS: &str = "L2 Theoretical Sectors Global";
const IDEAL: &str = "L2 Theoretical Sectors Global Ideal";

pub fn memory_coalescing(inp: &ToolInput) -> Vec<Finding> {
    let t = inp.thresholds;
    let (Some(hit), Some(stall)) = (inp.num("l1tex__t_sector_hit_rate.pct"), inp.stall_share("long_scoreboard")) else {
        return vec![];
    };
    if hit >= t.coalescing_l1_hit_max_pct || stall <= t.coalescing_stall_min_pct {
        return vec![];
    }
    let bytes_per_sector = inp.num("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio");
    // Loads that use their sectors whole and miss in L1 are a stream, not a fault: a kernel
    // that reads each element once has nothing to reuse (a block-reduced sum at 58% of DRAM).
    if bytes_per_sector.is_some_and(|b| b >= 28.0) {
        return vec![];
    }
    let line = inp.hottest_line("stall_long_sb").map(|(l, _)| l.line);
    let mut f = inp.finding(
        Code::MemoryCoalescing,
        Severity::Warning,
        line,
        format!("global loads miss in L1 ({hit:.0}% hit rate) and {stall:.0}% of warp samples wait on them"),
    );
    let scattered = bytes_per_sector.is_some_and(|b| b < 16.0);
    f = f.with_evidence("l1_hit_rate", pct(hit)).with_evidence("long_scoreboard_stalls", pct(stall));
    if let Some(b) = bytes_per_sector {
        f = f.with_evidence("bytes_used_per_sector", format!("{b:.1} of 32"));
    }
    vec![f.with_guidance(if scattered {
        "neighbouring threads load addresses far apart: make threadIdx.x walk the fastest-varying (contiguous) index, or load a tile coalesced into __shared__ memory and gather from there"
    } else {
        "the loads are coalesced but find nothing to reuse in L1: keep reused values in registers or stage them in __shared__ memory"
    })]
}

/// Per line when the source page has the L2 theoretical sectors; else the
/// kernel's sectors per request against the 4 of a coalesced 4-byte load.
pub fn uncoalesced(inp: &ToolInput) -> Vec<Finding> {
    let t = inp.thresholds;
    let guidance = "make threadIdx.x walk the fastest-varying (contiguous) index of this access; if the stride is inherent, load a contiguous tile into __shared__ memory first and gather from there";
    let kernel_sectors = inp.num("memory_l2_theoretical_sectors_global").or_else(|| {
        Some(inp.lines().filter_map(|l| l.metrics.get(SECTORS)?.number()).sum::<f64>()).filter(|&s| s > 0.0)
    });
    let mem_share = inp.mem_pct().unwrap_or(100.0) / 100.0;
    let per_line: Vec<Finding> = inp
        .lines()
        .filter_map(|l| {
            let get = |c: &str| l.metrics.get(c).and_then(|m| m.number());
            let (excess, sectors, ideal) = (get(EXCESS)?, get(SECTORS)?, get(IDEAL)?);
            if excess <= 0.0 || ideal <= 0.0 || sectors / ideal <= t.uncoalesced_over_ideal {
                return None;
            }
            let ratio = sectors / ideal;
            let mut f = inp
                .finding(
                    Code::Uncoalesced,
                    Severity::Warning,
                    Some(l.line),
                    format!(
                        "uncoalesced global access: {ratio:.1}x the ideal sectors, {:.0}% of them wasted",
                        excess * 100.0 / sectors
                    ),
                )
                .with_evidence("sectors", sectors)
                .with_evidence("ideal_sectors", ideal)
                .with_evidence("excess_sectors", excess)
                .with_guidance(guidance);
            if let Some(gain) = kernel_sectors.and_then(|k| gain_from_saved_share(excess / k * mem_share)) {
                f = f.with_gain(gain);
            }
            Some(f)
        })
        .collect();
    if inp.source.is_some() {
        return per_line;
    }
    let (sectors, ideal) = match (
        inp.num("memory_l2_theoretical_sectors_global"),
        inp.num("memory_l2_theoretical_sectors_global_ideal"),
    ) {
        (Some(s), Some(i)) if i > 0.0 => (s, i),
        _ => {
            let (Some(s), Some(r)) = (
                inp.num("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
                inp.num("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum").filter(|&r| r > 0.0),
            ) else {
                return vec![];
            };
            (s / r, 4.0)
        }
    };
    if sectors / ideal <= t.uncoalesced_over_ideal {
        return vec![];
    }
    vec![
        inp.finding(
            Code::Uncoalesced,
            Severity::Warning,
            None,
            format!("uncoalesced global access: {:.1}x the ideal sectors", sectors / ideal),
        )
        .with_evidence("sectors", sectors)
        .with_evidence("ideal_sectors", ideal)
        .with_guidance(guidance),
    ]
}

pub fn high_dram_throughput(inp: &ToolInput) -> Vec<Finding> {
    let Some(dram) = inp
        .triage
        .and_then(|t| t.dram_pct)
        .or_else(|| inp.num("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"))
    else {
        return vec![];
    };
    if dram <= inp.thresholds.dram_throughput_pct {
        return vec![];
    }
    let mut f = inp
        .finding(
            Code::HighDRAMThroughput,
            Severity::Information,
            None,
            format!("DRAM runs at {dram:.0}% of its peak bandwidth"),
        )
        .with_evidence("dram_throughput", pct(dram));
    for (name, metric) in [("dram_read_bytes", "dram__bytes_read.sum"), ("dram_write_bytes", "dram__bytes_write.sum")] {
        if let Some(v) = inp.profile.base(metric) {
            f = f.with_evidence(name, v);
        }
    }
    if let Some(hit) = inp.num("lts__t_sector_hit_rate.pct") {
        f = f.with_evidence("l2_hit_rate", pct(hit));
    }
    let wasted = match (
        inp.num("memory_l2_theoretical_sectors_global"),
        inp.num("derived__memory_l2_theoretical_sectors_global_excessive"),
    ) {
        (Some(all), Some(excess)) if all > 0.0 && excess > 0.0 => Some(excess * 100.0 / all),
        _ => None,
    };
    vec![f.with_guidance(match wasted {
        Some(w) => format!("{w:.0}% of the global sectors are fetched but unused: fix the uncoalesced access first, then cut bytes by fusing with the neighbouring kernel or using narrower types"),
        None => "the kernel moves as many bytes as DRAM allows: cut bytes, not instructions, by fusing it with its producer or consumer, using narrower types (half, bf16), or reusing loaded data from __shared__ memory".into(),
    })]
}

/// Global data re-read by many threads through L1 with no shared memory: the
/// classic naive-matmul pattern.
pub fn shared_mem_tiling(inp: &ToolInput) -> Vec<Finding> {
    let t = inp.thresholds;
    let shared_ops = inp.profile.first(&["smsp__sass_inst_executed_op_shared.sum", "sass__inst_executed_shared_loads"]);
    let (Some(0.0), Some(hit)) = (shared_ops, inp.num("l1tex__t_sector_hit_rate.pct")) else {
        return vec![];
    };
    let l1 = inp.l1_pct().unwrap_or(0.0);
    let throttle = inp.stall_share("lg_throttle").unwrap_or(0.0);
    if hit < t.tiling_l1_hit_min_pct || (l1 <= t.tiling_l1_pct && throttle <= 20.0) {
        return vec![];
    }
    let line = inp.hottest_line(SECTORS).or_else(|| inp.hottest_line("L1 Tag Requests Global")).map(|(l, _)| l.line);
    vec![inp
        .finding(
            Code::SharedMemTiling,
            Severity::Warning,
            line,
            format!("the same global data is re-read through L1 ({hit:.0}% hit rate, L1 at {l1:.0}% of peak) and no shared memory is used"),
        )
        .with_evidence("l1_hit_rate", pct(hit))
        .with_evidence("l1_throughput", pct(l1))
        .with_evidence("lg_throttle_stalls", pct(throttle))
        .with_guidance("stage tiles of the inputs in __shared__ arrays (e.g. 32x32), with __syncthreads() between the load phase and the compute phase, and loop over tiles: each element is then read from global memory once per tile instead of once per thread")]
}

fn is_global_mem(row: &crate::csv_pages::SassRow) -> bool {
    let op = row.opcode();
    op.starts_with("LDG") || op.starts_with("STG")
}

/// Coalesced 4-byte global accesses in a memory-heavy kernel: wider loads
/// halve or quarter the load/store instructions.
pub fn vectorization(inp: &ToolInput) -> Vec<Finding> {
    let t = inp.thresholds;
    let busy = inp.mem_pct().is_some_and(|m| m > t.vectorize_memory_pct);
    if !busy
        || inp
            .instructions()
            .iter()
            .any(|r| is_global_mem(r) && (r.opcode().contains(".64") || r.opcode().contains(".128")))
    {
        return vec![];
    }
    let narrow_line = inp
        .lines()
        .filter(|l| l.metrics.get(EXCESS).and_then(|m| m.number()) == Some(0.0))
        .filter_map(|l| {
            let executed: f64 = inp
                .source
                .into_iter()
                .flat_map(|s| s.instructions_of(l.line))
                .filter(|r| is_global_mem(r))
                .filter_map(|r| r.num("Instructions Executed"))
                .sum();
            (executed > 0.0).then_some((l, executed))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let Some((line, executed)) = narrow_line else {
        return vec![];
    };
    vec![inp
        .finding(Code::Vectorization, Severity::Information, Some(line.line), "coalesced but 4-byte global accesses".into())
        .with_evidence("memory_instructions_executed", executed)
        .with_guidance("let each thread handle 4 consecutive elements through float4 (reinterpret_cast<const float4*>(p)[i]), with a scalar loop for the n % 4 tail: a quarter of the load/store instructions for the same bytes")]
}

/// `tile[threadIdx.x][threadIdx.y]`-style column walks of a shared array, and
/// `sdata[2 * s * tid]`-style strides. Per line from the N-way column or,
/// where ncu leaves it at 1 or out, the line's shared wavefronts against
/// the ideal; per kernel from the conflict counters when there is no
/// source page.
pub fn shared_bank_conflicts(inp: &ToolInput) -> Vec<Finding> {
    let t = inp.thresholds;
    let excess_share =
        match (inp.num("derived__memory_l1_wavefronts_shared_excessive"), inp.num("memory_l1_wavefronts_shared")) {
            (Some(e), Some(all)) if all > 0.0 => Some(e / all),
            _ => kernel_conflicts(inp).map(|(c, w)| c / w),
        };
    let with_gain = |f: Finding| match excess_share
        .and_then(|share| gain_from_saved_share(share * inp.l1_pct().unwrap_or(0.0) / 100.0))
    {
        Some(g) => f.with_evidence("excess_wavefronts", pct(excess_share.unwrap_or(0.0) * 100.0)).with_gain(g),
        None => match excess_share {
            Some(share) => f.with_evidence("excess_wavefronts", pct(share * 100.0)),
            None => f,
        },
    };
    if inp.source.is_none() {
        let Some((conflicts, wavefronts)) = kernel_conflicts(inp) else { return vec![] };
        let over = wavefronts / (wavefronts - conflicts).max(1.0);
        if over <= t.shared_wavefronts_over_ideal {
            return vec![];
        }
        let f = inp
            .finding(
                Code::SharedBankConflicts,
                Severity::Warning,
                None,
                format!("shared-memory bank conflicts: {over:.1}x the ideal wavefronts"),
            )
            .with_evidence("bank_conflicts", conflicts)
            .with_evidence("shared_wavefronts", wavefronts)
            .with_guidance(STRIDE_ADVICE);
        return vec![with_gain(f)];
    }
    inp.lines()
        .filter_map(|l| {
            let n = |c: &str| l.metrics.get(c).and_then(|m| m.number());
            let ways = n("L1 Conflicts Shared N-Way").unwrap_or(0.0);
            let over = match (n("L1 Wavefronts Shared"), n("L1 Wavefronts Shared Ideal")) {
                (Some(w), Some(i)) if i > 0.0 => Some((w, i, w / i)),
                _ => None,
            };
            let by_ways = ways >= t.bank_conflict_ways;
            let by_wavefronts = over.is_some_and(|(_, _, r)| r > t.shared_wavefronts_over_ideal);
            if !by_ways && !by_wavefronts {
                return None;
            }
            let text = inp.quote(l.line);
            let message = if by_ways {
                format!("{ways:.0}-way shared-memory bank conflicts")
            } else {
                format!("shared-memory bank conflicts: {:.1}x the ideal wavefronts", over.map(|o| o.2).unwrap_or(0.0))
            };
            let mut f = inp
                .finding(Code::SharedBankConflicts, Severity::Warning, Some(l.line), message)
                .with_guidance(padding_advice(inp.source_lines, &text));
            if by_ways {
                f = f.with_evidence("conflict_ways", ways);
            }
            if let Some((w, i, _)) = over {
                f = f.with_evidence("shared_wavefronts", w).with_evidence("ideal_wavefronts", i);
            }
            Some(with_gain(f))
        })
        .collect()
}

/// Bank conflicts and shared wavefronts of loads and stores, kernel-wide.
fn kernel_conflicts(inp: &ToolInput) -> Option<(f64, f64)> {
    let sum = |base: &str| -> Option<f64> {
        let parts: Vec<f64> = ["ld", "st"].iter().filter_map(|op| inp.num(&format!("{base}_op_{op}.sum"))).collect();
        (!parts.is_empty()).then(|| parts.iter().sum())
    };
    let conflicts = sum("l1tex__data_bank_conflicts_pipe_lsu_mem_shared")?;
    let wavefronts = sum("l1tex__data_pipe_lsu_wavefronts_mem_shared").filter(|&w| w > 0.0)?;
    Some((conflicts, wavefronts))
}

const STRIDE_ADVICE: &str = "neighbouring threads access shared words a multiple of 32 banks apart: use sequential addressing (thread tid works on sdata[tid] and sdata[tid + s]), an odd stride, or pad/swizzle a 2D tile";

/// Names the shared array of the line and its padded shape when the file
/// declares it as `__shared__ T name[R][C]`.
fn padding_advice(file: &[&str], line: &str) -> String {
    for decl in file.iter().filter(|l| l.contains("__shared__")) {
        let Some((before, rest)) = decl.split_once('[') else { continue };
        let name = before.split_whitespace().last().unwrap_or("");
        let dims: Vec<&str> =
            rest.split(';').next().unwrap_or("").split(['[', ']']).map(str::trim).filter(|d| !d.is_empty()).collect();
        if name.is_empty() || !line.contains(&format!("{name}[")) || dims.len() != 2 {
            continue;
        }
        let cols = dims[1].parse::<u32>().map(|c| (c + 1).to_string()).unwrap_or_else(|_| format!("{} + 1", dims[1]));
        return format!(
            "pad the tile to {name}[{}][{cols}]: the extra column shifts each row by one bank, so a column walk hits 32 different banks",
            dims[0]
        );
    }
    // A 1D array indexed with a stride (`sdata[index]`, `index = 2 * s * tid`).
    let one_d = file.iter().filter(|l| l.contains("__shared__")).filter_map(|decl| {
        let (before, rest) = decl.split_once('[')?;
        let name = before.split_whitespace().last()?;
        (rest.matches('[').count() == 0 && line.contains(&format!("{name}["))).then_some(name)
    });
    if let Some(name) = one_d.into_iter().next() {
        return format!(
            "the threads of a warp index {name} with a stride, so several of them hit the same bank: use sequential addressing ({name}[tid] += {name}[tid + s], with s halving from blockDim.x / 2), which keeps neighbouring threads on neighbouring words; a 2D tile stored in 1D wants a row stride of 33 instead of 32"
        );
    }
    "pad each row of the shared array by one element (or swizzle the column index) so the threads of a warp hit different banks".into()
}
