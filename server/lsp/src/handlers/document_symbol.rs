//! textDocument/documentSymbol: kernels, device functions and host functions.
//!
//! The answer is kept per text, serialized ([`Cell`], in `Document::symbols`):
//! it is built once per version, on a blocking thread from a snapshot of the
//! text (a 1 MB file must hold up neither the documents' lock nor the
//! runtime's workers), shortly after the text stops changing ([`prefetch`]:
//! an editor asks for the outline, breadcrumbs and sticky scroll after each
//! change) or by the first request, whichever comes first; requests in flight
//! together share it. The text is parsed from the document's kept tree, to
//! which every change since the last parse was applied (`syntax.rs`): a
//! one-line change of 1 MB re-parses in milliseconds, not the whole file; the
//! walk stops at each definition (`syntax::outline`: names, kinds and spans,
//! not parameters). The bytes are written as they are (`raw_answer.rs`: the
//! transport would otherwise rebuild the 4.4 MB answer of 20,000 kernels as a
//! JSON tree on every request, 0.4–0.6 s of its thread in a release build).

use crate::document::{LazySnapshot, TextSnapshot};
use crate::server::Server;
use crate::state::State;
use crate::syntax;
use kernelpro_source::FnKind;
use kernelpro_source::budget::Budget;
use std::sync::Arc;
use std::time::Duration;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;
use tree_sitter::Tree;

/// One text's answer: the JSON array of its symbols, serialized.
pub use crate::document::SymbolsCell as Cell;

/// How long a text must stay unchanged before its symbols are built unasked.
const QUIET: Duration = Duration::from_millis(150);

pub async fn document_symbol(server: &Server, params: DocumentSymbolParams) -> Result<Option<DocumentSymbolResponse>> {
    // The line index of a new text is built on the pool's thread, not under the documents' lock.
    let uri = &params.text_document.uri;
    let Some((text, tree, cell)) = server.state.docs().get(uri).map(|d| (d.lazy_snapshot(), d.tree(), d.symbols()))
    else {
        return Ok(None);
    };
    let json = fill(&server.state, uri, &cell, text, tree).await;
    Ok(Some(crate::raw_answer::register(json, placeholder)))
}

/// The document's current text gets its answer built once it has been
/// unchanged for [`QUIET`] (unless a request has built it already, or the
/// pool is full: requests come first, and the next one builds it); `cell` is
/// its text's (`Document::symbols`). Takes no lock.
pub fn prefetch(server: &Server, uri: &Uri, cell: Cell) {
    let (state, uri) = (server.state.clone(), uri.clone());
    tokio::spawn(async move {
        tokio::time::sleep(QUIET).await;
        if !crate::pool::has_room() {
            return;
        }
        if let Some((text, tree)) = unchanged(&state, &uri, &cell) {
            fill(&state, &uri, &cell, text, tree).await;
        }
    });
}

/// The text of `uri` and its kept tree if its symbols' cell is still `cell`
/// (its text has not changed) and empty.
fn unchanged(state: &State, uri: &Uri, cell: &Cell) -> Option<(LazySnapshot, Option<Tree>)> {
    let docs = state.docs();
    let doc = docs.get(uri)?;
    (cell.get().is_none() && Arc::ptr_eq(&doc.symbols(), cell)).then(|| (doc.lazy_snapshot(), doc.tree()))
}

/// The answer of `text` (the text of `uri`, whose cell is `cell`), built
/// once: parsed from `tree` (the document's kept tree, see `syntax.rs`),
/// whose new tree the document keeps if its text is still `text`.
async fn fill(state: &Arc<State>, uri: &Uri, cell: &Cell, text: LazySnapshot, tree: Option<Tree>) -> Arc<[u8]> {
    let (state, uri) = (state.clone(), uri.clone());
    let init = || {
        crate::pool::blocking(move || {
            let (json, parsed) = answer(text, tree);
            // A tree not kept is freed here, off the documents' lock and the
            // runtime's workers (`syntax::free`).
            if let Some((text, tree)) = parsed {
                match state.docs().get_mut(&uri) {
                    Some(doc) => doc.offer_tree(&text, tree),
                    None => syntax::free(Some(tree)),
                }
            }
            json
        })
    };
    cell.get_or_init(init).await.clone()
}

/// What the transport writes in place of the kept answer (see `raw_answer.rs`).
fn placeholder(name: String) -> DocumentSymbolResponse {
    #[allow(deprecated)] // `deprecated` is a required field of the struct
    DocumentSymbolResponse::Nested(vec![DocumentSymbol {
        name,
        detail: None,
        kind: SymbolKind::FUNCTION,
        tags: None,
        deprecated: None,
        range: Range::default(),
        selection_range: Range::default(),
        children: None,
    }])
}

/// The serialized answer of `text`, and the tree parsed with the text it is
/// of, unless the parse was refused or the text has a lone "\r" (then its
/// tree is not kept: `syntax.rs`).
fn answer(text: LazySnapshot, old: Option<Tree>) -> (Arc<[u8]>, Option<(LazySnapshot, Tree)>) {
    let started = std::time::Instant::now();
    let snapshot = text.clone().snapshot();
    let string = snapshot.text.to_string();
    let incremental = old.is_some();
    let Ok(tree) = syntax::parse(&string, old.as_ref(), &Budget::default()) else {
        // Past the parse's budget: no symbols, as `source::parse` gives none.
        return (Arc::from(&b"[]"[..]), None);
    };
    let parsed = started.elapsed();
    let json = serde_json::to_vec(&symbols(&snapshot, &syntax::outline(&tree, &string))).expect("symbols serialize");
    tracing::debug!(
        bytes = string.len(),
        incremental,
        parse_ms = parsed.as_secs_f64() * 1e3,
        total_ms = started.elapsed().as_secs_f64() * 1e3,
        "documentSymbol answer built"
    );
    (json.into(), (!syntax::has_lone_cr(&string)).then_some((text, tree)))
}

fn symbols(text: &TextSnapshot, outline: &[syntax::Outlined]) -> Vec<DocumentSymbol> {
    #[allow(deprecated)] // `deprecated` is a required field of the struct
    outline
        .iter()
        .map(|f| DocumentSymbol {
            name: f.name.clone(),
            detail: Some(
                match f.kind {
                    FnKind::Kernel => "__global__",
                    FnKind::Device => "__device__",
                    FnKind::HostDevice => "__host__ __device__",
                    FnKind::Host => "host",
                }
                .into(),
            ),
            kind: match f.kind {
                FnKind::Kernel => SymbolKind::EVENT,
                _ => SymbolKind::FUNCTION,
            },
            tags: None,
            deprecated: None,
            range: text.range(f.span),
            selection_range: text.range(f.name_span),
            children: None,
        })
        .collect()
}
