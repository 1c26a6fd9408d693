//! Code lenses above each kernel: its resource summary, Profile and Optimize.
//! Profile and Optimize follow what can run here ([`Readiness`], from `kernelpro_measure::doctor`): where
//! one cannot, its lens says what is missing (and explains on click) instead
//! of failing; without a compiler neither is offered.

use crate::analysis::FileAnalysis;
use kernelpro_model::Span;

/// What can run here, from the doctor's report (`kernelpro_measure::doctor`): `None` where an action can run, else
/// what is missing, in words for a lens title or a message. The editors
/// offer Profile and Optimize only where they can run.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Readiness {
    /// Compiling (every analysis past the source): nvcc and a host compiler.
    pub compile: Option<String>,
    /// Optimize: compiling, and a GPU to time candidates on (through the runner where one is set).
    pub optimize: Option<String>,
    /// Profile: compiling, a GPU, and ncu with access to the counters.
    pub profile: Option<String>,
    /// What to do about each, from the failed checks' fixes (empty where ready).
    pub optimize_fix: String,
    pub profile_fix: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LensAction {
    None,
    Profile,
    Optimize {
        kernel: String,
    },
    /// Cannot run here: the words say why (shown on click).
    Unavailable {
        why: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Lens {
    pub span: Span,
    pub title: String,
    pub action: LensAction,
}

/// The lenses of each kernel; `ready` is the last doctor's verdict (`None`:
/// not known yet, everything offered).
pub fn kernel_lenses(analysis: &FileAnalysis, ready: Option<&Readiness>) -> Vec<Lens> {
    let mut out = Vec::new();
    let compile_missing = ready.and_then(|r| r.compile.as_deref());
    for k in analysis.source.kernels() {
        let span = Span::new(k.span.start, k.span.start);
        if let Some(summary) = analysis.kernel_summary(&k.name) {
            out.push(Lens { span, title: summary, action: LensAction::None });
        }
        // Without a compiler the file's own message says what to install; no run is offered.
        if compile_missing.is_some() {
            continue;
        }
        match ready.and_then(|r| r.profile.as_deref()) {
            None => out.push(Lens { span, title: "▶ Profile".into(), action: LensAction::Profile }),
            Some(why) => out.push(Lens {
                span,
                title: format!("▶ Profile: {why}"),
                action: LensAction::Unavailable { why: because("profiling", why, &ready.unwrap().profile_fix) },
            }),
        }
        match ready.and_then(|r| r.optimize.as_deref()) {
            None => out.push(Lens {
                span,
                title: "⚡ Optimize".into(),
                action: LensAction::Optimize { kernel: k.name.clone() },
            }),
            Some(why) => out.push(Lens {
                span,
                title: format!("⚡ Optimize: {why}"),
                action: LensAction::Unavailable { why: because("optimizing", why, &ready.unwrap().optimize_fix) },
            }),
        }
    }
    out
}

/// `profiling cannot run here: no ncu. To fix it: …`
pub fn because(what: &str, why: &str, fix: &str) -> String {
    if fix.is_empty() {
        format!("{what} cannot run here: {why}.")
    } else {
        format!("{what} cannot run here: {why}. To fix it: {}.", fix.trim_end_matches('.'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn titles(ready: Option<&Readiness>) -> Vec<(String, LensAction)> {
        let settings = kernelpro_config::settings::Settings { trusted: true, ..Default::default() };
        let a = FileAnalysis::without_tools(
            std::path::Path::new("k.cu"),
            "__global__ void k(float* y) { y[threadIdx.x] = 1.f; }\n",
            &settings,
        );
        kernel_lenses(&a, ready).into_iter().map(|l| (l.title, l.action)).collect()
    }

    /// Issue 32: Profile and Optimize are offered only where they can run; elsewhere
    /// the lens says what is missing and explains (with the fix) on click.
    #[test]
    fn lenses_follow_what_can_run() {
        let all = titles(None);
        assert_eq!(all[0].0, "▶ Profile");
        assert_eq!(all[1], ("⚡ Optimize".to_string(), LensAction::Optimize { kernel: "k".into() }));
        let no_gpu = Readiness {
            profile: Some("no NVIDIA GPU or driver, no Nsight Compute (ncu)".into()),
            profile_fix: "run on a GPU machine.".into(),
            ..Default::default()
        };
        let lenses = titles(Some(&no_gpu));
        assert_eq!(lenses[0].0, "▶ Profile: no NVIDIA GPU or driver, no Nsight Compute (ncu)");
        assert_eq!(
            lenses[0].1,
            LensAction::Unavailable {
                why: "profiling cannot run here: no NVIDIA GPU or driver, no Nsight Compute (ncu). To fix it: run on a GPU machine.".into()
            }
        );
        assert_eq!(lenses[1].0, "⚡ Optimize");
        let no_nvcc =
            Readiness { compile: Some("no nvcc".into()), optimize: Some("no nvcc".into()), ..Default::default() };
        assert!(titles(Some(&no_nvcc)).is_empty(), "no run offered without a compiler");
    }
}
