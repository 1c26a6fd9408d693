//! The one seam between core data and LSP types.

use crate::document::Document;
use kernelpro_model::{Finding, Severity};
use tower_lsp_server::ls_types::{
    CodeDescription, Diagnostic, DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString, Position,
    Range, Uri,
};

pub fn severity(s: Severity) -> DiagnosticSeverity {
    match s {
        Severity::Error => DiagnosticSeverity::ERROR,
        Severity::Warning => DiagnosticSeverity::WARNING,
        Severity::Information => DiagnosticSeverity::INFORMATION,
        Severity::Hint => DiagnosticSeverity::HINT,
    }
}

/// A finding's documentation as a link that opens: a web address as is, a
/// path in the KernelPro tree as a file: URI where the docs are installed.
fn doc_href(doc: &str) -> Option<Uri> {
    if doc.starts_with("https://") || doc.starts_with("http://") {
        return doc.parse().ok();
    }
    let (file, anchor) = kernelpro_config::docs::resolve(doc)?;
    let uri = Uri::from_file_path(&file)?;
    match anchor {
        Some(a) => format!("{}#{a}", uri.as_str()).parse().ok(),
        None => Some(uri),
    }
}

/// A finding as a diagnostic. `doc` is the document the range refers to, when open;
/// other files (headers) get their byte columns as is.
pub fn diagnostic(f: &Finding, doc: Option<&Document>) -> Diagnostic {
    let range = match doc {
        Some(d) => d.range(f.span),
        None => Range::new(
            Position::new(f.span.start.line, 0),
            Position::new(f.span.end.line, if f.span.end.col == u32::MAX { 1000 } else { f.span.end.col }),
        ),
    };
    let mut message = f.message.clone();
    if let Some(g) = &f.guidance {
        message.push_str("\n→ ");
        message.push_str(g);
    }
    let related: Vec<DiagnosticRelatedInformation> = f
        .related
        .iter()
        .filter_map(|r| {
            let uri = Uri::from_file_path(&r.file)?;
            let range = Range::new(Position::new(r.span.start.line, 0), Position::new(r.span.start.line, 0));
            Some(DiagnosticRelatedInformation { location: Location { uri, range }, message: r.message.clone() })
        })
        .collect();
    Diagnostic {
        range,
        severity: Some(severity(f.severity)),
        code: f.code.clone().map(NumberOrString::String),
        code_description: f.doc_url.as_deref().and_then(doc_href).map(|href| CodeDescription { href }),
        source: Some(f.source.clone()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        tags: None,
        data: f.kernel.as_ref().map(|k| serde_json::json!({ "kernel": k })),
    }
}

/// A finding the session shows (`kernelpro_session::views::Shown`) as a
/// diagnostic: its note after the message. `doc` is the open document whose
/// current text a `current` span is on.
pub fn shown(s: &kernelpro_session::views::Shown, doc: Option<&Document>) -> Diagnostic {
    let mut d = diagnostic(&s.finding, doc.filter(|_| s.current));
    if let Some(note) = s.note {
        d.message.push_str(note);
    }
    d
}

/// A lens the session shows, at its place in `doc`.
pub fn lens(l: kernelpro_session::views::LensView, uri: &Uri, doc: &Document) -> tower_lsp_server::ls_types::CodeLens {
    use kernelpro_session::views::LensCommand;
    let (command, arguments) = match l.command {
        LensCommand::None => (String::new(), None),
        LensCommand::Explain(why) => ("kernelpro.explain".to_string(), Some(vec![serde_json::json!(why)])),
        LensCommand::Profile => ("kernelpro.profile".to_string(), Some(vec![serde_json::json!(uri.as_str())])),
        LensCommand::Optimize { kernel } => {
            ("kernelpro.optimize".to_string(), Some(vec![serde_json::json!(uri.as_str()), serde_json::json!(kernel)]))
        }
    };
    tower_lsp_server::ls_types::CodeLens {
        range: doc.range(l.span),
        command: Some(tower_lsp_server::ls_types::Command { title: l.title, command, arguments }),
        data: None,
    }
}

/// The session's apply edit of a finished search as a code action: the edit,
/// or the action disabled with why (clients that ignore `disabled` run the
/// command instead, which says why).
pub fn apply_action(view: kernelpro_session::views::ApplyView, uri: &Uri) -> tower_lsp_server::ls_types::CodeAction {
    use tower_lsp_server::ls_types::{
        CodeAction, CodeActionDisabled, CodeActionKind, Command, TextEdit, WorkspaceEdit,
    };
    let mut action = CodeAction {
        title: view.title.clone(),
        kind: Some(CodeActionKind::REFACTOR_REWRITE),
        is_preferred: Some(true),
        ..Default::default()
    };
    let refusal = view.refusal();
    match view.edits {
        Err(why) => {
            action.command = Some(Command {
                title: action.title.clone(),
                command: "kernelpro.explain".into(),
                arguments: Some(vec![serde_json::json!(refusal.unwrap_or_default())]),
            });
            action.disabled = Some(CodeActionDisabled { reason: why.to_string() });
        }
        Ok(edits) => {
            let edits = edits
                .into_iter()
                .map(|e| TextEdit {
                    range: Range::new(Position::new(e.start_line, 0), Position::new(e.end_line, 0)),
                    new_text: e.text,
                })
                .collect();
            let changes = [(uri.clone(), edits)].into_iter().collect();
            action.edit = Some(WorkspaceEdit { changes: Some(changes), ..Default::default() });
        }
    }
    action
}
