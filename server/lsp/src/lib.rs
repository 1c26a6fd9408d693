//! The LSP adapter: a thin layer over `kernelpro-core`.
//!
//! Architecture invariant: this crate converts between LSP types and core data
//! and schedules work; it makes no analysis decisions of its own.

mod convert;
mod document;
mod handlers;
mod server;
mod state;

pub use server::Server;
use tower_lsp_server::{LspService, Server as Transport};

/// Serve LSP over stdin/stdout until the client exits.
pub async fn serve_stdio() {
    let (service, socket) = LspService::build(Server::new).custom_method("window/workDoneProgress/cancel", Server::work_done_progress_cancel).finish();
    Transport::new(tokio::io::stdin(), tokio::io::stdout(), socket).serve(service).await;
}
