//! What the server knows about one open document besides its text: its
//! version, the latest analysis, the last profile, and the line changes made
//! since each was computed, so their findings stay on the lines they belong to.
//! The text itself (a rope, UTF-16 positions) is the adapter's.

use crate::{EditLog, LineChange};
use kernelpro_core::analysis::FileAnalysis;
use kernelpro_model::{Finding, Pos, Span};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct Document {
    pub version: i32,
    /// The latest finished analysis and the version it was made from.
    analysis: Option<(i32, Arc<FileAnalysis>)>,
    /// The last profile's results, kept on their lines while the user edits.
    profile: Option<ProfileState>,
    /// Line changes not yet seen by the stored analysis or profile, with the
    /// version each made, so findings, hover and lenses stay on their lines.
    edits: Vec<(i32, LineChange)>,
    /// `edits` after the stored analysis's version, composed.
    analysis_edits: EditLog,
    /// `edits` after the stored profile's version, composed.
    profile_edits: EditLog,
}

/// Findings and per-kernel verdicts of the last profile of a document.
#[derive(Debug, Clone, Default)]
pub struct ProfileState {
    pub findings: Vec<Finding>,
    /// Kernel name → triage summary (`memory-bound · DRAM 82% of peak · …`).
    pub summaries: HashMap<String, String>,
    /// What changed since the previous profile, per kernel.
    pub changes: HashMap<String, String>,
    /// The document version the profile measured: its findings' lines are
    /// that text's, moved through the edits made since when published.
    pub version: i32,
    /// A program's profile as measured, for the next save's profile to keep
    /// what did not change (`measure::reuse`); `None` where it cannot serve.
    pub last: Option<std::sync::Arc<kernelpro_measure::reuse::LastProfile>>,
}

/// A kernel's last profile verdict, for its lens and hover.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub summary: String,
    /// What changed since the profile before it.
    pub change: Option<String>,
    /// Edits were made since the profile measured the text.
    pub stale: bool,
}

impl Document {
    pub fn new(version: i32) -> Self {
        Document {
            version,
            analysis: None,
            profile: None,
            edits: Vec::new(),
            analysis_edits: EditLog::new(),
            profile_edits: EditLog::new(),
        }
    }

    /// A whole-text change (clients without incremental sync send one per
    /// keystroke): its line changes, from a line diff, so findings still move
    /// with their lines. A diff that runs out of time is coarser, never wrong.
    pub fn record_replacement(&mut self, old: &str, new: &str) {
        let diff = similar::TextDiff::configure().timeout(std::time::Duration::from_millis(50)).diff_lines(old, new);
        // Last first: each change's lines are still those of `old`.
        for op in diff.ops().iter().rev() {
            let (o, n) = (op.old_range(), op.new_range());
            if matches!(op.tag(), similar::DiffTag::Equal) {
                continue;
            }
            let inserted = "\n".repeat(n.len());
            self.record(LineChange::from_range((o.start as u32, 0), (o.end as u32, 0), &inserted));
        }
    }

    /// One line change of the edit that made `self.version`: kept (for a
    /// result of an older version that lands later) and composed at once into
    /// the maps of the stored analysis and profile, so mapping their findings
    /// never replays the edits (`EditLog`: linear, not findings x edits).
    pub fn record(&mut self, change: LineChange) {
        self.edits.push((self.version, change));
        self.analysis_edits.push(change);
        self.profile_edits.push(change);
    }

    /// The latest analysis and the version it was made from.
    pub fn analysis(&self) -> Option<&(i32, Arc<FileAnalysis>)> {
        self.analysis.as_ref()
    }

    pub fn current_analysis(&self) -> Option<&Arc<FileAnalysis>> {
        self.analysis.as_ref().map(|(_, a)| a)
    }

    /// Stores a finished analysis of `version`; edits up to it are now in it.
    pub fn set_analysis(&mut self, version: i32, analysis: Arc<FileAnalysis>) {
        self.analysis = Some((version, analysis));
        self.analysis_edits = self.edits_since(version);
        self.forget_old_edits();
    }

    /// Stores a finished profile (of the text of `profile.version`, which may
    /// be older than the document now: its findings are moved when published).
    pub fn set_profile(&mut self, profile: ProfileState) {
        self.profile_edits = self.edits_since(profile.version);
        self.profile = Some(profile);
        self.forget_old_edits();
    }

    pub fn profile(&self) -> Option<&ProfileState> {
        self.profile.as_ref()
    }

    /// Edits were made since the profile measured the text.
    pub fn profile_is_stale(&self) -> bool {
        self.profile.as_ref().is_some_and(|p| p.version != self.version)
    }

    /// The profile's findings on the lines they are on now; those on lines
    /// rewritten since are dropped (profile again to place them).
    pub fn profile_findings_now(&self) -> Vec<Finding> {
        let Some(profile) = &self.profile else { return Vec::new() };
        let edits = &self.profile_edits;
        profile.findings.iter().filter_map(|f| Some(Finding { span: moved(edits, f.span)?, ..f.clone() })).collect()
    }

    /// The changes since the stored analysis's text.
    pub fn edits_since_analysis(&self) -> &EditLog {
        &self.analysis_edits
    }

    /// The analysis's line for a line of the text now (`None`: rewritten since).
    pub fn analysed_pos(&self, now: Pos) -> Option<Pos> {
        let line = self.analysis_edits.to_original(now.line)?;
        Some(Pos { line, ..now })
    }

    /// The analysis's line for a line of the text now (`None`: rewritten since).
    pub fn analysed_line(&self, now: u32) -> Option<u32> {
        self.analysis_edits.to_original(now)
    }

    /// Where the stored analysis's findings in this file are now (`None`:
    /// rewritten): when a change alters this, they are published again.
    pub fn finding_lines(&self) -> Vec<Option<u32>> {
        let findings = self.analysis.as_ref().map(|(_, a)| a.findings.as_slice()).unwrap_or_default();
        findings
            .iter()
            .filter(|f| f.file.is_none())
            .map(|f| self.analysis_edits.to_current(f.span.start.line))
            .collect()
    }

    /// Kernel name → the last profile's verdict, for lens and hover.
    pub fn verdicts(&self) -> HashMap<String, Verdict> {
        let Some(p) = &self.profile else { return HashMap::new() };
        let stale = self.profile_is_stale();
        p.summaries
            .iter()
            .map(|(k, s)| (k.clone(), Verdict { summary: s.clone(), change: p.changes.get(k).cloned(), stale }))
            .collect()
    }

    /// The changes made after `version`, composed (once per stored result).
    fn edits_since(&self, version: i32) -> EditLog {
        let mut log = EditLog::new();
        for (_, c) in self.edits.iter().filter(|(v, _)| *v > version) {
            log.push(*c);
        }
        log
    }

    /// Keeps the edits the stored analysis or profile has not seen.
    fn forget_old_edits(&mut self) {
        let analysis = self.analysis.as_ref().map_or(i32::MIN, |(v, _)| *v);
        let oldest = self.profile.as_ref().map_or(analysis, |p| p.version.min(analysis));
        self.edits.retain(|(v, _)| *v > oldest);
    }
}

/// Where `span` (of the text before `edits`) is now: its lines moved, its
/// height kept; `None` when its first line was rewritten.
pub fn moved(edits: &EditLog, span: Span) -> Option<Span> {
    let line = edits.to_current(span.start.line)?;
    let end = line + span.end.line.saturating_sub(span.start.line);
    Some(Span::new(Pos { line, ..span.start }, Pos { line: end, ..span.end }))
}
