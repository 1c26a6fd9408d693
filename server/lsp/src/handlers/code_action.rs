//! textDocument/codeAction: "Optimize kernel NAME" for the kernel under the cursor, the finished
//! search's "Apply optimized NAME", and on a structural finding's diagnostic its quick fix: the
//! optimizer restricted to the rewrites the finding promises ("Make one warp per row"), or,
//! when none of them applies to the kernel, that action disabled with the reason in words.

use crate::server::Server;
use kernelpro_model::Code;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub async fn code_action(server: &Server, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
    let uri = params.text_document.uri;
    let Some(text) = server.state.docs().get(&uri).map(|d| d.snapshot()) else {
        return Ok(None);
    };
    // The parse runs off the lock and the runtime's workers (see documentSymbol).
    let line = text.pos(params.range.start).line;
    let current = text.text.to_string();
    let diagnostics = params.context.diagnostics;
    let (file, current, fixes) = crate::server::blocking(move || {
        let file = kernelpro_core::source::parse(&current);
        let fixes = quick_fixes(&file, &current, &diagnostics);
        (file, current, fixes)
    })
    .await;
    let mut actions = Vec::new();
    if let Some(k) = file.kernels().find(|k| k.span.contains_line(line))
        && let Some(apply) = crate::jobs::optimize::apply_action(server, &uri, &k.name, &current)
    {
        actions.push(CodeActionOrCommand::CodeAction(apply));
    }
    actions.extend(fixes.into_iter().map(|f| CodeActionOrCommand::CodeAction(f.action(&uri))));
    if let Some(k) = file.kernels().find(|k| k.span.contains_line(line)) {
        actions.push(CodeActionOrCommand::CodeAction(CodeAction {
            title: format!("Optimize kernel {}", k.name),
            kind: Some(CodeActionKind::new("refactor.rewrite.kernelpro.optimize")),
            command: Some(Command {
                title: format!("Optimize kernel {}", k.name),
                command: "kernelpro.optimize".into(),
                arguments: Some(vec![serde_json::json!(uri.as_str()), serde_json::json!(k.name)]),
            }),
            ..Default::default()
        }));
    }
    Ok(Some(actions))
}

/// One structural finding's quick fix for one kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct QuickFix {
    pub kernel: String,
    pub code: Code,
    pub diagnostic: Diagnostic,
    /// The promised rewrites that apply (the search runs only these).
    pub recipes: Vec<&'static str>,
    /// Why none applies, when none does.
    pub disabled: Option<String>,
}

impl QuickFix {
    pub fn title(&self) -> &'static str {
        self.code.fix_title().unwrap_or("Optimize")
    }

    pub fn action(&self, uri: &Uri) -> CodeAction {
        let title = self.title().to_string();
        let mut action = CodeAction {
            title: title.clone(),
            kind: Some(CodeActionKind::QUICKFIX),
            diagnostics: Some(vec![self.diagnostic.clone()]),
            ..Default::default()
        };
        match &self.disabled {
            Some(why) => {
                // Clients that ignore `disabled` run the command instead, which says why.
                action.command = Some(Command {
                    title,
                    command: "kernelpro.explain".into(),
                    arguments: Some(vec![serde_json::json!(format!("{}: {why}", self.title()))]),
                });
                action.disabled = Some(CodeActionDisabled { reason: why.clone() });
            }
            None => {
                action.command = Some(Command {
                    title,
                    command: "kernelpro.optimize".into(),
                    arguments: Some(vec![
                        serde_json::json!(uri.as_str()),
                        serde_json::json!(self.kernel),
                        serde_json::json!(self.recipes),
                    ]),
                });
            }
        }
        action
    }
}

/// The quick fixes of the structural findings among `diagnostics` (one per kernel and code):
/// each runs the finding's promised rewrites that apply, or is disabled with why none does.
pub fn quick_fixes(file: &kernelpro_core::source::SourceFile, text: &str, diagnostics: &[Diagnostic]) -> Vec<QuickFix> {
    let mut out: Vec<QuickFix> = Vec::new();
    for d in diagnostics {
        let Some(code) = d.code.as_ref().and_then(|c| match c {
            NumberOrString::String(s) => Code::parse(s),
            NumberOrString::Number(_) => None,
        }) else {
            continue;
        };
        if code.fix_title().is_none() {
            continue;
        }
        let Some(k) = file.kernels().find(|k| k.span.contains_line(d.range.start.line)) else { continue };
        if out.iter().any(|f| f.kernel == k.name && f.code == code) {
            continue;
        }
        let status = kernelpro_recipes::promise_status(text, &k.name, code);
        let disabled = status.applies.is_empty().then(|| kernelpro_recipes::explain(&status.blocked).join("; "));
        out.push(QuickFix { kernel: k.name.clone(), code, diagnostic: d.clone(), recipes: status.applies, disabled });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diagnostic(code: &str, line: u32) -> Diagnostic {
        Diagnostic {
            range: Range::new(Position::new(line, 2), Position::new(line, 10)),
            code: Some(NumberOrString::String(code.into())),
            message: "each thread walks a long contiguous row alone".into(),
            ..Default::default()
        }
    }

    const ROWS: &str = r#"
// kernelpro: let ROWS = 1024
// kernelpro: let C = 768
// kernelpro: grid = ceil_div(ROWS, 256)
// kernelpro: block = 256
// kernelpro: out = out float[ROWS]
// kernelpro: x = in float[ROWS * C] uniform(-1, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = C
__global__ void row_mean(float* out, const float* x, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float mean = 0.0f;
  for (int c = 0; c < cols; c++) {
    mean += x[r * cols + c];
  }
  out[r] = mean / cols;
}
"#;

    #[test]
    fn a_row_walk_offers_its_promised_rewrites() {
        let file = kernelpro_core::source::parse(ROWS);
        let fixes = quick_fixes(
            &file,
            ROWS,
            &[diagnostic("RowWalk", 14), diagnostic("RowWalk", 14), diagnostic("MissingRestrict", 9)],
        );
        let [fix] = &fixes[..] else { panic!("one quick fix: {fixes:#?}") };
        assert_eq!(fix.title(), "Make one warp per row");
        assert!(fix.recipes.contains(&"WarpUnits"), "{fix:#?}");
        assert_eq!(fix.disabled, None);
        let uri: Uri = "file:///k.cu".parse().unwrap();
        let action = fix.action(&uri);
        assert_eq!(action.kind, Some(CodeActionKind::QUICKFIX));
        let command = action.command.unwrap();
        assert_eq!(command.command, "kernelpro.optimize");
        let args = command.arguments.unwrap();
        assert_eq!(args[1], "row_mean");
        assert!(args[2].as_array().unwrap().iter().any(|n| n == "WarpUnits"));
    }

    #[test]
    fn a_blocked_promise_is_disabled_with_the_reason() {
        let welford = ROWS.replace(
            "    mean += x[r * cols + c];\n",
            "    float v = x[r * cols + c];\n    mean = mean + (v - mean) / (c + 1);\n",
        );
        let file = kernelpro_core::source::parse(&welford);
        let fixes = quick_fixes(&file, &welford, &[diagnostic("RowWalk", 14)]);
        let [fix] = &fixes[..] else { panic!("one quick fix: {fixes:#?}") };
        let why = fix.disabled.as_deref().expect("disabled");
        assert!(
            why.contains(
                "did not apply because the loop-carried value `mean` is updated by a recurrence with no known combine"
            ),
            "{why}"
        );
        let action = fix.action(&"file:///k.cu".parse().unwrap());
        assert_eq!(action.disabled.unwrap().reason, why);
        assert_eq!(action.command.unwrap().command, "kernelpro.explain");
    }
}
