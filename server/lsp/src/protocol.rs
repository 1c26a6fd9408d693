//! What tower-lsp-server 0.23 does not do the way LSP says, fixed around its
//! service: an unknown `$/` request gets no answer there (LSP: MethodNotFound;
//! `$/` notifications are still dropped silently), and the exit code cannot
//! tell `exit` after `shutdown` (0) from `exit` without it (1).
//!
//! And one fix in front of its transport: text is validated once, at the
//! protocol edge ([`validate_frames`]). JSON may spell a lone UTF-16
//! surrogate (`"\ud800"`), which no Rust string can hold: serde_json refuses
//! the message, and the transport ends the session on a message it cannot
//! decode. Such a message is replaced by [`INVALID_TEXT`], which [`Protocol`]
//! answers with an InvalidParams error (a request) or logs (a notification),
//! and the session goes on.

use futures::future::{self, BoxFuture, FutureExt};
use std::io::{BufRead, BufReader, Read, Write};
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
        if req.method() == INVALID_TEXT {
            let (_, id, params) = req.into_parts();
            let params = params.unwrap_or_default();
            let method = params.get("method").and_then(|m| m.as_str()).unwrap_or("a message");
            let reason = params.get("reason").and_then(|m| m.as_str()).unwrap_or_default();
            tracing::warn!(method, reason, "ignored a message whose text is not valid Unicode");
            let reply = id.map(|id| {
                let message = format!("{method}: the text is not valid Unicode ({reason}); the message was ignored");
                Response::from_error(id, Error { message: message.into(), ..Error::invalid_params("") })
            });
            return future::ready(Ok(reply)).boxed();
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

/// The method a message with invalid text is replaced by (see the module's doc).
pub const INVALID_TEXT: &str = "$/kernelpro/invalidText";

/// Passes LSP frames from `input` to `output`, replacing each message whose
/// JSON holds a lone surrogate by an [`INVALID_TEXT`] message with the same
/// id, and dropping empty frames. Anything it cannot frame (no `Content-Length`) is passed on as it is,
/// from there on, for the transport to judge as before. Blocking: it runs on
/// the thread that reads stdin (`stdio.rs`).
pub fn validate_frames(input: impl Read, mut output: impl Write) -> std::io::Result<()> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    loop {
        let mut headers = Vec::new();
        let mut length = None;
        loop {
            let mut line = Vec::new();
            if input.read_until(b'\n', &mut line)? == 0 {
                output.write_all(&headers)?;
                return output.flush();
            }
            headers.extend_from_slice(&line);
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end();
            if text.is_empty() {
                break;
            }
            if let Some((name, value)) = text.split_once(':')
                && name.trim().eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse::<usize>().ok();
            }
        }
        let Some(length) = length else {
            // Not a frame we understand: the transport says what is wrong with it.
            output.write_all(&headers)?;
            std::io::copy(&mut input, &mut output)?;
            return output.flush();
        };
        let mut body = Vec::new();
        (&mut input).take(length as u64).read_to_end(&mut body)?;
        if body.len() < length {
            // Cut short by the end of input: passed on, the transport sees the end.
            output.write_all(&headers)?;
            output.write_all(&body)?;
            return output.flush();
        }
        if body.is_empty() {
            // An empty frame carries no message: dropped here, since
            // tower-lsp-server's decoder then waits for more input while the
            // next frame sits in its buffer.
            continue;
        }
        match invalid_text(&body) {
            None => {
                output.write_all(&headers)?;
                output.write_all(&body)?;
            }
            Some(replacement) => {
                let body = replacement.to_string();
                output.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes())?;
                output.write_all(body.as_bytes())?;
            }
        }
        output.flush()?;
    }
}

/// The replacement of a message whose JSON spells a lone surrogate; `None`
/// for any other message (valid, or invalid for another reason: those are the
/// transport's to answer).
fn invalid_text(body: &[u8]) -> Option<serde_json::Value> {
    // Fast path: no `\uD8xx`..`\uDFxx` escape at all.
    let surrogate = |w: &[u8]| {
        w[0] == b'\\' && w[1] == b'u' && (w[2] | 0x20) == b'd' && matches!(w[3] | 0x20, b'8'..=b'9' | b'a'..=b'f')
    };
    if !body.windows(4).any(surrogate) {
        return None;
    }
    let error = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(_) => return None, // pairs only, or an escaped backslash before `u`
        Err(e) => e,
    };
    // Read the id and method with every surrogate escape blanked out.
    let mut lenient = body.to_vec();
    let mut i = 0;
    while i + 6 <= lenient.len() {
        if lenient[i] == b'\\' && lenient[i + 1] == b'\\' {
            i += 2;
        } else if surrogate(&lenient[i..i + 4]) {
            lenient[i + 2..i + 6].copy_from_slice(b"fffd");
            i += 6;
        } else {
            i += 1;
        }
    }
    let message: serde_json::Value = serde_json::from_slice(&lenient).ok()?;
    let mut replacement = serde_json::json!({
        "jsonrpc": "2.0",
        "method": INVALID_TEXT,
        "params": {
            "method": message.get("method").cloned().unwrap_or_default(),
            "reason": format!("a lone UTF-16 surrogate escape; {error}"),
        },
    });
    if let Some(id) = message.get("id") {
        replacement["id"] = id.clone();
    }
    Some(replacement)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_are_found_and_pairs_and_escaped_backslashes_pass() {
        let open =
            br#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"text":"a\ud800b"}}}"#;
        let got = invalid_text(open).expect("a lone surrogate");
        assert_eq!(got["method"], INVALID_TEXT);
        assert_eq!(got["params"]["method"], "textDocument/didOpen");
        assert!(got["params"]["reason"].as_str().unwrap().contains("surrogate"), "{got}");
        assert!(got.get("id").is_none());
        let request = br#"{"jsonrpc":"2.0","id":7,"method":"x","params":"\uDFFF"}"#;
        assert_eq!(invalid_text(request).unwrap()["id"], 7);
        assert_eq!(invalid_text(br#"{"a":"\ud83d\ude00"}"#), None, "a pair is valid");
        assert_eq!(invalid_text(br#"{"a":"\\ud800"}"#), None, "an escaped backslash");
        assert_eq!(invalid_text(br#"{"a":"plain"}"#), None);
    }
}
