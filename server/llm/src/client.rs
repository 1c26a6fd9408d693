//! One HTTP POST with a timeout, retried with exponential backoff on 429,
//! 5xx, timeouts and failed connections (a `Retry-After` in seconds wins).
//! Each attempt and each pause runs through `kernelpro_runner::bounded`, so a
//! cancelled search ends the request in flight; the reply is read up to a cap.

use crate::config::{ApiKey, LlmConfig, Provider};
use crate::error::LlmError;
use kernelpro_runner::{Interrupted, bounded};
use serde_json::Value;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Larger replies are not from a chat model.
const MAX_REPLY_BODY: usize = 8 << 20;

/// Server text kept in an error.
const ERROR_BODY_CHARS: usize = 300;

pub struct Client {
    http: reqwest::Client,
    url: String,
    provider: Provider,
    key: Option<ApiKey>,
    max_retries: u32,
    backoff: Duration,
    max_backoff: Duration,
    /// One attempt's limit (reqwest's own timeout, and the runner's bound around it).
    request_timeout: Duration,
    cancel: CancellationToken,
    /// Every pause taken before a retry, for the caller's report.
    pub waits: Vec<Duration>,
}

impl Client {
    pub fn new(config: &LlmConfig) -> Result<Client, LlmError> {
        let http = reqwest::Client::builder()
            .timeout(config.request_timeout)
            // A redirect would carry the key (x-api-key) and the source to
            // another host: it is an error instead (LlmError::Redirect).
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| LlmError::Transport(e.to_string()))?;
        Ok(Client {
            http,
            url: config.url(),
            provider: config.provider,
            key: config.api_key.clone(),
            max_retries: config.max_retries,
            backoff: config.backoff,
            max_backoff: config.max_backoff,
            request_timeout: config.request_timeout,
            cancel: CancellationToken::new(),
            waits: Vec::new(),
        })
    }

    /// Requests and pauses end (as [`LlmError::Cancelled`]) when `cancel` fires.
    pub fn set_cancel(&mut self, cancel: CancellationToken) {
        self.cancel = cancel;
    }

    pub async fn post(&mut self, body: &Value) -> Result<Value, LlmError> {
        let mut attempt = 0;
        loop {
            // reqwest's timeout covers the request; the runner's bound adds the cancellation.
            let limit = self.request_timeout + Duration::from_secs(1);
            let (result, retry_after) = match bounded("the LLM endpoint", limit, &self.cancel, self.once(body)).await {
                Ok(answer) => answer,
                Err(Interrupted::Timeout { .. }) => (Err(LlmError::Timeout), None),
                Err(Interrupted::Cancelled { .. }) => return Err(LlmError::Cancelled),
            };
            match result {
                Err(e) if e.is_retryable() && attempt < self.max_retries => {
                    let backoff = self.backoff.saturating_mul(1 << attempt.min(16));
                    let wait = retry_after.unwrap_or(backoff).min(self.max_backoff);
                    self.waits.push(wait);
                    if self.cancel.run_until_cancelled(tokio::time::sleep(wait)).await.is_none() {
                        return Err(LlmError::Cancelled);
                    }
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// One attempt, and the server's `Retry-After` if it sent one.
    async fn once(&self, body: &Value) -> (Result<Value, LlmError>, Option<Duration>) {
        let mut request = self.http.post(&self.url).json(body);
        request = match (self.provider, &self.key) {
            (Provider::OpenAi, Some(key)) => request.bearer_auth(key.expose()),
            (Provider::OpenAi, None) => request,
            (Provider::Anthropic, key) => {
                let request = request.header("anthropic-version", ANTHROPIC_VERSION);
                match key {
                    Some(key) => request.header("x-api-key", key.expose()),
                    None => request,
                }
            }
        };
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return (Err(self.transport(e)), None),
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64);
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(|l| self.scrub(&l.chars().take(ERROR_BODY_CHARS).collect::<String>()))
                .unwrap_or_else(|| "(no Location header)".to_owned());
            return (Err(LlmError::Redirect { status: status.as_u16(), location }), None);
        }
        // Read up to the cap: a hostile or broken endpoint must not fill the memory.
        let mut response = response;
        let mut bytes = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    bytes.extend_from_slice(&chunk);
                    if bytes.len() > MAX_REPLY_BODY {
                        return (Err(LlmError::TooLong(bytes.len())), None);
                    }
                }
                Ok(None) => break,
                Err(e) => return (Err(self.transport(e)), retry_after),
            }
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes);
            let body = self.scrub(&text.chars().take(ERROR_BODY_CHARS).collect::<String>());
            return (Err(LlmError::Http { status: status.as_u16(), body }), retry_after);
        }
        let parsed =
            serde_json::from_slice(&bytes).map_err(|e| LlmError::Garbled(format!("the reply is not JSON: {e}")));
        (parsed, None)
    }

    fn transport(&self, e: reqwest::Error) -> LlmError {
        if e.is_timeout() {
            LlmError::Timeout
        } else {
            // Without the source chain's URL noise, and never with the key.
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                text = format!("{text}: {s}");
                source = s.source();
            }
            LlmError::Transport(self.scrub(&text))
        }
    }

    fn scrub(&self, text: &str) -> String {
        self.key.as_ref().map_or_else(|| text.to_owned(), |k| k.scrub(text))
    }
}
