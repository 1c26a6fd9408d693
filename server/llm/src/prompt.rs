//! Filling the templates for one node: the kernel region, its launch spec,
//! the findings, the hardware, the search memory and the failure.

use crate::config::LlmConfig;
use crate::prompts::{Templates, render};
use crate::splice::KernelSite;
use kernelpro_search::{OutcomeKind, ProposeContext};

/// Failure text shown to the model; compiler logs can be long.
const FAILURE_CHARS: usize = 4000;

/// The system prompt and the first user message.
pub fn messages(
    templates: &Templates,
    config: &LlmConfig,
    kernel: &str,
    site: &KernelSite,
    ctx: &ProposeContext,
    with_tools: bool,
) -> (String, String) {
    let tools = if with_tools {
        render(&templates.tools, &[("max_tool_calls", &config.max_tool_calls.to_string())])
    } else {
        String::new()
    };
    let failure: String = ctx.failure.unwrap_or("").chars().take(FAILURE_CHARS).collect();
    let vars = [
        ("kernel_name", kernel),
        ("kernel", site.region().trim_end()),
        ("launch_spec", &launch_spec(ctx.source, kernel)),
        ("findings", &findings(ctx)),
        ("hardware", &config.hardware),
        ("memory", &memory(ctx, config.memory_entries)),
        ("failure", &failure),
        ("tools", &tools),
    ];
    let template = if ctx.failure.is_some() { &templates.fix } else { &templates.optimize };
    (render(&templates.system, &vars), render(template, &vars))
}

fn launch_spec(source: &str, kernel: &str) -> String {
    let specs = kernelpro_spec::parse_file(source);
    let lines: Vec<String> = specs
        .file_lets
        .iter()
        .chain(specs.kernel(kernel).map_or(&[][..], |k| &k.lines[..]))
        .map(|l| format!("- `{}`", l.text))
        .collect();
    if lines.is_empty() {
        "(no `// kernelpro:` lines: the launch is fixed by the caller)".to_owned()
    } else {
        lines.join("\n")
    }
}

fn findings(ctx: &ProposeContext) -> String {
    if ctx.findings.is_empty() {
        return "(none reported)".to_owned();
    }
    ctx.findings.iter().map(|f| format!("- {}: {}", f.tool, f.guidance)).collect::<Vec<_>>().join("\n")
}

fn memory(ctx: &ProposeContext, entries: usize) -> String {
    let mut out = match ctx.speedup {
        Some(s) => format!(
            "The kernel shown runs {s:.2}x as fast as the original; the best so far is {:.2}x.\n",
            ctx.best_speedup
        ),
        None => format!("The best kernel so far runs {:.2}x as fast as the original.\n", ctx.best_speedup),
    };
    for entry in ctx.memory.recent(entries) {
        let outcome = match (entry.outcome, entry.speedup) {
            (OutcomeKind::Ok, Some(s)) => format!("verified, {s:.2}x"),
            (OutcomeKind::Ok, None) => "verified".to_owned(),
            (OutcomeKind::CompileError, _) => format!("compile error: {}", entry.detail),
            (OutcomeKind::WrongOutput, _) => format!("wrong output: {}", entry.detail),
            (OutcomeKind::Timeout, _) => "timed out".to_owned(),
            (OutcomeKind::Crash, _) => format!("crashed: {}", entry.detail),
        };
        let answers = entry.answers.as_deref().map(|a| format!(" for {a}")).unwrap_or_default();
        out.push_str(&format!("- {}{answers}: {outcome}\n", entry.recipe));
    }
    let notes: Vec<&String> = ctx.memory.notes.iter().rev().take(entries).collect();
    if !notes.is_empty() {
        out.push_str("Notes from earlier attempts:\n");
        for note in notes.into_iter().rev() {
            out.push_str(&format!("- {note}\n"));
        }
    }
    out.trim_end().to_owned()
}
