//! `kernelpro.optimize`: runs the search with cancellable work-done progress,
//! then keeps the result so the code action can offer it as one edit of the
//! kernel. The file is changed only if the user applies that action.

use crate::editor::Editor;
use crate::server::Server;
use crate::state::StoredOptimization;
use kernelpro_optimize::{OptimizeRequest, optimize};
use kernelpro_search::Strategy;
use kernelpro_session::JobKind;
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
    if !settings.trusted {
        return Err(Error::invalid_params("KernelPro does not compile or run code in an untrusted workspace"));
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
    if let Some(r) = server.state.readiness()
        && let Some(why) = r.optimize.as_deref()
    {
        let message = kernelpro_core::lens::because("Optimize", why, &r.optimize_fix);
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
            let message = result_message(&outcome, cancelled, Editor::of(&settings.words));
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
                let mut all = server.state.optimizations.lock().unwrap_or_else(|p| p.into_inner());
                let list = all.entry(uri).or_default();
                list.retain(|o| o.outcome.kernel != kernel);
                list.push(StoredOptimization { version, original: text, outcome });
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

/// The finished search in words. A cancelled run says so first; what it
/// found before the cancel is offered as its own sentence, never as if the
/// run had finished.
pub fn result_message(outcome: &kernelpro_optimize::OptimizeOutcome, cancelled: bool, editor: Editor) -> String {
    let kernel = &outcome.kernel;
    let apply = editor.words().code_action_hint();
    let mut message = match (cancelled, outcome.edit.is_some()) {
        (false, true) => format!("{} — apply it with {apply}.", outcome.title),
        (false, false) => format!("{}.", outcome.title),
        (true, true) => format!(
            "Optimize {kernel} was cancelled after {}. The best verified version so far is {:.2}x faster: apply it with {apply} if you want it.",
            evaluations(outcome.evaluations),
            outcome.speedup
        ),
        (true, false) => format!(
            "Optimize {kernel} was cancelled after {}, before any verified faster version was found.",
            evaluations(outcome.evaluations)
        ),
    };
    // What the user must know before applying it (a new launch, an LLM that was not used).
    // Neovim stops at a hit-enter prompt for a message wider than its command line: there
    // the notes stay in the kernel's hover, and the message says where.
    let (_, notes) = split_notes(&outcome.notes);
    if editor == Editor::Neovim && !notes.is_empty() {
        message.push_str(" Notes (what changes, how it was verified): hover the kernel.");
        return message;
    }
    for note in notes {
        message.push(' ');
        message.push_str(note);
    }
    message
}

/// A result's notes: those about the LLM (shown as warnings of their own) and the others.
fn split_notes(notes: &[String]) -> (Vec<&String>, Vec<&String>) {
    notes.iter().partition(|n| n.contains("LLM"))
}

/// The notes about the LLM: why it was not used, a request that failed or was refused.
pub fn llm_notes(notes: &[String]) -> Vec<String> {
    split_notes(notes).0.into_iter().cloned().collect()
}

fn evaluations(n: usize) -> String {
    if n == 1 { "1 evaluation".into() } else { format!("{n} evaluations") }
}

pub fn token_key(token: &ProgressToken) -> String {
    match token {
        ProgressToken::String(s) => s.clone(),
        ProgressToken::Number(n) => n.to_string(),
    }
}

/// `window/workDoneProgress/cancel`: the user pressed Cancel on the progress bar.
pub fn cancel(server: &Server, token: &ProgressToken) {
    if let Some(job) = server.state.progress_cancels.lock().unwrap_or_else(|p| p.into_inner()).get(&token_key(token)) {
        job.cancel();
    }
}

/// The code action that applies a finished search, if one exists for `kernel`.
/// "Apply optimized K" while the lines the search's edit replaces are still
/// in the document unchanged (wherever they moved: an edit elsewhere or an undo
/// keeps it); disabled with the reason otherwise.
pub fn apply_action(server: &Server, uri: &Uri, kernel: &str, current_text: &str) -> Option<CodeAction> {
    let all = server.state.optimizations.lock().unwrap_or_else(|p| p.into_inner());
    let stored = all.get(uri)?.iter().find(|o| o.outcome.kernel == kernel)?;
    stored.outcome.edit.as_ref()?;
    let mut action = CodeAction {
        title: stored.outcome.title.clone(),
        kind: Some(CodeActionKind::REFACTOR_REWRITE),
        is_preferred: Some(true),
        ..Default::default()
    };
    // The kernel's region, and the file's launch sites when the launch changed.
    let edits = match kernelpro_session::rebase(&stored.original, &stored.outcome.line_edits(), current_text) {
        Ok(edits) => edits,
        Err(why) => {
            let reason = format!("the optimized {kernel} cannot be applied: {why}");
            // Clients that ignore `disabled` run the command instead, which says why.
            action.command = Some(Command {
                title: action.title.clone(),
                command: "kernelpro.explain".into(),
                arguments: Some(vec![serde_json::json!(reason)]),
            });
            action.disabled = Some(CodeActionDisabled { reason: why.to_string() });
            return Some(action);
        }
    };
    let edits = edits
        .into_iter()
        .map(|e| TextEdit {
            range: Range::new(Position::new(e.start_line, 0), Position::new(e.end_line, 0)),
            new_text: e.text,
        })
        .collect();
    let changes = [(uri.clone(), edits)].into_iter().collect();
    action.edit = Some(WorkspaceEdit { changes: Some(changes), ..Default::default() });
    Some(action)
}

/// The last search's notes, best path and a unified diff of its result, for
/// the kernel's hover; once the kernel has changed so that it no longer
/// applies (or was applied), one line that says so instead of a stale offer.
pub fn diff_markdown(server: &Server, uri: &Uri, kernel: &str, current_text: &str) -> Option<String> {
    let all = server.state.optimizations.lock().unwrap_or_else(|p| p.into_inner());
    let stored = all.get(uri)?.iter().find(|o| o.outcome.kernel == kernel)?;
    let new_text = stored.outcome.new_text.as_ref()?;
    if let Some(edit) = &stored.outcome.edit
        && let Err(why) = kernelpro_session::rebase(&stored.original, std::slice::from_ref(edit), current_text)
    {
        let applied = current_text.contains(edit.text.as_str());
        return Some(if applied {
            let title = &stored.outcome.title;
            let gain = title.strip_prefix(&format!("Apply optimized {kernel}: ")).unwrap_or(title);
            format!("The optimized {kernel} is applied ({gain}).\n")
        } else {
            format!("The last optimize result for {kernel} no longer applies: {why}. Run Optimize again.\n")
        });
    }
    let diff = similar::TextDiff::from_lines(stored.original.as_str(), new_text.as_str());
    let path: String = stored.outcome.steps.iter().enumerate().map(|(i, st)| format!("{}. {st}\n", i + 1)).collect();
    let notes: String = stored.outcome.notes.iter().map(|n| format!("{n}\n\n")).collect();
    Some(format!(
        "**{}**\n\n{notes}{path}```diff\n{}```\n",
        stored.outcome.title,
        diff.unified_diff().context_radius(2)
    ))
}

/// How far a search is, in percent: the further of evaluations over the
/// budget and time over the limit (`time`, a fraction), below 100 until it ends.
pub fn progress_percent(done: usize, max: usize, time: f64) -> u32 {
    let by_evaluations = (done * 100).checked_div(max).unwrap_or(0) as f64;
    by_evaluations.max(time * 100.0).clamp(0.0, 99.0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_moves_with_time_when_the_budget_is_far() {
        assert_eq!(progress_percent(4, 500, 0.0), 0);
        assert_eq!(progress_percent(4, 500, 0.25), 25);
        assert_eq!(progress_percent(30, 60, 0.1), 50);
        assert_eq!(progress_percent(60, 60, 0.1), 99);
    }

    #[test]
    fn llm_failures_are_told_apart_from_the_other_notes() {
        let notes = vec![
            "the launch changed: block 256 -> 128".to_string(),
            "the LLM proposer is not used: its request was refused (a redirect to another host)".to_string(),
        ];
        assert_eq!(llm_notes(&notes), [notes[1].clone()]);
        let (llm, other) = split_notes(&notes);
        assert_eq!((llm.len(), other), (1, vec![&notes[0]]));
    }
}
