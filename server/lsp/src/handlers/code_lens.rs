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
    // Lenses sit on the analysis's lines, moved through the edits made since.
    let edits = doc.edits_since_analysis();
    let moved = |span: kernelpro_model::Span| {
        let line = edits.to_current(span.start.line)?;
        let end = line + span.end.line.saturating_sub(span.start.line);
        Some(kernelpro_model::Span::new(
            kernelpro_model::Pos { line, ..span.start },
            kernelpro_model::Pos { line: end, ..span.end },
        ))
    };
    let verdicts = crate::jobs::profile::verdicts(doc);
    for k in analysis.source.kernels() {
        if let Some((summary, _, stale)) = verdicts.get(&k.name) {
            let title = if *stale { format!("{summary} (stale)") } else { summary.clone() };
            let Some(at) = moved(kernelpro_model::Span::new(k.span.start, k.span.start)) else { continue };
            let at = doc.range(at);
            lenses.push(CodeLens {
                range: at,
                command: Some(Command { title, command: String::new(), arguments: None }),
                data: None,
            });
        }
    }
    for lens in kernelpro_core::lens::kernel_lenses(analysis) {
        let Some(span) = moved(lens.span) else { continue };
        let range = doc.range(span);
        let (command, arguments) = match &lens.action {
            kernelpro_core::lens::LensAction::None => (String::new(), None),
            kernelpro_core::lens::LensAction::Profile => {
                ("kernelpro.profile".into(), Some(vec![serde_json::json!(uri.as_str())]))
            }
            kernelpro_core::lens::LensAction::Optimize { kernel } => {
                ("kernelpro.optimize".into(), Some(vec![serde_json::json!(uri.as_str()), serde_json::json!(kernel)]))
            }
        };
        lenses.push(CodeLens { range, command: Some(Command { title: lens.title, command, arguments }), data: None });
    }
    Ok(Some(lenses))
}
