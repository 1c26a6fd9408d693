//! Global atomics that many lanes aim at one address or a few: an address
//! the thread index does not enter (every thread adds into `out[0]`), or bins
//! chosen by the data (a histogram), so equal values collide. An atomic
//! only one thread of a block or warp performs (`if (tid == 0)`) is the
//! expert form and stays silent, as do shared-memory (privatized) atomics.

use super::finding;
use crate::model::{Lines, models};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Code, Finding, Severity};
use kernelpro_source::kernel_model::{AccessKind, BranchKind, Dep, Space};

pub struct AtomicContention;

const NAME: Code = Code::AtomicContention;

impl StaticTool for AtomicContention {
    fn code(&self) -> Code {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        let mut findings = Vec::new();
        let mut lines = Lines::default();
        for model in models(input).iter() {
            // A `__device__` function's parameters differ per caller and thread:
            // where they point is unknown here (the kernels that call it are
            // modelled with the call inlined, their addresses known).
            let params: Vec<&str> = if model.is_kernel {
                Vec::new()
            } else {
                input
                    .source
                    .functions
                    .iter()
                    .filter(|f| f.name == model.name)
                    .flat_map(|f| f.params.iter().map(|p| p.name.as_str()))
                    .collect()
            };
            for a in model.accesses.iter().filter(|a| a.space == Space::Global && !params.contains(&a.base.as_str())) {
                let AccessKind::Atomic(function) = &a.kind else {
                    continue;
                };
                if model.branches_of(a).any(|b| b.kind == BranchKind::SingleThread) {
                    continue;
                }
                let in_loop = !a.loops.is_empty();
                let (message, guidance) = if a.is_irregular() {
                    (
                        format!("`{}`: lanes update bins chosen by the data (`{}[{}]`): lanes with equal values serialize on one address, and every update goes to global memory", a.text, a.base, a.index),
                        "Privatize the bins: a `__shared__` histogram per block updated with shared-memory atomics, then merged into the global bins once per block (`atomicAdd(&bins[b], local[b])`).".to_string(),
                    )
                } else if a.index.is_affine() && a.index.dep() != Dep::Thread {
                    let who = if a.index.dep() == Dep::Uniform {
                        "every thread of the block"
                    } else {
                        "every lane of a warp"
                    };
                    let per = if in_loop { ", once per element" } else { "" };
                    (
                        format!(
                            "`{}`: {who} atomically updates the same address `{}[{}]`{per}: the updates serialize (32 lanes on one address per warp request)",
                            a.text, a.base, a.index
                        ),
                        format!(
                            "Reduce before the atomic: accumulate in a register (a grid-stride loop), then across the warp with `__shfl_down_sync`, then across the block through shared memory, and let one thread per block call `{function}` (float sums stay order-dependent either way)."
                        ),
                    )
                } else {
                    continue;
                };
                if !lines.first(&model.name, a.line()) {
                    continue;
                }
                findings.push(
                    finding(NAME, Severity::Warning, a.span, &model.name, message)
                        .with_evidence("address", format!("{}[{}]", a.base, a.index))
                        .with_evidence(
                            "lane stride (elements)",
                            if a.is_irregular() {
                                "data-dependent".to_string()
                            } else {
                                a.lane_coefficient().to_string()
                            },
                        )
                        .with_evidence("in a loop", in_loop)
                        .with_guidance(guidance),
                );
            }
        }
        findings
    }
}
