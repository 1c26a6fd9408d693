//! Code lenses above each kernel: its resource summary, Profile and Optimize.

use crate::analysis::FileAnalysis;
use kernelpro_model::Span;

#[derive(Debug, Clone, PartialEq)]
pub enum LensAction {
    None,
    Profile,
    Optimize { kernel: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Lens {
    pub span: Span,
    pub title: String,
    pub action: LensAction,
}

pub fn kernel_lenses(analysis: &FileAnalysis) -> Vec<Lens> {
    let mut out = Vec::new();
    for k in analysis.source.kernels() {
        let span = Span::new(k.span.start, k.span.start);
        if let Some(summary) = analysis.kernel_summary(&k.name) {
            out.push(Lens { span, title: summary, action: LensAction::None });
        }
        out.push(Lens { span, title: "▶ Profile".into(), action: LensAction::Profile });
        out.push(Lens { span, title: "⚡ Optimize".into(), action: LensAction::Optimize { kernel: k.name.clone() } });
    }
    out
}
