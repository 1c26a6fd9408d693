//! Atomic contention: global atomics (`RED`/`ATOM` at L2) that many threads
//! aim at one address or a small table serialize in the L2 slice that owns
//! it. ncu shows no "contention" counter; the evidence is where the warps
//! wait (on the atomic, or at `EXIT` for the reductions to drain, or at a
//! fence), how many sectors each warp-level atomic touches (the source
//! page), and how unevenly the reductions spread over the L2 slices.

use super::ToolInput;
use super::input::{gain_from_saved_share, pct, round2};
use crate::csv_pages::{AtomicSpace, SassRow};
use kernelpro_model::{Code, Finding, Severity};

/// Warp samples of a row: all of them, in ncu's column names.
fn samples(r: &SassRow) -> f64 {
    r.num("Warp Stall Sampling (All Samples)").or_else(|| r.num("# Samples")).unwrap_or(0.0)
}

fn executed(r: &SassRow) -> f64 {
    r.num("Instructions Executed").unwrap_or(0.0)
}

/// How the lanes of one warp-level atomic spread over memory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Spread {
    /// Several lanes per instruction, all in one 32-byte sector: one address
    /// (or a few neighbouring ones), the single-address sum.
    OneSector { lanes: f64 },
    /// One lane per instruction: the compiler (or the code) already
    /// aggregated the warp; the warps still meet on the same addresses.
    OneLane,
    /// Lanes spread over several sectors of a table (a histogram).
    Scattered { lanes: f64, sectors: f64 },
    /// The source page lacks the counters to tell.
    Unknown,
}

/// One atomic call site: the global atomic instructions of one source line.
#[derive(Debug, Clone)]
pub struct AtomicSite {
    /// 1-based line of the profiled file.
    pub line: Option<u32>,
    /// Warp-level atomic instructions executed.
    pub executed: f64,
    /// Thread-level updates (predicated-on threads).
    pub updates: f64,
    pub samples: f64,
    pub spread: Spread,
    pub float: bool,
    /// Whether the atomic returns the old value (`ATOM`: the warp waits for L2).
    pub returns: bool,
}

/// Where the time of the kernel's global atomics goes.
#[derive(Debug, Clone)]
pub struct AtomicWait {
    pub sites: Vec<AtomicSite>,
    /// Share (%) of all warp samples that wait on the atomics: samples on the
    /// atomic instructions, drain stalls at `EXIT`, fence (membar) stalls.
    pub share_pct: f64,
    pub drain_pct: f64,
    /// Whether any warp samples were recorded (else the shares are 0 for want of data).
    pub sampled: bool,
    /// Reductions plus atomics that reached L2, thread-level when known.
    pub l2_updates: Option<f64>,
    /// Busiest L2 slice over the average slice, for atomic/reduction sectors:
    /// ~1 when the updates spread, the slice count when one address gets all.
    pub slice_concentration: Option<f64>,
    /// How much of the kernel's duration (%) the busiest slice's atomic unit was active.
    pub busiest_unit_pct: Option<f64>,
}

fn site_of(line: Option<u32>, rows: &[&SassRow]) -> AtomicSite {
    let executed: f64 = rows.iter().map(|r| executed(r)).sum();
    let updates: f64 = rows
        .iter()
        .map(|r| {
            r.num("Predicated-On Thread Instructions Executed")
                .or_else(|| r.num("Thread Instructions Executed"))
                .unwrap_or(0.0)
        })
        .sum();
    let sectors: Option<f64> = rows.iter().map(|r| r.num("L2 Theoretical Sectors Global")).sum();
    let lanes = if executed > 0.0 { updates / executed } else { 0.0 };
    let per_warp = sectors.filter(|_| executed > 0.0).map(|s| s / executed);
    let spread = match per_warp {
        _ if executed > 0.0 && lanes <= 1.05 => Spread::OneLane,
        Some(s) if s <= 1.05 => Spread::OneSector { lanes },
        Some(s) => Spread::Scattered { lanes, sectors: s },
        None => Spread::Unknown,
    };
    AtomicSite {
        line,
        executed,
        updates,
        samples: rows.iter().map(|r| samples(r)).sum(),
        spread,
        float: rows.iter().any(|r| r.opcode().contains("F32") || r.opcode().contains("F64")),
        returns: rows.iter().any(|r| r.opcode().starts_with("ATOM")),
    }
}

/// The executed global atomic sites, busiest first.
pub fn atomic_sites(inp: &ToolInput) -> Vec<AtomicSite> {
    let mut by_line: Vec<(Option<u32>, Vec<&SassRow>)> = Vec::new();
    for r in inp.instructions().iter().filter(|r| r.atomic() == Some(AtomicSpace::Global) && executed(r) > 0.0) {
        let line = atomic_line(inp, r);
        match by_line.iter_mut().find(|(l, _)| *l == line) {
            Some((_, rows)) => rows.push(r),
            None => by_line.push((line, vec![r])),
        }
    }
    let mut sites: Vec<AtomicSite> = by_line.iter().map(|(l, rows)| site_of(*l, rows)).collect();
    sites.sort_by(|a, b| b.samples.total_cmp(&a.samples).then(b.executed.total_cmp(&a.executed)));
    sites
}

/// The line of the `atomic*(` call an atomic instruction comes from. ncu
/// lists the instruction under CUDA's header (`device_atomic_functions.hpp`)
/// where `atomicAdd` is inlined from; of the file's lines that call an
/// atomic, the one whose code comes right before the instruction wins.
fn atomic_line(inp: &ToolInput, row: &SassRow) -> Option<u32> {
    let nearest = inp.own_line(row)?;
    let own_is_call = |l: u32| calls_atomic(&inp.quote(l));
    if own_is_call(nearest) {
        return Some(nearest);
    }
    let calls: Vec<u32> = inp.lines().map(|l| l.line).filter(|&l| own_is_call(l)).collect();
    match calls.as_slice() {
        [] => Some(nearest),
        [only] => Some(*only),
        many => {
            // The calling line whose instructions sit closest before the atomic.
            let at = row.address_value()?;
            let source = inp.source?;
            many.iter()
                .filter_map(|&l| {
                    let before =
                        source.instructions_of(l).filter_map(|i| i.address_value()).filter(|&a| a < at).max()?;
                    Some((l, at - before))
                })
                .min_by_key(|(_, d)| *d)
                .map(|(l, _)| l)
                .or(Some(nearest))
        }
    }
}

/// `atomicAdd(`, `atomicCAS (`, `atomicAdd_block(`, `cuda::atomic_ref`: a call of an atomic.
fn calls_atomic(text: &str) -> bool {
    text.match_indices("atomic").any(|(i, _)| {
        let rest = &text[i..];
        let word_end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let after = rest[word_end..].trim_start();
        after.starts_with('(') || after.starts_with('<') || rest.starts_with("atomic_ref")
    })
}

/// The kernel's atomic sites and the share of warp time they cost, or
/// `None` when the kernel executes no global atomics.
pub fn atomic_wait(inp: &ToolInput) -> Option<AtomicWait> {
    let sites = atomic_sites(inp);
    let l2_updates = l2_atomic_updates(inp);
    let counted: f64 = [
        "smsp__inst_executed_op_global_red.sum",
        "smsp__inst_executed_op_generic_atom_dot_alu.sum",
        "smsp__inst_executed_op_generic_atom_dot_cas.sum",
    ]
    .iter()
    .filter_map(|m| inp.num(m))
    .sum();
    if sites.is_empty() && counted <= 0.0 && l2_updates.is_none_or(|u| u <= 0.0) {
        return None;
    }
    let (share_pct, drain_pct) = match inp.sample_total().filter(|_| inp.source.is_some()) {
        Some(total) => {
            let rows = inp.instructions();
            let on_atomics: f64 = rows.iter().filter(|r| r.atomic() == Some(AtomicSpace::Global)).map(samples).sum();
            // Drain at exit waits for every outstanding global write: the
            // atomics' part is their share of the kernel's global writes.
            let atomic_writes: f64 =
                rows.iter().filter(|r| r.atomic() == Some(AtomicSpace::Global)).map(executed).sum();
            let stores: f64 =
                rows.iter().filter(|r| matches!(r.opcode().split('.').next(), Some("STG" | "ST"))).map(executed).sum();
            let atomic_part = if atomic_writes + stores > 0.0 { atomic_writes / (atomic_writes + stores) } else { 1.0 };
            let drain: f64 = rows.iter().filter_map(|r| r.num("stall_drain")).sum::<f64>() * atomic_part;
            let membar: f64 = rows.iter().filter(|r| r.atomic().is_none()).filter_map(|r| r.num("stall_membar")).sum();
            ((on_atomics + drain + membar) * 100.0 / total, drain * 100.0 / total)
        }
        // Kernel-level stall shares only: drain and fences wait for the atomics.
        None => {
            let drain = inp.stall_share("drain").unwrap_or(0.0);
            (drain + inp.stall_share("membar").unwrap_or(0.0), drain)
        }
    };
    let slice_concentration = slice_concentration(inp);
    let sampled = inp.sample_total().is_some_and(|t| t > 0.0) || !inp.stall_shares().is_empty();
    let busiest_unit_pct = inp.num("lts__d_atomic_input_cycles_active.max.pct_of_peak_sustained_elapsed");
    Some(AtomicWait { sites, share_pct, drain_pct, sampled, l2_updates, slice_concentration, busiest_unit_pct })
}

/// Reduction and atomic sectors that reached L2 (one per thread-level
/// update when the lanes hit one sector).
fn l2_atomic_updates(inp: &ToolInput) -> Option<f64> {
    let red = inp.profile.first(&["lts__t_sectors_srcunit_tex_op_red.sum", "lts__t_sectors_op_red.sum"]);
    let atom = inp.profile.first(&["lts__t_sectors_srcunit_tex_op_atom.sum", "lts__t_sectors_op_atom.sum"]);
    match (red, atom) {
        (None, None) => None,
        (r, a) => Some(r.unwrap_or(0.0) + a.unwrap_or(0.0)),
    }
}

/// Busiest L2 slice over the average one, for the atomic units' activity
/// (or, failing that, for the reduction sectors).
fn slice_concentration(inp: &ToolInput) -> Option<f64> {
    let ratio = |max: &str, avg: &str| Some(inp.num(max)? / inp.num(avg).filter(|&a| a > 0.0)?);
    ratio(
        "lts__d_atomic_input_cycles_active.max.pct_of_peak_sustained_elapsed",
        "lts__d_atomic_input_cycles_active.avg.pct_of_peak_sustained_elapsed",
    )
    .or_else(|| ratio("lts__t_sectors_srcunit_tex_op_red.max", "lts__t_sectors_srcunit_tex_op_red.avg"))
    .or_else(|| ratio("lts__t_sectors_op_red.max", "lts__t_sectors_op_red.avg"))
}

impl AtomicWait {
    /// The atomics cost enough of the kernel's time to name them.
    pub fn contended(&self, t: &super::Thresholds) -> bool {
        let concentrated = self.slice_concentration.is_some_and(|c| c >= t.atomic_slice_concentration);
        // One slice's atomic unit busy most of the kernel: the atomics set its pace.
        let saturated = concentrated && self.busiest_unit_pct.is_some_and(|b| b >= t.atomic_unit_busy_pct);
        self.share_pct >= t.atomic_wait_pct
            || saturated
            || (concentrated && (self.share_pct >= t.atomic_wait_pct / 2.0 || !self.sampled))
    }
}

pub fn atomic_contention(inp: &ToolInput) -> Vec<Finding> {
    let t = inp.thresholds;
    let Some(wait) = atomic_wait(inp) else { return vec![] };
    if !wait.contended(t) {
        return vec![];
    }
    let top = wait.sites.first();
    let line = top.and_then(|s| s.line);
    let spread = top.map(|s| s.spread).unwrap_or(Spread::Unknown);
    let updates = top.map(|s| s.updates).filter(|&u| u > 0.0).or(wait.l2_updates);
    let count = updates.map(|u| format!("{} atomic updates", big(u))).unwrap_or_else(|| "the atomic updates".into());
    let one_slice = wait.slice_concentration.is_some_and(|c| c >= t.atomic_slice_concentration);
    let place = if one_slice { "in one L2 slice" } else { "in L2" };
    let what = match spread {
        Spread::OneSector { lanes } => format!(
            "all {lanes:.0} lanes of each warp update one address (one 32-byte sector): {count} serialize {place}"
        ),
        Spread::OneLane => format!("one lane per warp does the atomic: {count} still serialize {place}"),
        Spread::Scattered { .. } => {
            format!("threads update a small table with global atomics: {count} collide {place}")
        }
        Spread::Unknown => format!("global atomics serialize {place} ({count})"),
    };
    let saturated = one_slice && wait.busiest_unit_pct.is_some_and(|b| b >= t.atomic_unit_busy_pct);
    // Fire-and-forget reductions keep few warps waiting on them: then the slice's busy time is the evidence.
    let waiting = match wait.busiest_unit_pct {
        Some(b) if saturated && wait.share_pct < t.atomic_wait_pct => {
            format!("; that slice's atomic unit is busy {b:.0}% of the kernel's time")
        }
        _ if wait.sampled => format!("; {:.0}% of warp samples wait for them", wait.share_pct),
        _ => String::new(),
    };
    let severity = if wait.share_pct >= 2.0 * t.atomic_wait_pct || (!wait.sampled && one_slice) || saturated {
        Severity::Warning
    } else {
        Severity::Information
    };
    let mut f = inp
        .finding(Code::ContendedAtomics, severity, line, format!("atomic contention: {what}{waiting}"))
        .with_evidence("atomic_wait_share", pct(wait.share_pct));
    if wait.drain_pct > 0.0 {
        f = f.with_evidence("drain_at_exit", pct(wait.drain_pct));
    }
    if let Some(site) = top {
        f = f.with_evidence("warp_atomics", site.executed);
        match site.spread {
            Spread::OneSector { lanes } => f = f.with_evidence("lanes_per_sector", format!("{lanes:.0}")),
            Spread::Scattered { lanes, sectors } => {
                f = f.with_evidence("sectors_per_warp_atomic", format!("{sectors:.1} for {lanes:.0} lanes"))
            }
            _ => {}
        }
    }
    // L1's view of the same requests: sectors per warp-level reduction (1 for one address).
    if let (Some(sectors), Some(requests)) = (
        inp.num("l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum"),
        inp.num("l1tex__t_requests_pipe_lsu_mem_global_op_red.sum").filter(|&r| r > 0.0),
    ) {
        f = f.with_evidence("l1_sectors_per_reduction_request", format!("{:.1}", sectors / requests));
    }
    if let Some(u) = wait.l2_updates {
        f = f.with_evidence("l2_atomic_sectors", u);
        if let Some(ns) = inp.profile.base("gpu__time_duration.sum").filter(|&d| d > 0.0) {
            f = f.with_evidence("l2_atomic_rate", format!("{} per ns", round2(u / ns)));
        }
    }
    if let Some(c) = wait.slice_concentration {
        f = f.with_evidence("busiest_l2_slice_over_average", format!("{c:.1}x"));
    }
    if let Some(b) = wait.busiest_unit_pct.filter(|_| one_slice) {
        f = f.with_evidence("busiest_slice_atomic_unit_active", pct(b));
    }
    let paced = if saturated { wait.busiest_unit_pct.unwrap_or(0.0).max(wait.share_pct) } else { wait.share_pct };
    if let Some(g) = gain_from_saved_share(paced / 100.0 * 0.9) {
        f = f.with_gain(g);
    }
    let float = top.is_some_and(|s| s.float);
    vec![f.with_guidance(guidance(spread, float, top.is_some_and(|s| s.returns)))]
}

fn guidance(spread: Spread, float: bool, returns: bool) -> String {
    let order = if float { " (a float sum in fixed order is also reproducible, which atomics are not)" } else { "" };
    match spread {
        Spread::Scattered { .. } => "privatize the table: build a per-block copy in __shared__ memory with shared atomics, __syncthreads(), then add each nonzero entry to global memory once per block; when a warp's lanes often share a key, __match_any_sync lets one lane add for all of them".into(),
        Spread::OneLane => format!("the warp is already aggregated; aggregate the block too: reduce the warps' values in __shared__ memory and let one thread per block do the atomic, or write per-block partials and reduce them in a second pass{order}"),
        _ if returns => "every thread waits for the old value from one contended address: hand out work per block (one atomic per block, then offsets in shared memory) or per warp (one lane's atomic, broadcast with __shfl_sync)".into(),
        _ => format!("reduce inside the block first (__shfl_down_sync within each warp, then the warps' results through __shared__ memory) and let one thread per block do the atomicAdd, or write per-block partials and reduce them in a second pass (cub::DeviceReduce::Sum){order}: blockDim.x times fewer atomics"),
    }
}

/// `16.8M`, `524k`, `96`.
fn big(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Whether the kernel's dominant stall is explained by its global atomics
/// (WarpStall then leaves the finding to ContendedAtomics).
pub fn explains_stall(inp: &ToolInput, reason: &str, line: Option<u32>) -> bool {
    let t = inp.thresholds;
    let Some(wait) = atomic_wait(inp) else { return false };
    if !wait.contended(t) {
        return false;
    }
    match reason {
        "drain" | "membar" => true,
        "lg_throttle" | "long_scoreboard" => line.is_none_or(|l| wait.sites.iter().any(|s| s.line == Some(l))),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::calls_atomic;

    #[test]
    fn atomic_calls() {
        assert!(calls_atomic("if (i < n) atomicAdd(out, x[i]);"));
        assert!(calls_atomic("atomicAdd (&bins[data[i]], 1u);"));
        assert!(calls_atomic("cuda::atomic_ref<float, cuda::thread_scope_device> r(*out);"));
        assert!(!calls_atomic("// no atomics here"));
        assert!(!calls_atomic("bool atomics_enabled = true;"));
    }
}
