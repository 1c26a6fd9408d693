//! Anthropic messages: a top-level `system`, `tools` with `input_schema`,
//! `tool_use` content blocks, and `tool_result` blocks in a user message.

use super::{Stop, ToolCall, ToolSpec, Turn, Usage, garbled};
use crate::config::LlmConfig;
use crate::error::LlmError;
use serde_json::{Value, json};

pub fn body(config: &LlmConfig, system: &str, messages: &[Value], tools: &[ToolSpec], tools_allowed: bool) -> Value {
    let mut body = json!({
        "model": config.model,
        "system": system,
        "messages": messages,
        "max_tokens": config.max_tokens_per_request,
    });
    if let Some(t) = config.temperature {
        body["temperature"] = json!(t);
    }
    if !tools.is_empty() {
        let specs: Vec<Value> = tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        body["tools"] = json!(specs);
        body["tool_choice"] = json!({"type": if tools_allowed { "auto" } else { "none" }});
    }
    body
}

pub fn parse(reply: &Value) -> Result<Turn, LlmError> {
    let content =
        reply.get("content").and_then(Value::as_array).ok_or_else(|| garbled("no `content` array in the reply"))?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => {
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| garbled("a tool_use block without a name"))?;
                let id =
                    block.get("id").and_then(Value::as_str).ok_or_else(|| garbled("a tool_use block without an id"))?;
                let arguments =
                    block.get("input").filter(|i| i.is_object()).cloned().ok_or_else(|| "no input object".to_owned());
                calls.push(ToolCall { id: id.to_owned(), name: name.to_owned(), arguments });
            }
            _ => {} // thinking and other blocks carry no answer
        }
    }
    let stop = match reply.get("stop_reason").and_then(Value::as_str) {
        Some("end_turn") | Some("stop_sequence") | None => Stop::Done,
        Some("max_tokens") => Stop::Length,
        Some("tool_use") => Stop::ToolUse,
        Some(other) => Stop::Other(other.to_owned()),
    };
    let usage = reply.get("usage").map_or(Usage::default(), |u| Usage {
        input: u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0),
        output: u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
    });
    let assistant = json!({"role": "assistant", "content": content});
    Ok(Turn { text, calls, stop, usage, assistant })
}

pub fn results(results: &[(String, String)]) -> Value {
    let blocks: Vec<Value> =
        results.iter().map(|(id, text)| json!({"type": "tool_result", "tool_use_id": id, "content": text})).collect();
    json!({"role": "user", "content": blocks})
}
