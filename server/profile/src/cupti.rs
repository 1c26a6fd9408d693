//! The in-process profiler's output (issue 33): the injection library
//! (`server/measure/src/cupti/kp_cupti.cpp`) reads, inside the program that
//! launches the kernel, the counters one ncu launch would give, and writes
//! them as tab-separated records. Parsed here into the same [`KernelProfile`]
//! and [`SourcePage`] that ncu's raw and source pages give, so the triage and
//! every tool run the same code on both.
//!
//! Records: `M kernel mangled metric value` (a number), `T kernel mangled
//! metric text`, `P mangled pc-offset sass-metric value` (one instruction's
//! counter), `S mangled pc-offset stall-reason samples` (PC sampling), `C
//! cubin-path` (a loaded module, for the disassembly), and
//! `#skip`/`#error`/`#warn`/`#setup`/`#kernel`/`#sass`/`#pc` lines (what
//! could not be collected, failures, what was done without, timings).

use crate::csv_pages::{
    KernelProfile, Metric, Metrics, SassRow, SourceLine, SourcePage, Value, entry_file, kernel_base_name,
};
use std::collections::BTreeMap;

/// The counters the triage and the tools read that CUPTI's range profiler
/// collects (ncu's sections give them by these names too): the one-pass
/// collection's metrics and the stage-1 sections' the triage reads. Each
/// costs replay passes (15 on GH100 by Perfworks' host scheduler, 17 with
/// the fallbacks below), so only what something reads is here; left out,
/// as nothing reads them while these are collected: the per-issue stall
/// ratios (the warp-stall tool's fallback without PC sampling: the stall
/// reasons come from PC sampling, as in ncu's one launch), the half-precision
/// FLOP counts, and the fallbacks of names listed here (`dram__bytes.sum`,
/// `dram__throughput`, `lts__t_sectors.sum`, `lts__t_sectors_op_{red,atom}`,
/// the `_active` throughputs, the bank conflicts' ld+st total). Held to
/// that by `tests/cupti_pages.rs` in `kernelpro-measure`: the recordings give
/// the same verdicts and findings with only these.
pub const RANGE_METRICS: &[&str] = &[
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__time_duration.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__t_bytes.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_sector_hit_rate.pct",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__d_atomic_input_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "lts__d_atomic_input_cycles_active.max.pct_of_peak_sustained_elapsed",
    "lts__t_bytes.sum",
    "lts__t_sector_hit_rate.pct",
    "lts__t_sectors_srcunit_tex_op_atom.sum",
    "lts__t_sectors_srcunit_tex_op_red.avg",
    "lts__t_sectors_srcunit_tex_op_red.max",
    "lts__t_sectors_srcunit_tex_op_red.sum",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__cycles_elapsed.avg",
    "smsp__inst_executed_op_generic_atom_dot_alu.sum",
    "smsp__inst_executed_op_generic_atom_dot_cas.sum",
    "smsp__inst_executed_op_global_red.sum",
    "smsp__sass_average_branch_targets_threads_uniform.pct",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
    "smsp__sass_branch_targets_threads_divergent.sum",
    "smsp__sass_inst_executed_op_local_ld.sum",
    "smsp__sass_inst_executed_op_local_st.sum",
    "smsp__sass_inst_executed_op_shared.sum",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
];

/// CUPTI's per-instruction (SASS-patching) counters, and the source-page
/// columns ncu names them by: those a tool reads. The shared-load and local
/// load/store counts are not asked for: the range profiler's kernel totals
/// (`smsp__sass_inst_executed_op_{shared,local_ld,local_st}.sum`) answer what
/// the tools ask of them, and every patched counter slows the patched launch.
pub const SASS_METRICS: &[(&str, &str)] = &[
    ("smsp__sass_inst_executed", "Instructions Executed"),
    ("smsp__sass_thread_inst_executed", "Thread Instructions Executed"),
    ("smsp__sass_thread_inst_executed_pred_on", "Predicated-On Thread Instructions Executed"),
    ("smsp__sass_sectors_mem_global", "L2 Theoretical Sectors Global"),
    ("smsp__sass_sectors_mem_global_ideal", "L2 Theoretical Sectors Global Ideal"),
    ("smsp__sass_l1tex_tags_mem_global", "L1 Tag Requests Global"),
    ("smsp__sass_branch_targets_threads_divergent", "Divergent Branches"),
    ("smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared", "L1 Wavefronts Shared"),
    ("smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared_ideal", "L1 Wavefronts Shared Ideal"),
];

/// The `KP_CUPTI_SASS` list.
pub fn sass_metric_names() -> String {
    SASS_METRICS.iter().map(|(m, _)| *m).collect::<Vec<_>>().join(",")
}

/// Everything one injected run wrote.
#[derive(Debug, Clone, Default)]
pub struct CuptiRun {
    /// One per profiled kernel, in launch order, with ncu's metric names.
    pub profiles: Vec<KernelProfile>,
    /// Per-instruction counters by mangled function name, then PC offset.
    pub pcs: BTreeMap<String, BTreeMap<u32, BTreeMap<String, f64>>>,
    /// PC sampling: warp samples by mangled function, PC offset, stall reason
    /// (`smsp__pcsamp_warps_issue_stalled_long_scoreboard`, ...).
    pub stalls: BTreeMap<String, BTreeMap<u32, BTreeMap<String, f64>>>,
    /// The modules the program loaded, as the library saved them.
    pub cubins: Vec<String>,
    /// Metrics this device could not collect.
    pub skipped: Vec<String>,
    pub errors: Vec<String>,
    /// What the library could not do and went on without (`#warn` records:
    /// `pc ...` where PC sampling was refused after the range profiler).
    pub warnings: Vec<String>,
    /// Milliseconds the library spent in each step, summed over kernels:
    /// `setup` (the range profiler's configuration), `range`, `sass`, `pc`.
    pub step_ms: BTreeMap<String, f64>,
    /// The device the program ran on, as its first `#setup` names it: the
    /// chip and the driver's version (`GH100 driver=13000`).
    pub device: Option<String>,
}

impl CuptiRun {
    /// Whether the SASS pass reached this kernel (a program that launched it
    /// once gets its per-instruction counters from a second, `sass` run).
    pub fn has_pcs(&self, mangled: &str) -> bool {
        self.pcs.get(mangled).is_some_and(|m| !m.is_empty())
    }
    /// Whether PC sampling reached this kernel.
    pub fn has_stalls(&self, mangled: &str) -> bool {
        self.stalls.get(mangled).is_some_and(|m| !m.is_empty())
    }

    /// A later run's records added to this one's: its kernels' counters and
    /// samples where this one has none, its modules where this one saved none
    /// (the same program loads the same modules: disassembled once), its
    /// warnings and step times.
    pub fn merge(&mut self, more: CuptiRun) {
        for (k, v) in more.pcs {
            self.pcs.entry(k).or_insert(v);
        }
        for (k, v) in more.stalls {
            self.stalls.entry(k).or_insert(v);
        }
        if self.cubins.is_empty() {
            self.cubins = more.cubins;
        }
        self.warnings.extend(more.warnings);
        self.device = self.device.take().or(more.device);
        for (k, v) in more.step_ms {
            *self.step_ms.entry(k).or_default() += v;
        }
    }
}

/// Parses the library's output (see the module's documentation).
pub fn parse_cupti(text: &str) -> CuptiRun {
    let mut run = CuptiRun::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        match f.as_slice() {
            ["M" | "T", printed, mangled, name, value] => {
                let value = if f[0] == "M" {
                    match value.trim().parse::<f64>() {
                        Ok(v) if v.is_finite() => Value::Number(v),
                        _ => continue,
                    }
                } else {
                    Value::Text(value.to_string())
                };
                let idx = match run.profiles.iter().position(|p| p.mangled.as_deref() == Some(*mangled)) {
                    Some(i) => i,
                    None => {
                        let (kernel, _) = kernel_base_name(printed);
                        run.profiles.push(KernelProfile {
                            id: run.profiles.len() as u32,
                            kernel,
                            signature: printed.to_string(),
                            mangled: Some(mangled.to_string()),
                            ..Default::default()
                        });
                        run.profiles.len() - 1
                    }
                };
                run.profiles[idx].metrics.insert(name.to_string(), Metric { value, unit: String::new() });
            }
            [kind @ ("P" | "S"), mangled, pc, name, value] => {
                let (Ok(pc), Ok(v)) = (u32::from_str_radix(pc.trim_start_matches("0x"), 16), value.parse::<f64>())
                else {
                    continue;
                };
                let table = if *kind == "P" { &mut run.pcs } else { &mut run.stalls };
                *table
                    .entry(mangled.to_string())
                    .or_default()
                    .entry(pc)
                    .or_default()
                    .entry(name.to_string())
                    .or_insert(0.0) += v;
            }
            ["C", path] => run.cubins.push(path.to_string()),
            ["#skip", name, ..] => run.skipped.push(name.to_string()),
            ["#error", rest @ ..] => run.errors.push(rest.join(" ")),
            ["#warn", rest @ ..] => run.warnings.push(rest.join(" ")),
            [step @ ("#setup" | "#kernel" | "#sass" | "#pc" | "#waited"), rest @ ..] => {
                let ms = rest.iter().find_map(|f| f.strip_prefix("ms=")?.parse::<f64>().ok());
                if *step == "#setup"
                    && run.device.is_none()
                    && let Some(chip) = rest.iter().find_map(|f| f.strip_prefix("chip="))
                {
                    let driver = rest.iter().find(|f| f.starts_with("driver="));
                    run.device = Some(driver.map_or_else(|| chip.to_string(), |d| format!("{chip} {d}")));
                }
                let name = match *step {
                    "#setup" => "setup",
                    "#kernel" => "range",
                    "#sass" => "sass",
                    "#waited" => "wait for the first run",
                    _ => "pc",
                };
                *run.step_ms.entry(name.to_string()).or_default() += ms.unwrap_or(0.0);
            }
            _ => {}
        }
    }
    run
}

/// One instruction of the kernel's disassembly: its offset in the function,
/// its text (`@P0 BRA 0x90`) and the source line it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Instruction {
    pub offset: u32,
    pub text: String,
    pub line: Option<(String, u32)>,
}

fn number(v: f64) -> Metric {
    Metric { value: Value::Number(v), unit: String::new() }
}

/// The source page of one kernel, as ncu's would read: per instruction, the
/// counters under ncu's column names; per line, their sums (and the
/// averages and excess ncu derives). `own_file`: the kernel's own file as the
/// disassembly names it (lines of other files were inlined from headers);
/// `None`: the file of its entry instruction (`entry_file`).
pub fn source_page(
    profile: &KernelProfile,
    instructions: &[Instruction],
    pcs: &BTreeMap<u32, BTreeMap<String, f64>>,
    stalls: Option<&BTreeMap<u32, BTreeMap<String, f64>>>,
    own_file: Option<&str>,
    source_text: &str,
) -> SourcePage {
    let column = |m: &str| SASS_METRICS.iter().find(|(n, _)| *n == m).map(|(_, c)| *c);
    let mut rows = Vec::new();
    let mut lines: BTreeMap<(String, u32), Metrics> = BTreeMap::new();
    for ins in instructions {
        let mut metrics = Metrics::new();
        if let Some(counters) = pcs.get(&ins.offset) {
            for (name, v) in counters {
                if let Some(c) = column(name) {
                    metrics.insert(c.to_string(), number(*v));
                }
            }
        }
        if let Some(samples) = stalls.and_then(|s| s.get(&ins.offset)) {
            stall_columns(samples, &mut metrics);
        }
        derive(&mut metrics);
        if let Some(key) = &ins.line {
            let sums = lines.entry(key.clone()).or_default();
            for (name, m) in &metrics {
                if name.starts_with("Avg.") || name == "L1 Conflicts Shared N-Way" {
                    continue;
                }
                let v = m.number().unwrap_or(0.0) + sums.get(name).and_then(Metric::number).unwrap_or(0.0);
                sums.insert(name.clone(), number(v));
            }
        }
        rows.push(SassRow {
            address: format!("0x{:x}", ins.offset),
            text: ins.text.clone(),
            line: ins.line.as_ref().map(|(_, l)| *l),
            file: ins.line.as_ref().map(|(f, _)| f.clone()),
            metrics,
        });
    }
    let file = own_file.or_else(|| entry_file(&rows)).unwrap_or_default().to_string();
    // In ncu's order: the kernel's own file first, each line followed by its
    // instructions (by address); instructions without a line last.
    rows.sort_by_key(|r| {
        let own = r.file.as_deref() == Some(file.as_str());
        (r.line.is_none(), !own, r.file.clone(), r.line, r.address_value())
    });
    let text: Vec<&str> = source_text.lines().collect();
    let lines = lines
        .into_iter()
        .map(|((f, line), mut metrics)| {
            derive(&mut metrics);
            let text = if f == file { text.get(line as usize - 1).unwrap_or(&"").to_string() } else { String::new() };
            SourceLine { file: f, line, text, metrics }
        })
        .collect();
    SourcePage { kernel: profile.kernel.clone(), signature: profile.signature.clone(), file, lines, instructions: rows }
}

const PCSAMP: &str = "smsp__pcsamp_warps_issue_stalled_";

/// One instruction's PC samples under the source page's columns: each
/// reason's (`stall_long_sb`), and all of them (`Warp Stall Sampling (All
/// Samples)`, `# Samples`); the not-issued variants are left out.
fn stall_columns(samples: &BTreeMap<String, f64>, m: &mut Metrics) {
    let mut all = 0.0;
    for (name, v) in samples {
        let Some(key) = name.strip_prefix(PCSAMP) else { continue };
        if key.ends_with("_not_issued") {
            continue;
        }
        all += v;
        let column = match key {
            "selected" => Some("stall_selected"),
            "not_selected" => Some("stall_not_selected"),
            _ => crate::tools::STALL_REASONS.iter().find(|r| r.key == key).map(|r| r.column),
        };
        if let Some(c) = column {
            let prev = m.get(c).and_then(Metric::number).unwrap_or(0.0);
            m.insert(c.to_string(), number(prev + v));
        }
    }
    m.insert("Warp Stall Sampling (All Samples)".into(), number(all));
    m.insert("# Samples".into(), number(all));
}

/// The kernel's PC-sampling totals under ncu's raw-page names
/// (`smsp__pcsamp_sample_count`, `smsp__pcsamp_warps_issue_stalled_*`).
pub fn add_stall_totals(profile: &mut KernelProfile, stalls: &BTreeMap<u32, BTreeMap<String, f64>>) {
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    let mut total = 0.0;
    for samples in stalls.values() {
        for (name, v) in samples {
            *sums.entry(name.clone()).or_default() += v;
            if name.starts_with(PCSAMP) && !name.ends_with("_not_issued") {
                total += v;
            }
        }
    }
    for (name, v) in sums {
        profile.metrics.insert(name, number(v));
    }
    profile.metrics.insert("smsp__pcsamp_sample_count".into(), number(total));
}

/// Registers per thread from the cubin, where the library had none, and the
/// occupancy limit they set (65536 registers per SM, allocated per warp in
/// units of 256).
pub fn set_registers(profile: &mut KernelProfile, regs: u32) {
    if profile.num("launch__registers_per_thread").is_some_and(|r| r > 0.0) {
        return;
    }
    profile.metrics.insert("launch__registers_per_thread".into(), number(regs as f64));
    let warps = (profile.num("launch__block_size").unwrap_or(0.0) / 32.0).ceil();
    if regs > 0 && warps > 0.0 {
        let per_warp = ((regs * 32).div_ceil(256) * 256) as f64;
        profile
            .metrics
            .insert("launch__occupancy_limit_registers".into(), number((65536.0 / (per_warp * warps)).floor()));
    }
}

/// The columns ncu derives from the counted ones.
fn derive(m: &mut Metrics) {
    let n = |m: &Metrics, k: &str| m.get(k).and_then(Metric::number);
    if let Some(inst) = n(m, "Instructions Executed").filter(|&i| i > 0.0) {
        if let Some(t) = n(m, "Thread Instructions Executed") {
            m.insert("Avg. Threads Executed".into(), number(t / inst));
        }
        if let Some(t) = n(m, "Predicated-On Thread Instructions Executed") {
            m.insert("Avg. Predicated-On Threads Executed".into(), number(t / inst));
        }
    }
    if let (Some(s), Some(i)) = (n(m, "L2 Theoretical Sectors Global"), n(m, "L2 Theoretical Sectors Global Ideal")) {
        m.insert("L2 Theoretical Sectors Global Excessive".into(), number((s - i).max(0.0)));
    }
    if let (Some(w), Some(i)) = (n(m, "L1 Wavefronts Shared"), n(m, "L1 Wavefronts Shared Ideal"))
        && i > 0.0
    {
        m.insert("L1 Conflicts Shared N-Way".into(), number((w / i).round()));
    }
}

/// The kernel-level numbers ncu derives from the source counters (sectors
/// beyond the ideal, shared-memory wavefronts), added to `profile` (shared
/// loads and spills: the range profiler's totals).
pub fn add_source_totals(profile: &mut KernelProfile, page: &SourcePage) {
    let sum = |c: &str| -> Option<f64> {
        let mut any = false;
        let s = page.instructions.iter().filter_map(|r| r.num(c)).inspect(|_| any = true).sum::<f64>();
        any.then_some(s)
    };
    let mut put = |k: &str, v: Option<f64>| {
        if let Some(v) = v {
            profile.metrics.entry(k.to_string()).or_insert_with(|| number(v));
        }
    };
    put("memory_l2_theoretical_sectors_global", sum("L2 Theoretical Sectors Global"));
    put("derived__memory_l2_theoretical_sectors_global_excessive", sum("L2 Theoretical Sectors Global Excessive"));
    put("memory_l1_wavefronts_shared", sum("L1 Wavefronts Shared"));
    let excess = match (sum("L1 Wavefronts Shared"), sum("L1 Wavefronts Shared Ideal")) {
        (Some(w), Some(i)) => Some((w - i).max(0.0)),
        _ => None,
    };
    put("derived__memory_l1_wavefronts_shared_excessive", excess);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every counter the one-pass ncu collection names is asked of CUPTI too
    /// (ncu's sections add more; the ones the tools read are in the list).
    #[test]
    fn the_range_metrics_cover_the_one_pass_collection() {
        for m in &crate::tools::one_pass_collection().metrics {
            assert!(RANGE_METRICS.contains(&m.as_str()), "{m} is not asked of CUPTI");
        }
    }

    /// The device is the first `#setup`'s chip and driver; a library older
    /// than the driver field names the chip alone; a later run's setup does
    /// not rename it.
    #[test]
    fn the_device_is_the_first_setups_chip_and_driver() {
        let cases = [
            (
                "#setup\tchip=GH100\tdriver=13000\tpasses=16\tms=1.0\n#setup\tchip=GB100\tdriver=1\tms=1\n",
                Some("GH100 driver=13000"),
            ),
            ("#setup\tchip=GH100\tpasses=16\tms=509.6\n", Some("GH100")),
            ("#error\tcuptiSubscribe\n", None),
        ];
        for (text, device) in cases {
            assert_eq!(parse_cupti(text).device.as_deref(), device, "{text}");
        }
    }

    /// Each step's milliseconds, the wait for the other process's turn
    /// included; records the parser does not know are left alone.
    #[test]
    fn each_steps_milliseconds_are_summed_by_step() {
        let run = parse_cupti("#waited\tms=120.5\n#pc\tk(int)\tsamples=3\tms=30\n#released\n#warm\tk\tresult=0\n");
        let steps: Vec<(&str, f64)> = run.step_ms.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(steps, [("pc", 30.0), ("wait for the first run", 120.5)]);
        assert!(run.errors.is_empty() && run.warnings.is_empty());
    }
}
