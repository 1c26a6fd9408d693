//! `kernelpro.profile` (and profile-on-save): two-stage profiling of the
//! document's kernels with progress; findings join the diagnostics, verdicts
//! go to the code lens and hover, and the last profile is the baseline.

use crate::document::ProfileState;
use crate::state::State;
use kernelpro_core::baseline::BaselineStore;
use kernelpro_core::profiling::{FileProfileRequest, profile_file, unavailable};
use std::collections::HashMap;
use tokio_util::sync::CancellationToken;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::*;

pub async fn run(
    state: &State,
    client: &Client,
    uri: Uri,
    token: Option<ProgressToken>,
) -> serde_json::Value {
    let settings = state.settings();
    if !settings.trusted {
        return serde_json::json!({"error": "KernelPro does not run code in an untrusted workspace"});
    }
    let Some(text) = state.docs().get(&uri).map(|d| d.text().to_string()) else {
        return serde_json::json!({"error": "the document is not open"});
    };
    let token = match token {
        Some(t) => t,
        None => {
            let t = ProgressToken::String(format!("kernelpro-profile-{}", uri.as_str()));
            let _ = client.create_work_done_progress(t.clone()).await;
            t
        }
    };
    let progress = client
        .progress(token, "Profiling kernels")
        .with_message("stage 1: roofline triage")
        .begin()
        .await;
    let path = crate::handlers::text_sync::path_of(&uri);
    let req = FileProfileRequest {
        path: path.clone(),
        text,
        kernel: None,
        full: false,
        exe: std::env::current_exe().unwrap_or_else(|_| "kernelpro".into()),
        save_exports: None,
    };
    let result = profile_file(&req, &settings, &state.analyzer, &CancellationToken::new()).await;
    let mut profile = ProfileState::default();
    let reply = match result {
        Err(e) => {
            progress
                .finish_with_message(format!("unavailable: {e}"))
                .await;
            profile.findings.push(unavailable(&e));
            serde_json::json!({"error": e})
        }
        Ok(report) => {
            progress
                .finish_with_message(format!("{} kernels profiled", report.kernels.len()))
                .await;
            for change in BaselineStore::in_cache_dir().record(&path, &report, 5.0) {
                if change.slower {
                    profile
                        .findings
                        .push(kernelpro_core::profiling::slower_finding(
                            &req.text,
                            &change.kernel,
                            &change.text,
                        ));
                }
                profile.changes.insert(change.kernel, change.text);
            }
            for k in &report.kernels {
                if let Some(t) = &k.triage {
                    profile
                        .summaries
                        .insert(k.kernel.clone(), t.summary.clone());
                }
                profile.findings.extend(k.findings.iter().cloned());
            }
            serde_json::json!({"kernels": report.kernels.iter().map(|k| serde_json::json!({"kernel": k.kernel, "summary": k.triage.as_ref().map(|t| t.summary.clone()), "findings": k.findings.len()})).collect::<Vec<_>>()})
        }
    };
    if let Some(doc) = state.docs().get_mut(&uri) {
        doc.profile = Some(profile);
    }
    crate::handlers::text_sync::republish(state, client, &uri).await;
    reply
}

/// Kernel name → the last profile's verdict and what changed, for lens and hover.
pub fn verdicts(
    doc: &crate::document::Document,
) -> HashMap<String, (String, Option<String>, bool)> {
    let Some(p) = doc.profile.as_ref() else {
        return HashMap::new();
    };
    p.summaries
        .iter()
        .map(|(k, s)| (k.clone(), (s.clone(), p.changes.get(k).cloned(), p.stale)))
        .collect()
}
