//! `__syncthreads()` under a condition that differs between the threads of a
//! block (the kernel model's branch kinds, not variable names): threads that
//! skip the branch never reach the barrier, so the block may hang or read
//! unsynchronised data. Block-uniform conditions (loop counters, `blockIdx`,
//! parameters) are fine, whatever the variables are called; a thread-dependent
//! early `return` before a barrier counts too.

use super::finding;
use crate::locate::{instructions_on, listing, sass_functions};
use crate::model::{Lines, models};
use crate::{LintInput, StaticTool};
use kernelpro_model::{Code, Finding, Severity};
use kernelpro_source::kernel_model::BranchSource;

pub struct SyncInDivergentBranch;

const NAME: Code = Code::SyncInDivergentBranch;

impl StaticTool for SyncInDivergentBranch {
    fn code(&self) -> Code {
        NAME
    }

    fn analyze(&self, input: &LintInput) -> Vec<Finding> {
        let mut findings = Vec::new();
        let mut lines = Lines::default();
        for model in models(input).iter() {
            for barrier in &model.barriers {
                let Some(branch) =
                    barrier.branches.iter().rev().map(|&i| &model.branches[i]).find(|b| b.kind.splits_block())
                else {
                    continue;
                };
                if !lines.first(&model.name, barrier.span.start.line) {
                    continue;
                }
                let line = barrier.span.start.line + 1;
                let sass: Vec<_> = input
                    .sass
                    .map(|s| instructions_on(&sass_functions(s, &model.name), input.path, line))
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|i| i.base_opcode() == "BAR")
                    .collect();
                let (place, guidance) = if branch.source == BranchSource::EarlyExit {
                    (
                        "after an early exit on the thread index",
                        "Keep every thread alive to the barrier: instead of `return`, guard only the work (`if (in range) { … }`) and let all threads reach `__syncthreads()`.",
                    )
                } else {
                    (
                        "inside a branch on the thread index",
                        "Move the barrier out of the branch so every thread of the block reaches it: guard only the work (`if (cond) { … }` then `__syncthreads();`).",
                    )
                };
                let mut f = finding(
                    NAME,
                    Severity::Warning,
                    barrier.span,
                    &model.name,
                    format!(
                        "`{}` {place} (`{}`): threads that skip it never reach the barrier",
                        barrier.text, branch.condition
                    ),
                )
                .with_evidence("condition", branch.condition.clone())
                .with_evidence("condition line", branch.span.start.line + 1)
                .with_evidence("condition varies", format!("{:?}", branch.kind).to_lowercase())
                .with_guidance(guidance);
                if !sass.is_empty() {
                    f = f.with_evidence("sass", listing(&sass, 4));
                }
                findings.push(f);
            }
        }
        findings
    }
}
