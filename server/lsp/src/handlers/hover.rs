//! textDocument/hover: SASS for a source line, resources for a kernel name.

use crate::server::Server;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub fn hover(server: &Server, params: HoverParams) -> Result<Option<Hover>> {
    let pp = params.text_document_position_params;
    let docs = server.state.docs();
    let Some(doc) = docs.get(&pp.text_document.uri) else { return Ok(None) };
    let Some(analysis) = doc.current_analysis() else { return Ok(None) };
    // The analysis may be older than the text: ask it about the line as it was
    // then (a line rewritten since has nothing to show until the next save).
    let now = doc.pos(pp.position);
    let Some(line) = doc.edits_since_analysis().to_original(now.line) else { return Ok(None) };
    let pos = kernelpro_model::Pos { line, ..now };
    let Some(mut markdown) = kernelpro_core::hover::hover_markdown(analysis, pos, now.line) else { return Ok(None) };
    if let Some(k) = analysis.source.kernels().find(|k| k.name_span.start.line == pos.line) {
        if let Some((summary, change, stale)) = crate::jobs::profile::verdicts(doc).remove(&k.name) {
            markdown.push_str(&format!(
                "\nLast profile: **{summary}**{}\n",
                if stale { " (before your latest edits)" } else { "" }
            ));
            if let Some(c) = change {
                markdown.push_str(&format!("\nSince the previous profile: {c}\n"));
            }
        }
        if let Some(diff) =
            crate::jobs::optimize::diff_markdown(server, &pp.text_document.uri, &k.name, &doc.text().to_string())
        {
            markdown.push_str("\n---\n");
            markdown.push_str(&diff);
        }
    }
    Ok(Some(Hover {
        contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: markdown }),
        range: None,
    }))
}
