//! The one runner of external work. Every child process KernelPro starts (nvcc,
//! nvdisasm, ncu, the GPU worker, a user's runner command) goes through
//! [`process::run_tool`], and every network call (the LLM) through [`bounded`]:
//! each with a timeout, a cancellation token, an output cap, its process group
//! killed when it ends or its future is dropped, and an error a user can act on.
//!
//! Architecture invariant: this is the bottom crate that starts processes; no
//! other crate spawns one (tests aside). It knows nothing of CUDA or LSP.
// Every `unsafe` block says why it is sound (CI runs clippy with -D warnings).
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod children;
pub mod jobs;
pub mod process;

pub use process::{
    LateInput, OUTPUT_CAP_BYTES, Service, ToolCommand, ToolError, ToolOutput, late_input, run_tool, spawn_service,
};

use std::future::Future;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// API keys no child gets: nvcc, the GPU worker, ncu, a runner and the program
/// under test need none. Only the LLM client reads them.
pub const SECRET_ENV: [&str; 3] = ["KERNELPRO_LLM_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"];

/// Why a [`bounded`] call gave no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Interrupted {
    #[error("{what} did not answer within {} s", .after.as_secs_f64())]
    Timeout { what: String, after: Duration },
    #[error("{what} was cancelled")]
    Cancelled { what: String },
}

/// Runs `work` (a request, a wait) until it ends, `timeout` passes or `cancel`
/// fires, whichever comes first; the future is dropped on the latter two.
pub async fn bounded<T>(
    what: &str,
    timeout: Duration,
    cancel: &CancellationToken,
    work: impl Future<Output = T>,
) -> Result<T, Interrupted> {
    tokio::select! {
        out = work => Ok(out),
        _ = tokio::time::sleep(timeout) => Err(Interrupted::Timeout { what: what.to_string(), after: timeout }),
        _ = cancel.cancelled() => Err(Interrupted::Cancelled { what: what.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bounded_work_ends_on_its_answer_its_timeout_or_its_cancellation() {
        let none = CancellationToken::new();
        assert_eq!(bounded("the echo", Duration::from_secs(5), &none, async { 7 }).await, Ok(7));
        let slow =
            bounded("the LLM endpoint", Duration::from_millis(50), &none, tokio::time::sleep(Duration::from_secs(30)));
        assert_eq!(slow.await.unwrap_err().to_string(), "the LLM endpoint did not answer within 0.05 s");
        let cancel = CancellationToken::new();
        cancel.cancel();
        let cancelled = bounded("the LLM endpoint", Duration::from_secs(30), &cancel, std::future::pending::<()>());
        assert_eq!(cancelled.await, Err(Interrupted::Cancelled { what: "the LLM endpoint".into() }));
    }
}
