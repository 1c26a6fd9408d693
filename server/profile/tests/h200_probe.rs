//! The real H200 recordings of tests/fixtures/h200-probe: five kernels, each
//! with one planted problem, profiled with `--set full` and with the stage-1
//! sections.

use expect_test::{Expect, expect};
use kernelpro_model::Finding;
use kernelpro_profile::ncu_args::{ClockControl, Output, ProfileOptions};
use kernelpro_profile::tools::{Thresholds, ToolInput, analyze, select_tools, stage2_args};
use kernelpro_profile::{
    Class, KernelProfile, SourcePage, TriageThresholds, parse_details, parse_raw, parse_source, triage,
};

fn fixture(name: &str) -> String {
    let path = format!("{}/../../tests/fixtures/h200-probe/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn full_profiles() -> Vec<KernelProfile> {
    let mut profiles = parse_raw(&fixture("full_raw.csv")).unwrap();
    parse_details(&fixture("full_details.csv"), &mut profiles).unwrap();
    profiles
}

fn source_page(kernel: &str) -> SourcePage {
    let mut pages = parse_source(&fixture(&format!("src_{kernel}.csv"))).unwrap();
    assert_eq!(pages.len(), 1);
    pages.remove(0)
}

/// The 0-based line of kernels.cu that contains `text`.
fn line_of(text: &str) -> u32 {
    let src = fixture("kernels.cu");
    src.lines().position(|l| l.contains(text)).unwrap_or_else(|| panic!("{text:?} not in kernels.cu")) as u32
}

/// Stage 2 on one kernel of the full recording: the tools of its class.
fn findings(kernel: &str) -> Vec<Finding> {
    let profiles = full_profiles();
    let profile = profiles.iter().find(|p| p.kernel == kernel).unwrap();
    let tri = triage(profile, &TriageThresholds::default()).unwrap();
    let page = source_page(kernel);
    let src = fixture("kernels.cu");
    let lines: Vec<&str> = src.lines().collect();
    let thresholds = Thresholds::default();
    let input = ToolInput {
        profile,
        source: Some(&page),
        triage: Some(&tri),
        source_lines: &lines,
        thresholds: &thresholds,
        launch_overhead_pct: None,
    };
    analyze(&select_tools(tri.class), &input)
}

fn render(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            let evidence: Vec<String> = f.evidence.iter().map(|e| format!("{}={}", e.name, e.value)).collect();
            format!(
                "{} {} {} {}\n  -> {}\n  gain {:?} [{}]\n",
                f.span.start.line,
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

fn check_findings(kernel: &str, expected: Expect) {
    expected.assert_eq(&render(&findings(kernel)));
}

fn check_triage(file: &str, expected: Expect) {
    let out: String = parse_raw(&fixture(file))
        .unwrap()
        .iter()
        .map(|p| {
            let t = triage(p, &TriageThresholds::default()).unwrap();
            format!("{}: {} (agreement {})\n", p.kernel, t.summary, t.agreement)
        })
        .collect();
    expected.assert_eq(&out);
}

#[test]
fn raw_pages_hold_five_launches_with_units() {
    for file in ["full_raw.csv", "stage1_raw.csv", "sol_raw.csv"] {
        let profiles = parse_raw(&fixture(file)).unwrap();
        let names: Vec<&str> = profiles.iter().map(|p| p.kernel.as_str()).collect();
        assert_eq!(names, ["saxpy_fp64", "strided_copy", "matmul_naive", "transpose_conflicts", "divergent"], "{file}");
    }
    let stage1 = parse_raw(&fixture("stage1_raw.csv")).unwrap();
    let regs = &stage1[2].metrics["launch__registers_per_thread"];
    assert_eq!((regs.number(), regs.unit.as_str()), (Some(32.0), "register/thread"));
    assert_eq!(stage1[0].num("device__attribute_l2_cache_size"), Some(62_914_560.0));
    assert_eq!(stage1[0].text("device__attribute_display_name"), Some("NVIDIA H200"));
    // sol_raw.csv was exported without `--print-units base`: durations in ms.
    let sol = parse_raw(&fixture("sol_raw.csv")).unwrap();
    assert_eq!(sol[0].base("gpu__time_duration.sum").map(f64::round), Some(58_688.0));
}

#[test]
fn details_page_attaches_rules_with_speedups() {
    let profiles = full_profiles();
    let strided = profiles.iter().find(|p| p.kernel == "strided_copy").unwrap();
    let rule = strided.rules.iter().find(|r| r.rule == "UncoalescedGlobalAccess").unwrap();
    assert_eq!((rule.kind.as_str(), rule.estimated_speedup_pct), ("OPT", Some(77.29)));
    assert_eq!(strided.details["Launch Statistics/Waves Per SM"].number(), Some(62.06));
}

#[test]
fn source_page_links_sass_to_cuda_lines() {
    let page = source_page("saxpy_fp64");
    assert_eq!(page.kernel, "saxpy_fp64");
    let lines: Vec<u32> = page.lines.iter().map(|l| l.line).collect();
    assert_eq!(lines, [7, 8, 9, 10]);
    assert_eq!(page.lines[2].text, "if (i < n) y[i] = a * x[i] + y[i] * 2.0;");
    // Every instruction once, though ncu lists each block twice.
    assert_eq!(page.instructions.len(), 32);
    let dfma = page.instructions.iter().find(|r| r.opcode() == "DFMA").unwrap();
    assert_eq!((dfma.line, dfma.num("Instructions Executed")), (Some(9), Some(524_288.0)));
    assert_eq!(page.lines[2].metrics["Access Operation"].text(), Some("Load(2),Store"));
}

#[test]
fn triage_of_the_full_set() {
    check_triage(
        "full_raw.csv",
        expect![[r#"
            saxpy_fp64: memory-bound · L2 77% of peak · 0.27 FLOP/B · 59.7 µs (agreement true)
            strided_copy: memory-bound · L2 95% of peak · 0 FLOP/B · 294.8 µs (agreement true)
            matmul_naive: memory-bound · L1/shared 97% of peak · 0.50 FLOP/B · 3.18 ms (agreement true)
            transpose_conflicts: memory-bound · L1/shared 59% of peak · 0 FLOP/B · 31.1 µs · throughput says latency-bound, roofline says memory-bound (agreement true)
            divergent: compute-bound · SM 96% of peak · 170 FLOP/B · 2.06 ms (agreement true)
        "#]],
    );
}

#[test]
fn triage_of_the_stage1_pass() {
    check_triage(
        "stage1_raw.csv",
        expect![[r#"
        saxpy_fp64: memory-bound · L2 77% of peak · 59.3 µs (agreement true)
        strided_copy: memory-bound · L2 95% of peak · 296.3 µs (agreement true)
        matmul_naive: memory-bound · L1/shared 98% of peak · 3.18 ms (agreement true)
        transpose_conflicts: memory-bound · L1/shared 67% of peak · 31.0 µs (agreement true)
        divergent: compute-bound · SM 96% of peak · 2.06 ms (agreement true)
    "#]],
    );
}

/// The planted problem of each kernel, on the line that causes it.
#[test]
fn planted_problems_found_on_their_lines() {
    let cases = [
        ("strided_copy", "Uncoalesced", "in[(long long)(i * stride) % n]"),
        ("transpose_conflicts", "SharedBankConflicts", "tile[threadIdx.x][threadIdx.y]"),
        ("divergent", "ThreadDivergence", "if (threadIdx.x % 2 == 0)"),
        ("saxpy_fp64", "FP64Math", "y[i] * 2.0"),
        ("matmul_naive", "SharedMemTiling", "for (int k = 0; k < N; ++k)"),
    ];
    for (kernel, code, text) in cases {
        let found = findings(kernel);
        let line = line_of(text);
        assert!(
            found.iter().any(|f| f.code.as_deref() == Some(code) && f.span.start.line == line),
            "{kernel}: no {code} on line {line}:\n{}",
            render(&found)
        );
    }
    let matmul = full_profiles().into_iter().find(|p| p.kernel == "matmul_naive").unwrap();
    let class = triage(&matmul, &TriageThresholds::default()).unwrap().class;
    assert!(matches!(class, Class::MemoryBound | Class::LatencyBound), "{class:?}");
}

#[test]
fn findings_saxpy_fp64() {
    check_findings(
        "saxpy_fp64",
        expect![[r#"
        8 warning WarpStall 80% of warp samples stall waiting for global/local memory (L1TEX) data (long_scoreboard) in `if (i < n) y[i] = a * x[i] + y[i] * 2.0;`
          -> issue the loads earlier and make fewer of them: coalesce them, reuse data through shared memory, or unroll so each thread has several independent loads in flight
          gain None [stall_reason=long_scoreboard, stall_share=79.8%, line_share_of_samples=79.8%]
        8 warning FP64Math float math promoted to FP64 (F2F.F64.F32, F2F.F64.F32, DFMA, F2F.F32.F64) in `if (i < n) y[i] = a * x[i] + y[i] * 2.0;`
          -> replace 2.0 with 2.0f: the double literal promotes the float expression to FP64 (F2F conversions and DFMA at a fraction of the FP32 rate)
          gain None [fp64_instructions=F2F.F64.F32 F2F.F64.F32 DFMA F2F.F32.F64]
        8 info Vectorization coalesced but 4-byte global accesses in `if (i < n) y[i] = a * x[i] + y[i] * 2.0;`
          -> let each thread handle 4 consecutive elements through float4 (reinterpret_cast<const float4*>(p)[i]), with a scalar loop for the n % 4 tail: a quarter of the load/store instructions for the same bytes
          gain None [memory_instructions_executed=1572864]
    "#]],
    );
}

#[test]
fn findings_strided_copy() {
    check_findings(
        "strided_copy",
        expect![[r#"
        13 warning MemoryCoalescing global loads miss in L1 (0% hit rate) and 90% of warp samples wait on them in `if (i < n) out[i] = in[(long long)(i * stride) % n];`
          -> neighbouring threads load addresses far apart: make threadIdx.x walk the fastest-varying (contiguous) index, or load a tile coalesced into __shared__ memory and gather from there
          gain None [l1_hit_rate=0.0%, long_scoreboard_stalls=90.3%, bytes_used_per_sector=4.0 of 32]
        13 warning Uncoalesced uncoalesced global access: 4.5x the ideal sectors, 78% of them wasted in `if (i < n) out[i] = in[(long long)(i * stride) % n];`
          -> make threadIdx.x walk the fastest-varying (contiguous) index of this access; if the stride is inherent, load a contiguous tile into __shared__ memory first and gather from there
          gain Some(2.67) [sectors=18874368, ideal_sectors=4194304, excess_sectors=14680064]
        13 warning WarpStall 90% of warp samples stall waiting for global/local memory (L1TEX) data (long_scoreboard) in `if (i < n) out[i] = in[(long long)(i * stride) % n];`
          -> issue the loads earlier and make fewer of them: coalesce them, reuse data through shared memory, or unroll so each thread has several independent loads in flight
          gain None [stall_reason=long_scoreboard, stall_share=90.3%, line_share_of_samples=90.3%]
        11 info HighDRAMThroughput DRAM runs at 80% of its peak bandwidth
          -> 78% of the global sectors are fetched but unused: fix the uncoalesced access first, then cut bytes by fusing with the neighbouring kernel or using narrower types
          gain None [dram_throughput=80.5%, dram_read_bytes=1073708544, dram_write_bytes=67467008, l2_hit_rate=8.8%]
    "#]],
    );
}

#[test]
fn findings_matmul_naive() {
    check_findings(
        "matmul_naive",
        expect![[r#"
        21 warning SharedMemTiling the same global data is re-read through L1 (87% hit rate, L1 at 97% of peak) and no shared memory is used in `for (int k = 0; k < N; ++k) acc += A[row * N + k] * B[k * N + col];`
          -> stage tiles of the inputs in __shared__ arrays (e.g. 32x32), with __syncthreads() between the load phase and the compute phase, and loop over tiles: each element is then read from global memory once per tile instead of once per thread
          gain None [l1_hit_rate=87.5%, l1_throughput=97.1%, lg_throttle_stalls=38.8%]
        21 info Vectorization coalesced but 4-byte global accesses in `for (int k = 0; k < N; ++k) acc += A[row * N + k] * B[k * N + col];`
          -> let each thread handle 4 consecutive elements through float4 (reinterpret_cast<const float4*>(p)[i]), with a scalar loop for the n % 4 tail: a quarter of the load/store instructions for the same bytes
          gain None [memory_instructions_executed=536870912]
    "#]],
    );
}

#[test]
fn findings_transpose_conflicts() {
    check_findings(
        "transpose_conflicts",
        expect![[r#"
            32 warning SharedBankConflicts 32-way shared-memory bank conflicts in `out[y * N + x] = tile[threadIdx.x][threadIdx.y];`
              -> pad the tile to tile[32][33]: the extra column shifts each row by one bank, so a column walk hits 32 different banks
              gain Some(2.26) [conflict_ways=32, shared_wavefronts=4194304, ideal_wavefronts=131072, excess_wavefronts=93.9%]
            32 info Vectorization coalesced but 4-byte global accesses in `out[y * N + x] = tile[threadIdx.x][threadIdx.y];`
              -> let each thread handle 4 consecutive elements through float4 (reinterpret_cast<const float4*>(p)[i]), with a scalar loop for the n % 4 tail: a quarter of the load/store instructions for the same bytes
              gain None [memory_instructions_executed=131072]
        "#]],
    );
}

#[test]
fn findings_divergent() {
    check_findings(
        "divergent",
        expect![[r#"
        39 warning ThreadDivergence divergent branch: the threads of a warp take different paths in `if (threadIdx.x % 2 == 0) { for (int k = 0; k < 64; ++k) v = sinf(v) * 1.0001f;…`
          -> the condition splits every warp by threadIdx.x: make it uniform per warp (branch on threadIdx.x / 32, i.e. the warp index) or reorder the data so each warp takes one path
          gain Some(1.99) [divergent_branches=524288 of 524288, active_threads_per_warp=16.1 of 32, uniform_branches=99.6%]
        40 info NonFusedFP32 29% of FP32 arithmetic is separate multiplies and adds in `else { for (int k = 0; k < 64; ++k) v = cosf(v) * 0.9999f; }`
          -> write multiply-then-add as one expression (a * b + c, or fmaf(a, b, c)) so nvcc emits FFMA, and make sure -fmad=false is not set
          gain None [non_fused_share=28.6%, fma_pipe=54.8%]
    "#]],
    );
}

#[test]
fn roofline_wins_when_the_methods_disagree() {
    // Busy SM, idle memory, yet 0.25 FLOP/B: far below the H200 ridge point.
    let raw = "\"ID\",\"Kernel Name\",\"device__attribute_display_name\",\"sm__throughput.avg.pct_of_peak_sustained_elapsed\",\"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed\",\"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum\",\"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum\",\"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum\",\"smsp__sass_thread_inst_executed_op_dadd_pred_on.sum\",\"smsp__sass_thread_inst_executed_op_dmul_pred_on.sum\",\"smsp__sass_thread_inst_executed_op_dfma_pred_on.sum\",\"dram__bytes_read.sum\",\"dram__bytes_write.sum\",\"gpu__time_duration.sum\"
\"\",\"\",\"\",\"%\",\"%\",\"inst\",\"inst\",\"inst\",\"inst\",\"inst\",\"inst\",\"Mbyte\",\"Mbyte\",\"us\"
\"0\",\"k(float *)\",\"NVIDIA H200\",\"90.5\",\"30\",\"0\",\"0\",\"1,000,000\",\"0\",\"0\",\"0\",\"6\",\"2\",\"1,840\"";
    let p = &parse_raw(raw).unwrap()[0];
    let t = triage(p, &TriageThresholds::default()).unwrap();
    assert_eq!(
        (t.measured_class, t.roofline_class, t.class, t.agreement),
        (Class::ComputeBound, Some(Class::MemoryBound), Class::MemoryBound, false)
    );
    assert_eq!(
        t.summary,
        "memory-bound · 0.25 FLOP/B · 1.84 ms · throughput says compute-bound, roofline says memory-bound"
    );
}

#[test]
fn peaks_from_device_attributes_match_the_spec_sheet() {
    let p = &parse_raw(&fixture("stage1_raw.csv")).unwrap()[0];
    let computed = kernelpro_profile::peaks::from_attributes(p).unwrap();
    assert_eq!((computed.dram_bw / 1e10).round(), 481.0);
    assert_eq!((computed.fp32_flops / 1e11).round(), 669.0);
}

#[test]
fn tool_affinity_and_stage2_pass() {
    let names = |c| select_tools(c).iter().map(|t| t.name()).collect::<Vec<_>>().join(" ");
    expect!["MemoryCoalescing Uncoalesced HighDRAMThroughput SharedMemTiling Vectorization SharedBankConflicts ContendedAtomics WarpStall RegisterSpill TailEffect ThreadDivergence FP64Math"].assert_eq(&names(Class::MemoryBound));
    expect!["SharedBankConflicts ContendedAtomics OccupancyLimiter HighRegisterUsage WarpStall RegisterSpill TailEffect TensorCore ThreadDivergence FP64Math NonFusedFP32"].assert_eq(&names(Class::ComputeBound));
    expect!["Uncoalesced SharedBankConflicts ContendedAtomics OccupancyLimiter HighRegisterUsage WarpStall BarrierStall LaunchOverhead RegisterSpill TailEffect ThreadDivergence FP64Math"].assert_eq(&names(Class::LatencyBound));
    assert_eq!(select_tools(Class::Balanced).len(), kernelpro_profile::tools::TOOLS.len());
    let opts = ProfileOptions {
        clock_control: ClockControl::Base,
        kernel_regex: Some("strided".into()),
        output: Output::Report("s2".into()),
    };
    expect!["--config-file off --clock-control base --apply-rules no --section SourceCounters --metrics l1tex__t_sector_hit_rate.pct,smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,lts__t_sector_hit_rate.pct,smsp__sass_inst_executed_op_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed_op_global_red.sum,smsp__inst_executed_op_generic_atom_dot_alu.sum,lts__t_sectors_srcunit_tex_op_red.sum,lts__t_sectors_srcunit_tex_op_atom.sum,lts__d_atomic_input_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__d_atomic_input_cycles_active.max.pct_of_peak_sustained_elapsed,l1tex__t_requests_pipe_lsu_mem_global_op_red.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum,smsp__sass_inst_executed_op_local_ld.sum,smsp__sass_inst_executed_op_local_st.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,smsp__thread_inst_executed_per_inst_executed.ratio,smsp__sass_branch_targets_threads_divergent.sum,smsp__sass_average_branch_targets_threads_uniform.pct --import-source yes --kernel-name regex:strided -f -o s2"].assert_eq(&stage2_args(&select_tools(Class::MemoryBound), &opts).join(" "));
}

/// Every finding the tools report on the recordings carries a code of the
/// registry (`kernelpro_model::CODES`), a profile one, with its doc link; and
/// every profile code of the registry has one tool.
#[test]
fn findings_carry_registry_codes() {
    use kernelpro_model::{Code, Origin};
    for kernel in ["strided_copy", "transpose_conflicts", "divergent", "saxpy_fp64", "matmul_naive"] {
        for f in findings(kernel) {
            let code = f.code.as_deref().and_then(Code::parse);
            assert!(
                code.is_some_and(|c| c.origin() == Origin::Profile),
                "{kernel}: {:?} is not a profile code of the registry",
                f.code
            );
            assert_eq!(f.doc_url, code.map(Code::doc_url));
        }
    }
    let mut tools: Vec<Code> = kernelpro_profile::tools::TOOLS.iter().map(|t| t.code).collect();
    tools.sort();
    let mut registry: Vec<Code> = Code::all().filter(|c| c.origin() == Origin::Profile).collect();
    registry.sort();
    assert_eq!(tools, registry, "one profile tool per profile code");
}
