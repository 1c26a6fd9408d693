//! What tower-lsp-server 0.23 does not do the way LSP says, fixed around its
//! service: an unknown `$/` request gets no answer there (LSP: MethodNotFound;
//! `$/` notifications are still dropped silently), and the exit code cannot
//! tell `exit` after `shutdown` (0) from `exit` without it (1).

use futures::future::{self, BoxFuture, FutureExt};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use tower_lsp_server::ExitedError;
use tower_lsp_server::jsonrpc::{Error, Request, Response};
use tower_service::Service;

pub struct Protocol<S> {
    inner: S,
    /// The `exit` notification arrived.
    pub exit_seen: Arc<AtomicBool>,
}

impl<S> Protocol<S> {
    pub fn new(inner: S) -> Self {
        Protocol { inner, exit_seen: Arc::new(AtomicBool::new(false)) }
    }
}

impl<S> Service<Request> for Protocol<S>
where
    S: Service<Request, Response = Option<Response>, Error = ExitedError>,
    S::Future: Send + 'static,
{
    type Response = Option<Response>;
    type Error = ExitedError;
    type Future = BoxFuture<'static, Result<Option<Response>, ExitedError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ExitedError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        if req.method() == "exit" {
            self.exit_seen.store(true, Ordering::SeqCst);
        }
        // The server implements no `$/` request, so any is unknown.
        if req.method().starts_with("$/")
            && let Some(id) = req.id()
        {
            let error = Error { data: Some(req.method().into()), ..Error::method_not_found() };
            return future::ready(Ok(Some(Response::from_error(id.clone(), error)))).boxed();
        }
        self.inner.call(req).boxed()
    }
}
