//! The optimizer's LLM proposer: asks an OpenAI-compatible or Anthropic
//! model for a faster version of one kernel, lets it search the CUTLASS
//! sources through tools, and splices its kernel back into the file.
//!
//! Nothing is sent unless [`LlmConfig::enabled`]; the API key is never
//! shown in `Debug`, errors or logs. A reply that is garbled, cut off, too
//! long, or does not hold exactly one kernel of the right name and
//! parameters is a [`Failure`], never a panic.
#![forbid(unsafe_code)]

mod client;
mod config;
mod conversation;
mod directives;
mod error;
mod items;
mod prompt;
mod prompts;
mod proposer;
mod reply;
mod splice;
mod tools;
mod wire;

pub use config::{ApiKey, KEY_ENV, LlmConfig, Prices, Provider};
pub use conversation::Spend;
pub use directives::IncludePolicy;
pub use error::LlmError;
pub use prompts::{Templates, render};
pub use proposer::{Failure, FailureLog, LlmProposer};
pub use splice::KernelSite;
pub use tools::{READ as READ_TOOL, SEARCH as SEARCH_TOOL};
