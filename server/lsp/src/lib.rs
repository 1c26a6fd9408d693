//! The LSP adapter: a thin layer over `kernelpro-core`.
//!
//! Architecture invariant: this crate converts between LSP types and core data
//! and schedules work; it makes no analysis decisions of its own.
#![forbid(unsafe_code)]

mod convert;
mod dispatch;
mod document;
mod editor;
mod handlers;
mod jobs;
pub mod log;
mod pool;
mod protocol;
mod raw_answer;
mod server;
mod state;
mod stdio;
#[cfg(test)]
mod structure;
mod syntax;

pub use server::Server;
use tower_lsp_server::{LspService, Server as Transport};

/// Serve LSP over stdin/stdout until the client exits. The exit code is 1
/// when `exit` came without `shutdown` before it (LSP), else 0 (an end of
/// input or a broken frame included).
pub async fn serve_stdio() -> std::process::ExitCode {
    let (service, socket) = LspService::build(Server::new)
        .custom_method("window/workDoneProgress/cancel", Server::work_done_progress_cancel)
        .finish();
    log::to_client(service.inner().client.clone());
    let state = service.inner().state.clone();
    let service = protocol::Protocol::new(service);
    let exit_seen = service.exit_seen.clone();
    // Requests run concurrently (a slow one never holds a hover, and a
    // `$/cancelRequest` is read while it runs); their heavy work shares the
    // bounded pool of `pool::blocking`.
    // Text is validated once, here at the edge (protocol.rs says why), on the
    // thread that reads stdin (stdio.rs says why threads).
    let (output, writer) = stdio::output();
    Transport::new(stdio::input(), output, socket)
        .concurrency_level(dispatch::MAX_REQUESTS_IN_FLIGHT)
        .serve(service)
        .await;
    // Every answer written (the transport has dropped its end) before the process ends.
    let _ = tokio::task::spawn_blocking(move || writer.join()).await;
    let shut_down = state.shut_down.load(std::sync::atomic::Ordering::SeqCst);
    if exit_seen.load(std::sync::atomic::Ordering::SeqCst) && !shut_down {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
