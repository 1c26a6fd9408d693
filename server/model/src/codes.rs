//! The registry of finding codes: every problem a KernelPro tool can report,
//! static (`kernelpro-lints`) or measured (`kernelpro-profile`), with its title,
//! a one-line description and its anchor in `docs/tools.md`. Tools emit
//! [`Code`]s and rewrites declare the [`Code`]s they answer, so a name spelled
//! two ways cannot silently stop a rewrite from being tried first.
//!
//! Compiler messages (`#20011-D`), spec errors and the pipeline's own codes
//! (`no-nvcc`, `Untrusted`, `Regression`, ...) are not tool findings and stay
//! plain strings.

use serde::{Deserialize, Serialize};

/// Which kind of tool reports a code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Nsight Compute counters (`kernelpro-profile`, stage 2).
    Profile,
    /// Source, SASS and ptxas report, no GPU (`kernelpro-lints`).
    Static,
}

/// One registry row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeInfo {
    pub code: Code,
    pub origin: Origin,
    /// A few words for menus and hovers.
    pub title: &'static str,
    /// What the tool detects, in one line.
    pub summary: &'static str,
}

macro_rules! registry {
    ($($code:ident, $origin:ident, $title:literal, $summary:literal;)*) => {
        /// A tool finding's code. Its name is the finding's `code` string and,
        /// lower-cased, its anchor in `docs/tools.md`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum Code {
            $($code,)*
        }

        /// Every code, in `docs/tools.md` order (profile tools, then static tools).
        pub static CODES: &[CodeInfo] = &[
            $(CodeInfo { code: Code::$code, origin: Origin::$origin, title: $title, summary: $summary },)*
        ];

        impl Code {
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Code::$code => stringify!($code),)*
                }
            }
        }
    };
}

registry! {
    MemoryCoalescing, Profile, "Memory coalescing", "global loads that miss in L1 while warps wait on them";
    Uncoalesced, Profile, "Uncoalesced accesses (measured)", "global accesses that fetch more 32-byte sectors than a coalesced access would";
    HighDRAMThroughput, Profile, "High DRAM throughput", "a kernel at the DRAM bandwidth roof";
    OccupancyLimiter, Profile, "Occupancy limiter (measured)", "too few resident warps to hide latency, and what limits them";
    HighRegisterUsage, Profile, "High register usage", "more registers per thread than leave room for other warps";
    WarpStall, Profile, "Warp stall", "the dominant warp stall reason and the source line where it happens";
    BarrierStall, Profile, "Barrier stall", "warps waiting at `__syncthreads` for a large share of the time";
    LaunchOverhead, Profile, "Launch overhead", "wall time lost to kernel launches";
    RegisterSpill, Profile, "Register spill (measured)", "register spills (executed local-memory instructions) when they cost time";
    SharedMemTiling, Profile, "Shared-memory tiling", "global data many threads re-read through L1, with no shared memory in use";
    TensorCore, Profile, "Tensor cores idle", "a multiply-accumulate loop on the FP32 pipe while the tensor cores idle";
    Vectorization, Profile, "Vectorization", "coalesced but 4-byte global accesses in a memory-heavy kernel";
    SharedBankConflicts, Profile, "Shared bank conflicts (measured)", "shared-memory bank conflicts, per line";
    ThreadDivergence, Profile, "Thread divergence", "branches that split warps";
    ContendedAtomics, Profile, "Contended atomics (measured)", "atomics serialized on few addresses at L2, on the atomic's line";
    FP64Math, Profile, "FP64 math (measured)", "FP64 instructions in a kernel with no `double` parameters";
    NonFusedFP32, Profile, "Non-fused FP32", "separate `FMUL`/`FADD` where `FFMA` would do";
    TailEffect, Profile, "Tail effect", "a partial last wave of blocks that leaves SMs idle";
    Fp64Promotion, Static, "FP64 promotion", "FP64 work in a float kernel, with its cause in the source";
    LocalMemorySpill, Static, "Local memory", "spills, a stack frame or local-memory instructions in the kernel's SASS";
    ScalarLoads, Static, "Scalar loads", "scalar global loads that a vector load would cover";
    MissingRestrict, Static, "Missing `__restrict__`", "two pointer parameters whose possible aliasing costs reloads";
    SyncInDivergentBranch, Static, "Barrier in a divergent branch", "`__syncthreads()` that some threads of a block may never reach";
    SharedBankConflict, Static, "Shared bank conflict", "a shared access whose lanes put several words on one bank";
    OccupancyLimit, Static, "Occupancy limit", "theoretical occupancy limited by registers or shared memory";
    UncoalescedAccess, Static, "Uncoalesced access", "a global load or store whose neighbouring lanes are far apart";
    RowWalk, Static, "Row walk", "each thread walks a long contiguous row alone";
    AtomicContention, Static, "Atomic contention", "a global atomic whose lanes serialize on one address";
    DivergentBranch, Static, "Divergent branch", "a modulo or bit-pattern branch that splits every warp";
    MissedReuse, Static, "Missed reuse", "neighbouring threads re-reading the same global data";
}

impl Code {
    /// Every code, in registry order.
    pub fn all() -> impl Iterator<Item = Code> {
        CODES.iter().map(|c| c.code)
    }

    /// The code a finding's `code` string names, if it is a tool's.
    pub fn parse(name: &str) -> Option<Code> {
        CODES.iter().map(|c| c.code).find(|c| c.as_str() == name)
    }

    pub fn info(self) -> &'static CodeInfo {
        CODES.iter().find(|c| c.code == self).expect("every code has a registry row")
    }

    pub fn origin(self) -> Origin {
        self.info().origin
    }

    pub fn title(self) -> &'static str {
        self.info().title
    }

    pub fn summary(self) -> &'static str {
        self.info().summary
    }

    /// The quick fix a structural finding offers on its diagnostic: the optimizer restricted to
    /// the rewrites that answer it (`kernelpro_recipes::promised`, from the recipes' `answers`),
    /// e.g. "Make one warp per row". `None` for codes whose answer is not a structural rewrite.
    pub fn fix_title(self) -> Option<&'static str> {
        Some(match self {
            Code::RowWalk => "Make one warp per row",
            Code::UncoalescedAccess => "Remap threads so neighbouring lanes touch neighbouring elements",
            Code::MissedReuse => "Share the re-read data through shared-memory tiles",
            Code::AtomicContention => "Combine in the block first, one atomic per block",
            Code::DivergentBranch => "Reduce with warp shuffles instead of a divergent tree",
            _ => return None,
        })
    }

    /// The heading anchor in `docs/tools.md` (GitHub lower-cases headings).
    pub fn doc_anchor(self) -> String {
        self.as_str().to_ascii_lowercase()
    }

    pub fn doc_url(self) -> String {
        crate::tool_doc_url(self.as_str())
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for Code {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn names_round_trip_and_are_unique() {
        for c in Code::all() {
            assert_eq!(Code::parse(c.as_str()), Some(c));
            assert!(!c.title().is_empty() && !c.summary().is_empty(), "{c}");
        }
        let names: BTreeSet<&str> = Code::all().map(Code::as_str).collect();
        assert_eq!(names.len(), CODES.len());
        // Anchors too: GitHub would number a second `#sharedbankconflict`.
        let anchors: BTreeSet<String> = Code::all().map(Code::doc_anchor).collect();
        assert_eq!(anchors.len(), CODES.len());
        assert_eq!(Code::parse("no-nvcc"), None);
    }

    /// `docs/tools.md` documents exactly the registry: one heading per code,
    /// profile tools under `##`, static tools under `###` (after `## Static tools`).
    #[test]
    fn docs_tools_md_lists_exactly_the_registry() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tools.md");
        let doc = std::fs::read_to_string(&path).expect("docs/tools.md");
        let mut documented = Vec::new();
        let mut in_static = false;
        for line in doc.lines() {
            if line == "## Static tools" {
                in_static = true;
            } else if let Some(name) = line.strip_prefix("### ").filter(|_| in_static) {
                documented.push((name.trim().to_string(), Origin::Static));
            } else if let Some(name) = line.strip_prefix("## ").filter(|_| !in_static) {
                documented.push((name.trim().to_string(), Origin::Profile));
            }
        }
        let registry: Vec<(String, Origin)> = CODES.iter().map(|c| (c.code.as_str().to_string(), c.origin)).collect();
        assert_eq!(
            documented, registry,
            "docs/tools.md headings (in order) against the registry in server/model/src/codes.rs"
        );
    }
}
