//! didOpen/didChange/didSave/didClose: the document's text and version,
//! updated synchronously before anything awaits, so reordered handlers can't
//! see half-applied edits; the analysis they start is `jobs::analysis`.

use crate::document::Document;
use crate::jobs::{analysis, publish};
use crate::server::Server;
use tower_lsp_server::ls_types::*;

pub fn did_open(server: &Server, params: DidOpenTextDocumentParams) {
    let doc = params.text_document;
    let document = Document::new(&doc.text, doc.version);
    super::document_symbol::prefetch(server, &doc.uri, document.symbols());
    server.state.docs().insert(doc.uri.clone(), document);
    analysis::schedule(server, doc.uri);
}

pub fn did_change(server: &Server, params: DidChangeTextDocumentParams) {
    let mut docs = server.state.docs();
    let Some(doc) = docs.get_mut(&params.text_document.uri) else {
        return;
    };
    // The version first: each change is recorded as made by it.
    let before = doc.finding_lines();
    doc.version = params.text_document.version;
    for change in &params.content_changes {
        doc.apply_change(change);
    }
    super::document_symbol::prefetch(server, &params.text_document.uri, doc.symbols());
    // Findings on lines that moved or were rewritten: publish them where they
    // are now (or not at all) instead of leaving them on the wrong code until
    // the next save.
    if doc.finding_lines() != before {
        drop(docs);
        // One republish for a burst of changes (a client sends one per
        // keystroke, and a paste or a replay many at once): later changes
        // find one pending and leave it to pick them up.
        let uri = params.text_document.uri;
        if !server.state.republish_pending().insert(uri.clone()) {
            return;
        }
        let (state, client) = (server.state.clone(), server.client.clone());
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            state.republish_pending().remove(&uri);
            publish::republish(&state, &client, &uri).await
        });
    }
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
    analysis::schedule(server, params.text_document.uri);
}

pub async fn did_close(server: &Server, params: DidCloseTextDocumentParams) {
    let uri = params.text_document.uri;
    server.state.docs().remove(&uri);
    server.state.jobs().cancel(&uri, None);
    // A closed file's diagnostics go with it (LSP: the server clears them);
    // under the publish lock, so an analysis finishing now cannot put them back.
    {
        let _order = server.state.publish.lock().await;
        let view = publish::header_view(&server.state, &uri);
        server.client.publish_diagnostics(uri.clone(), view, None).await;
    }
    let headers =
        server.state.header_diagnostics.lock().unwrap_or_else(|p| p.into_inner()).remove(&uri).unwrap_or_default();
    for h in headers {
        let view = publish::header_view(&server.state, &h);
        server.client.publish_diagnostics(h, view, None).await;
    }
}
