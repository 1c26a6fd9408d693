//! ncu command lines as argument vectors (no shell). The core crate adds the
//! program and its arguments after `--` and runs them with `LC_ALL=C` so the
//! CSV numbers use `,` as thousands separator and `.` as decimal point.

/// `--clock-control`: `none` keeps boost clocks (what users see), `base` locks
/// them (repeatable numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockControl {
    None,
    Base,
}

/// The CSV pages that `ncu -i` can print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    Raw,
    Details,
    Source,
}

/// What one profiling pass collects.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Collection {
    pub sections: Vec<String>,
    pub metrics: Vec<String>,
    /// `--set full` instead of sections and metrics.
    pub full_set: bool,
}

impl Collection {
    fn args(&self) -> Vec<String> {
        if self.full_set {
            return vec!["--set".into(), "full".into(), "--import-source".into(), "yes".into()];
        }
        // Our tools replace ncu's rules; running them costs a Python start-up per pass.
        let mut out = vec!["--apply-rules".to_string(), "no".to_string()];
        for s in &self.sections {
            out.extend(["--section".to_string(), s.clone()]);
        }
        if !self.metrics.is_empty() {
            out.extend(["--metrics".to_string(), self.metrics.join(",")]);
        }
        if self.sections.iter().any(|s| s == "SourceCounters") {
            out.extend(["--import-source".to_string(), "yes".to_string()]);
        }
        out
    }
}

pub const STAGE1_SECTIONS: [&str; 3] = ["SpeedOfLight", "LaunchStats", "Occupancy"];

/// Counters the roofline needs and the three stage-1 sections lack: FLOPs by
/// precision and the bytes moved at each memory level.
pub const ROOFLINE_METRICS: [&str; 11] = [
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "l1tex__t_bytes.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
];

pub fn stage1_collection() -> Collection {
    Collection {
        sections: STAGE1_SECTIONS.iter().map(|s| s.to_string()).collect(),
        metrics: ROOFLINE_METRICS.iter().map(|s| s.to_string()).collect(),
        full_set: false,
    }
}

impl Collection {
    /// This collection with `other`'s sections and metrics added, without repeats.
    pub fn with(mut self, other: &Collection) -> Collection {
        for s in &other.sections {
            if !self.sections.contains(s) {
                self.sections.push(s.clone());
            }
        }
        for m in &other.metrics {
            if !self.metrics.contains(m) {
                self.metrics.push(m.clone());
            }
        }
        self
    }
}

pub fn full_collection() -> Collection {
    Collection { full_set: true, ..Default::default() }
}

/// Where a profiling pass puts its results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// A `.ncu-rep` report (ncu appends the extension if missing), for
    /// exports of several pages afterwards.
    Report(String),
    /// The raw page as CSV in this file, straight from the pass: saves the
    /// export's ncu start-up when no other page is needed (stage 1).
    RawCsv(String),
    /// Both from one launch: the report (for the source pages' export) and
    /// its raw page printed as CSV into the file as the pass ends, which
    /// saves the raw page's export (an ncu start-up).
    ReportAndRawCsv { report: String, csv: String },
}

/// Options shared by every profiling pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileOptions {
    pub clock_control: ClockControl,
    /// `--kernel-name regex:...` filter; `None` profiles every kernel.
    pub kernel_regex: Option<String>,
    pub output: Output,
}

/// `ncu <collection> -o REPORT` (or `--csv --page raw --log-file CSV`) for
/// one pass; the caller appends the program.
pub fn profile_args(collection: &Collection, opts: &ProfileOptions) -> Vec<String> {
    let mut out: Vec<String> = vec!["--config-file".into(), "off".into(), "--clock-control".into()];
    out.push(match opts.clock_control {
        ClockControl::None => "none".into(),
        ClockControl::Base => "base".into(),
    });
    out.extend(collection.args());
    if let Some(re) = &opts.kernel_regex {
        out.extend(["--kernel-name".to_string(), format!("regex:{re}")]);
    }
    match &opts.output {
        Output::Report(path) => out.extend(["-f", "-o", path].map(String::from)),
        // ncu's own messages go to the same file as `==PROF==` lines, which the CSV reader skips.
        Output::RawCsv(path) => out.extend(raw_csv_args(path)),
        Output::ReportAndRawCsv { report, csv } => {
            out.extend(["-f", "-o", report].map(String::from));
            out.extend(raw_csv_args(csv));
        }
    }
    out
}

fn raw_csv_args(path: &str) -> [String; 7] {
    ["--csv", "--page", "raw", "--print-units", "base", "--log-file", path].map(String::from)
}

/// `ncu -i REPORT --csv --page ...`: the export of one page. `kernel` picks
/// one kernel's source page (the source page covers a single function).
pub fn export_args(report: &str, page: Page, kernel: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = ["--config-file", "off", "-i", report, "--csv", "--print-units", "base", "--page"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    out.push(
        match page {
            Page::Raw => "raw",
            Page::Details => "details",
            Page::Source => "source",
        }
        .into(),
    );
    if page == Page::Source {
        out.extend(["--print-source".to_string(), "cuda,sass".to_string()]);
    }
    if let Some(k) = kernel {
        out.extend(["--kernel-name".to_string(), k.to_string()]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_and_source_export() {
        let opts = ProfileOptions {
            clock_control: ClockControl::None,
            kernel_regex: None,
            output: Output::RawCsv("/tmp/s1.csv".into()),
        };
        let args = profile_args(&stage1_collection(), &opts).join(" ");
        assert!(args.starts_with("--config-file off --clock-control none --apply-rules no --section SpeedOfLight --section LaunchStats --section Occupancy --metrics smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,"), "{args}");
        assert!(args.ends_with("--csv --page raw --print-units base --log-file /tmp/s1.csv"), "{args}");
        let full = ProfileOptions { output: Output::Report("/tmp/full".into()), ..opts };
        assert_eq!(
            profile_args(&full_collection(), &full).join(" "),
            "--config-file off --clock-control none --set full --import-source yes -f -o /tmp/full"
        );
        let both = ProfileOptions {
            output: Output::ReportAndRawCsv { report: "/tmp/p".into(), csv: "/tmp/p.csv".into() },
            ..full.clone()
        };
        assert!(
            profile_args(&stage1_collection(), &both)
                .join(" ")
                .ends_with("-f -o /tmp/p --csv --page raw --print-units base --log-file /tmp/p.csv")
        );
        assert_eq!(
            export_args("/tmp/s1.ncu-rep", Page::Source, Some("saxpy_fp64")).join(" "),
            "--config-file off -i /tmp/s1.ncu-rep --csv --print-units base --page source --print-source cuda,sass --kernel-name saxpy_fp64"
        );
    }
}
