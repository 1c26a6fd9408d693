//! workspace/executeCommand: showSass, doctor, profile, optimize.

use crate::server::Server;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;

pub async fn execute_command(server: &Server, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
    let args = params.arguments;
    match params.command.as_str() {
        "kernelpro.showSass" => {
            let uri = uri_arg(&args, 0)?;
            let line = args.get(1).and_then(|v| v.as_u64()).ok_or_else(|| Error::invalid_params("kernelpro.showSass needs [uri, line]"))? as u32;
            let docs = server.state.docs();
            let analysis = docs.get(&uri).and_then(|d| d.current_analysis()).cloned();
            drop(docs);
            let text = analysis
                .as_ref()
                .and_then(|a| kernelpro_core::hover::sass_listing(a, line))
                .unwrap_or_else(|| kernelpro_core::hover::no_sass(analysis.as_deref(), line));
            Ok(Some(serde_json::json!(text)))
        }
        "kernelpro.optimize" => {
            let uri = uri_arg(&args, 0)?;
            let kernel = args.get(1).and_then(|v| v.as_str()).ok_or_else(|| Error::invalid_params("kernelpro.optimize needs [uri, kernel]"))?.to_string();
            crate::jobs::optimize::start(server, uri, kernel, params.work_done_progress_params.work_done_token).await.map(Some)
        }
        "kernelpro.profile" => {
            let uri = uri_arg(&args, 0)?;
            Ok(Some(crate::jobs::profile::run(&server.state, &server.client, uri, params.work_done_progress_params.work_done_token).await))
        }
        "kernelpro.doctor" => Ok(Some(serde_json::json!(kernelpro_core::doctor::report(&server.state.settings()).await.to_text()))),
        other => Err(Error::invalid_params(format!("unknown or not yet available command: {other}"))),
    }
}

fn uri_arg(args: &[LSPAny], i: usize) -> Result<Uri> {
    args.get(i).and_then(|v| v.as_str()).and_then(|s| s.parse().ok()).ok_or_else(|| Error::invalid_params("the first argument must be the document URI"))
}
