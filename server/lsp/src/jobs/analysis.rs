//! The analysis of a document: scheduled by a save, an open or a settings
//! change; tagged with the version it came from; a newer one cancels the older
//! one, and a result is published only if no newer analysis has started since.

use crate::document::path_of;
use crate::jobs::publish::publish;
use crate::server::Server;
use crate::state::State;
use futures::FutureExt;
use kernelpro_core::analysis::{AnalysisError, FileAnalysis};
use kernelpro_session::{JobKind, JobTicket, policy};
use std::sync::Arc;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::*;

/// Start analysing the document's current text, cancelling the one in flight.
pub fn schedule(server: &Server, uri: Uri) {
    schedule_in(&server.state, &server.client, uri);
}

/// Re-analyses every open document (trust or settings changed).
pub fn schedule_all(state: &Arc<State>, client: &Client) {
    let uris: Vec<Uri> = state.docs().keys().cloned().collect();
    for uri in uris {
        schedule_in(state, client, uri);
    }
}

fn schedule_in(state: &Arc<State>, client: &Client, uri: Uri) {
    let cancels_profile = policy::save_cancels_profile(&state.settings());
    // The text and the job start under one lock: a newer save can't slip between them.
    let (text, version, ticket) = {
        let docs = state.docs();
        let Some(doc) = docs.get(&uri) else {
            return;
        };
        // Starting it cancels the analysis in flight for this document.
        let ticket = state.jobs().start(&uri, JobKind::Analyze, String::new(), doc.version);
        // With profile-on-save, a profile of the older text is stale: it stops
        // now (its ncu killed), not when this save's own profile starts.
        if cancels_profile {
            state.jobs().cancel(&uri, Some(JobKind::Profile));
        }
        (doc.text().to_string(), doc.version, ticket)
    };
    let state = state.clone();
    let client = client.clone();
    tokio::spawn(async move {
        // With profile-on-save the profile begins with the save: its runs
        // start and open the GPU while the file compiles, and it measures (and
        // shows itself) once the compile's diagnostics are out without errors
        // (`analyse_and_publish` says when), beside the machine-code step: it
        // needs the compile's cubin, not the SASS.
        let (profile_go, profile_when) = tokio::sync::oneshot::channel::<bool>();
        let ready = profile_when.map(|go| go == Ok(true)).boxed().shared();
        let analysis = async {
            // The progress bar is asked for beside the analysis, not before it: a
            // client slow to answer must not hold up the compile.
            let (progress, ()) = tokio::join!(
                begin_progress(&state, &client, &uri, ticket.id()),
                analyse_and_publish(&state, &client, &uri, &text, version, &ticket, profile_go)
            );
            if let Some(p) = progress {
                p.finish().await;
            }
        };
        let profile = async {
            if policy::profile_begins_with_save(&state.settings()) {
                crate::jobs::profile::run(&state, &client, uri.clone(), None, Some(ready)).await;
            }
        };
        tokio::join!(analysis, profile);
    });
}

/// A progress bar for one analysis, when the client shows them; it ends after
/// the last publish, so clients (and tests) know the analysis has settled.
async fn begin_progress(
    state: &State,
    client: &Client,
    uri: &Uri,
    generation: u64,
) -> Option<tower_lsp_server::OngoingProgress<tower_lsp_server::Unbounded, tower_lsp_server::NotCancellable>> {
    if !state.settings().trusted || !state.work_done_progress.load(std::sync::atomic::Ordering::SeqCst) {
        return None;
    }
    let token = ProgressToken::String(format!("kernelpro-analysis:{}#{generation}", uri.as_str()));
    let created =
        tokio::time::timeout(std::time::Duration::from_secs(2), client.create_work_done_progress(token.clone())).await;
    if !matches!(created, Ok(Ok(()))) {
        return None;
    }
    let name = path_of(uri).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Some(client.progress(token, "KernelPro").with_message(format!("compiling {name}")).begin().await)
}

/// Runs both analysis steps, publishing after each; tells `profile_go`
/// whether a profile follows as soon as that is known: after the compile's
/// publish where the machine-code step follows it, else after the last
/// publish (dropped unsent: no profile).
async fn analyse_and_publish(
    state: &State,
    client: &Client,
    uri: &Uri,
    text: &str,
    version: i32,
    ticket: &JobTicket,
    profile_go: tokio::sync::oneshot::Sender<bool>,
) {
    let mut profile_go = Some(profile_go);
    let token = &ticket.token;
    let settings = state.settings();
    let path = path_of(uri);
    let started = std::time::Instant::now();
    let analysis = if settings.trusted {
        // The compiler's messages and the source tools' findings go out first;
        // SASS and the tools that read it (nvdisasm costs about a compile of a
        // small file) follow in a second publish.
        let first = match state.analyzer.compile_step(&path, text, &settings, token).await {
            Ok(a) => a,
            Err(AnalysisError::Cancelled) => {
                tracing::debug!(file = %path.display(), version, "analysis cancelled by a newer one");
                return;
            }
        };
        if first.complete {
            first
        } else {
            let first = Arc::new(first);
            // Until step two replaces them, the last SASS findings stay on the
            // lines this save left alone: a save never blanks them.
            let previous = state.docs().get(uri).and_then(|d| d.current_analysis().cloned());
            let shown = match previous {
                Some(p) => Arc::new(first.keeping_sass_findings_of(&p)),
                None => first.clone(),
            };
            // nvdisasm starts while the first publish goes out; the second
            // publish waits for both, so it always comes after the first.
            // Once the compile's diagnostics are out, a profile may start.
            let first_out = async {
                let current = publish(state, client, uri, version, ticket, shown, false).await;
                if current
                    && policy::profile_after(&settings, &first)
                    && let Some(go) = profile_go.take()
                {
                    let _ = go.send(true);
                }
                current
            };
            let (current, second) =
                tokio::join!(first_out, state.analyzer.machine_code_step(&first, text, &settings, token));
            if !current {
                return;
            }
            match second {
                Ok(a) => a,
                Err(AnalysisError::Cancelled) => return,
            }
        }
    } else {
        // Structure and specs only, but a parse of a large file all the same: off the runtime's workers.
        let words = settings.words;
        let (text, settings, path) = (text.to_string(), settings.clone(), path.clone());
        // A newer version stops the parse and the budget's walk (`kernelpro_source::budget`).
        let token = token.clone();
        let mut analysis = crate::pool::blocking(move || {
            FileAnalysis::without_tools_within(&path, &text, &settings, &|| token.is_cancelled())
        })
        .await;
        analysis.findings.push(policy::untrusted(words));
        analysis
    };
    let profile_now = policy::profile_after(&settings, &analysis);
    tracing::info!(
        file = %path.display(),
        version,
        ms = started.elapsed().as_millis() as u64,
        findings = analysis.findings.len(),
        trusted = settings.trusted,
        "analysed"
    );
    let current = publish(state, client, uri, version, ticket, Arc::new(analysis), true).await;
    if let Some(go) = profile_go.take() {
        let _ = go.send(current && profile_now);
    }
}
