//! Issue 18 item 4: atomic contention, divergence and shared bank conflicts
//! named from ncu's pages, with advice for the cause.
//!
//! Three sources of pages:
//! - tests/fixtures/h200-kernelpro/{histogram,reduction}: real H200 pages
//!   recorded by the harness (stage 1, stage 2, source page);
//! - tests/fixtures/h200-contention/synthetic: hand-written pages in ncu's
//!   exact CSV layout (columns copied from the real recordings), marked
//!   synthetic in their README, standing in until the recordings exist;
//! - tests/fixtures/h200-contention/*.csv: the recordings of record.sh
//!   (made on an H100 on 2026-12-05, see that folder's README).

use expect_test::{Expect, expect};
use kernelpro_model::Finding;
use kernelpro_profile::tools::{Thresholds, ToolInput, analyze, select_tools};
use kernelpro_profile::{KernelProfile, SourcePage, TriageThresholds, parse_details, parse_raw, parse_source, triage};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Stage-2 metrics completed with stage 1's (what the core crate does).
fn merge(stage1: &KernelProfile, stage2: Option<&KernelProfile>) -> KernelProfile {
    stage2.map_or_else(|| stage1.clone(), |s2| s2.completed_with(stage1))
}

/// The tools of the kernel's class over one profile, source page and file.
fn run_tools(profile: &KernelProfile, page: Option<&SourcePage>, file_text: &str) -> Vec<Finding> {
    let tri = triage(profile, &TriageThresholds::default());
    let lines: Vec<&str> = file_text.lines().collect();
    let thresholds = Thresholds::default();
    let input = ToolInput {
        profile,
        source: page,
        triage: tri.as_ref(),
        source_lines: &lines,
        thresholds: &thresholds,
        launch_overhead_pct: None,
    };
    let tools = match &tri {
        Some(t) => select_tools(t.class),
        None => kernelpro_profile::tools::TOOLS.iter().collect(),
    };
    analyze(&tools, &input)
}

fn source_page(path: &Path) -> SourcePage {
    let mut pages = parse_source(&read(path)).unwrap();
    assert_eq!(pages.len(), 1, "{}: one function per source page", path.display());
    pages.remove(0)
}

/// A harness recording of tests/fixtures/h200-kernelpro: stage 1 + stage 2 + source page.
fn harness_findings(dir: &str, kernel: &str, file: &str) -> Vec<Finding> {
    let d = fixtures().join("h200-kernelpro").join(dir);
    let s1 = parse_raw(&read(&d.join("stage1_raw.csv"))).unwrap();
    let s2 = parse_raw(&read(&d.join("stage2_raw.csv"))).unwrap();
    let profile = merge(&s1[0], s2.iter().find(|p| p.kernel == s1[0].kernel));
    let page = source_page(&d.join(format!("src_{kernel}.csv")));
    run_tools(&profile, Some(&page), &read(&fixtures().join("../../bench/kernels").join(file)))
}

fn render(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            let evidence: Vec<String> = f.evidence.iter().map(|e| format!("{}={}", e.name, e.value)).collect();
            format!(
                "{} {} {} {}\n  -> {}\n  gain {:?} [{}]\n",
                f.span.start.line + 1,
                f.severity.as_str(),
                f.code.as_deref().unwrap_or(""),
                f.message,
                f.guidance.as_deref().unwrap_or(""),
                f.estimated_gain,
                evidence.join(", ")
            )
        })
        .collect()
}

fn check(findings: &[Finding], expected: Expect) {
    expected.assert_eq(&render(findings));
}

/// The 1-based line of `file` that contains `text`.
fn line_of(file: &str, text: &str) -> u32 {
    file.lines().position(|l| l.contains(text)).unwrap_or_else(|| panic!("{text:?} not in the file")) as u32 + 1
}

// -- real H200 pages of the harness --------------------------------------------

#[test]
fn source_page_keeps_the_inlined_atomic_and_maps_it_to_its_call() {
    let d = fixtures().join("h200-kernelpro/histogram");
    // ncu lists the histogram twice: its own file, then the REDG under
    // CUDA's device_atomic_functions.hpp. One page, two files.
    let page = source_page(&d.join("src_histogram.csv"));
    assert_eq!(page.file, "/tmp/kernelpro-Olubcf/histogram.cu");
    let red = page.instructions.iter().find(|r| r.opcode().starts_with("REDG")).unwrap();
    assert_eq!(red.line, Some(112));
    assert!(red.file.as_deref().unwrap().ends_with("device_atomic_functions.hpp"));
    assert_eq!(page.own_line_of(red), Some(11));
    let own: Vec<u32> = page.own_lines().map(|l| l.line).collect();
    assert_eq!(own, [9, 10, 11, 12]);
    assert!(page.line(112).is_none(), "a header's line number is no line of the kernel's file");
}

/// The issue's histogram: a WarpStall note ("stores to drain") before; an
/// ContendedAtomics finding on the atomicAdd line now.
#[test]
fn histogram_atomics_are_contention_on_the_atomic_line() {
    let found = harness_findings("histogram", "histogram", "histogram.cu");
    check(
        &found,
        expect![[r#"
            11 warning ContendedAtomics atomic contention: threads update a small table with global atomics: 16.8M atomic updates collide in one L2 slice; 41% of warp samples wait for them in `if (i < n) atomicAdd(&bins[data[i]], 1u);`
              -> privatize the table: build a per-block copy in __shared__ memory with shared atomics, __syncthreads(), then add each nonzero entry to global memory once per block; when a warp's lanes often share a key, __match_any_sync lets one lane add for all of them
              gain Some(3.62) [atomic_wait_share=41.4%, drain_at_exit=41.4%, warp_atomics=524288, sectors_per_warp_atomic=20.4 for 32 lanes, busiest_l2_slice_over_average=47.0x, busiest_slice_atomic_unit_active=80.4%]
            9 hint LaunchOverhead launch overhead not measured: it needs nsys, which is unavailable
              -> 
              gain None []
        "#]],
    );
}

/// One atomic per block after a shared-memory tree: no contention.
#[test]
fn block_reduction_atomics_are_not_contention() {
    let found = harness_findings("reduction", "reduce_sum", "reduction.cu");
    assert!(!found.iter().any(|f| f.code.as_deref() == Some("ContendedAtomics")), "{}", render(&found));
    check(
        &found,
        expect![[r#"
        13 info WarpStall 40% of warp samples stall waiting for global/local memory (L1TEX) data (long_scoreboard) in `sdata[tid] = i < n ? x[i] : 0.0f;`
          -> issue the loads earlier and make fewer of them: coalesce them, reuse data through shared memory, or unroll so each thread has several independent loads in flight
          gain None [stall_reason=long_scoreboard, stall_share=40.2%, line_share_of_samples=40.2%]
        9 hint LaunchOverhead launch overhead not measured: it needs nsys, which is unavailable
          -> 
          gain None []
    "#]],
    );
}

// -- synthetic pages (tests/fixtures/h200-contention/synthetic) ----------------

fn contention_dir() -> PathBuf {
    fixtures().join("h200-contention")
}

fn kernels_cu() -> String {
    read(&contention_dir().join("kernels.cu"))
}

/// SYNTHETIC: hand-written pages in ncu's layout (see synthetic/README.md).
fn synthetic_findings(kernel: &str) -> Vec<Finding> {
    let d = contention_dir().join("synthetic");
    let profile = parse_raw(&read(&d.join(format!("raw_{kernel}.csv")))).unwrap().remove(0);
    let page = source_page(&d.join(format!("src_{kernel}.csv")));
    run_tools(&profile, Some(&page), &kernels_cu())
}

/// The issue's single-address float sum: "stall waiting for stores to
/// drain… write results with fewer, wider stores" before; contention on the
/// atomicAdd line, with the block-reduction fix, now.
#[test]
fn synthetic_single_address_sum_is_contention() {
    let found = synthetic_findings("sum_atomic");
    assert!(
        !found.iter().any(|f| f.guidance.as_deref().is_some_and(|g| g.contains("wider stores"))),
        "{}",
        render(&found)
    );
    check(
        &found,
        expect![[r#"
            15 warning ContendedAtomics atomic contention: all 32 lanes of each warp update one address (one 32-byte sector): 16.8M atomic updates serialize in one L2 slice; 98% of warp samples wait for them in `if (i < n) atomicAdd(out, x[i]);`
              -> reduce inside the block first (__shfl_down_sync within each warp, then the warps' results through __shared__ memory) and let one thread per block do the atomicAdd, or write per-block partials and reduce them in a second pass (cub::DeviceReduce::Sum) (a float sum in fixed order is also reproducible, which atomics are not): blockDim.x times fewer atomics
              gain Some(9.74) [atomic_wait_share=98.5%, drain_at_exit=66.5%, warp_atomics=524288, lanes_per_sector=32, l2_atomic_sectors=16777216, l2_atomic_rate=0.58 per ns, busiest_l2_slice_over_average=95.9x, busiest_slice_atomic_unit_active=99.7%]
            13 hint LaunchOverhead launch overhead not measured: it needs nsys, which is unavailable
              -> 
              gain None []
        "#]],
    );
}

/// The interleaved reduction: the modulo test splits every warp (predicated
/// body with ~4 of 32 lanes on, behind an integer division each step).
#[test]
fn synthetic_interleaved_reduction_diverges() {
    let found = synthetic_findings("reduce_interleaved");
    check(
        &found,
        expect![[r#"
        67 warning BarrierStall 53% of warp samples wait at a barrier in `__syncthreads();`
          -> warps wait for the slowest warp of the block: balance the work between __syncthreads(), drop barriers that guard nothing, or use smaller blocks
          gain None [barrier_stalls=52.5%]
        66 warning ThreadDivergence the condition splits the lanes of every warp: 4.0 of 32 lanes do the work of its predicated body in `if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];`
          -> the modulo test keeps every (2*s)-th thread working, so all warps stay busy with a few active lanes: use sequential addressing instead, for (s = blockDim.x / 2; s > 0; s >>= 1) { if (tid < s) sdata[tid] += sdata[tid + s]; __syncthreads(); }, which keeps the working threads contiguous so whole warps finish early (and neighbouring lanes read neighbouring words)
          gain None [lanes_on_per_predicated_instruction=4.0 of 32, uniform_branches=100.0%, integer_division=the modulo by a variable compiles to a division sequence on every step]
        67 info WarpStall 53% of warp samples stall waiting at __syncthreads() (barrier) in `__syncthreads();`
          -> balance the work between barriers, or use smaller blocks so fewer warps wait for the slowest one
          gain None [stall_reason=barrier, stall_share=52.5%, line_share_of_samples=38.3%]
        59 hint LaunchOverhead launch overhead not measured: it needs nsys, which is unavailable
          -> 
          gain None []
    "#]],
    );
}

/// The strided-index reduction: 2s-word strides in shared memory conflict.
#[test]
fn synthetic_strided_reduction_has_bank_conflicts() {
    let found = synthetic_findings("reduce_strided");
    check(
        &found,
        expect![[r#"
        80 warning SharedBankConflicts 6-way shared-memory bank conflicts in `if (index < blockDim.x) sdata[index] += sdata[index + s];`
          -> the threads of a warp index sdata with a stride, so several of them hit the same bank: use sequential addressing (sdata[tid] += sdata[tid + s], with s halving from blockDim.x / 2), which keeps neighbouring threads on neighbouring words; a 2D tile stored in 1D wants a row stride of 33 instead of 32
          gain Some(2.39) [conflict_ways=6, shared_wavefronts=37748736, ideal_wavefronts=6291456, excess_wavefronts=81.1%]
        76 info Vectorization coalesced but 4-byte global accesses in `sdata[tid] = i < n ? x[i] : 0.0f;`
          -> let each thread handle 4 consecutive elements through float4 (reinterpret_cast<const float4*>(p)[i]), with a scalar loop for the n % 4 tail: a quarter of the load/store instructions for the same bytes
          gain None [memory_instructions_executed=524288]
        80 info WarpStall 44% of warp samples stall waiting for shared-memory or special-function (MUFU) results (short_scoreboard) in `if (index < blockDim.x) sdata[index] += sdata[index + s];`
          -> the line's shared-memory accesses hit the same banks: make neighbouring threads access neighbouring words (sequential addressing, tid + s), or pad/swizzle a 2D tile so a column walk spreads over the 32 banks
          gain None [stall_reason=short_scoreboard, stall_share=44.0%, line_share_of_samples=44.0%]
    "#]],
    );
}

/// Without a source page, the kernel-level counters still name the
/// contention (no line) and the conflicts.
#[test]
fn synthetic_kernel_level_only() {
    let d = contention_dir().join("synthetic");
    let mut out = String::new();
    for kernel in ["sum_atomic", "reduce_strided"] {
        let profile = parse_raw(&read(&d.join(format!("raw_{kernel}.csv")))).unwrap().remove(0);
        out.push_str(&render(&run_tools(&profile, None, &kernels_cu())));
    }
    expect![[r#"
        13 warning ContendedAtomics atomic contention: global atomics serialize in one L2 slice (16.8M atomic updates); 67% of warp samples wait for them
          -> reduce inside the block first (__shfl_down_sync within each warp, then the warps' results through __shared__ memory) and let one thread per block do the atomicAdd, or write per-block partials and reduce them in a second pass (cub::DeviceReduce::Sum): blockDim.x times fewer atomics
          gain Some(9.74) [atomic_wait_share=66.5%, drain_at_exit=66.5%, l2_atomic_sectors=16777216, l2_atomic_rate=0.58 per ns, busiest_l2_slice_over_average=95.9x, busiest_slice_atomic_unit_active=99.7%]
        13 hint LaunchOverhead launch overhead not measured: it needs nsys, which is unavailable
          -> 
          gain None []
        72 warning SharedBankConflicts shared-memory bank conflicts: 5.3x the ideal wavefronts
          -> neighbouring threads access shared words a multiple of 32 banks apart: use sequential addressing (thread tid works on sdata[tid] and sdata[tid + s]), an odd stride, or pad/swizzle a 2D tile
          gain Some(2.39) [bank_conflicts=31457280, shared_wavefronts=38797312, excess_wavefronts=81.1%]
        72 info WarpStall 44% of warp samples stall waiting for shared-memory or special-function (MUFU) results (short_scoreboard)
          -> remove shared-memory bank conflicts; use __sinf/__expf intrinsics where their precision is enough
          gain None [stall_reason=short_scoreboard, stall_share=44.0%]
    "#]]
    .assert_eq(&out);
}

// -- the H200 recordings of record.sh (tests/fixtures/h200-contention/*.csv) ----

/// The recorded `--set full` launches with their details and source pages
/// (committed: a missing file fails the test, it is never skipped).
fn recorded() -> Vec<(KernelProfile, SourcePage)> {
    let d = contention_dir();
    let mut profiles = parse_raw(&read(&d.join("full_raw.csv"))).unwrap();
    parse_details(&read(&d.join("full_details.csv")), &mut profiles).unwrap();
    assert!(!profiles.is_empty(), "{}: no kernel in the recording", d.join("full_raw.csv").display());
    profiles
        .into_iter()
        .map(|p| {
            let page = source_page(&d.join(format!("src_{}.csv", p.kernel)));
            (p, page)
        })
        .collect()
}

fn recorded_findings(kernel: &str) -> Option<Vec<Finding>> {
    let (profile, page) = recorded().into_iter().find(|(p, _)| p.kernel == kernel)?;
    Some(run_tools(&profile, Some(&page), &kernels_cu()))
}

/// ncu may list CUDA's header before the kernel's own file (its H100 page of
/// tests/fixtures/naive/sum/sum_atomic_1d.cu did, 2026-12-07, and
/// ContendedAtomics landed on line 84 of sm_20_atomic_functions.hpp): the
/// recorded sum_atomic page with its two files in that order
/// (src_sum_atomic_header_first.csv) gives the same findings on the same lines.
#[test]
fn a_page_that_lists_the_header_first_keeps_findings_on_the_kernels_lines() {
    let (profile, page) = recorded().into_iter().find(|(p, _)| p.kernel == "sum_atomic").unwrap();
    let swapped = source_page(&contention_dir().join("src_sum_atomic_header_first.csv"));
    assert!(page.file.ends_with("kernels.cu"), "{}", page.file);
    assert_eq!(swapped.file, page.file);
    let red = swapped.instructions.iter().find(|r| r.opcode().starts_with("REDG")).unwrap();
    assert_eq!((red.line, swapped.own_line_of(red)), (Some(84), Some(15)));
    let found = run_tools(&profile, Some(&swapped), &kernels_cu());
    assert_eq!(render(&found), render(&run_tools(&profile, Some(&page), &kernels_cu())));
    let atomics: Vec<u32> =
        found.iter().filter(|f| f.code.as_deref() == Some("ContendedAtomics")).map(|f| f.span.start.line + 1).collect();
    assert_eq!(atomics, [line_of(&kernels_cu(), "if (i < n) atomicAdd(out, x[i]);")]);
}

/// Each planted problem on its line; `None` means "this code nowhere" (the clean twins).
const PLANTED: [(&str, &str, Option<&str>); 12] = [
    ("sum_atomic", "ContendedAtomics", Some("if (i < n) atomicAdd(out, x[i]);")),
    ("sum_blocks", "ContendedAtomics", None),
    ("count_atomic", "ContendedAtomics", Some("if (i < n && x[i] > 0.5f) atomicAdd(count, 1);")),
    ("count_blocks", "ContendedAtomics", None),
    ("histogram_global", "ContendedAtomics", Some("if (i < n) atomicAdd(&bins[data[i]], 1u);")),
    ("histogram_shared", "ContendedAtomics", None),
    ("reduce_interleaved", "ThreadDivergence", Some("if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];")),
    ("reduce_strided", "SharedBankConflicts", Some("if (index < blockDim.x) sdata[index] += sdata[index + s];")),
    ("reduce_sequential", "SharedBankConflicts", None),
    ("branch_lanes", "ThreadDivergence", Some("if ((threadIdx.x & 1) == 0)")),
    ("branch_data", "ThreadDivergence", Some("if (v > 0.5f)")),
    ("branch_warps", "ThreadDivergence", None),
];

fn check_planted(findings_of: impl Fn(&str) -> Option<Vec<Finding>>) {
    let src = kernels_cu();
    let mut failures = Vec::new();
    for (kernel, code, text) in PLANTED {
        let Some(found) = findings_of(kernel) else {
            failures.push(format!("{kernel}: not in the recording"));
            continue;
        };
        let hits: Vec<u32> =
            found.iter().filter(|f| f.code.as_deref() == Some(code)).map(|f| f.span.start.line + 1).collect();
        let ok = match text {
            Some(t) => hits.contains(&line_of(&src, t)),
            None => hits.is_empty(),
        };
        if !ok {
            failures.push(format!("{kernel}: {code} expected {text:?}, got lines {hits:?}\n{}", render(&found)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `--set full` pages.
#[test]
fn recorded_planted_problems_on_their_lines() {
    check_planted(recorded_findings);
}

/// The two passes as KernelPro runs them: stage 1's class picks the tools,
/// which read the stage-2 raw page and its source pages (s2src_*.csv).
fn two_stage_findings(kernel: &str) -> Option<Vec<Finding>> {
    let d = contention_dir();
    let s1 = parse_raw(&read(&d.join("stage1_raw.csv"))).unwrap();
    let s2 = parse_raw(&read(&d.join("stage2_raw.csv"))).unwrap();
    let p1 = s1.iter().find(|p| p.kernel == kernel)?;
    let profile = merge(p1, s2.iter().find(|p| p.kernel == kernel));
    let page = source_page(&d.join(format!("s2src_{kernel}.csv")));
    Some(run_tools(&profile, Some(&page), &kernels_cu()))
}

#[test]
fn recorded_two_stage_planted_problems_on_their_lines() {
    check_planted(two_stage_findings);
}

/// No stall advice about "wider stores" for a kernel whose drain is its atomics.
#[test]
fn recorded_stall_advice_fits_the_cause() {
    for kernel in ["sum_atomic", "count_atomic", "histogram_global"] {
        let found = recorded_findings(kernel).unwrap_or_else(|| panic!("{kernel}: not in the recording"));
        assert!(
            !found.iter().any(|f| f.guidance.as_deref().is_some_and(|g| g.contains("wider stores"))),
            "{kernel}:\n{}",
            render(&found)
        );
    }
}

/// Every finding of every recorded kernel, for the report (snapshot once recorded).
#[test]
fn recorded_findings_snapshot() {
    let all = recorded();
    let mut out = String::new();
    for (profile, page) in &all {
        let tri = triage(profile, &TriageThresholds::default()).map(|t| t.summary).unwrap_or_default();
        out.push_str(&format!("== {}: {tri}\n", profile.kernel));
        out.push_str(&render(&run_tools(profile, Some(page), &kernels_cu())));
    }
    expect![[r#"
        == sum_atomic: latency-bound · L2 1% of peak · 0 FLOP/B · 29.47 ms
        15 warning ContendedAtomics atomic contention: all 32 lanes of each warp update one address (one 32-byte sector): 16.8M atomic updates serialize in one L2 slice; 75% of warp samples wait for them in `if (i < n) atomicAdd(out, x[i]);`
          -> reduce inside the block first (__shfl_down_sync within each warp, then the warps' results through __shared__ memory) and let one thread per block do the atomicAdd, or write per-block partials and reduce them in a second pass (cub::DeviceReduce::Sum) (a float sum in fixed order is also reproducible, which atomics are not): blockDim.x times fewer atomics
          gain Some(3.05) [atomic_wait_share=74.7%, drain_at_exit=52.1%, warp_atomics=524288, lanes_per_sector=32, l1_sectors_per_reduction_request=32.0, l2_atomic_sectors=16777216, l2_atomic_rate=0.57 per ns, busiest_l2_slice_over_average=79.4x, busiest_slice_atomic_unit_active=33.3%]
        13 hint LaunchOverhead launch overhead not measured: it needs nsys, which is unavailable
          -> 
          gain None []
        == sum_blocks: memory-bound · DRAM 58% of peak · 0.26 FLOP/B · 35.8 µs · throughput says latency-bound, roofline says memory-bound
        21 warning WarpStall 88% of warp samples stall waiting for global/local memory (L1TEX) data (long_scoreboard) in `for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blo…`
          -> issue the loads earlier and make fewer of them: coalesce them, reuse data through shared memory, or unroll so each thread has several independent loads in flight
          gain None [stall_reason=long_scoreboard, stall_share=87.8%, line_share_of_samples=87.8%]
        21 info Vectorization coalesced but 4-byte global accesses in `for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blo…`
          -> let each thread handle 4 consecutive elements through float4 (reinterpret_cast<const float4*>(p)[i]), with a scalar loop for the n % 4 tail: a quarter of the load/store instructions for the same bytes
          gain None [memory_instructions_executed=524288]
        == count_atomic: latency-bound · L2 6% of peak · 0 FLOP/B · 400.4 µs
        34 warning ContendedAtomics atomic contention: one lane per warp does the atomic: 524k atomic updates still serialize in one L2 slice; that slice's atomic unit is busy 77% of the kernel's time in `if (i < n && x[i] > 0.5f) atomicAdd(count, 1);`
          -> the warp is already aggregated; aggregate the block too: reduce the warps' values in __shared__ memory and let one thread per block do the atomic, or write per-block partials and reduce them in a second pass
          gain Some(3.23) [atomic_wait_share=0.4%, drain_at_exit=0.3%, warp_atomics=524288, l1_sectors_per_reduction_request=1.0, l2_atomic_sectors=524288, l2_atomic_rate=1.31 per ns, busiest_l2_slice_over_average=79.9x, busiest_slice_atomic_unit_active=76.7%]
        32 hint LaunchOverhead launch overhead not measured: it needs nsys, which is unavailable
          -> 
          gain None []
        == count_blocks: latency-bound · L2 33% of peak · 0 FLOP/B · 64.6 µs
        39 warning WarpStall 62% of warp samples stall waiting for global/local memory (L1TEX) data (long_scoreboard) in `int c = __syncthreads_count(i < n && x[i] > 0.5f);`
          -> issue the loads earlier and make fewer of them: coalesce them, reuse data through shared memory, or unroll so each thread has several independent loads in flight
          gain None [stall_reason=long_scoreboard, stall_share=62.4%, line_share_of_samples=62.4%]
        37 hint LaunchOverhead launch overhead not measured: it needs nsys, which is unavailable
          -> 
          gain None []
        == histogram_global: latency-bound · L2 3% of peak · 0 FLOP/B · 4.31 ms
        45 warning ContendedAtomics atomic contention: threads update a small table with global atomics: 16.8M atomic updates collide in one L2 slice; 41% of warp samples wait for them in `if (i < n) atomicAdd(&bins[data[i]], 1u);`
          -> privatize the table: build a per-block copy in __shared__ memory with shared atomics, __syncthreads(), then add each nonzero entry to global memory once per block; when a warp's lanes often share a key, __match_any_sync lets one lane add for all of them
          gain Some(3.62) [atomic_wait_share=41.2%, drain_at_exit=41.2%, warp_atomics=524288, sectors_per_warp_atomic=20.4 for 32 lanes, l1_sectors_per_reduction_request=22.6, l2_atomic_sectors=11845319, l2_atomic_rate=2.75 per ns, busiest_l2_slice_over_average=40.0x, busiest_slice_atomic_unit_active=80.4%]
        43 hint LaunchOverhead launch overhead not measured: it needs nsys, which is unavailable
          -> 
          gain None []
        == histogram_shared: latency-bound · L1/shared 9% of peak · 0 FLOP/B · 97.6 µs
        52 warning SharedBankConflicts 3-way shared-memory bank conflicts in `for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blo…`
          -> pad each row of the shared array by one element (or swizzle the column index) so the threads of a warp hit different banks
          gain Some(1.06) [conflict_ways=3, shared_wavefronts=1653662, ideal_wavefronts=524288, excess_wavefronts=68.1%]
        48 warning OccupancyLimiter achieved occupancy is 25%
          -> theoretical occupancy is 100% but only 25% is reached: the grid is too small or unbalanced; launch more blocks (at least a few per SM) or give warps equal work
          gain None [achieved_occupancy=24.9%, theoretical_occupancy=100.0%, limiter=warps per block (8 blocks/SM)]
        52 warning WarpStall 94% of warp samples stall waiting for global/local memory (L1TEX) data (long_scoreboard) in `for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blo…`
          -> issue the loads earlier and make fewer of them: coalesce them, reuse data through shared memory, or unroll so each thread has several independent loads in flight
          gain None [stall_reason=long_scoreboard, stall_share=93.6%, line_share_of_samples=93.6%]
        48 info TailEffect 0.25 waves: the last one leaves 75% of the SM time idle
          -> size the grid to a multiple of 1056 blocks (one full wave), or use a grid-stride loop over exactly that many blocks
          gain Some(4.0) [waves_per_sm=0.25]
        48 hint LaunchOverhead launch overhead not measured: it needs nsys, which is unavailable
          -> 
          gain None []
        == reduce_interleaved: memory-bound · L1/shared 37% of peak · 0.012 FLOP/B · 161.4 µs · throughput says compute-bound, roofline says memory-bound
        66 warning ThreadDivergence the condition splits the lanes of every warp: 3.0 of 32 lanes do the work of its predicated body in `if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];`
          -> the modulo test keeps every (2*s)-th thread working, so all warps stay busy with a few active lanes: use sequential addressing instead, for (s = blockDim.x / 2; s > 0; s >>= 1) { if (tid < s) sdata[tid] += sdata[tid + s]; __syncthreads(); }, which keeps the working threads contiguous so whole warps finish early (and neighbouring lanes read neighbouring words)
          gain None [lanes_on_per_predicated_instruction=3.0 of 32, uniform_branches=100.0%, integer_division=the modulo by a variable compiles to a division sequence on every step]
        == reduce_strided: memory-bound · L1/shared 86% of peak · 0.012 FLOP/B · 101.2 µs
        80 warning SharedBankConflicts shared-memory bank conflicts: 3.9x the ideal wavefronts in `if (index < blockDim.x) sdata[index] += sdata[index + s];`
          -> the threads of a warp index sdata with a stride, so several of them hit the same bank: use sequential addressing (sdata[tid] += sdata[tid + s], with s halving from blockDim.x / 2), which keeps neighbouring threads on neighbouring words; a 2D tile stored in 1D wants a row stride of 33 instead of 32
          gain Some(2.49) [shared_wavefronts=9240576, ideal_wavefronts=2359296, excess_wavefronts=70.0%]
        76 info Vectorization coalesced but 4-byte global accesses in `sdata[tid] = i < n ? x[i] : 0.0f;`
          -> let each thread handle 4 consecutive elements through float4 (reinterpret_cast<const float4*>(p)[i]), with a scalar loop for the n % 4 tail: a quarter of the load/store instructions for the same bytes
          gain None [memory_instructions_executed=524288]
        == reduce_sequential: balanced · L1/shared 76% of peak · 0.24 FLOP/B · 78.8 µs
        90 info Vectorization coalesced but 4-byte global accesses in `sdata[tid] = i < n ? x[i] : 0.0f;`
          -> let each thread handle 4 consecutive elements through float4 (reinterpret_cast<const float4*>(p)[i]), with a scalar loop for the n % 4 tail: a quarter of the load/store instructions for the same bytes
          gain None [memory_instructions_executed=524288]
        86 hint LaunchOverhead launch overhead not measured: it needs nsys, which is unavailable
          -> 
          gain None []
        == branch_lanes: compute-bound · SM 96% of peak · 160 FLOP/B · 2.06 ms
        105 warning ThreadDivergence divergent branch: the threads of a warp take different paths in `if ((threadIdx.x & 1) == 0) { for (int k = 0; k < 64; ++k) v = sinf(v) * 1.0001…`
          -> the condition splits every warp by threadIdx.x: make it uniform per warp (branch on threadIdx.x / 32, i.e. the warp index) or reorder the data so each warp takes one path
          gain Some(1.99) [divergent_branches=524288 of 524288, active_threads_per_warp=16.1 of 32, uniform_branches=99.6%]
        106 info NonFusedFP32 29% of FP32 arithmetic is separate multiplies and adds in `else { for (int k = 0; k < 64; ++k) v = cosf(v) * 0.9999f; }`
          -> write multiply-then-add as one expression (a * b + c, or fmaf(a, b, c)) so nvcc emits FFMA, and make sure -fmad=false is not set
          gain None [non_fused_share=28.6%, fma_pipe=54.7%]
        == branch_data: compute-bound · SM 96% of peak · 160 FLOP/B · 2.06 ms
        114 warning ThreadDivergence divergent branch: the threads of a warp take different paths in `if (v > 0.5f) { for (int k = 0; k < 64; ++k) v = sinf(v) * 1.0001f; }`
          -> make the branch condition uniform across each warp of 32 threads, or sort the work so that threads taking the same path sit in the same warp
          gain Some(1.99) [divergent_branches=524288 of 524288, active_threads_per_warp=16.1 of 32, uniform_branches=99.6%]
        115 info NonFusedFP32 29% of FP32 arithmetic is separate multiplies and adds in `else { for (int k = 0; k < 64; ++k) v = cosf(v) * 0.9999f; }`
          -> write multiply-then-add as one expression (a * b + c, or fmaf(a, b, c)) so nvcc emits FFMA, and make sure -fmad=false is not set
          gain None [non_fused_share=28.6%, fma_pipe=54.7%]
        == branch_warps: compute-bound · SM 96% of peak · 160 FLOP/B · 1.04 ms
        124 info NonFusedFP32 29% of FP32 arithmetic is separate multiplies and adds in `else { for (int k = 0; k < 64; ++k) v = cosf(v) * 0.9999f; }`
          -> write multiply-then-add as one expression (a * b + c, or fmaf(a, b, c)) so nvcc emits FFMA, and make sure -fmad=false is not set
          gain None [non_fused_share=28.6%, fma_pipe=54.4%]
    "#]].assert_eq(&out);
}

// -- stall advice by cause -------------------------------------------------------

/// The advice of a dominant stall follows what its line does. Each case: the
/// SASS of line 3 (with its shared-conflict ways), the stall, and a phrase
/// the advice must hold.
#[test]
fn stall_advice_follows_the_line() {
    let cases: [(&[&str], u32, &str, &str); 11] = [
        (
            &["REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R2.64], R5"],
            1,
            "lg_throttle",
            "global atomics that many threads aim at the same addresses",
        ),
        (
            &["REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R2.64], R5"],
            1,
            "drain",
            "wait at exit for their global atomics to drain",
        ),
        (
            &["ATOMG.E.ADD.STRONG.GPU PT, R0, desc[UR4][R2.64], R5"],
            1,
            "long_scoreboard",
            "global atomics that many threads aim",
        ),
        (&["STG.E desc[UR4][R2.64], R5"], 1, "drain", "last global stores to drain"),
        (
            &[
                "STG.E desc[UR4][R2.64], R5",
                "STG.E desc[UR4][R2.64+0x4], R6",
                "REDG.E.ADD.STRONG.GPU desc[UR4][R8.64], R7",
            ],
            1,
            "drain",
            "last global stores to drain",
        ),
        (&["LDL R2, [R1+0x10]"], 1, "long_scoreboard", "local memory"),
        (&["LDS R3, [R5]"], 4, "short_scoreboard", "hit the same banks"),
        (&["LDS R3, [R5]"], 1, "short_scoreboard", "shuffles (__shfl_down_sync)"),
        (&["MUFU.SIN R3, R2"], 1, "short_scoreboard", "intrinsics"),
        (&["ATOMS.POPC.INC.32 RZ, [R4+URZ]"], 1, "mio_throttle", "shared-memory atomics on the same words"),
        (&["I2F.U32.RP R6, R10", "MUFU.RCP R6, R6", "LDS R3, [R5]"], 1, "short_scoreboard", "integer division"),
    ];
    let file = ["", "__global__ void k(float* out) {", "  line three;", "}"];
    for (ops, ways, reason, phrase) in cases {
        let mut csv = String::from("\"File Path\",\"k.cu\"\n\"Function Name\",\"k(float *)\"\n");
        csv.push_str(
            "\"Line No\",\"Source\",\"Address\",\"Source\",\"Instructions Executed\",\"L1 Conflicts Shared N-Way\"\n",
        );
        csv.push_str(&format!("\"3\",\"line three;\",\"-\",\"-\",\"{}\",\"{ways}\"\n", ops.len()));
        for (i, op) in ops.iter().enumerate() {
            csv.push_str(&format!("\"\",\"\",\"0x{:x}\",\"      {op}\",\"1\",\"{ways}\"\n", 0x10 * (i + 1)));
        }
        let page = parse_source(&csv).unwrap().remove(0);
        let profile = KernelProfile { kernel: "k".into(), signature: "k(float *)".into(), ..Default::default() };
        let thresholds = Thresholds::default();
        let input = ToolInput {
            profile: &profile,
            source: Some(&page),
            triage: None,
            source_lines: &file,
            thresholds: &thresholds,
            launch_overhead_pct: None,
        };
        let stall = kernelpro_profile::tools::STALL_REASONS.iter().find(|r| r.key == reason).unwrap();
        let advice = input.stall_guidance(stall, Some(3));
        assert!(advice.contains(phrase), "{ops:?} {reason}: {advice}");
    }
}
