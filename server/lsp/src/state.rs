//! The server's shared state. Locks are std mutexes and are never held across
//! an `.await`, so text-sync handlers update state before they yield.

use crate::document::Document;
use kernelpro_core::analysis::Analyzer;
use kernelpro_core::settings::Settings;
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
}

impl State {
    pub fn docs(&self) -> MutexGuard<'_, HashMap<Uri, Document>> {
        self.docs.lock().unwrap_or_else(|p| p.into_inner())
    }
    pub fn settings(&self) -> Settings {
        self.settings.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
    pub fn set_settings(&self, s: Settings) {
        *self.settings.write().unwrap_or_else(|p| p.into_inner()) = s;
    }
}
