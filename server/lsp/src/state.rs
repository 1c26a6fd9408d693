//! The server's shared state. Locks are std mutexes and are never held across
//! an `.await`, so text-sync handlers update state before they yield.

use crate::document::Document;
use kernelpro_config::settings::Settings;
use kernelpro_core::analysis::Analyzer;
use kernelpro_session::StoredOptimization;
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, MutexGuard, RwLock};
use tower_lsp_server::ls_types::Uri;

#[derive(Default)]
pub struct State {
    pub docs: Mutex<HashMap<Uri, Document>>,
    pub settings: RwLock<Settings>,
    pub analyzer: Analyzer,
    /// Headers that got diagnostics from a main file, so they can be cleared.
    pub header_diagnostics: Mutex<HashMap<Uri, Vec<Uri>>>,
    /// Serializes publishing so a stale result can never overtake a newer one.
    pub publish: tokio::sync::Mutex<()>,
    pub warned_untrusted: AtomicBool,
    /// `shutdown` was received (an `exit` without it exits with code 1).
    pub shut_down: AtomicBool,
    /// The client asked to be told when code lenses change (`workspace/codeLens/refresh`).
    pub code_lens_refresh: AtomicBool,
    /// The client shows server-initiated progress (`window.workDoneProgress`).
    pub work_done_progress: AtomicBool,
    /// Finished searches per document, with the text their edits were made against.
    pub optimizations: Mutex<HashMap<Uri, Vec<StoredOptimization>>>,
    /// The LLM key the client sent from its secret storage (never from settings).
    pub llm_key: Mutex<Option<kernelpro_llm::ApiKey>>,
    /// Every running job (analysis, profile, optimize), one per document, kind
    /// and kernel, version-tagged; didClose and shutdown cancel them.
    pub jobs: Mutex<kernelpro_session::Jobs<Uri, String>>,
    /// Documents with a republish queued after a change (see `handlers::text_sync::did_change`).
    pub republish_pending: Mutex<std::collections::HashSet<Uri>>,
    /// The tokens of running profiles and searches, by progress token (the Cancel button).
    pub progress_cancels: Mutex<HashMap<String, tokio_util::sync::CancellationToken>>,
    /// What can run here, from the last doctor (at start, after a settings
    /// change or an install): the lenses offer Profile and Optimize from it.
    pub readiness: RwLock<Option<kernelpro_core::lens::Readiness>>,
}

impl State {
    pub fn docs(&self) -> MutexGuard<'_, HashMap<Uri, Document>> {
        self.docs.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// Lock order: `docs` before `jobs` where both are held.
    pub fn jobs(&self) -> MutexGuard<'_, kernelpro_session::Jobs<Uri, String>> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// Lock order: `docs` before `optimizations` where both are held.
    pub fn optimizations(&self) -> MutexGuard<'_, HashMap<Uri, Vec<StoredOptimization>>> {
        self.optimizations.lock().unwrap_or_else(|p| p.into_inner())
    }
    pub fn republish_pending(&self) -> MutexGuard<'_, std::collections::HashSet<Uri>> {
        self.republish_pending.lock().unwrap_or_else(|p| p.into_inner())
    }
    pub fn settings(&self) -> Settings {
        self.settings.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
    pub fn set_settings(&self, s: Settings) {
        *self.settings.write().unwrap_or_else(|p| p.into_inner()) = s;
    }
    pub fn readiness(&self) -> Option<kernelpro_core::lens::Readiness> {
        self.readiness.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
    /// Runs doctor under the current settings and keeps its verdict; true when
    /// it changed. With `versions`, each tool's `--version` runs too (the doctor
    /// command); without, the tools are only located (start-up, settings changes).
    pub async fn refresh_readiness(&self, versions: bool) -> (kernelpro_measure::doctor::Report, bool) {
        let settings = self.settings();
        let report = if versions {
            kernelpro_measure::doctor::report(&settings).await
        } else {
            kernelpro_measure::doctor::located(&settings).await
        };
        let ready = report.readiness(&settings);
        let mut slot = self.readiness.write().unwrap_or_else(|p| p.into_inner());
        let changed = slot.as_ref() != Some(&ready);
        *slot = Some(ready);
        (report, changed)
    }
}

/// Locates the tools in a task of its own (runs none of them but nvidia-smi)
/// and, when what can run changed, asks the client for the lenses again
/// (Profile / Optimize follow it).
pub fn refresh_readiness(state: &std::sync::Arc<State>, client: &tower_lsp_server::Client) {
    let (state, client) = (state.clone(), client.clone());
    tokio::spawn(async move {
        let (_, changed) = state.refresh_readiness(false).await;
        if changed && state.code_lens_refresh.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = client.code_lens_refresh().await;
        }
    });
}
