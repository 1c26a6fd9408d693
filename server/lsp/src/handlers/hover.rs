//! textDocument/hover: the session's hover (`kernelpro_session::views::hover`)
//! at the position converted from UTF-16, as markdown.

use crate::state::State;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub fn hover(state: &State, params: HoverParams) -> Result<Option<Hover>> {
    let pp = params.text_document_position_params;
    let docs = state.docs();
    let Some(doc) = docs.get(&pp.text_document.uri) else { return Ok(None) };
    if doc.current_analysis().is_none() {
        return Ok(None);
    }
    let now = doc.pos(pp.position);
    // Lock order: docs, then optimizations.
    let all = state.optimizations();
    let optimizations = all.get(&pp.text_document.uri).map(Vec::as_slice).unwrap_or_default();
    let text = || doc.text().to_string();
    let Some(markdown) = kernelpro_session::views::hover(doc.state(), now, optimizations, text) else {
        return Ok(None);
    };
    Ok(Some(Hover {
        contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: markdown }),
        range: None,
    }))
}
