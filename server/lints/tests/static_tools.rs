//! The static tools on real nvcc output: the h200-probe kernels (recorded on
//! the H200 machine and re-recorded with the pinned nvcc), one planted kernel
//! per tool and the clean twin of every planted kernel.
//!
//! Fixtures come from `tests/fixtures/lints/record.sh`; `nvcc_matches_recordings`
//! recompiles them with the real compiler.

mod common;

use common::{Fixture, findings, findings_of, render};
use expect_test::{Expect, expect};
use kernelpro_lints::{Needs, Thresholds, codes_needing};
use kernelpro_model::Finding;
use std::collections::BTreeSet;

fn check(fixture: &Fixture, expected: Expect) {
    expected.assert_eq(&render(&findings(fixture, true, &Thresholds::default())));
}

/// `(1-based line, tool)` of every `// expect: Tool` comment in a fixture
/// (`// expect: A, B`: both fire on that line).
fn expected_markers(cu: &str) -> BTreeSet<(u32, String)> {
    cu.lines()
        .enumerate()
        .filter_map(|(i, line)| Some((i as u32 + 1, line.split_once("// expect: ")?.1)))
        .flat_map(|(line, codes)| codes.split(',').map(move |c| (line, c.trim().to_string())))
        .collect()
}

fn finding_lines(findings: &[Finding]) -> BTreeSet<(u32, String)> {
    findings.iter().map(|f| (f.span.start.line + 1, f.code.clone().unwrap_or_default())).collect()
}

#[test]
fn h200_probe_real_recording() {
    // nvcc 13.0 on the H200 machine, `nvdisasm -g -c`.
    let fixture = Fixture::recorded("h200-probe/kernels.cu", "h200-probe/nvdisasm_g.txt", "h200-probe/ptxas.txt");
    check(
        &fixture,
        expect![[r#"
            ScalarLoads 9:25-9:36 `x[i]`, `y[i]`: one 4-byte load each per thread per element in an elementwise kernel: 128-bit loads of 4 elements per thread would issue a quarter of the load instructions
            Fp64Promotion 9:39-9:42 FP64 in float kernel `saxpy_fp64`: the double literal `2.0` promotes this expression to double
            MissedReuse 22:40-22:54 dot-product loop over `k` without tiling: the lanes along threadIdx.x all read the same `A[row * N + k]` and each reads its own `B[k * N + col]`, so every element of `A` and `B` is fetched again by each thread that uses it
            SharedBankConflict 33:20-33:50 `tile[threadIdx.x][threadIdx.y]`: lanes are 32 words apart in `tile`: 32-way bank conflict (the request is served in 32 passes)
            LocalMemorySpill 36:17-36:26 `divergent` uses local memory (32 B stack frame) without register spills
            LocalMemorySpill 40:3-40:84 5 local-memory accesses (LDL/STL) from this line in `divergent`: `sinf`'s slow path for large arguments (range reduction) keeps a local array
            DivergentBranch 40:7-40:27 `threadIdx.x % 2 == 0` splits every warp: it depends on the lane modulo `2`, so each warp runs both paths with the lanes of the other path idle
            LocalMemorySpill 41:3-41:63 5 local-memory accesses (LDL/STL) from this line in `divergent`: `cosf`'s slow path for large arguments (range reduction) keeps a local array"#]],
    );
}

#[test]
fn h200_probe_pinned_nvcc_gives_the_same_findings() {
    let real = Fixture::recorded("h200-probe/kernels.cu", "h200-probe/nvdisasm_g.txt", "h200-probe/ptxas.txt");
    let pinned =
        Fixture::recorded("h200-probe/kernels.cu", "lints/kernels.sm90.nvdisasm.txt", "lints/kernels.sm90.ptxas.txt");
    let t = Thresholds::default();
    assert_eq!(render(&findings(&pinned, true, &t)), render(&findings(&real, true, &t)));
}

#[test]
fn planted_kernels() {
    check(
        &Fixture::planted(),
        expect![[r#"
            Fp64Promotion 9:10-9:15 FP64 in float kernel `fp64_promoted`: `scale` is declared `double`
            ScalarLoads 9:18-9:22 `x[i]`: one 4-byte load per thread per element in an elementwise kernel: 128-bit loads of 4 elements per thread would issue a quarter of the load instructions
            Fp64Promotion 10:3-10:8 FP64 in float kernel `fp64_promoted`: `scale` is declared `double`
            Fp64Promotion 11:32-11:35 FP64 in float kernel `fp64_promoted`: the double literal `0.5` promotes this expression to double
            ScalarLoads 17:26-17:30 `x[i]`: one 4-byte load per thread per element in an elementwise kernel: 128-bit loads of 4 elements per thread would issue a quarter of the load instructions
            Fp64Promotion 17:33-17:37 FP64 in float kernel `fp64_math_call`: the double literal `1e-3` promotes this expression to double
            LocalMemorySpill 21:43-21:61 `spill_accumulators` spills registers to local memory: 888 B stored, 940 B loaded, 376 B stack at 32 registers
            LocalMemorySpill 24:3-24:93 45 local-memory accesses (LDL/STL) from this line in `spill_accumulators`
            LocalMemorySpill 28:5-28:109 385 local-memory accesses (LDL/STL) from this line in `spill_accumulators`
            LocalMemorySpill 31:3-31:72 27 local-memory accesses (LDL/STL) from this line in `spill_accumulators`
            ScalarLoads 39:15-39:28 4 scalar loads of neighbouring elements of `in` (`in[4 * i + 0]` … `in[4 * i + 3]`) per thread, lanes 4 elements apart: 1 128-bit load would do
            RowWalk 49:39-49:57 each thread walks a row of `in` alone along `k` (`cols` elements, one per iteration) while neighbouring lanes are `cols` floats apart: a warp reads 32 rows at once, 32 sectors per request instead of 4
            MissingRestrict 54:40-54:49 `in` is loaded in the same loop as a store through `out`, and neither is `__restrict__`: the compiler must assume they overlap
            ScalarLoads 56:18-56:23 `in[i]`: one 4-byte load per thread per element in an elementwise kernel: 128-bit loads of 4 elements per thread would issue a quarter of the load instructions
            SyncInDivergentBranch 65:5-65:20 `__syncthreads()` inside a branch on the thread index (`tid < n`): threads that skip it never reach the barrier
            SharedBankConflict 77:39-77:50 `tile[tx][k]`: lanes are 32 words apart in `tile`: 32-way bank conflict (the request is served in 32 passes)
            SharedBankConflict 84:3-84:24 `buf[threadIdx.x * 32]`: lanes are 32 words apart in `buf`: 32-way bank conflict (the request is served in 32 passes)
            OccupancyLimit 90:17-90:31 `many_registers` reaches 37.5% occupancy on sm_90 with 256-thread blocks, limited by 72 registers per thread
            OccupancyLimit 105:17-105:27 `big_shared` reaches 25.0% occupancy on sm_90 with 128-thread blocks, limited by 49152 B of shared memory per block"#]],
    );
}

#[test]
fn planted_findings_sit_on_their_expect_comments() {
    let fixture = Fixture::planted();
    let found = findings(&fixture, true, &Thresholds::default());
    assert_eq!(finding_lines(&found), expected_markers(&fixture.cu));
}

#[test]
fn clean_twins_have_no_warnings() {
    // Information-level ScalarLoads suggestions (128-bit loads for simple maps) are expected.
    let fixture = Fixture::clean();
    assert!(expected_markers(&fixture.cu).is_empty());
    let warnings: Vec<Finding> = findings(&fixture, true, &Thresholds::default())
        .into_iter()
        .filter(|f| f.severity != kernelpro_model::Severity::Information)
        .collect();
    assert_eq!(render(&warnings), "");
}

#[test]
fn findings_carry_evidence_guidance_and_doc() {
    // The first finding of every tool on the planted kernels, in full.
    let found = findings(&Fixture::planted(), true, &Thresholds::default());
    let mut seen = BTreeSet::new();
    let details: Vec<String> = found
        .iter()
        .filter(|f| seen.insert(f.code.clone()))
        .map(|f| {
            let evidence: Vec<String> = f.evidence.iter().map(|e| format!("  {} = {}", e.name, e.value)).collect();
            format!(
                "{} [{}] {} kernel={}\n{}\n  guidance: {}\n  doc: {}",
                f.code.as_deref().unwrap_or("?"),
                f.severity.as_str(),
                f.source,
                f.kernel.as_deref().unwrap_or("?"),
                evidence.join("\n"),
                f.guidance.as_deref().unwrap_or("-"),
                f.doc_url.as_deref().unwrap_or("-")
            )
        })
        .collect();
    expect![[r#"
        Fp64Promotion [warning] kernelpro kernel=fp64_promoted
          sass = 0x00d0 F2F.F64.F32
          fp64 instructions = 1
          guidance: Declare `scale` as `float` unless it really needs double precision.
          doc: docs/tools.md#fp64promotion
        ScalarLoads [info] kernelpro kernel=fp64_promoted
          sass = 0x00c0 LDG.E.CONSTANT
          scalar LDG on line = 1
          guidance: Process 4 elements per thread: load `reinterpret_cast<const float4*>(x)[i]` (16-byte aligned, with a scalar tail when the length is not a multiple of 4), apply the expression to each component, store a `float4` back; keep a grid-stride loop so any launch stays correct.
          doc: docs/tools.md#scalarloads
        LocalMemorySpill [warning] kernelpro kernel=spill_accumulators
          registers = 32
          spill stores (B) = 888
          spill loads (B) = 940
          stack frame (B) = 376
          LDL/STL instructions = 457
          guidance: Reduce live values per thread (smaller per-thread arrays, less unrolling, recompute instead of keeping), or relax `__launch_bounds__(256, 8)` (fewer minimum blocks per SM allows more registers).
          doc: docs/tools.md#localmemoryspill
        RowWalk [warning] kernelpro kernel=row_sum
          loop = k: bound `cols` (line 49)
          walked accesses = in[row * cols + k]
          lane stride (elements) = cols
          guidance: Give each row a warp (a block when rows are long): lanes stride the row together (`for (int k = lane; k < …; k += 32)`), reduce the partial results with `__shfl_xor_sync` (and shared memory across warps), and keep the per-element expression as it is.
          doc: docs/tools.md#rowwalk
        MissingRestrict [info] kernelpro kernel=scale_copy
          stored through = out
          loaded through = in
          where = load on line 56, store on line 56, in one loop
          guidance: If they never overlap, declare `const float* __restrict__ in` and `float* __restrict__ out` (every pointer parameter of `scale_copy` that never aliases another), so loads can be kept in registers, moved ahead of stores and use the read-only path.
          doc: docs/tools.md#missingrestrict
        SyncInDivergentBranch [warning] kernelpro kernel=sync_in_branch
          condition = tid < n
          condition line = 63
          condition varies = bound
          sass = 0x0100 BAR.SYNC.DEFER_BLOCKING
          guidance: Move the barrier out of the branch so every thread of the block reaches it: guard only the work (`if (cond) { … }` then `__syncthreads();`).
          doc: docs/tools.md#syncindivergentbranch
        SharedBankConflict [warning] kernelpro kernel=column_sum
          index (elements) = 32*tid.x + k
          stride between lanes (words) = 32
          shared array = __shared__ float tile[32][32]
          sass = 0x0100 LDS.128, 0x0110 LDS.128, 0x0120 LDS.128, 0x0130 LDS.128, … 4 more
          guidance: Pad the inner dimension by one element so a column's words fall in different banks: `__shared__ float tile[32][33]`.
          doc: docs/tools.md#sharedbankconflict
        OccupancyLimit [info] kernelpro kernel=many_registers
          block size = 256 (from the blockSize setting: no launch spec, `<<<…>>>` launch or `__launch_bounds__` says)
          registers = 72
          shared memory (B) = 0
          dynamic shared memory (B) = unknown
          blocks per SM = 3
          active warps = 24/64
          guidance: At most 64 registers per thread (now 72) fit 4 blocks per SM: keep fewer values live, or cap registers with `__launch_bounds__(256, 4)` and check that it does not spill.
          doc: docs/tools.md#occupancylimit"#]].assert_eq(&details.join("\n"));
}

#[test]
fn without_sass_only_source_and_resource_tools_fire() {
    let found = findings(&Fixture::planted(), false, &Thresholds::default());
    expect![[r#"
        ScalarLoads 9:18-9:22 `x[i]`: one 4-byte load per thread per element in an elementwise kernel: 128-bit loads of 4 elements per thread would issue a quarter of the load instructions
        ScalarLoads 17:26-17:30 `x[i]`: one 4-byte load per thread per element in an elementwise kernel: 128-bit loads of 4 elements per thread would issue a quarter of the load instructions
        LocalMemorySpill 21:43-21:61 `spill_accumulators` spills registers to local memory: 888 B stored, 940 B loaded, 376 B stack at 32 registers
        ScalarLoads 39:15-39:28 4 scalar loads of neighbouring elements of `in` (`in[4 * i + 0]` … `in[4 * i + 3]`) per thread, lanes 4 elements apart: 1 128-bit load would do
        RowWalk 49:39-49:57 each thread walks a row of `in` alone along `k` (`cols` elements, one per iteration) while neighbouring lanes are `cols` floats apart: a warp reads 32 rows at once, 32 sectors per request instead of 4
        MissingRestrict 54:40-54:49 `in` is loaded in the same loop as a store through `out`, and neither is `__restrict__`: the compiler must assume they overlap
        ScalarLoads 56:18-56:23 `in[i]`: one 4-byte load per thread per element in an elementwise kernel: 128-bit loads of 4 elements per thread would issue a quarter of the load instructions
        SyncInDivergentBranch 65:5-65:20 `__syncthreads()` inside a branch on the thread index (`tid < n`): threads that skip it never reach the barrier
        SharedBankConflict 77:39-77:50 `tile[tx][k]`: lanes are 32 words apart in `tile`: 32-way bank conflict (the request is served in 32 passes)
        SharedBankConflict 84:3-84:24 `buf[threadIdx.x * 32]`: lanes are 32 words apart in `buf`: 32-way bank conflict (the request is served in 32 passes)
        OccupancyLimit 90:17-90:31 `many_registers` reaches 37.5% occupancy on sm_90 with 256-thread blocks, limited by 72 registers per thread
        OccupancyLimit 105:17-105:27 `big_shared` reaches 25.0% occupancy on sm_90 with 128-thread blocks, limited by 49152 B of shared memory per block"#]].assert_eq(&render(&found));
}

/// A save publishes the source and resource tools with the compiler's messages,
/// before nvdisasm: they must say then exactly what the full run says later
/// (SASS only adds evidence), and the full run adds only the SASS tools' codes.
#[test]
fn source_tools_say_before_sass_what_they_say_after() {
    let t = Thresholds::default();
    let early = |n: Needs| n <= Needs::Resources;
    let sass_codes = codes_needing(Needs::Sass);
    expect![[r#"["Fp64Promotion", "LocalMemorySpill", "ScalarLoads"]"#]].assert_eq(&format!("{sass_codes:?}"));
    for fixture in [
        Fixture::planted(),
        Fixture::clean(),
        Fixture::recorded("h200-probe/kernels.cu", "h200-probe/nvdisasm_g.txt", "h200-probe/ptxas.txt"),
    ] {
        let before = render(&findings_of(&fixture, false, &t, early));
        let full: Vec<Finding> = findings(&fixture, true, &t)
            .into_iter()
            .filter(|f| !sass_codes.contains(&f.code.as_deref().unwrap_or_default()))
            .collect();
        assert_eq!(before, render(&full), "{}", fixture.path);
        assert!(!before.is_empty() || fixture.path == "clean.cu", "{}", fixture.path);
    }
}

#[test]
fn occupancy_threshold_is_configurable() {
    let thresholds = Thresholds { occupancy_percent: 30.0, ..Thresholds::default() };
    let found = findings(&Fixture::planted(), true, &thresholds);
    let occupancy: Vec<_> = found.iter().filter(|f| f.code.as_deref() == Some("OccupancyLimit")).collect();
    let kernels: Vec<_> = occupancy.iter().map(|f| f.kernel.as_deref().unwrap_or("?")).collect();
    // many_registers: 37.5% and big_shared: 25%; only the latter is under 30%.
    assert_eq!(kernels, ["big_shared"]);
}
