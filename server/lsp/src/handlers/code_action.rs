//! textDocument/codeAction: "Optimize kernel NAME" for the kernel under the cursor.

use crate::server::Server;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub async fn code_action(server: &Server, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
    let uri = params.text_document.uri;
    let Some(text) = server.state.docs().get(&uri).map(|d| d.snapshot()) else {
        return Ok(None);
    };
    // The parse runs off the lock and the runtime's workers (see documentSymbol).
    let line = text.pos(params.range.start).line;
    let current = text.text.to_string();
    let (file, current) = crate::server::blocking(move || (kernelpro_core::source::parse(&current), current)).await;
    let mut actions = Vec::new();
    if let Some(k) = file.kernels().find(|k| k.span.contains_line(line)) {
        if let Some(apply) = crate::jobs::optimize::apply_action(server, &uri, &k.name, &current) {
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
