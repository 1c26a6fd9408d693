//! textDocument/codeLens: a summary above each kernel, plus Profile and Optimize.

use crate::server::Server;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub fn code_lens(server: &Server, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
    let uri = params.text_document.uri;
    let docs = server.state.docs();
    let Some(doc) = docs.get(&uri) else { return Ok(None) };
    let Some(analysis) = doc.current_analysis() else { return Ok(Some(Vec::new())) };
    let mut lenses = Vec::new();
    let verdicts = crate::handlers::profile::verdicts(doc);
    for k in analysis.source.kernels() {
        if let Some((summary, _, stale)) = verdicts.get(&k.name) {
            let title = if *stale { format!("{summary} (stale)") } else { summary.clone() };
            let at = doc.range(kernelpro_model::Span::new(k.span.start, k.span.start));
            lenses.push(CodeLens { range: at, command: Some(Command { title, command: String::new(), arguments: None }), data: None });
        }
    }
    for lens in kernelpro_core::lens::kernel_lenses(analysis) {
        let range = doc.range(lens.span);
        let (command, arguments) = match &lens.action {
            kernelpro_core::lens::LensAction::None => (String::new(), None),
            kernelpro_core::lens::LensAction::Profile => ("kernelpro.profile".into(), Some(vec![serde_json::json!(uri.as_str())])),
            kernelpro_core::lens::LensAction::Optimize { kernel } => ("kernelpro.optimize".into(), Some(vec![serde_json::json!(uri.as_str()), serde_json::json!(kernel)])),
        };
        lenses.push(CodeLens { range, command: Some(Command { title: lens.title, command, arguments }), data: None });
    }
    Ok(Some(lenses))
}
