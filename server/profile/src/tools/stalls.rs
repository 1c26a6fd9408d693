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

const fn r(
    key: &'static str,
    alias: &'static str,
    column: &'static str,
    meaning: &'static str,
    guidance: &'static str,
) -> StallReason {
    StallReason { key, alias, column, meaning, guidance }
}

/// Stall reasons; `selected` and `not_selected` are left out: those warps
/// were ready to issue.
pub static STALL_REASONS: &[StallReason] = &[
    r(
        "long_scoreboard",
        "long_scoreboard",
        "stall_long_sb",
        "waiting for global/local memory (L1TEX) data",
        "issue the loads earlier and make fewer of them: coalesce them, reuse data through shared memory, or unroll so each thread has several independent loads in flight",
    ),
    r(
        "barrier",
        "barrier",
        "stall_barrier",
        "waiting at __syncthreads()",
        "balance the work between barriers, or use smaller blocks so fewer warps wait for the slowest one",
    ),
    r(
        "lg_throttle",
        "lg_throttle",
        "stall_lg",
        "the local/global memory instruction queue is full",
        "issue fewer, wider memory instructions: load float4 instead of float, or stage a tile in shared memory and reuse it",
    ),
    r(
        "mio_throttle",
        "mio_throttle",
        "stall_mio",
        "the shared-memory/special-function instruction queue is full",
        "remove shared-memory bank conflicts and cut shared-memory or MUFU instructions",
    ),
    r(
        "short_scoreboard",
        "short_scoreboard",
        "stall_short_sb",
        "waiting for shared-memory or special-function (MUFU) results",
        "remove shared-memory bank conflicts; use __sinf/__expf intrinsics where their precision is enough",
    ),
    r(
        "math_pipe_throttle",
        "math_pipe_throttle",
        "stall_math",
        "a math pipe is saturated",
        "move work to an idle pipe (FP32 instead of FP64, tensor cores for products) or remove instructions",
    ),
    r(
        "wait",
        "wait",
        "stall_wait",
        "fixed-latency dependencies between consecutive instructions",
        "interleave independent work: unroll the loop or give each thread several elements",
    ),
    r(
        "branch_resolving",
        "branch_resolving",
        "stall_branch_resolving",
        "waiting for branch targets",
        "make branches uniform per warp or replace them with selects",
    ),
    r(
        "dispatch_stall",
        "dispatch_stall",
        "stall_dispatch",
        "the dispatcher could not issue",
        "check for pipe contention in the hot loop",
    ),
    r("drain", "drain", "stall_drain", "waiting for stores to drain at exit", "write results with fewer, wider stores"),
    r(
        "no_instructions",
        "no_instruction",
        "stall_no_inst",
        "instruction cache misses",
        "shrink the hot code: less unrolling or fewer inlined paths",
    ),
    r(
        "imc_miss",
        "imc_miss",
        "stall_imc",
        "constant cache misses",
        "keep per-thread-varying indices out of __constant__ arrays",
    ),
    r(
        "membar",
        "membar",
        "stall_membar",
        "waiting at a memory fence",
        "drop fences that are not needed (__threadfence)",
    ),
    r(
        "tex_throttle",
        "tex_throttle",
        "stall_tex",
        "the texture unit queue is full",
        "use fewer texture fetches or plain loads",
    ),
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
                .filter_map(|r| {
                    Some((r, self.num(&format!("smsp__pcsamp_warps_issue_stalled_{}", r.key))? * 100.0 / total))
                })
                .collect::<Vec<_>>()
        });
        let mut shares = sampled.unwrap_or_else(|| {
            let ratio = |k: &str| self.num(&format!("smsp__average_warps_issue_stalled_{k}_per_issue_active.ratio"));
            let all: f64 = ["selected", "not_selected"].iter().filter_map(|k| ratio(k)).sum::<f64>()
                + STALL_REASONS.iter().filter_map(|r| ratio(r.alias)).sum::<f64>();
            STALL_REASONS
                .iter()
                .filter_map(|r| Some((r, ratio(r.alias)? * 100.0 / all)))
                .filter(|_| all > 0.0)
                .collect()
        });
        shares.sort_by(|a, b| b.1.total_cmp(&a.1));
        shares
    }

    pub fn stall_share(&self, key: &str) -> Option<f64> {
        self.stall_shares().into_iter().find(|(r, _)| r.key == key).map(|(_, s)| s)
    }

    /// Total warp samples of the kernel, to express a line's samples as a share.
    pub fn sample_total(&self) -> Option<f64> {
        self.num("smsp__pcsamp_sample_count").or_else(|| {
            // Every file's lines: samples inlined from headers count too.
            let all = self.source.into_iter().flat_map(|s| s.lines.iter());
            Some(all.filter_map(|l| l.metrics.get("# Samples")?.number()).sum::<f64>()).filter(|&s| s > 0.0)
        })
    }
}

/// What the instructions of one source line do, as far as the stall advice cares.
#[derive(Debug, Default, Clone, Copy)]
pub struct LineUse {
    pub global_atomic: bool,
    pub shared_atomic: bool,
    pub shared: bool,
    pub local: bool,
    pub mufu: bool,
    /// An integer division or modulo by a variable (I2F.U32.RP, MUFU.RCP).
    pub int_division: bool,
    /// The line's shared accesses conflict (N-way column, or wavefronts over ideal).
    pub bank_conflicts: bool,
}

impl ToolInput<'_> {
    /// The executed instructions of a line of the profiled file, inlined ones included.
    pub fn rows_of(&self, line: u32) -> impl Iterator<Item = &crate::csv_pages::SassRow> + '_ {
        self.instructions()
            .iter()
            .filter(move |r| r.num("Instructions Executed").is_some_and(|n| n > 0.0) && self.own_line(r) == Some(line))
    }

    pub fn line_use(&self, line: u32) -> LineUse {
        let mut u = LineUse::default();
        for r in self.rows_of(line) {
            let base = r.opcode().split('.').next().unwrap_or("");
            match r.atomic() {
                Some(crate::csv_pages::AtomicSpace::Global) => u.global_atomic = true,
                Some(crate::csv_pages::AtomicSpace::Shared) => u.shared_atomic = true,
                None => {}
            }
            u.shared |= matches!(base, "LDS" | "STS" | "ATOMS" | "LDSM");
            u.local |= matches!(base, "LDL" | "STL");
            u.mufu |= base == "MUFU";
            u.int_division |= r.opcode().starts_with("I2F.U32.RP") || r.opcode().starts_with("I2F.RP");
        }
        if let Some(l) = self.source.and_then(|s| s.line(line)) {
            let n = |c: &str| l.metrics.get(c).and_then(|m| m.number());
            let ways = n("L1 Conflicts Shared N-Way").unwrap_or(0.0);
            let over = match (n("L1 Wavefronts Shared"), n("L1 Wavefronts Shared Ideal")) {
                (Some(w), Some(i)) if i > 0.0 => w / i,
                _ => 1.0,
            };
            u.bank_conflicts =
                ways >= self.thresholds.bank_conflict_ways || over > self.thresholds.shared_wavefronts_over_ideal;
        }
        u
    }

    /// Whether the kernel executes global atomics at all.
    pub fn has_global_atomics(&self) -> bool {
        self.instructions().iter().any(|r| {
            r.atomic() == Some(crate::csv_pages::AtomicSpace::Global)
                && r.num("Instructions Executed").is_some_and(|n| n > 0.0)
        }) || self.num("smsp__inst_executed_op_global_red.sum").is_some_and(|n| n > 0.0)
    }

    /// Whether most of the kernel's executed global writes are atomics (so a
    /// drain at exit waits on them); without a source page, whether it has any.
    fn writes_mostly_atomic(&self) -> bool {
        let executed = |r: &&crate::csv_pages::SassRow| r.num("Instructions Executed").unwrap_or(0.0);
        let rows = self.instructions();
        let atomics: f64 = rows
            .iter()
            .filter(|r| r.atomic() == Some(crate::csv_pages::AtomicSpace::Global))
            .map(|r| executed(&r))
            .sum();
        let stores: f64 = rows
            .iter()
            .filter(|r| matches!(r.opcode().split('.').next(), Some("STG" | "ST")))
            .map(|r| executed(&r))
            .sum();
        if rows.is_empty() { self.has_global_atomics() } else { atomics > 0.0 && atomics >= stores }
    }

    /// The advice for a dominant stall, for what its line actually does: the
    /// same reason has different causes (drain after atomics is contention,
    /// not store width; short scoreboard on shared loads is bank conflicts,
    /// not MUFU).
    pub fn stall_guidance(&self, reason: &StallReason, line: Option<u32>) -> String {
        let u = line.map(|l| self.line_use(l)).unwrap_or_default();
        let atomics = self.has_global_atomics();
        const CONTENTION: &str = "the waits are on global atomics that many threads aim at the same addresses: reduce within the warp and the block first (__shfl_down_sync, __shared__ memory) and issue one atomic per block, or privatize a table per block in __shared__ memory";
        const SPILL: &str = "the waits are on local memory (register spills or a per-thread array indexed at run time): keep the values in registers (constant indices, less unrolling, a higher register cap)";
        const CONFLICTS: &str = "the line's shared-memory accesses hit the same banks: make neighbouring threads access neighbouring words (sequential addressing, tid + s), or pad/swizzle a 2D tile so a column walk spreads over the 32 banks";
        match reason.key {
            "drain" if self.writes_mostly_atomic() => "warps wait at exit for their global atomics to drain: many threads reduce into the same addresses, which L2 serializes; reduce per block first and issue one atomic per block".into(),
            "drain" => "warps wait at exit for their last global stores to drain: make the final stores coalesced and wider (float4), or give each thread more work so the exit cost is amortized".into(),
            "lg_throttle" | "long_scoreboard" if u.global_atomic => CONTENTION.into(),
            "lg_throttle" | "long_scoreboard" if u.local => SPILL.into(),
            "membar" if atomics => "a fence orders the atomics: fence once per block after its atomics (the last-block pattern), not once per thread, and drop __threadfence where no other block reads the result".into(),
            "short_scoreboard" | "mio_throttle" if u.shared_atomic => "shared-memory atomics on the same words serialize: give each warp its own copy of the table (or aggregate equal keys with __match_any_sync) before updating it".into(),
            "short_scoreboard" | "mio_throttle" if u.bank_conflicts => CONFLICTS.into(),
            "short_scoreboard" if u.int_division => "waiting on an integer division's reciprocal (MUFU.RCP): a `%` or `/` by a variable costs a division sequence on every pass; test with a mask (tid & (2 * s - 1)) or restructure the loop (sequential addressing tests tid < s)".into(),
            "short_scoreboard" if u.shared && !u.mufu => "waiting for shared-memory loads: keep the values in registers, and do the steps within a warp with shuffles (__shfl_down_sync) instead of shared memory and barriers".into(),
            "short_scoreboard" if u.mufu && !u.shared => "waiting for special-function (MUFU) results: use __sinf/__expf/rsqrtf intrinsics where their precision is enough, or hoist the calls out of the loop".into(),
            _ => reason.guidance.into(),
        }
    }
}
