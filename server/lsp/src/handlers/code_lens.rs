//! textDocument/codeLens: the session's lenses (`kernelpro_session::views::lenses`:
//! a summary above each kernel, plus Profile and Optimize, or in an untrusted
//! workspace one lens that says how to allow them), converted.

use crate::state::State;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub fn code_lens(state: &State, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
    let uri = params.text_document.uri;
    let settings = state.settings();
    let ready = state.readiness();
    let docs = state.docs();
    let Some(doc) = docs.get(&uri) else { return Ok(None) };
    let lenses = kernelpro_session::views::lenses(doc.state(), settings.trusted, settings.words, ready.as_ref());
    Ok(Some(lenses.unwrap_or_default().into_iter().map(|l| crate::convert::lens(l, &uri, doc)).collect()))
}
