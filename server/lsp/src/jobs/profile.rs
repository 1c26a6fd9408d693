//! `kernelpro.profile` (and profile-on-save): two-stage profiling of the
//! document's kernels with progress; findings join the diagnostics, verdicts
//! go to the code lens and hover, and the last profile is the baseline.

use crate::state::State;
use kernelpro_measure::baseline::BaselineStore;
use kernelpro_measure::profiling::{FileProfileRequest, NOT_COMPILED, Ready, profile_file};
use kernelpro_session::policy::{self, Refusal};
use kernelpro_session::{JobKind, ProfileState};
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::*;

/// `ready`: the profile was begun beside a save's compile, and shows itself
/// (its progress) only once that compile has succeeded; if it fails, the
/// profile ends unseen.
pub async fn run(
    state: &State,
    client: &Client,
    uri: Uri,
    token: Option<ProgressToken>,
    ready: Option<Ready>,
) -> serde_json::Value {
    let settings = state.settings();
    let ready_state = state.readiness();
    // The session's policy: untrusted, no compiler or no ncu fails at once, in those words.
    if let Err(Refusal::Untrusted(why)) = policy::profile_refusal(&settings, ready_state.as_ref()) {
        return failed(why);
    }
    // A save's profile keeps what did not change since the last one; one the user asks for measures all.
    let Some((text, version, last)) = state.docs().get(&uri).map(|d| {
        let last = if ready.is_some() { d.profile().and_then(|p| p.last.clone()) } else { None };
        (d.text().to_string(), d.version, last)
    }) else {
        return failed("the document is not open".into());
    };
    let missing = ready_state.as_ref().and_then(|r| r.profile.clone());
    if let Err(why) = policy::profile_refusal(&settings, ready_state.as_ref()) {
        return failed(why.to_string());
    }
    // One profile per document: a new one cancels the running one; didClose
    // and shutdown cancel it too (its ncu runs are killed with their groups).
    let ticket = state.jobs().start(&uri, JobKind::Profile, String::new(), version);
    let cancel = ticket.token.clone();
    let path = crate::document::path_of(&uri);
    let req = FileProfileRequest {
        path: path.clone(),
        text,
        kernel: None,
        full: false,
        exe: std::env::current_exe().unwrap_or_else(|_| "kernelpro".into()),
        save_exports: None,
        ready: ready.clone(),
        last,
    };
    let profiling = async {
        tokio::select! {
            r = profile_file(&req, &settings, &state.analyzer, &cancel) => r,
            _ = cancel.cancelled() => Err("cancelled".into()),
        }
    };
    // The progress, once the profile is one the user asked for (at once, or
    // once the compile it waits for succeeded); `None`: it never was.
    let shown = async {
        if let Some(r) = &ready
            && !r.clone().await
        {
            return None;
        }
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
        let progress = client
            .progress(token, "Profiling kernels")
            .with_message("stage 1: roofline triage")
            .with_cancel_button()
            .begin()
            .await;
        Some((progress, key))
    };
    let (result, shown) = tokio::join!(profiling, shown);
    let Some((progress, key)) = shown else {
        // Begun beside a compile that failed or was superseded: nothing to show or keep.
        state.jobs().finish(&uri, JobKind::Profile, &String::new(), &ticket);
        return serde_json::json!({"cancelled": true, "message": NOT_COMPILED});
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
            progress.finish_with_message(policy::profile_done(&report)).await;
            let changes = BaselineStore::in_cache_dir().record(&path, &report, 5.0);
            profile = policy::profile_state(version, &req.text, &report, changes);
            let kernels: Vec<_> = report.kernels.iter().map(|k| serde_json::json!({"kernel": k.kernel, "summary": k.triage.as_ref().map(|t| t.summary.clone()), "findings": k.findings.len()})).collect();
            serde_json::json!({"kernels": kernels, "message": policy::profile_summary(&report)})
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
