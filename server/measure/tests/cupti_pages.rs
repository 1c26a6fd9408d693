//! The in-process profiler's output, recorded on an H100
//! (`fixtures/cupti/probe_h100.tsv`: the five-kernel probe program,
//! `tests/fixtures/h200-probe/kernels.cu`, each kernel launched twice, under
//! `bench/probes/cupti_triage/run_lib.sh`; `probe_h100.sass`: `nvdisasm -c -g`
//! of the module the library saved), parsed into the same profiles and source
//! pages as ncu's, and analyzed by the same code: the verdicts and the
//! findings' lines match ncu's one-launch profile of the same program
//! (recorded on an H200, `tests/fixtures/h200-probe`). `probe_h200_pc.tsv`:
//! the same program on an H200 with the 80 metrics asked before issue 33's
//! cut, then its PC-sampling run (both runs' records, as the driver merges
//! them); `probe_h200_pc.sass`: its module's disassembly.

use kernelpro_measure::cupti::instructions_of;
use kernelpro_measure::profiling::{Exports, ProfileReport, analyze_exports, analyze_profiles};
use kernelpro_profile::cupti::{
    RANGE_METRICS, SASS_METRICS, add_source_totals, add_stall_totals, parse_cupti, source_page,
};
use kernelpro_profile::{SourcePage, Thresholds};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn here(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(here(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn kernels_cu() -> String {
    read("../../tests/fixtures/h200-probe/kernels.cu")
}

/// The recorded run, as `cupti::profile` assembles it.
fn cupti_report() -> ProfileReport {
    report_of(&read("tests/fixtures/cupti/probe_h100.tsv"), "tests/fixtures/cupti/probe_h100.sass")
}

/// A run's records and its module's disassembly, as `cupti::profile` assembles them.
fn report_of(tsv: &str, sass: &str) -> ProfileReport {
    let run = parse_cupti(tsv);
    let sass = kernelpro_sass::disasm::parse_sass(&read(sass));
    let text = kernels_cu();
    let mut profiles = Vec::new();
    let mut pages: Vec<SourcePage> = Vec::new();
    for mut p in run.profiles.clone() {
        let mangled = p.mangled.clone().unwrap();
        let f = sass.function(&mangled).unwrap_or_else(|| panic!("{mangled} not disassembled"));
        let stalls = run.stalls.get(&mangled);
        let page = source_page(&p, &instructions_of(f), &run.pcs[&mangled], stalls, None, &text);
        add_source_totals(&mut p, &page);
        if let Some(s) = stalls {
            add_stall_totals(&mut p, s);
        }
        pages.push(page);
        profiles.push(p);
    }
    analyze_profiles(&profiles, &[], &pages, Vec::new(), &text, &Thresholds::default())
}

fn ncu_report() -> ProfileReport {
    let exports = Exports::from_dir(&here("../../tests/fixtures/h200-probe")).unwrap();
    analyze_exports(&exports, &kernels_cu(), &Thresholds::default()).unwrap()
}

/// `kernel: class` and `kernel: code` (`@ line` with `lines`) for each finding.
fn summary(r: &ProfileReport, lines: bool) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for k in &r.kernels {
        out.insert(format!("{}: {:?}", k.kernel, k.triage.as_ref().map(|t| t.class)));
        for f in &k.findings {
            let at = if lines { format!(" @ {}", f.span.start.line + 1) } else { String::new() };
            out.insert(format!("{}: {}{at}", k.kernel, f.code.as_deref().unwrap_or("?")));
        }
    }
    out
}

#[test]
fn the_recorded_output_parses_into_profiles_and_source_pages() {
    let run = parse_cupti(&read("tests/fixtures/cupti/probe_h100.tsv"));
    let names: Vec<&str> = run.profiles.iter().map(|p| p.kernel.as_str()).collect();
    assert_eq!(names, ["saxpy_fp64", "strided_copy", "matmul_naive", "transpose_conflicts", "divergent"]);
    assert!(run.errors.is_empty() && run.skipped.is_empty(), "{:?} {:?}", run.errors, run.skipped);
    let strided = &run.profiles[1];
    // 32 sectors per request: the strided load, as ncu counts it.
    let sectors = strided.num("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum").unwrap();
    let requests = strided.num("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum").unwrap();
    assert_eq!(sectors / requests, 32.0);
    assert_eq!(strided.num("launch__block_size"), Some(256.0));
    assert_eq!(strided.text("device__attribute_display_name"), Some("NVIDIA H100 80GB HBM3"));
    for p in &run.profiles {
        assert!(run.has_pcs(p.mangled.as_deref().unwrap()), "{}: no per-instruction counters", p.kernel);
    }
    // The source page: the strided load's line carries the excess sectors.
    let report = cupti_report();
    assert_eq!(report.kernels.len(), 5);
}

/// The same program through both profilers: the same class for each kernel
/// and the same findings.
#[test]
fn cupti_and_ncu_give_the_same_verdicts_and_findings_on_the_probe() {
    let cupti = summary(&cupti_report(), false);
    let ncu = summary(&ncu_report(), false);
    let only_cupti: Vec<&String> = cupti.difference(&ncu).collect();
    let only_ncu: Vec<&String> = ncu.difference(&cupti).collect();
    assert!(only_cupti.is_empty() && only_ncu.is_empty(), "only CUPTI: {only_cupti:#?}\nonly ncu: {only_ncu:#?}");
}

/// And on the same lines, but for the findings ncu places by warp samples
/// (PC sampling, which this recording predates: MemoryCoalescing and
/// WarpStall go to the kernel's line without them).
#[test]
fn cupti_and_ncu_put_the_findings_on_the_same_lines() {
    let sampled = |f: &&String| f.contains("MemoryCoalescing") || f.contains("WarpStall");
    let cupti = summary(&cupti_report(), true);
    let ncu = summary(&ncu_report(), true);
    let only_cupti: Vec<&String> = cupti.difference(&ncu).filter(|f| !sampled(f)).collect();
    let only_ncu: Vec<&String> = ncu.difference(&cupti).filter(|f| !sampled(f)).collect();
    assert!(only_cupti.is_empty() && only_ncu.is_empty(), "only CUPTI: {only_cupti:#?}\nonly ncu: {only_ncu:#?}");
}

/// PC sampling's records become the source page's stall columns and the
/// kernel's `smsp__pcsamp_*` totals, under ncu's names, so the findings that
/// ncu places by warp samples find their line (records in the library's
/// format; the names are CUPTI's stall reasons).
#[test]
fn stall_samples_become_the_source_pages_columns() {
    let mut text = read("tests/fixtures/cupti/probe_h100.tsv");
    for (pc, reason, n) in [
        ("0x2d0", "long_scoreboard", 900),
        ("0x2d0", "long_scoreboard_not_issued", 400),
        ("0x2d0", "selected", 10),
        ("0x2e0", "wait", 40),
    ] {
        text.push_str(&format!("S\t_Z12strided_copyPfPKfii\t{pc}\tsmsp__pcsamp_warps_issue_stalled_{reason}\t{n}\n"));
    }
    let run = parse_cupti(&text);
    let mangled = "_Z12strided_copyPfPKfii";
    assert!(run.has_stalls(mangled));
    let sass = kernelpro_sass::disasm::parse_sass(&read("tests/fixtures/cupti/probe_h100.sass"));
    let mut p = run.profiles[1].clone();
    let page = source_page(
        &p,
        &instructions_of(sass.function(mangled).unwrap()),
        &run.pcs[mangled],
        run.stalls.get(mangled),
        None,
        &kernels_cu(),
    );
    add_stall_totals(&mut p, &run.stalls[mangled]);
    let line = page.line(14).unwrap();
    assert_eq!(line.metrics["stall_long_sb"].number(), Some(900.0));
    assert_eq!(line.metrics["Warp Stall Sampling (All Samples)"].number(), Some(950.0));
    assert_eq!(p.num("smsp__pcsamp_sample_count"), Some(950.0));
    assert_eq!(p.num("smsp__pcsamp_warps_issue_stalled_long_scoreboard"), Some(900.0));
}

/// The records the library writes now: those of range metrics still in
/// `RANGE_METRICS` (and the launch's and device's own numbers, which are not
/// the range profiler's) and of SASS metrics still in `SASS_METRICS`.
fn as_asked_now(tsv: &str) -> String {
    let own = |m: &str| {
        m.starts_with("launch__") || m.starts_with("device__") || m == "sm__maximum_warps_per_active_cycle_pct"
    };
    let kept = |line: &&str| match line.split('\t').collect::<Vec<_>>()[..] {
        ["M", _, _, m, _] => own(m) || RANGE_METRICS.contains(&m),
        ["P", _, _, m, _] => SASS_METRICS.iter().any(|(n, _)| *n == m),
        _ => true,
    };
    tsv.lines().filter(kept).map(|l| format!("{l}\n")).collect()
}

/// Every kernel's class and every finding in full: line, code, message, evidence.
fn everything(r: &ProfileReport) -> Vec<String> {
    let mut out = Vec::new();
    for k in &r.kernels {
        out.push(format!("{}: {:?}", k.kernel, k.triage.as_ref().map(|t| (t.class, &t.summary))));
        for f in &k.findings {
            let evidence: Vec<String> = f.evidence.iter().map(|e| format!("{}={}", e.name, e.value)).collect();
            out.push(format!(
                "{} @ {} {} {} [{}]",
                k.kernel,
                f.span.start.line + 1,
                f.code.as_deref().unwrap_or("?"),
                f.message,
                evidence.join(", ")
            ));
        }
    }
    out
}

/// Issue 33's cut of the counters asked for (fewer replay passes, a cheaper
/// SASS-patched launch): with PC samples (the H200 recording: every
/// in-process profile samples, as ncu's one launch does), the records of what
/// is no longer asked for change no verdict, finding, line, message or
/// evidence. Without them (the H100 recording predates PC sampling) the
/// stall reasons had come from the per-issue stall ratios, now left out (2
/// of 17 passes): only what rests on stall shares differs there.
#[test]
fn the_counters_left_out_change_no_verdict_or_finding() {
    let asked = |t: &str| -> BTreeSet<String> {
        t.lines().filter(|l| l.starts_with("M\t")).filter_map(|l| l.split('\t').nth(3)).map(str::to_string).collect()
    };
    let (tsv, sass) = ("tests/fixtures/cupti/probe_h200_pc.tsv", "tests/fixtures/cupti/probe_h200_pc.sass");
    let before = read(tsv);
    let now = as_asked_now(&before);
    assert_eq!(asked(&before).len() - asked(&now).len(), 31, "range metrics left out");
    assert!(now.lines().count() < before.lines().count());
    assert_eq!(everything(&report_of(&now, sass)), everything(&report_of(&before, sass)));

    let (tsv, sass) = ("tests/fixtures/cupti/probe_h100.tsv", "tests/fixtures/cupti/probe_h100.sass");
    let stalls = |f: &String| {
        !(f.contains(" WarpStall ") || f.contains(" MemoryCoalescing ") || f.contains("lg_throttle_stalls"))
    };
    let before = read(tsv);
    let now = everything(&report_of(&as_asked_now(&before), sass));
    let before = everything(&report_of(&before, sass));
    assert!(before.len() > now.len(), "without samples nor ratios, no stall finding");
    let kept = |v: Vec<String>| v.into_iter().filter(stalls).collect::<Vec<_>>();
    assert_eq!(kept(now), kept(before));
}

/// `bench/profile_table.py` (docs/benchmarks.md's profiling table from a
/// `bench/gpu_run.sh profile` folder): its doctests, a hand-made folder among them.
#[test]
fn the_profile_table_script_passes_its_doctests() {
    let out = std::process::Command::new("python3")
        .args(["-m", "doctest", "bench/profile_table.py"])
        .current_dir(here("../.."))
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}
