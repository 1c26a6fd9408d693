//! workspace/executeCommand: showSass, doctor, profile, optimize, installCuda, explain.

use crate::server::Server;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;

pub async fn execute_command(server: &Server, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
    let args = params.arguments;
    match params.command.as_str() {
        "kernelpro.showSass" => {
            let uri = uri_arg(&args, 0)?;
            let line = args
                .get(1)
                .and_then(|v| v.as_u64())
                .ok_or_else(|| Error::invalid_params("kernelpro.showSass needs [uri, line]"))?
                as u32;
            // The line as it was when analysed (unsaved edits move lines), as the hover does.
            let (analysis, analysed) = {
                let docs = server.state.docs();
                let doc = docs.get(&uri);
                (doc.and_then(|d| d.current_analysis()).cloned(), doc.map_or(Some(line), |d| d.analysed_line(line)))
            };
            let text = kernelpro_session::views::sass_listing(analysis.as_deref(), analysed, line);
            Ok(Some(serde_json::json!(text)))
        }
        "kernelpro.optimize" => {
            let uri = uri_arg(&args, 0)?;
            let kernel = args
                .get(1)
                .and_then(|v| v.as_str())
                .ok_or_else(|| Error::invalid_params("kernelpro.optimize needs [uri, kernel]"))?
                .to_string();
            // A finding's quick fix names the recipes it promises: `[uri, kernel, [names]]`.
            let recipes = args.get(2).and_then(|v| serde_json::from_value::<Vec<String>>(v.clone()).ok());
            crate::jobs::optimize::start(server, uri, kernel, recipes, params.work_done_progress_params.work_done_token)
                .await
                .map(Some)
        }
        "kernelpro.profile" => {
            let uri = uri_arg(&args, 0)?;
            Ok(Some(
                crate::jobs::profile::run(
                    &server.state,
                    &server.client,
                    uri,
                    params.work_done_progress_params.work_done_token,
                    None,
                )
                .await,
            ))
        }
        "kernelpro.installCuda" => {
            // Only on the user's click: the editor names the folder (its own storage, not the workspace).
            let dir = args
                .first()
                .and_then(|v| v.as_str())
                .map(std::path::PathBuf::from)
                .ok_or_else(|| Error::invalid_params("kernelpro.installCuda needs [folder]"))?;
            // It runs Python and pip: only in a trusted workspace, never in a folder of the workspace.
            let settings = server.state.settings();
            if !settings.trusted {
                return Err(Error::invalid_params("KernelPro does not run programs in an untrusted workspace"));
            }
            let absolute = std::path::absolute(&dir).unwrap_or_else(|_| dir.clone());
            if !absolute.is_absolute() || settings.project_roots.iter().any(|root| absolute.starts_with(root)) {
                return Err(Error::invalid_params(
                    "kernelpro.installCuda installs into the editor's own storage, not a workspace folder",
                ));
            }
            let token = tokio_util::sync::CancellationToken::new();
            match kernelpro_toolchain::install::install_cuda(&dir, &[], &token).await {
                Ok(nvcc) => {
                    tracing::info!(nvcc = %nvcc.display(), "installed the CUDA compiler");
                    // Use it at once; the editor also stores it in its `nvcc` setting.
                    let mut settings = server.state.settings();
                    settings.nvcc = Some(nvcc.clone());
                    server.state.set_settings(settings);
                    crate::jobs::analysis::schedule_all(&server.state, &server.client);
                    crate::state::refresh_readiness(&server.state, &server.client);
                    Ok(Some(
                        serde_json::json!({"nvcc": nvcc, "message": format!("The CUDA compiler is installed ({}); open files are being analysed again.", nvcc.display())}),
                    ))
                }
                Err(e) => Ok(Some(
                    serde_json::json!({"error": e.to_string(), "message": format!("Installing the CUDA compiler failed: {e}")}),
                )),
            }
        }
        // A disabled code action's command: a client that ignores `disabled`
        // (Neovim 0.11 lists such actions) still tells the user why it cannot apply.
        "kernelpro.explain" => {
            let why = args.first().and_then(|v| v.as_str()).unwrap_or("this action cannot be applied now").to_string();
            server.client.show_message(MessageType::WARNING, format!("KernelPro: {why}")).await;
            Ok(Some(serde_json::json!({ "message": why })))
        }
        // The editors ask again when a setting changes or a tool is installed: the lenses follow.
        "kernelpro.doctor" => {
            let (report, changed) = server.state.refresh_readiness(true).await;
            if changed && server.state.code_lens_refresh.load(std::sync::atomic::Ordering::SeqCst) {
                let client = server.client.clone();
                tokio::spawn(async move {
                    let _ = client.code_lens_refresh().await;
                });
            }
            Ok(Some(serde_json::json!(report.to_text())))
        }
        other => Err(Error::invalid_params(format!("unknown or not yet available command: {other}"))),
    }
}

fn uri_arg(args: &[LSPAny], i: usize) -> Result<Uri> {
    args.get(i)
        .and_then(|v| v.as_str())
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::invalid_params("the first argument must be the document URI"))
}
