//! The jobs' policies, decided here rather than in an adapter: what an
//! untrusted workspace gets, when a save profiles, what a missing tool refuses,
//! and what a finished profile leaves on the document.

use crate::document::ProfileState;
use kernelpro_config::settings::Settings;
use kernelpro_config::words::Words;
use kernelpro_core::analysis::FileAnalysis;
use kernelpro_core::lens::Readiness;
use kernelpro_measure::baseline::Change;
use kernelpro_measure::profiling::ProfileReport;
use kernelpro_model::{Finding, Severity, Span};

/// Why a run is refused before it starts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Nothing runs in an untrusted workspace.
    #[error("{0}")]
    Untrusted(String),
    /// Doctor found a tool missing.
    #[error("{0}")]
    Unready(String),
}

/// Why an untrusted document gets no compiler diagnostics, on the document
/// itself: a client that shows no messages (or hid the one at start) still sees it.
pub fn untrusted(words: Words) -> Finding {
    Finding::new("kernelpro", Severity::Information, Span::line(0), untrusted_message(words)).with_code("Untrusted")
}

/// In the words of the user's client (`Words`).
pub fn untrusted_message(words: Words) -> String {
    format!(
        "workspace not trusted: nothing is compiled, checked or profiled here until you {}. Until then only the file's structure and launch specs are checked.",
        words.trust_hint()
    )
}

/// A save with profile-on-save makes a profile of the older text stale: it
/// stops when the save's analysis starts, not when the save's own profile does.
pub fn save_cancels_profile(settings: &Settings) -> bool {
    settings.profile_on_save
}

/// A save begins a profile beside its compile (which it measures only if the
/// compile succeeds, [`profile_after`]): trusted and profile-on-save.
pub fn profile_begins_with_save(settings: &Settings) -> bool {
    settings.trusted && settings.profile_on_save
}

/// A profile follows the analysis: trusted, profile-on-save, and it compiled.
pub fn profile_after(settings: &Settings, analysis: &FileAnalysis) -> bool {
    profile_begins_with_save(settings) && !analysis.has_errors()
}

/// Whether a profile may start: not in an untrusted workspace, and not
/// without a compiler or ncu (a GPU nvidia-smi does not see is still tried: a
/// runner or a wrapper may reach one, and it is named if the run fails).
pub fn profile_refusal(settings: &Settings, ready: Option<&Readiness>) -> Result<(), Refusal> {
    if !settings.trusted {
        return Err(Refusal::Untrusted(format!(
            "KernelPro does not run code in an untrusted workspace; to allow it, {}.",
            settings.words.trust_hint()
        )));
    }
    if let Some(r) = ready
        && let Some(why) = r.compile.as_deref().or(r.profile.as_deref().filter(|p| p.contains("(ncu)")))
    {
        let fix = if r.compile.is_some() { "" } else { r.profile_fix.as_str() };
        return Err(Refusal::Unready(kernelpro_core::lens::because("Profiling", why, fix)));
    }
    Ok(())
}

/// Whether a search may start: not untrusted, and not with what doctor found
/// missing (no compiler, no GPU for a GPU evaluator), said at once.
pub fn optimize_refusal(settings: &Settings, ready: Option<&Readiness>) -> Result<(), Refusal> {
    if !settings.trusted {
        return Err(Refusal::Untrusted("KernelPro does not compile or run code in an untrusted workspace".into()));
    }
    if let Some(r) = ready
        && let Some(why) = r.optimize.as_deref()
    {
        return Err(Refusal::Unready(kernelpro_core::lens::because("Optimize", why, &r.optimize_fix)));
    }
    Ok(())
}

/// What a finished profile of `text` (version `version`) leaves on the
/// document: its findings, a finding per kernel now slower than the baseline,
/// each kernel's verdict and what changed since the previous profile.
pub fn profile_state(version: i32, text: &str, report: &ProfileReport, changes: Vec<Change>) -> ProfileState {
    let mut profile = ProfileState { version, ..Default::default() };
    for change in changes {
        if change.slower {
            profile.findings.push(kernelpro_measure::profiling::slower_finding(text, &change.kernel, &change.text));
        }
        profile.changes.insert(change.kernel, change.text);
    }
    for k in &report.kernels {
        if let Some(t) = &k.triage {
            profile.summaries.insert(k.kernel.clone(), t.summary.clone());
        }
        profile.findings.extend(k.findings.iter().cloned());
    }
    profile.last = report.reuse_key.clone().map(|key| {
        std::sync::Arc::new(kernelpro_measure::reuse::LastProfile {
            text: text.to_string(),
            report: report.clone(),
            key,
        })
    });
    profile
}

/// The end of a profile's progress: how many kernels it measured, and kept.
pub fn profile_done(report: &ProfileReport) -> String {
    let measured = report.kernels.len() - report.kept.len();
    match report.kept.len() {
        0 => format!("{measured} kernels profiled"),
        kept => format!("{measured} kernels profiled, {kept} kept from the last profile (unchanged)"),
    }
}

/// The finished profile in words: per kernel its verdict and how many findings.
pub fn profile_summary(report: &ProfileReport) -> String {
    if report.kernels.is_empty() {
        return "Profiling finished, but ncu measured no kernel of this file (does the program launch them?).".into();
    }
    let total: usize = report.kernels.iter().map(|k| k.findings.len()).sum();
    let secs = report.pass_secs + report.export_secs;
    let mut s = format!(
        "Profiled {} kernel{} in {secs:.0} s, {total} finding{}.",
        report.kernels.len(),
        if report.kernels.len() == 1 { "" } else { "s" },
        if total == 1 { "" } else { "s" }
    );
    for k in &report.kernels {
        match &k.triage {
            Some(t) => s.push_str(&format!(" {}: {}.", k.kernel, t.summary.trim_end_matches('.'))),
            None => s.push_str(&format!(" {}: no verdict (the SpeedOfLight metrics are missing).", k.kernel)),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelpro_measure::profiling::KernelReport;

    fn report(kernels: &[&str], kept: &[&str], reuse_key: Option<&str>) -> ProfileReport {
        let kernel = |k: &&str| KernelReport { kernel: k.to_string(), triage: None, tools: vec![], findings: vec![] };
        ProfileReport {
            kernels: kernels.iter().map(kernel).collect(),
            kept: kept.iter().map(|k| k.to_string()).collect(),
            reuse_key: reuse_key.map(str::to_string),
            ..Default::default()
        }
    }

    /// A program's in-process profile is the next save's basis, and its end says what it kept;
    /// a profile that cannot serve (a harness file's, ncu's) leaves none.
    #[test]
    fn a_programs_profile_is_the_next_saves_basis_and_says_what_it_kept() {
        let program = report(&["a", "b", "c"], &["b", "c"], Some("cupti sm_90"));
        assert_eq!(profile_done(&program), "1 kernels profiled, 2 kept from the last profile (unchanged)");
        let last = profile_state(3, "the text", &program, vec![]).last.expect("a basis for the next save");
        assert_eq!((last.text.as_str(), last.key.as_str(), last.report.kernels.len()), ("the text", "cupti sm_90", 3));
        let harness = report(&["a"], &[], None);
        assert_eq!(profile_done(&harness), "1 kernels profiled");
        assert!(profile_state(3, "the text", &harness, vec![]).last.is_none());
    }
}
