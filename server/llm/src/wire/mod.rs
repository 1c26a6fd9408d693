//! The two wire formats behind one conversation: request bodies, reply
//! parsing, and how an assistant turn and tool results are appended.

mod anthropic;
mod openai;

use crate::config::{LlmConfig, Provider};
use crate::error::LlmError;
use serde_json::Value;

/// A tool the model may call: its name, what it does, and a JSON schema.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub parameters: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The parsed arguments, or why they did not parse.
    pub arguments: Result<Value, String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    Done,
    /// Cut off at `max_tokens`.
    Length,
    ToolUse,
    Other(String),
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
}

/// One assistant reply.
#[derive(Debug, Clone)]
pub struct Turn {
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub stop: Stop,
    pub usage: Usage,
    /// The message as the provider wants it echoed back.
    assistant: Value,
}

/// The messages so far, in the provider's format.
#[derive(Debug)]
pub struct Conversation {
    provider: Provider,
    system: String,
    messages: Vec<Value>,
}

impl Conversation {
    pub fn new(provider: Provider, system: &str, user: &str) -> Conversation {
        let mut messages = Vec::new();
        if provider == Provider::OpenAi {
            messages.push(serde_json::json!({"role": "system", "content": system}));
        }
        messages.push(serde_json::json!({"role": "user", "content": user}));
        Conversation { provider, system: system.to_owned(), messages }
    }

    /// The request body; `tool_choice` is `none` once the tool calls are used up.
    pub fn body(&self, config: &LlmConfig, tools: &[ToolSpec], tools_allowed: bool) -> Value {
        match self.provider {
            Provider::OpenAi => openai::body(config, &self.messages, tools, tools_allowed),
            Provider::Anthropic => anthropic::body(config, &self.system, &self.messages, tools, tools_allowed),
        }
    }

    pub fn parse(&self, reply: &Value) -> Result<Turn, LlmError> {
        match self.provider {
            Provider::OpenAi => openai::parse(reply),
            Provider::Anthropic => anthropic::parse(reply),
        }
    }

    pub fn push_turn(&mut self, turn: &Turn) {
        self.messages.push(turn.assistant.clone());
    }

    /// The results of the last turn's calls, as `(call id, text)`.
    pub fn push_results(&mut self, results: &[(String, String)]) {
        match self.provider {
            Provider::OpenAi => self.messages.extend(openai::results(results)),
            Provider::Anthropic => self.messages.push(anthropic::results(results)),
        }
    }
}

fn garbled(what: &str) -> LlmError {
    LlmError::Garbled(what.to_owned())
}
