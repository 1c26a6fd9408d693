//! `kernelpro.optimize`: runs the search with cancellable work-done progress,
//! then keeps the result so the code action can offer it as one edit of the
//! kernel. The file is changed only if the user applies that action.

use crate::server::Server;
use crate::state::State;
use kernelpro_optimize::{OptimizeRequest, optimize};
use kernelpro_search::Strategy;
use kernelpro_session::optimizations::{self, llm_notes, progress_percent, result_message};
use kernelpro_session::policy::{self, Refusal};
use kernelpro_session::{JobKind, StoredOptimization};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;

/// `recipes`: only these built-in recipes (a structural finding's quick fix runs its promised rewrites).
pub async fn start(
    server: &Server,
    uri: Uri,
    kernel: String,
    recipes: Option<Vec<String>>,
    token: Option<ProgressToken>,
) -> Result<LSPAny> {
    let settings = server.state.settings();
    if let Err(Refusal::Untrusted(why)) = policy::optimize_refusal(&settings, None) {
        return Err(Error::invalid_params(why));
    }
    let (text, version) = {
        let docs = server.state.docs();
        let doc = docs.get(&uri).ok_or_else(|| Error::invalid_params("the document is not open"))?;
        (doc.text().to_string(), doc.version)
    };
    if kernelpro_source::parse(&text).kernel(&kernel).is_none() {
        return Err(Error::invalid_params(format!("no __global__ function named `{kernel}` in this file")));
    }
    // What doctor found missing (no compiler, no GPU for a GPU evaluator): said
    // at once, in those words, rather than after a failed start.
    if let Err(why) = policy::optimize_refusal(&settings, server.state.readiness().as_ref()) {
        let message = why.to_string();
        return Err(Error {
            code: tower_lsp_server::jsonrpc::ErrorCode::InvalidRequest,
            message: message.into(),
            data: None,
        });
    }
    // A client that gives its own token shows the progress and renders the
    // reply's `message` itself; the others are also told by window/showMessage.
    let client_renders = token.is_some();
    let token = match token {
        Some(t) => t,
        None => {
            let t = ProgressToken::String(format!("kernelpro-optimize-{kernel}-{version}-{}", std::process::id()));
            // Clients without progress support simply see no bar.
            let _ = server.client.create_work_done_progress(t.clone()).await;
            t
        }
    };
    // One search per kernel: a new one cancels the running one; the progress's
    // Cancel button, didClose and shutdown fire the job's token.
    let ticket = server.state.jobs().start(&uri, JobKind::Optimize, kernel.clone(), version);
    let key = token_key(&token);
    server.state.progress_cancels.lock().unwrap_or_else(|p| p.into_inner()).insert(key.clone(), ticket.token.clone());
    // A dropped request future (`$/cancelRequest`) cancels the job too.
    let _guard = ticket.token.clone().drop_guard();
    let cancel = ticket.token.clone();
    let progress = server
        .client
        .progress(token, format!("Optimizing {kernel}"))
        .with_percentage(0)
        .with_cancel_button()
        .begin()
        .await;

    let req = OptimizeRequest {
        path: crate::document::path_of(&uri),
        text: text.clone(),
        kernel: kernel.clone(),
        settings: settings.clone(),
        strategy: Strategy::Mcts,
        seed: 0,
        exe: std::env::current_exe().unwrap_or_else(|_| "kernelpro".into()),
        llm_key: server
            .state
            .llm_key
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .or_else(kernelpro_llm::ApiKey::from_env),
        profile_import: None,
        recipes,
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, usize, f64)>();
    let handle = tokio::runtime::Handle::current();
    let flag = cancel.clone();
    let search = tokio::task::spawn_blocking(move || {
        optimize(&req, handle, flag, |p| {
            let _ = tx.send((p.evaluations, p.max_evaluations, p.best_speedup));
        })
    });
    // The search ends at its evaluation budget or its time limit, whichever
    // comes first: the percentage is the further of the two, so it moves
    // even when each evaluation is slow or the budget is far above what the
    // search will try (it stayed at 0% with `budget = 500`).
    let started = std::time::Instant::now();
    let limit = settings.optimize.time_secs.max(1) as f64;
    while let Some((done, max, best)) = rx.recv().await {
        let pct = progress_percent(done, max, started.elapsed().as_secs_f64() / limit);
        progress.report_with_message(format!("{done}/{max} evaluations · best {best:.2}x"), pct, None).await;
    }
    let result = search.await.map_err(|e| format!("the search failed: {e}")).and_then(|r| r.map_err(|e| e.to_string()));
    server.state.progress_cancels.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
    // A search replaced by a newer one of the same kernel, or whose document
    // closed, keeps nothing: only the latest search's result is offered.
    let latest = {
        let mut jobs = server.state.jobs();
        let latest = jobs.is_latest(&uri, JobKind::Optimize, &kernel, &ticket);
        jobs.finish(&uri, JobKind::Optimize, &kernel, &ticket);
        latest
    };
    match result {
        // A cancel before anything was measured (the original's own compile
        // or run stopped) is still a cancel, not a failure.
        Err(_) if cancel.is_cancelled() => {
            progress.finish_with_message("cancelled".to_string()).await;
            let message = format!("Optimize {kernel} was cancelled before any candidate was measured.");
            if !client_renders {
                server.client.show_message(MessageType::INFO, message.clone()).await;
            }
            Ok(serde_json::json!({
                "kernel": kernel,
                "applicable": false,
                "cancelled": true,
                "evaluations": 0,
                "message": message,
            }))
        }
        Err(e) => {
            tracing::warn!(kernel = %kernel, "optimize failed: {e}");
            let e = settings.words.name_settings(&e);
            progress.finish_with_message(format!("failed: {e}")).await;
            Err(Error { code: tower_lsp_server::jsonrpc::ErrorCode::InternalError, message: e.into(), data: None })
        }
        Ok(outcome) => {
            let cancelled = cancel.is_cancelled();
            tracing::info!(kernel = %kernel, evaluations = outcome.evaluations, speedup = outcome.speedup, cancelled, stop = %outcome.stop, "optimize finished");
            let message = result_message(&outcome, cancelled, settings.words);
            let notes = outcome.notes.clone();
            progress.finish_with_message(if cancelled { "cancelled".to_string() } else { outcome.title.clone() }).await;
            let reply = serde_json::json!({
                "kernel": outcome.kernel,
                "title": outcome.title,
                "speedup": outcome.speedup,
                "applicable": outcome.edit.is_some(),
                "cancelled": cancelled,
                "evaluations": outcome.evaluations,
                "message": message,
                "warnings": llm_notes(&notes),
            });
            if latest {
                let found = StoredOptimization { version, original: text, outcome };
                optimizations::store(server.state.optimizations().entry(uri).or_default(), found);
            }
            if !client_renders {
                server.client.show_message(MessageType::INFO, message).await;
            }
            // What went wrong with the LLM (not used, a request refused or
            // failed) is a warning of its own, in every editor: it is no part
            // of the message above, and Neovim keeps the other notes in the hover.
            for note in llm_notes(&notes) {
                server.client.show_message(MessageType::WARNING, format!("KernelPro: optimize {kernel}: {note}")).await;
            }
            Ok(reply)
        }
    }
}

pub fn token_key(token: &ProgressToken) -> String {
    match token {
        ProgressToken::String(s) => s.clone(),
        ProgressToken::Number(n) => n.to_string(),
    }
}

/// `window/workDoneProgress/cancel`: the user pressed Cancel on the progress bar.
pub fn cancel(state: &State, token: &ProgressToken) {
    if let Some(job) = state.progress_cancels.lock().unwrap_or_else(|p| p.into_inner()).get(&token_key(token)) {
        job.cancel();
    }
}
