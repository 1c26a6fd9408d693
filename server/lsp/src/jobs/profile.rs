//! `kernelpro.profile` (and profile-on-save): two-stage profiling of the
//! document's kernels with progress; findings join the diagnostics, verdicts
//! go to the code lens and hover, and the last profile is the baseline.

use crate::document::ProfileState;
use crate::state::State;
use kernelpro_measure::baseline::BaselineStore;
use kernelpro_measure::profiling::{FileProfileRequest, profile_file};
use kernelpro_session::JobKind;
use std::collections::HashMap;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::*;

pub async fn run(state: &State, client: &Client, uri: Uri, token: Option<ProgressToken>) -> serde_json::Value {
    let settings = state.settings();
    if !settings.trusted {
        return failed(format!(
            "KernelPro does not run code in an untrusted workspace; to allow it, {}.",
            settings.words.trust_hint()
        ));
    }
    let Some((text, version)) = state.docs().get(&uri).map(|d| (d.text().to_string(), d.version)) else {
        return failed("the document is not open".into());
    };
    // What doctor found missing: no compiler or no ncu fails at once, in those
    // words; a GPU that nvidia-smi does not see is still tried (a runner or a
    // wrapper may reach one), and named if the run fails.
    let ready = state.readiness();
    let missing = ready.as_ref().and_then(|r| r.profile.clone());
    if let Some(r) = &ready
        && let Some(why) = r.compile.as_deref().or(r.profile.as_deref().filter(|p| p.contains("(ncu)")))
    {
        let fix = if r.compile.is_some() { String::new() } else { r.profile_fix.clone() };
        return failed(kernelpro_core::lens::because("Profiling", why, &fix));
    }
    // One profile per document: a new one cancels the running one; didClose
    // and shutdown cancel it too (its ncu runs are killed with their groups).
    let ticket = state.jobs().start(&uri, JobKind::Profile, String::new(), version);
    let token = match token {
        Some(t) => t,
        None => {
            let t = ProgressToken::String(format!("kernelpro-profile-{}-{}", uri.as_str(), ticket.id()));
            let _ = client.create_work_done_progress(t.clone()).await;
            t
        }
    };
    // Cancel on the progress (window/workDoneProgress/cancel) fires the job's token.
    let key = crate::jobs::optimize::token_key(&token);
    state.progress_cancels.lock().unwrap_or_else(|p| p.into_inner()).insert(key.clone(), ticket.token.clone());
    let cancel = ticket.token.clone();
    let progress = client
        .progress(token, "Profiling kernels")
        .with_message("stage 1: roofline triage")
        .with_cancel_button()
        .begin()
        .await;
    let path = crate::document::path_of(&uri);
    let req = FileProfileRequest {
        path: path.clone(),
        text,
        kernel: None,
        full: false,
        exe: std::env::current_exe().unwrap_or_else(|_| "kernelpro".into()),
        save_exports: None,
    };
    let result = tokio::select! {
        r = profile_file(&req, &settings, &state.analyzer, &cancel) => r,
        _ = cancel.cancelled() => Err("cancelled".into()),
    };
    state.progress_cancels.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
    if cancel.is_cancelled() {
        state.jobs().finish(&uri, JobKind::Profile, &String::new(), &ticket);
        // The findings of the last finished profile stay as they were.
        progress.finish_with_message("cancelled").await;
        return serde_json::json!({"cancelled": true, "message": "Profiling was cancelled; the findings of the last finished profile (if any) stay."});
    }
    let mut profile = ProfileState { version, ..Default::default() };
    let reply = match result {
        // Said in the reply (the editor's message), not left in Problems.
        Err(e) => {
            let e = settings.words.name_settings(&e);
            progress.finish_with_message(format!("unavailable: {e}")).await;
            match missing {
                Some(m) => failed(format!("Profiling is unavailable: {e} (missing here: {m})")),
                None => failed(format!("Profiling is unavailable: {e}")),
            }
        }
        Ok(report) => {
            progress.finish_with_message(format!("{} kernels profiled", report.kernels.len())).await;
            for change in BaselineStore::in_cache_dir().record(&path, &report, 5.0) {
                if change.slower {
                    profile.findings.push(kernelpro_measure::profiling::slower_finding(
                        &req.text,
                        &change.kernel,
                        &change.text,
                    ));
                }
                profile.changes.insert(change.kernel, change.text);
            }
            for k in &report.kernels {
                if let Some(t) = &k.triage {
                    profile.summaries.insert(k.kernel.clone(), t.summary.clone());
                }
                profile.findings.extend(k.findings.iter().cloned());
            }
            let kernels: Vec<_> = report.kernels.iter().map(|k| serde_json::json!({"kernel": k.kernel, "summary": k.triage.as_ref().map(|t| t.summary.clone()), "findings": k.findings.len()})).collect();
            serde_json::json!({"kernels": kernels, "message": summary(&report)})
        }
    };
    {
        // Lock order: docs, then jobs. A profile replaced or cancelled meanwhile is not stored.
        let mut docs = state.docs();
        let mut jobs = state.jobs();
        if jobs.is_current(&uri, JobKind::Profile, &String::new(), &ticket)
            && let Some(doc) = docs.get_mut(&uri)
        {
            doc.set_profile(profile);
        }
        jobs.finish(&uri, JobKind::Profile, &String::new(), &ticket);
    }
    crate::jobs::publish::republish(state, client, &uri).await;
    reply
}

/// A reply a client shows as a warning: `message` in words, `error` kept for older clients.
fn failed(message: String) -> serde_json::Value {
    serde_json::json!({"error": message, "message": message})
}

/// The finished profile in words: per kernel its verdict and how many findings.
pub fn summary(report: &kernelpro_measure::profiling::ProfileReport) -> String {
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

/// Kernel name → the last profile's verdict and what changed, for lens and hover.
pub fn verdicts(doc: &crate::document::Document) -> HashMap<String, (String, Option<String>, bool)> {
    let Some(p) = doc.profile() else {
        return HashMap::new();
    };
    let stale = doc.profile_is_stale();
    p.summaries.iter().map(|(k, s)| (k.clone(), (s.clone(), p.changes.get(k).cloned(), stale))).collect()
}
