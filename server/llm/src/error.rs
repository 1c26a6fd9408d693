//! Why a request or a proposal failed. No variant ever holds the API key:
//! server text is scrubbed before it is stored.

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("the LLM proposer is not enabled")]
    Disabled,
    #[error("LLM settings: {0}")]
    Config(String),
    #[error("the LLM request timed out")]
    Timeout,
    #[error("the LLM request was cancelled")]
    Cancelled,
    #[error("HTTP {status} from the LLM endpoint: {body}")]
    Http { status: u16, body: String },
    /// Redirects are not followed: the key and the source would go along.
    #[error(
        "the LLM endpoint answered HTTP {status} with a redirect to {location}; KernelPro does not follow redirects, \
         because your key and your kernel's source would be sent there too. If that address is right, set \
         kernelpro.llm.endpoint to it"
    )]
    Redirect { status: u16, location: String },
    #[error("could not reach the LLM endpoint: {0}")]
    Transport(String),
    #[error("garbled reply: {0}")]
    Garbled(String),
    #[error("the reply was cut off at the token limit")]
    Truncated,
    #[error("the reply is {0} bytes, over the limit")]
    TooLong(usize),
    #[error("budget exhausted: {0}")]
    Budget(String),
    #[error("{0}")]
    BadKernel(String),
}

impl LlmError {
    /// Worth another attempt after a pause.
    pub(crate) fn is_retryable(&self) -> bool {
        match self {
            LlmError::Timeout | LlmError::Transport(_) => true,
            LlmError::Http { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }
}
