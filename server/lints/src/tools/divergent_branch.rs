//! Branches whose condition is a modulo or bit pattern of a lane-varying
//! value (`tid % (2 * s) == 0`, `threadIdx.x & 1`): every warp holds lanes on
//! both sides, so it runs both paths with part of its lanes idle. Bound
//! checks (`i < n`), single-thread work (`tid == 0`) and warp-uniform
//! conditions (`warp_id == 0`, `tid < 32`) split at most one warp and stay
//! silent.

use super::finding;
use crate::model::{Lines, models};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Code, Finding, Severity};
use kernelpro_source::kernel_model::{AccessKind, BranchKind, BranchSource, Space};

pub struct DivergentBranch;

const NAME: Code = Code::DivergentBranch;

impl StaticTool for DivergentBranch {
    fn code(&self) -> Code {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        let mut findings = Vec::new();
        let mut lines = Lines::default();
        for model in models(input).iter() {
            for (id, b) in model.branches.iter().enumerate() {
                let BranchKind::LaneModulo { modulus } = &b.kind else {
                    continue;
                };
                if b.source == BranchSource::Loop || !lines.first(&model.name, b.span.start.line) {
                    continue;
                }
                let in_loop = model.accesses.iter().any(|a| a.branches.contains(&id) && !a.loops.is_empty());
                let shared_reduction = model.accesses.iter().any(|a| {
                    a.branches.contains(&id) && a.space == Space::Shared && !a.is_atomic() && a.kind != AccessKind::Read
                });
                let guidance = if shared_reduction && in_loop {
                    "Use sequential addressing: `for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) { if (tid < s) sdata[tid] += sdata[tid + s]; __syncthreads(); }` keeps the working lanes contiguous, so whole warps are busy or idle (and finish the last 32 with `__shfl_down_sync`).".to_string()
                } else {
                    "Give the work to a contiguous range of threads instead (e.g. `if (tid < n / k)` with the index scaled by k), so whole warps take the same path.".to_string()
                };
                findings.push(
                    finding(
                        NAME,
                        Severity::Warning,
                        b.span,
                        &model.name,
                        format!("`{}` splits every warp: it depends on the lane modulo `{modulus}`, so each warp runs both paths with the lanes of the other path idle", b.condition),
                    )
                    .with_evidence("condition", b.condition.clone())
                    .with_evidence("pattern", format!("lane-varying value modulo {modulus}"))
                    .with_guidance(guidance),
                );
            }
        }
        findings
    }
}
