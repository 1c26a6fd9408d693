//! One proposal's exchange: send, run the model's tool calls and send the
//! results back, until it answers with text.

use crate::client::Client;
use crate::config::{LlmConfig, Prices};
use crate::error::LlmError;
use crate::tools::ToolRunner;
use crate::wire::{Conversation, Stop, ToolSpec, Usage};

/// What a search has spent so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spend {
    pub requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

impl Spend {
    fn add(&mut self, usage: Usage, prices: Option<Prices>) {
        self.requests += 1;
        self.input_tokens += usage.input;
        self.output_tokens += usage.output;
        if let Some(p) = prices {
            self.cost_usd += (usage.input as f64 * p.input_per_mtok + usage.output as f64 * p.output_per_mtok) / 1e6;
        }
    }

    /// Refuses a further request once a cap is reached.
    pub fn check(&self, config: &LlmConfig) -> Result<(), LlmError> {
        let tokens = self.input_tokens + self.output_tokens;
        if tokens >= config.max_total_tokens {
            return Err(LlmError::Budget(format!("{tokens} tokens used, the cap is {}", config.max_total_tokens)));
        }
        match config.max_cost_usd {
            Some(cap) if self.cost_usd >= cap => {
                Err(LlmError::Budget(format!("${:.2} spent, the cap is ${cap:.2}", self.cost_usd)))
            }
            _ => Ok(()),
        }
    }
}

const TOOLS_USED_UP: &str = "error: no tool calls left; answer now with the kernel in one ```cuda code block";

/// The model's final text.
pub async fn converse(
    config: &LlmConfig,
    client: &mut Client,
    spend: &mut Spend,
    mut conversation: Conversation,
    tools: &[ToolSpec],
    mut runner: Option<&mut ToolRunner<'_>>,
) -> Result<String, LlmError> {
    let mut calls_used = 0;
    // Each round either runs a call or is refused one; past this the model is not listening.
    let max_rounds = config.max_tool_calls + 2;
    for _ in 0..=max_rounds {
        spend.check(config)?;
        let body = conversation.body(config, tools, calls_used < config.max_tool_calls);
        let reply = client.post(&body).await?;
        let turn = conversation.parse(&reply)?;
        spend.add(turn.usage, config.prices);
        if turn.stop == Stop::Length {
            return Err(LlmError::Truncated);
        }
        if let (false, Some(runner)) = (turn.calls.is_empty(), runner.as_deref_mut()) {
            let results: Vec<(String, String)> = turn
                .calls
                .iter()
                .map(|call| {
                    let text = if calls_used < config.max_tool_calls {
                        calls_used += 1;
                        runner.run(call)
                    } else {
                        TOOLS_USED_UP.to_owned()
                    };
                    (call.id.clone(), text)
                })
                .collect();
            conversation.push_turn(&turn);
            conversation.push_results(&results);
            continue;
        }
        if turn.text.len() > config.max_reply_bytes {
            return Err(LlmError::TooLong(turn.text.len()));
        }
        return Ok(turn.text);
    }
    Err(LlmError::BadKernel(format!("the model kept calling tools after {} calls", config.max_tool_calls)))
}
