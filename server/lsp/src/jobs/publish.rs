//! Diagnostics out to the client: the stored analysis's and the last
//! profile's findings, moved through the edits made since (see
//! `kernelpro_session::EditLog`), merged for headers across their includers.

use crate::convert;
use crate::state::State;
use kernelpro_core::analysis::FileAnalysis;
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

/// The analysis's findings plus the last profile's (marked stale after edits).
fn diagnostics_of(doc: &crate::document::Document) -> Diagnostics {
    let mut headers: HashMap<Uri, Vec<Diagnostic>> = HashMap::new();
    let mut main = Vec::new();
    let findings = doc.analysis.as_ref().map(|(_, a)| a.findings.as_slice()).unwrap_or_default();
    // Main-file findings move with the edits made since the analysis; those on
    // rewritten lines are dropped until the next analysis.
    let edits = doc.edits_since_analysis();
    for f in findings {
        match &f.file {
            None => {
                let Some(span) = crate::document::moved(edits, f.span) else { continue };
                main.push(convert::diagnostic(&kernelpro_model::Finding { span, ..f.clone() }, Some(doc)))
            }
            Some(p) => {
                if let Some(h) = Uri::from_file_path(p) {
                    headers.entry(h).or_default().push(convert::diagnostic(f, None));
                }
            }
        }
    }
    // The profile's findings move through the edits made since it measured the text.
    let stale = doc.profile_is_stale();
    for f in doc.profile_findings_now() {
        let mut d = convert::diagnostic(&f, Some(doc));
        if stale {
            d.message.push_str("\n(profiled before your latest edits: profile again to refresh)");
        }
        main.push(d);
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
    let mut main = main;
    merge(&mut main, found_by_includers(state, uri));
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
/// (kernels defined in project headers are analysed with the `.cu` that
/// compiles them), without duplicates, so one includer never hides another.
pub(crate) fn header_view(state: &State, header: &Uri) -> Vec<Diagnostic> {
    let mut view = state.docs().get(header).map(|d| diagnostics_of(d).0).unwrap_or_default();
    merge(&mut view, found_by_includers(state, header));
    view
}

/// The findings other open documents' analyses placed in `uri`'s file.
fn found_by_includers(state: &State, uri: &Uri) -> Vec<Diagnostic> {
    let path = crate::document::path_of(uri);
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
