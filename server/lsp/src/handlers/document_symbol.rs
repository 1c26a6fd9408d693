//! textDocument/documentSymbol: kernels, device functions and host functions.

use crate::server::Server;
use kernelpro_core::source::{self, FnKind};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub fn document_symbol(server: &Server, params: DocumentSymbolParams) -> Result<Option<DocumentSymbolResponse>> {
    let docs = server.state.docs();
    let Some(doc) = docs.get(&params.text_document.uri) else { return Ok(None) };
    let file = source::parse(&doc.text.to_string());
    #[allow(deprecated)] // `deprecated` is a required field of the struct
    let symbols = file
        .functions
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
            range: doc.range(f.span),
            selection_range: doc.range(f.name_span),
            children: None,
        })
        .collect();
    Ok(Some(DocumentSymbolResponse::Nested(symbols)))
}
