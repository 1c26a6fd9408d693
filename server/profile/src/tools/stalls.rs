//! Warp stall reasons: their names in the raw page and the source page, what
//! they mean, and what to change when one dominates.

use super::ToolInput;

pub struct StallReason {
    /// Suffix of `smsp__pcsamp_warps_issue_stalled_*` (and, with the listed
    /// alias, of `smsp__average_warps_issue_stalled_*_per_issue_active.ratio`).
    pub key: &'static str,
    pub alias: &'static str,
    /// Column of the source page.
    pub column: &'static str,
    pub meaning: &'static str,
    pub guidance: &'static str,
}

const fn r(key: &'static str, alias: &'static str, column: &'static str, meaning: &'static str, guidance: &'static str) -> StallReason {
    StallReason { key, alias, column, meaning, guidance }
}

/// Stall reasons; `selected` and `not_selected` are left out: those warps
/// were ready to issue.
pub static STALL_REASONS: &[StallReason] = &[
    r("long_scoreboard", "long_scoreboard", "stall_long_sb", "waiting for global/local memory (L1TEX) data",
      "issue the loads earlier and make fewer of them: coalesce them, reuse data through shared memory, or unroll so each thread has several independent loads in flight"),
    r("barrier", "barrier", "stall_barrier", "waiting at __syncthreads()",
      "balance the work between barriers, or use smaller blocks so fewer warps wait for the slowest one"),
    r("lg_throttle", "lg_throttle", "stall_lg", "the local/global memory instruction queue is full",
      "issue fewer, wider memory instructions: load float4 instead of float, or stage a tile in shared memory and reuse it"),
    r("mio_throttle", "mio_throttle", "stall_mio", "the shared-memory/special-function instruction queue is full",
      "remove shared-memory bank conflicts and cut shared-memory or MUFU instructions"),
    r("short_scoreboard", "short_scoreboard", "stall_short_sb", "waiting for shared-memory or special-function (MUFU) results",
      "remove shared-memory bank conflicts; use __sinf/__expf intrinsics where their precision is enough"),
    r("math_pipe_throttle", "math_pipe_throttle", "stall_math", "a math pipe is saturated",
      "move work to an idle pipe (FP32 instead of FP64, tensor cores for products) or remove instructions"),
    r("wait", "wait", "stall_wait", "fixed-latency dependencies between consecutive instructions",
      "interleave independent work: unroll the loop or give each thread several elements"),
    r("branch_resolving", "branch_resolving", "stall_branch_resolving", "waiting for branch targets",
      "make branches uniform per warp or replace them with selects"),
    r("dispatch_stall", "dispatch_stall", "stall_dispatch", "the dispatcher could not issue", "check for pipe contention in the hot loop"),
    r("drain", "drain", "stall_drain", "waiting for stores to drain at exit", "write results with fewer, wider stores"),
    r("no_instructions", "no_instruction", "stall_no_inst", "instruction cache misses", "shrink the hot code: less unrolling or fewer inlined paths"),
    r("imc_miss", "imc_miss", "stall_imc", "constant cache misses", "keep per-thread-varying indices out of __constant__ arrays"),
    r("membar", "membar", "stall_membar", "waiting at a memory fence", "drop fences that are not needed (__threadfence)"),
    r("tex_throttle", "tex_throttle", "stall_tex", "the texture unit queue is full", "use fewer texture fetches or plain loads"),
    r("sleeping", "sleeping", "stall_sleep", "threads sleeping (nanosleep)", "wake threads sooner"),
    r("misc", "misc", "stall_misc", "miscellaneous hardware reasons", "look at the hottest instruction of the line"),
];

impl ToolInput<'_> {
    /// Share (%) of warp samples in each stall reason, largest first: from PC
    /// sampling counts, else from the average per-issue stall cycles.
    pub fn stall_shares(&self) -> Vec<(&'static StallReason, f64)> {
        let sampled = self.num("smsp__pcsamp_sample_count").filter(|&n| n > 0.0).map(|total| {
            STALL_REASONS
                .iter()
                .filter_map(|r| Some((r, self.num(&format!("smsp__pcsamp_warps_issue_stalled_{}", r.key))? * 100.0 / total)))
                .collect::<Vec<_>>()
        });
        let mut shares = sampled.unwrap_or_else(|| {
            let ratio = |k: &str| self.num(&format!("smsp__average_warps_issue_stalled_{k}_per_issue_active.ratio"));
            let all: f64 = ["selected", "not_selected"].iter().filter_map(|k| ratio(k)).sum::<f64>()
                + STALL_REASONS.iter().filter_map(|r| ratio(r.alias)).sum::<f64>();
            STALL_REASONS.iter().filter_map(|r| Some((r, ratio(r.alias)? * 100.0 / all))).filter(|_| all > 0.0).collect()
        });
        shares.sort_by(|a, b| b.1.total_cmp(&a.1));
        shares
    }

    pub fn stall_share(&self, key: &str) -> Option<f64> {
        self.stall_shares().into_iter().find(|(r, _)| r.key == key).map(|(_, s)| s)
    }

    /// Total warp samples of the kernel, to express a line's samples as a share.
    pub fn sample_total(&self) -> Option<f64> {
        self.num("smsp__pcsamp_sample_count")
            .or_else(|| Some(self.lines().iter().filter_map(|l| l.metrics.get("# Samples")?.number()).sum::<f64>()).filter(|&s| s > 0.0))
    }
}
