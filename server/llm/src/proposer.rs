//! The optimizer's LLM proposer.
//!
//! `Proposer::propose` is synchronous (the search loop is plain Rust), so the
//! proposer owns a small current-thread tokio runtime and blocks on the async
//! reqwest client. That keeps one HTTP stack (no `blocking` feature, which
//! would start its own runtime thread per client) and makes cancellation and
//! timeouts plain tokio. As with `reqwest::blocking`, `propose` must be called
//! from a thread that is not running async tasks (a plain or `spawn_blocking`
//! thread), which is where the search runs.

use crate::client::Client;
use crate::config::LlmConfig;
use crate::conversation::{Spend, converse};
use crate::directives::IncludePolicy;
use crate::error::LlmError;
use crate::prompt;
use crate::prompts::Templates;
use crate::reply::kernel_block;
use crate::splice::KernelSite;
use crate::tools::{ToolRunner, specs};
use crate::wire::Conversation;
use kernelpro_cutlass::Index;
use kernelpro_search::{NodeId, Proposal, ProposeContext, Proposer};
use std::sync::Arc;

/// A proposal that did not produce a candidate, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub parent: NodeId,
    pub error: LlmError,
}

pub struct LlmProposer {
    config: LlmConfig,
    kernel: String,
    cutlass: Option<Arc<Index>>,
    templates: Templates,
    runtime: tokio::runtime::Runtime,
    client: Client,
    spend: Spend,
    failures: Vec<Failure>,
    includes: IncludePolicy,
    log: FailureLog,
}

impl std::fmt::Debug for LlmProposer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmProposer")
            .field("config", &self.config)
            .field("kernel", &self.kernel)
            .field("cutlass", &self.cutlass.as_ref().map(|i| i.root().to_path_buf()))
            .field("spend", &self.spend)
            .field("failures", &self.failures)
            .finish()
    }
}

impl LlmProposer {
    /// A proposer for kernel `kernel_name`; with `cutlass`, the model gets
    /// the `search_cutlass` and `read_cutlass_file` tools.
    pub fn new(
        config: LlmConfig,
        kernel_name: impl Into<String>,
        cutlass: Option<Arc<Index>>,
    ) -> Result<LlmProposer, LlmError> {
        let templates = Templates::load(config.prompts_dir.as_deref())
            .map_err(|e| LlmError::Config(format!("reading the prompt templates: {e}")))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| LlmError::Config(format!("starting the HTTP runtime: {e}")))?;
        // reqwest's client registers with the runtime it is built in.
        let client = runtime.block_on(async { Client::new(&config) })?;
        Ok(LlmProposer {
            config,
            kernel: kernel_name.into(),
            cutlass,
            templates,
            runtime,
            client,
            spend: Spend::default(),
            failures: Vec::new(),
            includes: IncludePolicy::default(),
            log: FailureLog::default(),
        })
    }

    /// A request in flight, or a pause before a retry, ends when `cancel` fires.
    pub fn with_cancel(mut self, cancel: tokio_util::sync::CancellationToken) -> Self {
        self.client.set_cancel(cancel);
        self
    }

    /// Where the candidates' new `#include`s may lead (by default nowhere but
    /// the C++ standard headers): the kernel's file, the compile's search
    /// directories and the toolkit's and CUTLASS's include directories.
    pub fn with_includes(mut self, includes: IncludePolicy) -> Self {
        self.includes = includes;
        self
    }

    /// A handle on this proposer's failures that stays readable after the
    /// proposer is boxed and handed to the search.
    pub fn failure_log(&self) -> FailureLog {
        self.log.clone()
    }

    /// One rewrite of the node in `ctx`, or why there is none. Nothing is sent
    /// unless the config is enabled and the budget allows it.
    pub fn propose_one(&mut self, ctx: &ProposeContext) -> Result<Proposal, LlmError> {
        if !self.config.enabled {
            return Err(LlmError::Disabled);
        }
        self.spend.check(&self.config)?;
        let site = KernelSite::find(ctx.source, &self.kernel)?;
        let tools = if self.cutlass.is_some() { specs() } else { Vec::new() };
        let (system, user) =
            prompt::messages(&self.templates, &self.config, &self.kernel, &site, ctx, !tools.is_empty());
        let conversation = Conversation::new(self.config.provider, &system, &user);
        let mut runner = self.cutlass.as_deref().map(|index| ToolRunner::new(index, self.config.max_tool_result_bytes));
        let text = self.runtime.block_on(converse(
            &self.config,
            &mut self.client,
            &mut self.spend,
            conversation,
            &tools,
            runner.as_mut(),
        ))?;
        let source = site.splice(&self.kernel, kernel_block(&text)?)?;
        crate::directives::check_candidate(ctx.source, &source, &self.includes).map_err(LlmError::BadKernel)?;
        let mut proposal = Proposal::new(source, "llm");
        if let Some(note) = runner.as_ref().and_then(note) {
            proposal = proposal.with_note(note);
        }
        Ok(proposal)
    }

    /// Every failed proposal so far, oldest first.
    pub fn failures(&self) -> &[Failure] {
        &self.failures
    }

    /// Requests, tokens and cost so far.
    pub fn spend(&self) -> Spend {
        self.spend
    }

    /// Pauses taken before retries so far.
    pub fn retry_waits(&self) -> &[std::time::Duration] {
        &self.client.waits
    }
}

/// What the model looked up, for the search memory's notes.
fn note(runner: &ToolRunner) -> Option<String> {
    let mut parts = Vec::new();
    if !runner.files_read.is_empty() {
        parts.push(format!("CUTLASS files read: {}", runner.files_read.iter().cloned().collect::<Vec<_>>().join(", ")));
    }
    if !runner.queries.is_empty() {
        parts.push(format!("CUTLASS searches: {}", runner.queries.join(", ")));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The LLM's failures in words, shared with whoever shows them to the user
/// (the optimizer's result notes): every failure is counted, the first few
/// distinct messages kept.
#[derive(Debug, Clone, Default)]
pub struct FailureLog(Arc<std::sync::Mutex<(usize, Vec<String>)>>);

impl FailureLog {
    const KEPT: usize = 3;

    fn push(&self, error: &LlmError) {
        let mut inner = self.0.lock().unwrap_or_else(|e| e.into_inner());
        inner.0 += 1;
        let text = error.to_string();
        if inner.1.len() < Self::KEPT && !inner.1.contains(&text) {
            inner.1.push(text);
        }
    }

    /// One note for the user, or `None` when nothing failed: `the LLM
    /// proposer failed 3 times: HTTP 401 from the LLM endpoint: ...`.
    pub fn summary(&self) -> Option<String> {
        let inner = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (count, messages) = &*inner;
        (*count > 0).then(|| {
            let times = if *count == 1 { "once".to_owned() } else { format!("{count} times") };
            format!("the LLM proposer failed {times}: {}", messages.join("; "))
        })
    }
}

impl Proposer for LlmProposer {
    fn name(&self) -> &str {
        "llm"
    }

    fn propose(&mut self, ctx: &ProposeContext) -> Vec<Proposal> {
        let mut proposals = Vec::new();
        for _ in 0..ctx.wanted {
            match self.propose_one(ctx) {
                Ok(p) => proposals.push(p),
                Err(error) => {
                    let stop = matches!(error, LlmError::Disabled | LlmError::Budget(_) | LlmError::Config(_));
                    tracing::warn!(%error, "the LLM proposal failed");
                    self.log.push(&error);
                    self.failures.push(Failure { parent: ctx.parent, error });
                    if stop {
                        break;
                    }
                }
            }
        }
        proposals
    }
}
