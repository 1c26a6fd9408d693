//! textDocument/documentSymbol: kernels, device functions and host functions.
//!
//! The answer is kept per text, serialized ([`Cell`], in `Document::symbols`):
//! it is built once per version, on a blocking thread from a snapshot of the
//! text (a 1 MB file must hold up neither the documents' lock nor the
//! runtime's workers), shortly after the text stops changing ([`prefetch`]:
//! an editor asks for the outline, breadcrumbs and sticky scroll after each
//! change) or by the first request, whichever comes first; requests in flight
//! together share it. The bytes are written as they are (`raw_answer.rs`: the
//! transport would otherwise rebuild the 4.4 MB answer of 20,000 kernels as a
//! JSON tree on every request, 0.4–0.6 s of its thread in a release build).

use crate::document::{LazySnapshot, TextSnapshot};
use crate::server::Server;
use crate::state::State;
use kernelpro_source::{self as source, FnKind};
use std::sync::Arc;
use std::time::Duration;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

/// One text's answer: the JSON array of its symbols, serialized.
pub use crate::document::SymbolsCell as Cell;

/// How long a text must stay unchanged before its symbols are built unasked.
const QUIET: Duration = Duration::from_millis(150);

pub async fn document_symbol(server: &Server, params: DocumentSymbolParams) -> Result<Option<DocumentSymbolResponse>> {
    // The line index of a new text is built on the pool's thread, not under the documents' lock.
    let Some((text, cell)) =
        server.state.docs().get(&params.text_document.uri).map(|d| (d.lazy_snapshot(), d.symbols()))
    else {
        return Ok(None);
    };
    let json = fill(&cell, text).await;
    Ok(Some(crate::raw_answer::register(json, placeholder)))
}

/// The document's current text gets its answer built once it has been
/// unchanged for [`QUIET`] (unless a request has built it already); `cell`
/// is its text's (`Document::symbols`). Takes no lock.
pub fn prefetch(server: &Server, uri: &Uri, cell: Cell) {
    let (state, uri) = (server.state.clone(), uri.clone());
    tokio::spawn(async move {
        tokio::time::sleep(QUIET).await;
        if let Some(text) = unchanged(&state, &uri, &cell) {
            fill(&cell, text).await;
        }
    });
}

/// The text of `uri` if its symbols' cell is still `cell` (its text has not changed) and empty.
fn unchanged(state: &State, uri: &Uri, cell: &Cell) -> Option<LazySnapshot> {
    let docs = state.docs();
    let doc = docs.get(uri)?;
    (cell.get().is_none() && Arc::ptr_eq(&doc.symbols(), cell)).then(|| doc.lazy_snapshot())
}

async fn fill(cell: &Cell, text: LazySnapshot) -> Arc<[u8]> {
    cell.get_or_init(|| async move { crate::pool::blocking(move || answer(&text.snapshot())).await }).await.clone()
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

fn answer(text: &TextSnapshot) -> Arc<[u8]> {
    serde_json::to_vec(&symbols(text)).expect("symbols serialize").into()
}

fn symbols(text: &TextSnapshot) -> Vec<DocumentSymbol> {
    let file = source::parse(&text.text.to_string());
    #[allow(deprecated)] // `deprecated` is a required field of the struct
    file.functions
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
