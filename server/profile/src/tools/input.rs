//! What a tool sees of one kernel, and the helpers every tool shares: where
//! the kernel is in the file, how to quote a line, how to build a finding.

use super::Thresholds;
use crate::csv_pages::{KernelProfile, SassRow, SourceLine, SourcePage};
use crate::triage::Triage;
use kernelpro_model::{Code, Finding, Severity, Span};

pub struct ToolInput<'a> {
    pub profile: &'a KernelProfile,
    pub source: Option<&'a SourcePage>,
    pub triage: Option<&'a Triage>,
    /// The text of the profiled file, one entry per line.
    pub source_lines: &'a [&'a str],
    pub thresholds: &'a Thresholds,
    /// Share of wall time lost to kernel launches, measured by nsys when it works.
    pub launch_overhead_pct: Option<f64>,
}

impl<'a> ToolInput<'a> {
    pub fn num(&self, name: &str) -> Option<f64> {
        self.profile.num(name)
    }

    /// The 0-based line of the kernel's `__global__` declaration.
    pub fn kernel_line(&self) -> u32 {
        let name = self.profile.kernel.split('<').next().unwrap_or("");
        let declared = self.source_lines.iter().enumerate().find(|(i, text)| {
            contains_call(text, name)
                && (text.contains("__global__")
                    || i.checked_sub(1).is_some_and(|p| self.source_lines[p].contains("__global__")))
        });
        if let Some((i, _)) = declared {
            return i as u32;
        }
        self.source.and_then(|s| s.own_lines().map(|l| l.line).min()).map(|l| l.saturating_sub(1)).unwrap_or(0)
    }

    /// The trimmed text of a 1-based line, from the file or else from the source page.
    pub fn quote(&self, line: u32) -> String {
        let from_file = line.checked_sub(1).and_then(|i| self.source_lines.get(i as usize));
        let text = match from_file {
            Some(t) => t.to_string(),
            None => self.source.and_then(|s| s.line(line)).map(|l| l.text.clone()).unwrap_or_default(),
        };
        let text = text.trim();
        if text.chars().count() > 80 {
            format!("{}…", text.chars().take(79).collect::<String>())
        } else {
            text.to_string()
        }
    }

    /// A finding of `tool` on a 1-based ncu line, or on the kernel's
    /// declaration when the tool has no line.
    pub fn finding(&self, tool: Code, severity: Severity, line: Option<u32>, message: String) -> Finding {
        let span = match line {
            Some(l) => Span::line(l.saturating_sub(1)),
            None => Span::line(self.kernel_line()),
        };
        let message = match line {
            Some(l) => format!("{message} in `{}`", self.quote(l)),
            None => message,
        };
        Finding::new("ncu", severity, span, message)
            .with_code(tool.as_str())
            .with_kernel(self.profile.kernel.clone())
            .with_doc(tool.doc_url())
    }

    /// The source page's lines of the profiled file (not CUDA's headers).
    pub fn lines(&self) -> impl Iterator<Item = &'a SourceLine> + 'a {
        self.source.into_iter().flat_map(|s| s.own_lines())
    }

    /// The 1-based line of the profiled file an instruction belongs to,
    /// also when ncu lists it under a CUDA header it was inlined from.
    pub fn own_line(&self, row: &SassRow) -> Option<u32> {
        self.source.and_then(|s| s.own_line_of(row))
    }

    pub fn instructions(&self) -> &'a [SassRow] {
        self.source.map(|s| s.instructions.as_slice()).unwrap_or(&[])
    }

    /// The source line with the largest value of a per-line counter (> 0),
    /// counting on each line the instructions inlined into it from headers
    /// (an `atomicAdd`'s RED, a `sinf`'s MUFU), which ncu lists under the header.
    pub fn hottest_line(&self, column: &str) -> Option<(&'a SourceLine, f64)> {
        let inlined = |line: u32| -> f64 {
            let Some(page) = self.source else { return 0.0 };
            page.instructions
                .iter()
                .filter(|r| r.file.as_deref().is_some_and(|f| !page.file.is_empty() && f != page.file))
                .filter(|r| page.own_line_of(r) == Some(line))
                .filter_map(|r| r.metrics.get(column)?.number())
                .sum()
        };
        self.lines()
            .map(|l| (l, l.metrics.get(column).and_then(|m| m.number()).unwrap_or(0.0) + inlined(l.line)))
            .filter(|(_, v)| *v > 0.0)
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Percent of peak memory throughput, from triage or the raw metrics.
    pub fn mem_pct(&self) -> Option<f64> {
        self.triage
            .map(|t| t.mem_pct)
            .or_else(|| self.num("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"))
    }

    pub fn sm_pct(&self) -> Option<f64> {
        self.triage.map(|t| t.sm_pct).or_else(|| self.num("sm__throughput.avg.pct_of_peak_sustained_elapsed"))
    }

    pub fn l1_pct(&self) -> Option<f64> {
        self.triage.and_then(|t| t.l1_pct).or_else(|| {
            self.profile.first(&[
                "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
                "l1tex__throughput.avg.pct_of_peak_sustained_active",
            ])
        })
    }
}

fn contains_call(text: &str, name: &str) -> bool {
    !name.is_empty()
        && text.match_indices(name).any(|(i, _)| {
            let before_ok = text[..i].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            let after = text[i + name.len()..].trim_start();
            before_ok && (after.starts_with('(') || after.starts_with('<'))
        })
}

/// Estimated speedup when a share of the run time goes away (1.3 = 30% faster).
pub fn gain_from_saved_share(share: f64) -> Option<f64> {
    (share > 0.0 && share < 0.95).then(|| round2(1.0 / (1.0 - share)))
}

pub fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

pub fn pct(v: f64) -> String {
    format!("{v:.1}%")
}
