//! textDocument/codeLens: a summary above each kernel, plus Profile and Optimize
//! (in an untrusted workspace, one lens that says how to allow them instead).

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
    let moved = |span| crate::document::moved(edits, span);
    let verdicts = crate::jobs::profile::verdicts(doc);
    let settings = server.state.settings();
    let restricted = format!(
        "nothing is compiled, profiled or optimized in an untrusted workspace; to allow it, {}",
        settings.editor.trust_hint()
    );
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
    // Untrusted: the lens below says how to trust, whatever doctor found.
    let ready = if settings.trusted { server.state.readiness() } else { None };
    for lens in kernelpro_core::lens::kernel_lenses(analysis, ready.as_ref()) {
        let Some(span) = moved(lens.span) else { continue };
        let range = doc.range(span);
        use kernelpro_core::lens::LensAction;
        // Untrusted: no run is offered (it would only fail); the Profile lens's place says why.
        let (title, command, arguments) = match &lens.action {
            LensAction::Profile | LensAction::Optimize { .. } | LensAction::Unavailable { .. } if !settings.trusted => {
                if !matches!(lens.action, LensAction::Profile) {
                    continue;
                }
                (
                    "🔒 Profile / Optimize: trust the workspace".to_string(),
                    "kernelpro.explain".into(),
                    Some(vec![serde_json::json!(restricted)]),
                )
            }
            LensAction::None => (lens.title, String::new(), None),
            LensAction::Unavailable { why } => {
                (lens.title, "kernelpro.explain".into(), Some(vec![serde_json::json!(why)]))
            }
            LensAction::Profile => {
                (lens.title, "kernelpro.profile".into(), Some(vec![serde_json::json!(uri.as_str())]))
            }
            LensAction::Optimize { kernel } => (
                lens.title,
                "kernelpro.optimize".into(),
                Some(vec![serde_json::json!(uri.as_str()), serde_json::json!(kernel)]),
            ),
        };
        lenses.push(CodeLens { range, command: Some(Command { title, command, arguments }), data: None });
    }
    Ok(Some(lenses))
}
