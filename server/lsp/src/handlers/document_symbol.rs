//! textDocument/documentSymbol: kernels, device functions and host functions.
//!
//! The parse and the position conversions run on a blocking thread from a
//! snapshot of the text: a 1 MB file must hold up neither the documents' lock
//! nor the runtime's workers, so requests on other files are answered meanwhile.
//! The result is kept per text (`Document::symbols`): the next request on the
//! same version (an editor's outline, breadcrumbs and sticky scroll each ask)
//! costs a copy, and requests in flight together share one parse.

use crate::document::TextSnapshot;
use crate::server::Server;
use kernelpro_source::{self as source, FnKind};
use std::sync::Arc;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub async fn document_symbol(server: &Server, params: DocumentSymbolParams) -> Result<Option<DocumentSymbolResponse>> {
    // The line index of a new text is built on the pool's thread, not under the documents' lock.
    let Some((text, cell)) =
        server.state.docs().get(&params.text_document.uri).map(|d| (d.lazy_snapshot(), d.symbols()))
    else {
        return Ok(None);
    };
    let symbols = cell
        .get_or_init(|| async move { Arc::new(crate::pool::blocking(move || symbols(&text.snapshot())).await) })
        .await;
    Ok(Some(DocumentSymbolResponse::Nested(symbols.as_ref().clone())))
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
