//! The tools, one module each, and the finding shape they share.

mod atomic_contention;
mod bank_conflict;
mod divergent_branch;
mod fp64;
mod local_memory;
mod missed_reuse;
mod occupancy;
mod restrict;
mod row_walk;
mod scalar_loads;
mod sync_branch;
mod uncoalesced;

pub use atomic_contention::AtomicContention;
pub use bank_conflict::SharedBankConflict;
pub use divergent_branch::DivergentBranch;
pub use fp64::Fp64Promotion;
pub use local_memory::LocalMemorySpill;
pub use missed_reuse::MissedReuse;
pub use occupancy::OccupancyLimit;
pub use restrict::MissingRestrict;
pub use row_walk::RowWalk;
pub use scalar_loads::ScalarLoads;
pub use sync_branch::SyncInDivergentBranch;
pub use uncoalesced::UncoalescedAccess;

use kernelpro_model::{Code, Finding, Severity, Span};

/// A finding of `tool` about `kernel`, with the tool's code and doc link.
fn finding(tool: Code, severity: Severity, span: Span, kernel: &str, message: String) -> Finding {
    Finding::new("kernelpro", severity, span, message)
        .with_code(tool.as_str())
        .with_kernel(kernel)
        .with_doc(tool.doc_url())
}

/// The non-blank part of a 0-based line, so a line-level finding underlines code, not indent.
fn line_span(text: &str, line: u32) -> Span {
    let content = text.lines().nth(line as usize).unwrap_or("");
    let start = content.len() - content.trim_start().len();
    let end = content.trim_end().len().max(start);
    Span::new(kernelpro_model::Pos::new(line, start as u32), kernelpro_model::Pos::new(line, end as u32))
}
