//! Hover text (Markdown) for a position: a kernel's resources on its name,
//! the SASS of a source line elsewhere.

use crate::analysis::FileAnalysis;
use kernelpro_model::Pos;

pub fn hover_markdown(analysis: &FileAnalysis, pos: Pos) -> Option<String> {
    if let Some(k) = analysis.source.kernels().find(|k| k.name_span.contains_line(pos.line) && k.name_span.start.col <= pos.col && pos.col <= k.name_span.end.col) {
        return analysis.kernel_hover(&k.name);
    }
    analysis.line_hover(pos.line)
}
