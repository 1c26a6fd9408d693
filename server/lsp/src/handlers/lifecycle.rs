//! initialize, initialized, shutdown and configuration changes.

use crate::editor::Editor;
use crate::server::Server;
use kernelpro_config::settings::Settings;
use std::sync::atomic::Ordering;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub const COMMANDS: &[&str] = &[
    "kernelpro.showSass",
    "kernelpro.doctor",
    "kernelpro.profile",
    "kernelpro.optimize",
    "kernelpro.installCuda",
    "kernelpro.explain",
];

pub async fn initialize(server: &Server, params: InitializeParams) -> Result<InitializeResult> {
    let refresh = params
        .capabilities
        .workspace
        .as_ref()
        .and_then(|w| w.code_lens.as_ref())
        .and_then(|c| c.refresh_support)
        .unwrap_or(false);
    server.state.code_lens_refresh.store(refresh, Ordering::SeqCst);
    let progress = params.capabilities.window.as_ref().and_then(|w| w.work_done_progress).unwrap_or(false);
    server.state.work_done_progress.store(progress, Ordering::SeqCst);
    // Tool discovery may search these folders' `.venv`, and only while trusted.
    let local = |u: &Uri| {
        u.scheme().as_str().eq_ignore_ascii_case("file").then(|| u.to_file_path().map(|p| p.into_owned())).flatten()
    };
    #[allow(deprecated)] // root_uri: the only root an older client sends
    let roots: Vec<std::path::PathBuf> = match (&params.workspace_folders, &params.root_uri) {
        (Some(folders), _) if !folders.is_empty() => folders.iter().filter_map(|f| local(&f.uri)).collect(),
        (_, Some(uri)) => local(uri).into_iter().collect(),
        _ => Vec::new(),
    };
    // Messages name this editor's settings and commands in its words (editor.rs).
    let editor = params.client_info.as_ref().map(|c| Editor::from_client_name(&c.name)).unwrap_or_default();
    server.state.set_settings(Settings { project_roots: roots, words: editor.words(), ..server.state.settings() });
    if let Some(opts) = &params.initialization_options {
        let opts = kernelpro_config::settings::init_section(opts);
        if let Some(key) = opts.get("llmKey").and_then(|k| k.as_str()).filter(|k| !k.is_empty()) {
            *server.state.llm_key.lock().unwrap_or_else(|p| p.into_inner()) = Some(kernelpro_llm::ApiKey::new(key));
        }
        // initializationOptions are the user's own settings (settings.rs says why that matters).
        let (settings, problems) = Settings::from_init_options(&server.state.settings(), opts);
        server.state.set_settings(settings);
        for p in problems {
            server.client.show_message(MessageType::WARNING, format!("KernelPro: {p}")).await;
        }
    }
    Ok(InitializeResult {
        capabilities: ServerCapabilities {
            position_encoding: Some(PositionEncodingKind::UTF16),
            text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions { include_text: Some(true) })),
                ..Default::default()
            })),
            hover_provider: Some(HoverProviderCapability::Simple(true)),
            document_symbol_provider: Some(OneOf::Left(true)),
            code_lens_provider: Some(CodeLensOptions { resolve_provider: Some(false) }),
            code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
            execute_command_provider: Some(ExecuteCommandOptions {
                commands: COMMANDS.iter().map(|c| c.to_string()).collect(),
                ..Default::default()
            }),
            ..Default::default()
        },
        server_info: Some(ServerInfo { name: "kernelpro".into(), version: Some(env!("CARGO_PKG_VERSION").into()) }),
        offset_encoding: None,
    })
}

pub async fn initialized(server: &Server) {
    crate::state::refresh_readiness(&server.state, &server.client);
    let settings = server.state.settings();
    if !settings.trusted && !server.state.warned_untrusted.swap(true, Ordering::SeqCst) {
        let message = format!(
            "KernelPro: workspace not trusted, so nothing is compiled, run or profiled. To allow it: {}.",
            settings.words.trust_hint()
        );
        // The log keeps it for clients that show no messages, or hide this one.
        server.client.log_message(MessageType::INFO, &message).await;
        // The VS Code extension says it in its own words (with a button to
        // manage trust): one toast, not two.
        if Editor::of(&settings.words) != Editor::VsCode {
            server.client.show_message(MessageType::INFO, message).await;
        }
    }
}

pub fn shutdown(server: &Server) {
    server.state.shut_down.store(true, Ordering::SeqCst);
    let uris: Vec<Uri> = server.state.docs().keys().cloned().collect();
    for uri in uris {
        server.state.jobs().cancel(&uri, None);
    }
}

pub async fn did_change_configuration(server: &Server, params: DidChangeConfigurationParams) {
    let value = match params.settings.get("kernelpro") {
        Some(v) => v.clone(),
        None if params.settings.is_object() && !params.settings.as_object().is_some_and(|o| o.is_empty()) => {
            params.settings.clone()
        }
        _ => {
            // Pulled in a task of its own: a notification handler that waits on
            // the client would hold up the messages queued behind it.
            let (state, client) = (server.state.clone(), server.client.clone());
            tokio::spawn(async move {
                let item = ConfigurationItem { scope_uri: None, section: Some("kernelpro".into()) };
                if let Ok(Ok(mut v)) =
                    tokio::time::timeout(std::time::Duration::from_secs(10), client.configuration(vec![item])).await
                    && !v.is_empty()
                {
                    apply_settings(&state, &client, &v.remove(0)).await;
                }
            });
            return;
        }
    };
    apply_settings(&server.state, &server.client, &value).await;
}

/// Takes new settings; when they differ (trust included), every open document
/// is analysed again at once rather than at its next save.
async fn apply_settings(
    state: &std::sync::Arc<crate::state::State>,
    client: &tower_lsp_server::Client,
    value: &serde_json::Value,
) {
    let before = state.settings();
    let (settings, problems) = Settings::from_json(&before, value);
    let changed = settings != before;
    state.set_settings(settings);
    for p in problems {
        client.show_message(MessageType::WARNING, format!("KernelPro: {p}")).await;
    }
    if changed {
        crate::jobs::analysis::schedule_all(state, client);
        crate::state::refresh_readiness(state, client);
    }
}
