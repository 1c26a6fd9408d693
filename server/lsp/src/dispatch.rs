//! The `LanguageServer` implementation: each method delegates to its handler
//! module, and every request runs behind a panic guard. Nothing imports this
//! module but the crate's root: handlers and jobs take the [`Server`]'s parts,
//! so `lsp`'s modules import each other without a circle (`structure` below
//! checks it on the source).

use crate::handlers;
use crate::server::Server;
use futures::FutureExt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use tower_lsp_server::LanguageServer;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;

impl Server {
    /// `window/workDoneProgress/cancel`, which tower-lsp-server does not route itself.
    pub async fn work_done_progress_cancel(&self, params: WorkDoneProgressCancelParams) {
        crate::jobs::optimize::cancel(&self.state, &params.token);
    }
}

/// How many requests the transport serves at once (tower-lsp-server's
/// default of 4 let four slow requests hold every other, `$/cancelRequest` included).
pub const MAX_REQUESTS_IN_FLIGHT: usize = 64;

/// A panicking request answers with an internal error; the server lives on.
async fn guard<T>(method: &str, fut: impl Future<Output = Result<T>>) -> Result<T> {
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(r) => r,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Error {
                code: tower_lsp_server::jsonrpc::ErrorCode::InternalError,
                message: format!("{method} failed inside KernelPro: {what}").into(),
                data: None,
            })
        }
    }
}

async fn guard_notification(fut: impl Future<Output = ()>) {
    // The panic hook (`log.rs`) has logged it with its place; the server goes on.
    let _ = AssertUnwindSafe(fut).catch_unwind().await;
}

impl LanguageServer for Server {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        guard("initialize", handlers::lifecycle::initialize(self, params)).await
    }
    async fn initialized(&self, _: InitializedParams) {
        guard_notification(handlers::lifecycle::initialized(self)).await
    }
    async fn shutdown(&self) -> Result<()> {
        handlers::lifecycle::shutdown(self);
        Ok(())
    }
    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        guard_notification(handlers::lifecycle::did_change_configuration(self, params)).await
    }
    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        guard_notification(async { handlers::text_sync::did_open(self, params) }).await
    }
    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        guard_notification(async { handlers::text_sync::did_change(self, params) }).await
    }
    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        guard_notification(async { handlers::text_sync::did_save(self, params) }).await
    }
    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        guard_notification(handlers::text_sync::did_close(self, params)).await
    }
    async fn document_symbol(&self, params: DocumentSymbolParams) -> Result<Option<DocumentSymbolResponse>> {
        guard("textDocument/documentSymbol", handlers::document_symbol::document_symbol(self, params)).await
    }
    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        guard("textDocument/hover", async { handlers::hover::hover(&self.state, params) }).await
    }
    async fn code_lens(&self, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        guard("textDocument/codeLens", async { handlers::code_lens::code_lens(&self.state, params) }).await
    }
    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        guard("textDocument/codeAction", handlers::code_action::code_action(&self.state, params)).await
    }
    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        guard("workspace/executeCommand", handlers::execute_command::execute_command(self, params)).await
    }
}
