//! OpenAI chat completions (also vLLM, Ollama, llama.cpp): `messages` with a
//! system message, `tools` of type `function`, `tool_calls` whose arguments
//! are a JSON string, and `role: tool` results.

use super::{Stop, ToolCall, ToolSpec, Turn, Usage, garbled};
use crate::config::LlmConfig;
use crate::error::LlmError;
use serde_json::{Value, json};

pub fn body(config: &LlmConfig, messages: &[Value], tools: &[ToolSpec], tools_allowed: bool) -> Value {
    let mut body = json!({
        "model": config.model,
        "messages": messages,
        "max_tokens": config.max_tokens_per_request,
    });
    if let Some(t) = config.temperature {
        body["temperature"] = json!(t);
    }
    if !tools.is_empty() {
        let specs: Vec<Value> = tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
        body["tools"] = json!(specs);
        body["tool_choice"] = json!(if tools_allowed { "auto" } else { "none" });
    }
    body
}

pub fn parse(reply: &Value) -> Result<Turn, LlmError> {
    let choice = reply.get("choices").and_then(|c| c.get(0)).ok_or_else(|| garbled("no `choices` in the reply"))?;
    let message = choice.get("message").ok_or_else(|| garbled("no `message` in the first choice"))?;
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        // Some servers send content parts.
        Some(Value::Array(parts)) => parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect(),
        Some(Value::Null) | None => String::new(),
        Some(_) => return Err(garbled("`content` is neither text nor parts")),
    };
    let mut calls = Vec::new();
    for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        let function = call.get("function").ok_or_else(|| garbled("a tool call without `function`"))?;
        let name = function.get("name").and_then(Value::as_str).ok_or_else(|| garbled("a tool call without a name"))?;
        let arguments = match function.get("arguments") {
            Some(Value::String(s)) => serde_json::from_str(s).map_err(|e| format!("arguments are not JSON: {e}")),
            Some(v @ Value::Object(_)) => Ok(v.clone()),
            _ => Err("no arguments".to_owned()),
        };
        let id = call.get("id").and_then(Value::as_str).unwrap_or(name).to_owned();
        calls.push(ToolCall { id, name: name.to_owned(), arguments });
    }
    let stop = match choice.get("finish_reason").and_then(Value::as_str) {
        _ if !calls.is_empty() => Stop::ToolUse,
        Some("stop") | None => Stop::Done,
        Some("length") => Stop::Length,
        Some("tool_calls") => Stop::ToolUse,
        Some(other) => Stop::Other(other.to_owned()),
    };
    let usage = reply.get("usage").map_or(Usage::default(), |u| Usage {
        input: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        output: u.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0),
    });
    let mut assistant = json!({"role": "assistant", "content": text});
    if let Some(tool_calls) = message.get("tool_calls").filter(|_| !calls.is_empty()) {
        assistant["tool_calls"] = tool_calls.clone();
    }
    Ok(Turn { text, calls, stop, usage, assistant })
}

pub fn results(results: &[(String, String)]) -> Vec<Value> {
    results.iter().map(|(id, text)| json!({"role": "tool", "tool_call_id": id, "content": text})).collect()
}
