//! Static micro-profiling tools: each reads the source (the kernel model of
//! `kernelpro_source::kernel_model`, or tree-sitter), the SASS
//! with line info and the ptxas resource report of one file, and reports what
//! the GPU will do badly, where, on what evidence, and what to change.
//!
//! Architecture invariant: tools are pure functions of a [`LintInput`]; they
//! never run the compiler or read files. A tool that lacks its evidence (no
//! SASS, no resources, unknown arch) stays silent rather than guess.
//!
//! Tool names double as doc anchors in `docs/tools.md`, so they differ from the
//! ncu tools' (`RegisterSpill`, `Vectorization`): `LocalMemorySpill`, `ScalarLoads`.
#![forbid(unsafe_code)]

pub mod launch;
mod locate;
mod model;
mod syntax;
mod tools;

use kernelpro_model::{Code, Finding};
use kernelpro_sass::disasm::Disassembly;
use kernelpro_sass::ptxas::KernelResources;
use kernelpro_source::SourceFile;
use serde::{Deserialize, Serialize};

pub use tools::{
    AtomicContention, DivergentBranch, Fp64Promotion, LocalMemorySpill, MissedReuse, MissingRestrict, OccupancyLimit,
    RowWalk, ScalarLoads, SharedBankConflict, SyncInDivergentBranch, UncoalescedAccess,
};

/// Everything the tools may look at for one `.cu` file and one architecture.
pub struct LintInput<'a> {
    /// The file's path as the compiler saw it; SASS line markers are matched by suffix or file name.
    pub path: &'a str,
    pub text: &'a str,
    pub source: &'a SourceFile,
    pub sass: Option<&'a Disassembly>,
    pub resources: &'a [KernelResources],
    /// `sm_90` etc.
    pub arch: &'a str,
    /// A kernel's launch when something says it (spec, launch site,
    /// `__launch_bounds__`: see [`launch`]).
    pub launches: &'a dyn Fn(&str) -> Option<launch::Launch>,
    /// Block size for kernels whose launch nothing says.
    pub default_block: u32,
    /// The launch block shape (x, y, z) of a kernel when a launch spec gives one;
    /// the kernel model uses it to place a warp's lanes (2D blocks).
    pub block_dims: &'a dyn Fn(&str) -> Option<[u32; 3]>,
    /// A kernel's integer scalar arguments when a launch spec gives them (`stride = 1`, `ks = 3`):
    /// the model specializes on the small ones (`KernelModel::specialize`).
    pub spec_values: &'a dyn Fn(&str) -> Vec<(String, i64)>,
}

impl LintInput<'_> {
    pub fn launch(&self, kernel: &str) -> launch::Launch {
        (self.launches)(kernel).unwrap_or(launch::Launch::assumed(self.default_block))
    }
    pub fn block_size(&self, kernel: &str) -> u32 {
        self.launch(kernel).block
    }
}

/// What a tool needs besides the source: it decides when on a save it can run
/// (the source tools with the compiler's messages, the SASS tools after nvdisasm).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Needs {
    /// The source (kernel model, tree-sitter) alone; SASS at most adds evidence.
    Source,
    /// The ptxas resource report (registers, shared memory), out with the compile.
    Resources,
    /// The SASS listing decides what is reported.
    Sass,
}

/// One pluggable static tool. Its code (from the registry in
/// `kernelpro_model::CODES`) is its name, the finding code and the doc anchor.
pub trait StaticTool {
    fn code(&self) -> Code;
    fn name(&self) -> &'static str {
        self.code().as_str()
    }
    fn analyze(&self, input: &LintInput) -> Vec<Finding>;
    fn needs(&self) -> Needs {
        Needs::Source
    }
}

/// Settings of the tools that have a threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Thresholds {
    /// OccupancyLimit fires below this theoretical occupancy (percent).
    pub occupancy_percent: f64,
    /// LocalMemorySpill names at most this many source lines per kernel.
    pub spill_lines: usize,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds { occupancy_percent: 50.0, spill_lines: 5 }
    }
}

/// Every tool, in the order their findings are reported.
pub fn registry(thresholds: &Thresholds) -> Vec<Box<dyn StaticTool>> {
    vec![
        Box::new(Fp64Promotion),
        Box::new(LocalMemorySpill { max_lines: thresholds.spill_lines }),
        Box::new(ScalarLoads),
        Box::new(MissingRestrict),
        Box::new(SyncInDivergentBranch),
        Box::new(SharedBankConflict),
        Box::new(UncoalescedAccess),
        Box::new(RowWalk),
        Box::new(AtomicContention),
        Box::new(DivergentBranch),
        Box::new(MissedReuse),
        Box::new(OccupancyLimit { min_percent: thresholds.occupancy_percent }),
    ]
}

/// All tools with default thresholds, findings sorted by position.
pub fn run_all(input: &LintInput) -> Vec<Finding> {
    run_all_with(input, &Thresholds::default())
}

pub fn run_all_with(input: &LintInput, thresholds: &Thresholds) -> Vec<Finding> {
    run_needing(input, thresholds, |_| true)
}

/// The tools whose `needs` pass `which`, findings sorted by position: a save
/// runs those needing at most [`Needs::Resources`] with the compiler's messages.
pub fn run_needing(input: &LintInput, thresholds: &Thresholds, which: impl Fn(Needs) -> bool) -> Vec<Finding> {
    let mut findings: Vec<Finding> =
        registry(thresholds).iter().filter(|tool| which(tool.needs())).flat_map(|tool| tool.analyze(input)).collect();
    findings.sort_by(|a, b| (a.span.start, &a.code).cmp(&(b.span.start, &b.code)));
    findings
}

/// The codes of the tools that need `which` (e.g. the SASS tools, whose
/// findings only the machine-code step brings).
pub fn codes_needing(which: Needs) -> Vec<&'static str> {
    registry(&Thresholds::default()).iter().filter(|tool| tool.needs() == which).map(|tool| tool.name()).collect()
}
