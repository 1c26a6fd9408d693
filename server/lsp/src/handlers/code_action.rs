//! textDocument/codeAction: "Optimize kernel NAME" for the kernel under the cursor.

use crate::server::Server;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub fn code_action(server: &Server, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
    let uri = params.text_document.uri;
    let docs = server.state.docs();
    let Some(doc) = docs.get(&uri) else { return Ok(None) };
    let line = doc.pos(params.range.start).line;
    let file = kernelpro_core::source::parse(&doc.text.to_string());
    let mut actions = Vec::new();
    if let Some(k) = file.kernels().find(|k| k.span.contains_line(line)) {
        if let Some(apply) = crate::handlers::optimize::apply_action(server, &uri, &k.name, doc.version) {
            actions.push(CodeActionOrCommand::CodeAction(apply));
        }
        actions.push(CodeActionOrCommand::CodeAction(CodeAction {
            title: format!("Optimize kernel {}", k.name),
            kind: Some(CodeActionKind::new("refactor.rewrite.kernelpro.optimize")),
            command: Some(Command {
                title: format!("Optimize kernel {}", k.name),
                command: "kernelpro.optimize".into(),
                arguments: Some(vec![serde_json::json!(uri.as_str()), serde_json::json!(k.name)]),
            }),
            ..Default::default()
        }));
    }
    Ok(Some(actions))
}
