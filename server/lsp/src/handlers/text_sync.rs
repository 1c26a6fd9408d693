//! didOpen/didChange/didSave/didClose, and the analysis they schedule.
//!
//! Document state changes happen synchronously, before anything awaits, so
//! reordered handlers can't see half-applied edits. Each analysis is tagged
//! with the version it came from; a newer one cancels the older one, and a
//! result is published only if no newer analysis has started since.

use crate::convert;
use crate::document::Document;
use crate::server::Server;
use crate::state::State;
use kernelpro_core::analysis::{AnalysisError, FileAnalysis};
use kernelpro_model::{Finding, Severity, Span};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::*;

pub fn did_open(server: &Server, params: DidOpenTextDocumentParams) {
    let doc = params.text_document;
    server
        .state
        .docs()
        .insert(doc.uri.clone(), Document::new(&doc.text, doc.version));
    schedule(server, doc.uri);
}

pub fn did_change(server: &Server, params: DidChangeTextDocumentParams) {
    let mut docs = server.state.docs();
    let Some(doc) = docs.get_mut(&params.text_document.uri) else {
        return;
    };
    for change in &params.content_changes {
        doc.apply_change(change);
    }
    doc.version = params.text_document.version;
}

pub fn did_save(server: &Server, params: DidSaveTextDocumentParams) {
    {
        let mut docs = server.state.docs();
        let Some(doc) = docs.get_mut(&params.text_document.uri) else {
            return;
        };
        if let Some(text) = &params.text
            && *doc.text() != text.as_str()
        {
            doc.set_text(text);
        }
    }
    schedule(server, params.text_document.uri);
}

pub async fn did_close(server: &Server, params: DidCloseTextDocumentParams) {
    let uri = params.text_document.uri;
    if let Some(doc) = server.state.docs().remove(&uri)
        && let Some(t) = doc.in_flight
    {
        t.cancel();
    }
    let headers = server
        .state
        .header_diagnostics
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&uri)
        .unwrap_or_default();
    for h in headers {
        let view = header_view(&server.state, &h);
        server.client.publish_diagnostics(h, view, None).await;
    }
}

/// The file a document stands for; an unsaved buffer has no place on disk
/// (`compile::UNSAVED`: no include dir, no compile_commands.json).
pub fn path_of(uri: &Uri) -> PathBuf {
    let is_file = uri.scheme().as_str().eq_ignore_ascii_case("file");
    is_file.then(|| uri.to_file_path().map(|p| p.into_owned())).flatten().unwrap_or_else(|| PathBuf::from(kernelpro_core::compile::UNSAVED))
}

/// Start analysing the document's current text, cancelling the one in flight.
pub fn schedule(server: &Server, uri: Uri) {
    schedule_in(&server.state, &server.client, uri);
}

/// Re-analyses every open document (trust or settings changed).
pub fn schedule_all(state: &Arc<State>, client: &Client) {
    let uris: Vec<Uri> = state.docs().keys().cloned().collect();
    for uri in uris {
        schedule_in(state, client, uri);
    }
}

fn schedule_in(state: &Arc<State>, client: &Client, uri: Uri) {
    let (text, version, generation, token) = {
        let mut docs = state.docs();
        let Some(doc) = docs.get_mut(&uri) else {
            return;
        };
        if let Some(old) = doc.in_flight.take() {
            old.cancel();
        }
        let token = CancellationToken::new();
        doc.in_flight = Some(token.clone());
        doc.generation += 1;
        (doc.text().to_string(), doc.version, doc.generation, token)
    };
    let state = state.clone();
    let client = client.clone();
    tokio::spawn(async move {
        // The progress bar is asked for beside the analysis, not before it: a
        // client slow to answer must not hold up the compile.
        let (progress, profile_now) = tokio::join!(
            begin_progress(&state, &client, &uri, generation),
            analyse_and_publish(&state, &client, &uri, &text, version, generation, &token)
        );
        if let Some(p) = progress {
            p.finish().await;
        }
        if profile_now {
            crate::handlers::profile::run(&state, &client, uri, None).await;
        }
    });
}

/// A progress bar for one analysis, when the client shows them; it ends after
/// the last publish, so clients (and tests) know the analysis has settled.
async fn begin_progress(
    state: &State,
    client: &Client,
    uri: &Uri,
    generation: u64,
) -> Option<
    tower_lsp_server::OngoingProgress<
        tower_lsp_server::Unbounded,
        tower_lsp_server::NotCancellable,
    >,
> {
    if !state.settings().trusted
        || !state
            .work_done_progress
            .load(std::sync::atomic::Ordering::SeqCst)
    {
        return None;
    }
    let token = ProgressToken::String(format!("kernelpro-analysis:{}#{generation}", uri.as_str()));
    let created = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        client.create_work_done_progress(token.clone()),
    )
    .await;
    if !matches!(created, Ok(Ok(()))) {
        return None;
    }
    let name = path_of(uri)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Some(
        client
            .progress(token, "KernelPro")
            .with_message(format!("compiling {name}"))
            .begin()
            .await,
    )
}

/// Runs both analysis steps, publishing after each; returns whether a profile should follow.
async fn analyse_and_publish(
    state: &State,
    client: &Client,
    uri: &Uri,
    text: &str,
    version: i32,
    generation: u64,
    token: &CancellationToken,
) -> bool {
    let settings = state.settings();
    let path = path_of(uri);
    let analysis = if settings.trusted {
        // The compiler's messages and the source tools' findings go out first;
        // SASS and the tools that read it (nvdisasm costs about a compile of a
        // small file) follow in a second publish.
        let first = match state
            .analyzer
            .compile_step(&path, text, &settings, token)
            .await
        {
            Ok(a) => a,
            Err(AnalysisError::Cancelled) => return false,
        };
        if first.complete {
            first
        } else {
            let first = Arc::new(first);
            // Until step two replaces them, the last SASS findings stay on the
            // lines this save left alone: a save never blanks them.
            let previous = state
                .docs()
                .get(uri)
                .and_then(|d| d.current_analysis().cloned());
            let shown = match previous {
                Some(p) => Arc::new(first.keeping_sass_findings_of(&p)),
                None => first.clone(),
            };
            // nvdisasm starts while the first publish goes out; the second
            // publish waits for both, so it always comes after the first.
            let (current, second) = tokio::join!(
                publish(state, client, uri, version, generation, shown, false),
                state
                    .analyzer
                    .machine_code_step(&first, text, &settings, token)
            );
            if !current {
                return false;
            }
            match second {
                Ok(a) => a,
                Err(AnalysisError::Cancelled) => return false,
            }
        }
    } else {
        // Structure and specs only, but a parse of a large file all the same: off the runtime's workers.
        let (text, settings) = (text.to_string(), settings.clone());
        let mut analysis =
            crate::server::blocking(move || FileAnalysis::without_tools(&path, &text, &settings))
                .await;
        analysis.findings.push(untrusted());
        analysis
    };
    let profile_now = settings.trusted && settings.profile_on_save && !analysis.has_errors();
    publish(
        state,
        client,
        uri,
        version,
        generation,
        Arc::new(analysis),
        true,
    )
    .await
        && profile_now
}

/// Why an untrusted document gets no compiler diagnostics, on the document
/// itself: a client that shows no messages (or hid the one at start) still sees it.
fn untrusted() -> Finding {
    Finding::new(
        "kernelpro",
        Severity::Information,
        Span::line(0),
        UNTRUSTED_MESSAGE,
    )
    .with_code("Untrusted")
}

pub const UNTRUSTED_MESSAGE: &str = "workspace not trusted: set `trusted` to compile, check and profile this file (VS Code: trust the workspace; other editors: `trusted = true` in the server's settings or init options). Until then only the file's structure and launch specs are checked.";

/// Publishes unless a newer analysis has started; `last` ends this analysis.
/// Returns whether it was still current.
async fn publish(
    state: &State,
    client: &Client,
    uri: &Uri,
    version: i32,
    generation: u64,
    analysis: Arc<FileAnalysis>,
    last: bool,
) -> bool {
    let _order = state.publish.lock().await;
    let (main, headers) = {
        let mut docs = state.docs();
        let Some(doc) = docs.get_mut(uri) else {
            return false;
        };
        if doc.generation != generation {
            return false; // a newer analysis has started: this one is stale
        }
        doc.analysis = Some((version, analysis));
        if last {
            doc.in_flight = None;
        }
        diagnostics_of(doc)
    };
    send(state, client, uri, Some(version), main, headers).await;
    true
}

/// Re-sends the diagnostics of a document (after a profile lands).
pub async fn republish(state: &State, client: &Client, uri: &Uri) {
    let _order = state.publish.lock().await;
    let (version, main, headers) = {
        let docs = state.docs();
        let Some(doc) = docs.get(uri) else { return };
        let (main, headers) = diagnostics_of(doc);
        (doc.analysis.as_ref().map(|(v, _)| *v), main, headers)
    };
    send(state, client, uri, version, main, headers).await;
}

type Diagnostics = (Vec<Diagnostic>, HashMap<Uri, Vec<Diagnostic>>);

/// The analysis's findings plus the last profile's (marked stale after edits).
fn diagnostics_of(doc: &crate::document::Document) -> Diagnostics {
    let mut headers: HashMap<Uri, Vec<Diagnostic>> = HashMap::new();
    let mut main = Vec::new();
    let findings = doc
        .analysis
        .as_ref()
        .map(|(_, a)| a.findings.as_slice())
        .unwrap_or_default();
    for f in findings {
        match &f.file {
            None => main.push(convert::diagnostic(f, Some(doc))),
            Some(p) => {
                if let Some(h) = Uri::from_file_path(p) {
                    headers
                        .entry(h)
                        .or_default()
                        .push(convert::diagnostic(f, None));
                }
            }
        }
    }
    if let Some(profile) = &doc.profile {
        for f in &profile.findings {
            let mut d = convert::diagnostic(f, Some(doc));
            if profile.stale {
                d.message
                    .push_str("\n(profiled before your latest edits: profile again to refresh)");
            }
            main.push(d);
        }
    }
    (main, headers)
}

async fn send(
    state: &State,
    client: &Client,
    uri: &Uri,
    version: Option<i32>,
    main: Vec<Diagnostic>,
    headers: HashMap<Uri, Vec<Diagnostic>>,
) {
    let previous = {
        let mut map = state
            .header_diagnostics
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        map.insert(uri.clone(), headers.keys().cloned().collect())
            .unwrap_or_default()
    };
    for old in previous.into_iter().filter(|h| !headers.contains_key(h)) {
        let view = header_view(state, &old);
        client.publish_diagnostics(old, view, None).await;
    }
    for h in headers.into_keys() {
        let view = header_view(state, &h);
        client.publish_diagnostics(h, view, None).await;
    }
    let mut main = main;
    merge(&mut main, found_by_includers(state, uri));
    client.publish_diagnostics(uri.clone(), main, version).await;
    // Lenses come from the same analysis: ask the client to fetch them again.
    // Not awaited here: a client slow to answer must not hold up publishing.
    if state
        .code_lens_refresh
        .load(std::sync::atomic::Ordering::SeqCst)
    {
        let client = client.clone();
        tokio::spawn(async move {
            let _ = client.code_lens_refresh().await;
        });
    }
}

/// What to publish on a header: its own diagnostics when it is open itself,
/// plus what the analysis of every open file that includes it found in it
/// (kernels defined in project headers are analysed with the `.cu` that
/// compiles them), without duplicates, so one includer never hides another.
fn header_view(state: &State, header: &Uri) -> Vec<Diagnostic> {
    let mut view = state.docs().get(header).map(|d| diagnostics_of(d).0).unwrap_or_default();
    merge(&mut view, found_by_includers(state, header));
    view
}

/// The findings other open documents' analyses placed in `uri`'s file.
fn found_by_includers(state: &State, uri: &Uri) -> Vec<Diagnostic> {
    let path = path_of(uri);
    let docs = state.docs();
    docs.iter()
        .filter(|(other, _)| *other != uri)
        .filter_map(|(_, doc)| doc.analysis.as_ref())
        .flat_map(|(_, a)| a.findings.iter().filter(|f| f.file.as_deref() == Some(path.as_path())))
        .map(|f| convert::diagnostic(f, None))
        .collect()
}

fn merge(into: &mut Vec<Diagnostic>, more: Vec<Diagnostic>) {
    for d in more {
        if !into.iter().any(|o| o.range == d.range && o.message == d.message) {
            into.push(d);
        }
    }
}
