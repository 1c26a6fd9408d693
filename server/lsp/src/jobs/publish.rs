//! Diagnostics out to the client: the stored analysis's and the last
//! profile's findings, moved through the edits made since (see
//! `kernelpro_session::EditLog`), merged for headers across their includers.

use crate::convert;
use crate::state::State;
use kernelpro_core::analysis::FileAnalysis;
use kernelpro_session::views;
use std::collections::HashMap;
use std::sync::Arc;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::*;

/// Publishes unless a newer analysis has started; `last` ends this analysis.
/// Returns whether it was still current.
pub(crate) async fn publish(
    state: &State,
    client: &Client,
    uri: &Uri,
    version: i32,
    ticket: &kernelpro_session::JobTicket,
    analysis: Arc<FileAnalysis>,
    last: bool,
) -> bool {
    lines_ready(state, uri).await;
    let _order = state.publish.lock().await;
    let (now, (main, headers)) = {
        let mut docs = state.docs();
        let Some(doc) = docs.get_mut(uri) else {
            return false;
        };
        let (kind, sub) = (kernelpro_session::JobKind::Analyze, String::new());
        if !state.jobs().is_current(uri, kind, &sub, ticket) {
            return false; // a newer analysis has started: this one is stale
        }
        doc.set_analysis(version, analysis);
        if last {
            state.jobs().finish(uri, kind, &sub, ticket);
        }
        // Positions are mapped to the text as it is now: tag them with its version.
        let now = doc.version;
        (now, diagnostics_of(doc))
    };
    send(state, client, uri, Some(now), main, headers).await;
    true
}

/// Builds the line index of the document's text off the documents' lock (a
/// scan of a large file under it would hold every request and every change),
/// so converting positions under the lock finds it ready. A change that lands
/// meanwhile makes it try again, a few times.
async fn lines_ready(state: &State, uri: &Uri) {
    for _ in 0..3 {
        let Some(lazy) = state.docs().get(uri).map(|d| d.lazy_snapshot()) else { return };
        if lazy.has_lines() {
            return;
        }
        let Ok((lazy, lines)) = tokio::task::spawn_blocking(move || {
            let lines = lazy.lines();
            (lazy, lines)
        })
        .await
        else {
            return;
        };
        if state.docs().get(uri).is_some_and(|d| d.offer_lines(&lazy, lines)) {
            return;
        }
    }
}

/// Re-sends the diagnostics of a document (after a profile lands).
pub async fn republish(state: &State, client: &Client, uri: &Uri) {
    lines_ready(state, uri).await;
    let _order = state.publish.lock().await;
    let (version, main, headers) = {
        let docs = state.docs();
        let Some(doc) = docs.get(uri) else { return };
        let (main, headers) = diagnostics_of(doc);
        (Some(doc.version), main, headers)
    };
    send(state, client, uri, version, main, headers).await;
}

type Diagnostics = (Vec<Diagnostic>, HashMap<Uri, Vec<Diagnostic>>);

/// The session's diagnostics of a document (`kernelpro_session::views`), converted.
fn diagnostics_of(doc: &crate::document::Document) -> Diagnostics {
    let view = views::diagnostics(doc.state());
    let main = view.main.iter().map(|s| convert::shown(s, Some(doc))).collect();
    let mut headers: HashMap<Uri, Vec<Diagnostic>> = HashMap::new();
    for (path, shown) in view.headers {
        if let Some(h) = Uri::from_file_path(&path) {
            headers.entry(h).or_default().extend(shown.iter().map(|s| convert::shown(s, None)));
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
        let mut map = state.header_diagnostics.lock().unwrap_or_else(|p| p.into_inner());
        map.insert(uri.clone(), headers.keys().cloned().collect()).unwrap_or_default()
    };
    for old in previous.into_iter().filter(|h| !headers.contains_key(h)) {
        let view = header_view(state, &old);
        client.publish_diagnostics(old, view, None).await;
    }
    for h in headers.into_keys() {
        let view = header_view(state, &h);
        client.publish_diagnostics(h, view, None).await;
    }
    let main = with_includers(state, uri, main);
    client.publish_diagnostics(uri.clone(), main, version).await;
    // Lenses come from the same analysis: ask the client to fetch them again.
    // Not awaited here: a client slow to answer must not hold up publishing.
    if state.code_lens_refresh.load(std::sync::atomic::Ordering::SeqCst) {
        let client = client.clone();
        tokio::spawn(async move {
            let _ = client.code_lens_refresh().await;
        });
    }
}

/// What to publish on a header: its own diagnostics when it is open itself,
/// plus what the analysis of every open file that includes it found in it
/// (the merge is the session's: `views::merged`).
pub(crate) fn header_view(state: &State, header: &Uri) -> Vec<Diagnostic> {
    let own = state.docs().get(header).map(|d| diagnostics_of(d).0).unwrap_or_default();
    with_includers(state, header, own)
}

/// `own` (already converted) merged with what other open documents' analyses
/// found in `uri`'s file (`views::merged`), compared as they are shown.
fn with_includers(state: &State, uri: &Uri, own: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let path = crate::document::path_of(uri);
    let includers: Vec<Diagnostic> = {
        let docs = state.docs();
        views::found_by_includers(docs.iter().map(|(u, d)| (u, d.state())), uri, &path)
            .iter()
            .map(|s| convert::shown(s, None))
            .collect()
    };
    views::merged(own, includers, |d| (d.range, d.message.clone()))
}
