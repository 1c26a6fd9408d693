//! What the editor shows, as plain data on the text as it is now: the
//! diagnostics (the analysis's and the last profile's findings moved through
//! the edits made since, and a header's merge across its includers), the hover,
//! the lenses and the edit that applies a finished search. An adapter only
//! converts these spans and words to its protocol.

use crate::document::{Document, moved};
use crate::optimizations::StoredOptimization;
use crate::{LineEdit, NotApplicable};
use kernelpro_config::words::Words;
use kernelpro_core::analysis::FileAnalysis;
use kernelpro_core::lens::LensAction;
use kernelpro_core::lens::Readiness;
use kernelpro_model::{Finding, Pos, Span};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One finding to show.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    pub finding: Finding,
    /// The span is on the document's text as it is now (convert it with that
    /// text's lines); otherwise it is of a file that may not be open (a
    /// header), its byte columns as they are.
    pub current: bool,
    /// Words added after the message (a profile measured before the latest edits).
    pub note: Option<&'static str>,
}

/// The note on a profile's finding once the text has changed since it measured.
pub const STALE_PROFILE: &str = "\n(profiled before your latest edits: profile again to refresh)";

/// A document's diagnostics: on itself, and on the headers its analysis
/// found something in (by path).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diagnostics {
    pub main: Vec<Shown>,
    pub headers: BTreeMap<PathBuf, Vec<Shown>>,
}

/// The analysis's findings (moved through the edits made since; those on
/// rewritten lines dropped until the next analysis) plus the last profile's
/// (with a note once edits were made since it measured the text).
pub fn diagnostics(doc: &Document) -> Diagnostics {
    let mut out = Diagnostics::default();
    let findings = doc.analysis().map(|(_, a)| a.findings.as_slice()).unwrap_or_default();
    let edits = doc.edits_since_analysis();
    for f in findings {
        match &f.file {
            None => {
                let Some(span) = moved(edits, f.span) else { continue };
                out.main.push(Shown { finding: Finding { span, ..f.clone() }, current: true, note: None });
            }
            Some(p) => {
                out.headers.entry(p.clone()).or_default().push(Shown { finding: f.clone(), current: false, note: None })
            }
        }
    }
    let note = doc.profile_is_stale().then_some(STALE_PROFILE);
    for f in doc.profile_findings_now() {
        out.main.push(Shown { finding: f, current: true, note });
    }
    out
}

/// The findings other open documents' analyses placed in the file at `path`
/// (kernels defined in project headers are analysed with the `.cu` that
/// compiles them), in the order of `docs`.
pub fn found_by_includers<'a, K: PartialEq + 'a>(
    docs: impl IntoIterator<Item = (&'a K, &'a Document)>,
    key: &K,
    path: &Path,
) -> Vec<Shown> {
    docs.into_iter()
        .filter(|(other, _)| *other != key)
        .filter_map(|(_, doc)| doc.current_analysis())
        .flat_map(|a| a.findings.iter().filter(|f| f.file.as_deref() == Some(path)))
        .map(|f| Shown { finding: f.clone(), current: false, note: None })
        .collect()
}

/// What one document shows: its own diagnostics (when open) merged with what
/// its includers found in it, without duplicates, so one includer never hides
/// another. Two are the same when `same` says so: the adapter merges them as
/// it will show them (its converted range and message), plain data compares
/// span and words.
pub fn merged<I, T: PartialEq>(own: Vec<I>, includers: Vec<I>, same: impl Fn(&I) -> T) -> Vec<I> {
    let mut out = own;
    let mut keys: Vec<T> = out.iter().map(&same).collect();
    for s in includers {
        let k = same(&s);
        if !keys.contains(&k) {
            keys.push(k);
            out.push(s);
        }
    }
    out
}

/// The hover at `now` (the text as it is): the analysis's answer for the line
/// as it was then (a line rewritten since has nothing to show until the next
/// save); on a kernel's name, its last profile verdict and the last search's
/// result for it (`current_text` is asked for only then).
pub fn hover(
    doc: &Document,
    now: Pos,
    optimizations: &[StoredOptimization],
    current_text: impl FnOnce() -> String,
) -> Option<String> {
    let analysis = doc.current_analysis()?;
    let pos = doc.analysed_pos(now)?;
    let mut markdown = kernelpro_core::hover::hover_markdown(analysis, pos, now.line)?;
    if let Some(k) = analysis.source.kernels().find(|k| k.name_span.start.line == pos.line) {
        if let Some(v) = doc.verdicts().remove(&k.name) {
            markdown.push_str(&format!(
                "\nLast profile: **{}**{}\n",
                v.summary,
                if v.stale { " (before your latest edits)" } else { "" }
            ));
            if let Some(c) = v.change {
                markdown.push_str(&format!("\nSince the previous profile: {c}\n"));
            }
        }
        if let Some(diff) = optimization_markdown(optimizations, &k.name, &current_text()) {
            markdown.push_str("\n---\n");
            markdown.push_str(&diff);
        }
    }
    Some(markdown)
}

/// A lens above a kernel: where, what it says, what a click does.
#[derive(Debug, Clone, PartialEq)]
pub struct LensView {
    pub span: Span,
    pub title: String,
    pub command: LensCommand,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LensCommand {
    /// Nothing: the lens only informs.
    None,
    /// Says why (a click shows the words).
    Explain(String),
    Profile,
    Optimize {
        kernel: String,
    },
}

/// The lenses of a document (`None` without an analysis): the last profile's
/// verdict above each kernel, then the analysis's lenses (summary, Profile,
/// Optimize, or why not), on the lines they are on now. In an untrusted
/// workspace no run is offered (it would only fail): one lens says how to
/// trust, whatever doctor found.
pub fn lenses(doc: &Document, trusted: bool, words: Words, ready: Option<&Readiness>) -> Option<Vec<LensView>> {
    let analysis = doc.current_analysis()?;
    let edits = doc.edits_since_analysis();
    let verdicts = doc.verdicts();
    let mut out = Vec::new();
    for k in analysis.source.kernels() {
        if let Some(v) = verdicts.get(&k.name) {
            let title = if v.stale { format!("{} (stale)", v.summary) } else { v.summary.clone() };
            let Some(span) = moved(edits, Span::new(k.span.start, k.span.start)) else { continue };
            out.push(LensView { span, title, command: LensCommand::None });
        }
    }
    let ready = if trusted { ready } else { None };
    for lens in kernelpro_core::lens::kernel_lenses(analysis, ready) {
        let Some(span) = moved(edits, lens.span) else { continue };
        let (title, command) = match lens.action {
            LensAction::Profile | LensAction::Optimize { .. } | LensAction::Unavailable { .. } if !trusted => {
                if !matches!(lens.action, LensAction::Profile) {
                    continue;
                }
                ("🔒 Profile / Optimize: trust the workspace".to_string(), LensCommand::Explain(untrusted_lens(words)))
            }
            LensAction::None => (lens.title, LensCommand::None),
            LensAction::Unavailable { why } => (lens.title, LensCommand::Explain(why)),
            LensAction::Profile => (lens.title, LensCommand::Profile),
            LensAction::Optimize { kernel } => (lens.title, LensCommand::Optimize { kernel }),
        };
        out.push(LensView { span, title, command });
    }
    Some(out)
}

/// What the untrusted lens says on a click.
fn untrusted_lens(words: Words) -> String {
    format!("nothing is compiled, profiled or optimized in an untrusted workspace; to allow it, {}", words.trust_hint())
}

/// "Apply optimized K": the finished search's edits re-based onto the text now
/// (the kernel's region, and the file's launch sites when the launch changed),
/// or why they no longer apply.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyView {
    pub kernel: String,
    pub title: String,
    pub edits: Result<Vec<LineEdit>, NotApplicable>,
}

impl ApplyView {
    /// Why it cannot be applied, in a sentence (for clients that ignore a disabled action).
    pub fn refusal(&self) -> Option<String> {
        let why = self.edits.as_ref().err()?;
        Some(format!("the optimized {} cannot be applied: {why}", self.kernel))
    }
}

/// The apply edit of the last search of `kernel`, if it found something.
pub fn apply(optimizations: &[StoredOptimization], kernel: &str, current_text: &str) -> Option<ApplyView> {
    let stored = optimizations.iter().find(|o| o.outcome.kernel == kernel)?;
    stored.outcome.edit.as_ref()?;
    Some(ApplyView {
        kernel: kernel.to_string(),
        title: stored.outcome.title.clone(),
        edits: crate::rebase(&stored.original, &stored.outcome.line_edits(), current_text),
    })
}

/// The last search's notes, best path and a unified diff of its result, for
/// the kernel's hover; once the kernel has changed so that it no longer
/// applies (or was applied), one line that says so instead of a stale offer.
pub fn optimization_markdown(optimizations: &[StoredOptimization], kernel: &str, current_text: &str) -> Option<String> {
    let stored = optimizations.iter().find(|o| o.outcome.kernel == kernel)?;
    let new_text = stored.outcome.new_text.as_ref()?;
    if let Some(edit) = &stored.outcome.edit
        && let Err(why) = crate::rebase(&stored.original, std::slice::from_ref(edit), current_text)
    {
        let applied = current_text.contains(edit.text.as_str());
        return Some(if applied {
            let title = &stored.outcome.title;
            let gain = title.strip_prefix(&format!("Apply optimized {kernel}: ")).unwrap_or(title);
            format!("The optimized {kernel} is applied ({gain}).\n")
        } else {
            format!("The last optimize result for {kernel} no longer applies: {why}. Run Optimize again.\n")
        });
    }
    let diff = similar::TextDiff::from_lines(stored.original.as_str(), new_text.as_str());
    let path: String = stored.outcome.steps.iter().enumerate().map(|(i, st)| format!("{}. {st}\n", i + 1)).collect();
    let notes: String = stored.outcome.notes.iter().map(|n| format!("{n}\n\n")).collect();
    Some(format!(
        "**{}**\n\n{notes}{path}```diff\n{}```\n",
        stored.outcome.title,
        diff.unified_diff().context_radius(2)
    ))
}

/// `kernelpro.showSass` for a line of the text now: the SASS of that line as
/// it was when analysed, or why there is none (no analysis, not compiled, a
/// line rewritten since: `analysed` is `None`, see [`Document::analysed_line`]).
pub fn sass_listing(analysis: Option<&FileAnalysis>, analysed: Option<u32>, line: u32) -> String {
    match analysed {
        Some(analysed) => analysis
            .and_then(|a| kernelpro_core::hover::sass_listing(a, analysed, line))
            .unwrap_or_else(|| kernelpro_core::hover::no_sass(analysis, line)),
        None => kernelpro_core::hover::no_sass_edited(line),
    }
}
