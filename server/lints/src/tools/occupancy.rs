//! Theoretical occupancy limited by registers or shared memory for the
//! kernel's real launch (spec, launch site, `__launch_bounds__`, else the
//! setting, and said which), with the figure that would let one more block
//! fit. Each template instantiation is checked with its own resources.

use super::finding;
use crate::locate::short_name;
use crate::{LintInput, StaticTool};
use kernelpro_model::{Code, Finding, Severity};
use kernelpro_sass::occupancy::{ArchLimits, Limiter, occupancy};

pub struct OccupancyLimit {
    /// Fires below this occupancy, in percent.
    pub min_percent: f64,
}

const NAME: Code = Code::OccupancyLimit;

impl StaticTool for OccupancyLimit {
    fn needs(&self) -> crate::Needs {
        crate::Needs::Resources
    }
    fn code(&self) -> Code {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        let Some(limits) = ArchLimits::for_arch(input.arch) else {
            return Vec::new();
        };
        let mut findings = Vec::new();
        for kernel in input.source.kernels() {
            let launch = input.launch(&kernel.name);
            let block = launch.block;
            let dynamic = launch.smem.unwrap_or(0);
            for r in input.resources.iter().filter(|r| {
                r.entry && short_name(&r.name) == kernel.name && (r.arch.is_empty() || r.arch == input.arch)
            }) {
                let shared = r.shared_static + dynamic;
                let occ = occupancy(&limits, block, r.registers, shared);
                if !matches!(occ.limiter, Limiter::Registers | Limiter::SharedMemory) || occ.percent >= self.min_percent
                {
                    continue;
                }
                let wanted = occ.blocks_per_sm + 1;
                let (what, guidance) = if occ.limiter == Limiter::Registers {
                    let fits = (1..r.registers)
                        .rev()
                        .find(|&regs| occupancy(&limits, block, regs, shared).blocks_per_sm >= wanted);
                    let change = match fits {
                        Some(regs) => format!(
                            "At most {regs} registers per thread (now {}) fit {wanted} blocks per SM",
                            r.registers
                        ),
                        None => "Fewer registers per thread raise it".to_string(),
                    };
                    (
                        format!("{} registers per thread", r.registers),
                        format!(
                            "{change}: keep fewer values live, or cap registers with `__launch_bounds__({block}, {wanted})` and check that it does not spill."
                        ),
                    )
                } else {
                    let fits = (0..shared / 128)
                        .rev()
                        .map(|units| units * 128)
                        .find(|&bytes| occupancy(&limits, block, r.registers, bytes).blocks_per_sm >= wanted);
                    let change = match fits {
                        Some(bytes) => format!(
                            "At most {bytes} B of shared memory per block (now {shared}) fit {wanted} blocks per SM"
                        ),
                        None => "Less shared memory per block raises it".to_string(),
                    };
                    let parts = if dynamic > 0 {
                        format!(" ({} static + {dynamic} dynamic)", r.shared_static)
                    } else {
                        String::new()
                    };
                    (
                        format!("{shared} B of shared memory per block{parts}"),
                        format!(
                            "{change}: use smaller tiles or stage the data in several passes, or give each block more threads so the same shared memory serves more warps."
                        ),
                    )
                };
                findings.push(
                    finding(
                        NAME,
                        Severity::Information,
                        kernel.name_span,
                        &kernel.name,
                        format!(
                            "`{}` reaches {:.1}% occupancy on {} with {block}-thread blocks, limited by {what}",
                            r.name, occ.percent, limits.arch
                        ),
                    )
                    .with_evidence("block size", format!("{block} (from {})", launch.from.describe()))
                    .with_evidence("registers", r.registers)
                    .with_evidence("shared memory (B)", shared)
                    .with_evidence(
                        "dynamic shared memory (B)",
                        launch.smem.map_or("unknown".to_string(), |b| b.to_string()),
                    )
                    .with_evidence("blocks per SM", occ.blocks_per_sm)
                    .with_evidence("active warps", format!("{}/{}", occ.active_warps, occ.max_warps))
                    .with_guidance(guidance),
                );
            }
        }
        findings
    }
}
