//! textDocument/documentSymbol: kernels, device functions and host functions.
//!
//! The answer is kept per text, serialized ([`Cell`], in `Document::symbols`):
//! it is built once per version, on a blocking thread from a snapshot of the
//! text (a 1 MB file must hold up neither the documents' lock nor the
//! runtime's workers), shortly after the text stops changing ([`prefetch`]:
//! an editor asks for the outline, breadcrumbs and sticky scroll after each
//! change) or by the first request, whichever comes first; requests in flight
//! together share it. The text is parsed from the document's kept tree, to
//! which every change since the last parse was applied (`syntax.rs`): a
//! one-line change of 1 MB re-parses in milliseconds, not the whole file; the
//! walk stops at each definition (`syntax::outline`: names, kinds and spans,
//! not parameters). The bytes are written as they are (`raw_answer.rs`: the
//! transport would otherwise rebuild the 4.4 MB answer of 20,000 kernels as a
//! JSON tree on every request, 0.4–0.6 s of its thread in a release build).

use crate::document::{LazySnapshot, TextSnapshot};
use crate::server::Server;
use crate::state::State;
use crate::syntax;
use kernelpro_source::FnKind;
use kernelpro_source::budget::Budget;
use std::sync::Arc;
use std::time::Duration;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;
use tree_sitter::Tree;

/// One text's answer: the JSON array of its symbols, serialized.
pub use crate::document::SymbolsCell as Cell;

/// How long a text must stay unchanged before its symbols are built unasked.
const QUIET: Duration = Duration::from_millis(150);

pub async fn document_symbol(server: &Server, params: DocumentSymbolParams) -> Result<Option<DocumentSymbolResponse>> {
    // The line index of a new text is built on the pool's thread, not under the documents' lock.
    let uri = &params.text_document.uri;
    let Some((text, tree, cell)) = server.state.docs().get(uri).map(|d| (d.lazy_snapshot(), d.tree(), d.symbols()))
    else {
        return Ok(None);
    };
    let json = fill(&server.state, uri, &cell, text, tree).await;
    Ok(Some(crate::raw_answer::register(json, placeholder)))
}

/// The document's current text gets its answer built once it has been
/// unchanged for [`QUIET`] (unless a request has built it already, or the
/// pool is full: requests come first, and the next one builds it); `cell` is
/// its text's (`Document::symbols`). Takes no lock.
pub fn prefetch(server: &Server, uri: &Uri, cell: Cell) {
    let (state, uri) = (server.state.clone(), uri.clone());
    tokio::spawn(async move {
        tokio::time::sleep(QUIET).await;
        if !crate::pool::has_room() {
            return;
        }
        if let Some((text, tree)) = unchanged(&state, &uri, &cell) {
            fill(&state, &uri, &cell, text, tree).await;
        }
    });
}

/// The text of `uri` and its kept tree if its symbols' cell is still `cell`
/// (its text has not changed) and empty.
fn unchanged(state: &State, uri: &Uri, cell: &Cell) -> Option<(LazySnapshot, Option<Tree>)> {
    let docs = state.docs();
    let doc = docs.get(uri)?;
    (cell.get().is_none() && Arc::ptr_eq(&doc.symbols(), cell)).then(|| (doc.lazy_snapshot(), doc.tree()))
}

/// The answer of `text` (the text of `uri`, whose cell is `cell`), built
/// once: parsed from `tree` (the document's kept tree, see `syntax.rs`),
/// whose new tree the document keeps if its text is still `text`.
async fn fill(state: &Arc<State>, uri: &Uri, cell: &Cell, text: LazySnapshot, tree: Option<Tree>) -> Arc<[u8]> {
    let (state, uri) = (state.clone(), uri.clone());
    let init = || {
        crate::pool::blocking(move || {
            let (json, parsed) = answer(text, tree);
            // A tree not kept is freed here, off the documents' lock and the
            // runtime's workers (`syntax::free`).
            if let Some((text, tree)) = parsed {
                match state.docs().get_mut(&uri) {
                    Some(doc) => doc.offer_tree(&text, tree),
                    None => syntax::free(Some(tree)),
                }
            }
            json
        })
    };
    cell.get_or_init(init).await.clone()
}

/// What the transport writes in place of the kept answer (see `raw_answer.rs`).
fn placeholder(name: String) -> DocumentSymbolResponse {
    #[allow(deprecated)] // `deprecated` is a required field of the struct
    DocumentSymbolResponse::Nested(vec![DocumentSymbol {
        name,
        detail: None,
        kind: SymbolKind::FUNCTION,
        tags: None,
        deprecated: None,
        range: Range::default(),
        selection_range: Range::default(),
        children: None,
    }])
}

/// The serialized answer of `text`, and the tree parsed with the text it is
/// of, unless the parse was refused or the text has a lone "\r" (then its
/// tree is not kept: `syntax.rs`).
fn answer(text: LazySnapshot, old: Option<Tree>) -> (Arc<[u8]>, Option<(LazySnapshot, Tree)>) {
    let started = std::time::Instant::now();
    let snapshot = text.clone().snapshot();
    let string = snapshot.text.to_string();
    let incremental = old.is_some();
    let Ok(tree) = syntax::parse(&string, old.as_ref(), &Budget::default()) else {
        // Past the parse's budget: no symbols, as `source::parse` gives none.
        return (Arc::from(&b"[]"[..]), None);
    };
    let parsed = started.elapsed();
    let outline = syntax::outline(&tree, &string);
    let walked = started.elapsed();
    let json = serialized(&snapshot, &outline);
    tracing::debug!(
        bytes = string.len(),
        incremental,
        parse_ms = parsed.as_secs_f64() * 1e3,
        outline_ms = (walked - parsed).as_secs_f64() * 1e3,
        total_ms = started.elapsed().as_secs_f64() * 1e3,
        "documentSymbol answer built"
    );
    (json.into(), (!syntax::has_lone_cr(&string)).then_some((text, tree)))
}

/// What documentSymbol shows of a function: its detail and symbol kind.
fn shown(kind: FnKind) -> (&'static str, SymbolKind) {
    match kind {
        FnKind::Kernel => ("__global__", SymbolKind::EVENT),
        FnKind::Device => ("__device__", SymbolKind::FUNCTION),
        FnKind::HostDevice => ("__host__ __device__", SymbolKind::FUNCTION),
        FnKind::Host => ("host", SymbolKind::FUNCTION),
    }
}

/// The JSON array of `outline`'s `DocumentSymbol`s, written directly: the
/// same bytes as `serde_json::to_vec` of the list of `DocumentSymbol`s (a
/// test holds them equal), without making 20,000 of them first.
fn serialized(text: &TextSnapshot, outline: &[syntax::Outlined]) -> Vec<u8> {
    fn json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
        serde_json::to_writer(out, value).expect("a string or a number serializes");
    }
    fn range(out: &mut Vec<u8>, r: Range) {
        for (key, p) in [(&b"{\"start\":{\"line\":"[..], r.start), (&b"},\"end\":{\"line\":"[..], r.end)] {
            out.extend_from_slice(key);
            json(out, &p.line);
            out.extend_from_slice(b",\"character\":");
            json(out, &p.character);
        }
        out.extend_from_slice(b"}}");
    }
    let mut out = Vec::with_capacity(outline.len() * 240 + 2);
    out.push(b'[');
    for (i, f) in outline.iter().enumerate() {
        let (detail, kind) = shown(f.kind);
        out.extend_from_slice(if i == 0 { b"{\"name\":" } else { b",{\"name\":" });
        json(&mut out, &f.name);
        out.extend_from_slice(b",\"detail\":");
        json(&mut out, detail);
        out.extend_from_slice(b",\"kind\":");
        json(&mut out, &kind);
        out.extend_from_slice(b",\"range\":");
        range(&mut out, text.range(f.span));
        out.extend_from_slice(b",\"selectionRange\":");
        range(&mut out, text.range(f.name_span));
        out.push(b'}');
    }
    out.push(b']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Document;

    /// The `DocumentSymbol`s of `outline`, as the protocol's types make them.
    fn symbols(text: &TextSnapshot, outline: &[syntax::Outlined]) -> Vec<DocumentSymbol> {
        #[allow(deprecated)] // `deprecated` is a required field of the struct
        outline
            .iter()
            .map(|f| DocumentSymbol {
                name: f.name.clone(),
                detail: Some(shown(f.kind).0.into()),
                kind: shown(f.kind).1,
                tags: None,
                deprecated: None,
                range: text.range(f.span),
                selection_range: text.range(f.name_span),
                children: None,
            })
            .collect()
    }

    /// The answer written directly is byte for byte `serde_json`'s of the
    /// protocol's `DocumentSymbol`s: every kind, names that need escaping
    /// (a quote, a backslash, non-ASCII), UTF-16 columns, a lone "\r",
    /// "\r\n", templates; and an empty list.
    #[test]
    fn the_answer_is_serde_jsons() {
        let text = "template <typename T>\n__global__ void k\u{e9}(T* y) {}\r\n__device__ float d() { return 1; }\n\
                    // \u{1F600} a\rb\n__host__ __device__ int hd() { return 0; }\nvoid h() {}\n\
                    void operator\"\"_q(const char*) {}\n#define X(a) a\nvoid X(w\\x)() {}\n";
        for text in [text, "", "int x;"] {
            let snapshot = Document::new(text, 1).snapshot();
            let tree = syntax::parse(text, None, &Budget::default()).unwrap();
            let outline = syntax::outline(&tree, text);
            let ours = serialized(&snapshot, &outline);
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                serde_json::to_string(&symbols(&snapshot, &outline)).unwrap(),
                "{text:?}"
            );
            let names: Vec<&str> = outline.iter().map(|f| f.name.as_str()).collect();
            let expected: &[&str] =
                if text.len() > 10 { &["k\u{e9}", "d", "hd", "h", "operator\"\"_q", "X(w\\x)"] } else { &[] };
            assert_eq!(names, expected);
        }
    }
}
