//! What the caller fills from the settings and the environment.

use std::path::PathBuf;
use std::time::Duration;

/// The environment variable that holds the API key.
pub const KEY_ENV: &str = "KERNELPRO_LLM_KEY";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// `POST …/v1/chat/completions`: OpenAI, vLLM, Ollama, llama.cpp servers.
    OpenAi,
    /// `POST …/v1/messages` with `x-api-key` and `anthropic-version`.
    Anthropic,
}

/// An API key. It has no `Display`, its `Debug` is redacted, and it is only
/// read when a request header is built.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }

    /// The key from `KERNELPRO_LLM_KEY`, if set and not empty.
    pub fn from_env() -> Option<ApiKey> {
        std::env::var(KEY_ENV).ok().filter(|k| !k.trim().is_empty()).map(|k| ApiKey(k.trim().to_owned()))
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced, for anything a
    /// server sent back (an error body may echo the request).
    pub(crate) fn scrub(&self, text: &str) -> String {
        if self.0.is_empty() { text.to_owned() } else { text.replace(&self.0, "[redacted]") }
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// Prices for the cost cap, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prices {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

#[derive(Debug, Clone)]
pub struct LlmConfig {
    /// Nothing is sent unless this is true (the caller also checks workspace consent).
    pub enabled: bool,
    pub provider: Provider,
    /// Base URL (`https://api.openai.com`, `http://localhost:11434`), or the full
    /// `…/chat/completions` or `…/messages` URL.
    pub endpoint: String,
    pub model: String,
    pub api_key: Option<ApiKey>,
    pub temperature: Option<f64>,
    /// `max_tokens` of each request.
    pub max_tokens_per_request: u32,
    /// Input plus output tokens over the whole search; further requests are refused.
    pub max_total_tokens: u64,
    /// Cost cap over the whole search, used with `prices`.
    pub max_cost_usd: Option<f64>,
    pub prices: Option<Prices>,
    pub request_timeout: Duration,
    /// Retries after a 429, a 5xx, a timeout or a failed connection.
    pub max_retries: u32,
    /// First backoff; doubled on each retry, at most `max_backoff`.
    pub backoff: Duration,
    /// Longest wait between retries, including one asked by `Retry-After`.
    pub max_backoff: Duration,
    /// Tool calls per proposal.
    pub max_tool_calls: usize,
    /// Bytes of one tool result handed back to the model.
    pub max_tool_result_bytes: usize,
    /// Longer replies are failed proposals.
    pub max_reply_bytes: usize,
    /// Replaces the embedded prompt templates that it holds.
    pub prompts_dir: Option<PathBuf>,
    /// Filled into `{{hardware}}` (e.g. `NVIDIA H200 (sm_90, 132 SMs, 4.8 TB/s HBM3e)`).
    pub hardware: String,
    /// Search-memory entries shown in a prompt.
    pub memory_entries: usize,
}

impl LlmConfig {
    /// Settings for `provider` with the defaults; disabled until the caller enables it.
    pub fn new(provider: Provider, endpoint: impl Into<String>, model: impl Into<String>) -> LlmConfig {
        LlmConfig {
            enabled: false,
            provider,
            endpoint: endpoint.into(),
            model: model.into(),
            api_key: None,
            temperature: None,
            max_tokens_per_request: 8192,
            max_total_tokens: 400_000,
            max_cost_usd: None,
            prices: None,
            request_timeout: Duration::from_secs(180),
            max_retries: 3,
            backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            max_tool_calls: 8,
            max_tool_result_bytes: 8 * 1024,
            max_reply_bytes: 64 * 1024,
            prompts_dir: None,
            hardware: "an NVIDIA GPU".to_owned(),
            memory_entries: 12,
        }
    }

    /// The URL requests go to.
    pub fn url(&self) -> String {
        let base = self.endpoint.trim_end_matches('/');
        let (full, v1) = match self.provider {
            Provider::OpenAi => ("/chat/completions", "/v1/chat/completions"),
            Provider::Anthropic => ("/messages", "/v1/messages"),
        };
        if base.ends_with(full) {
            base.to_owned()
        } else if base.ends_with("/v1") {
            format!("{base}{full}")
        } else {
            format!("{base}{v1}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(provider: Provider, endpoint: &str, expected: &str) {
        assert_eq!(LlmConfig::new(provider, endpoint, "m").url(), expected);
    }

    #[test]
    fn urls() {
        check(Provider::OpenAi, "https://api.openai.com", "https://api.openai.com/v1/chat/completions");
        check(Provider::OpenAi, "http://localhost:11434/v1/", "http://localhost:11434/v1/chat/completions");
        check(Provider::OpenAi, "http://h:8000/v1/chat/completions", "http://h:8000/v1/chat/completions");
        check(Provider::Anthropic, "https://api.anthropic.com", "https://api.anthropic.com/v1/messages");
        check(Provider::Anthropic, "https://proxy/v1/messages", "https://proxy/v1/messages");
    }

    #[test]
    fn key_is_redacted() {
        let key = ApiKey::new("sk-secret-123");
        assert_eq!(format!("{key:?}"), "ApiKey([redacted])");
        assert_eq!(key.scrub("echo sk-secret-123!"), "echo [redacted]!");
    }
}
