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
        ("model", &kernel_model(ctx.source, kernel)),
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

/// What each thread of the kernel touches, from KernelPro's kernel model (the
/// paper's semantic feedback): its parallel pattern, every access's index as
/// a form in the thread and loop values with its stride across a warp's lanes,
/// and the expert form of that pattern to aim for.
fn kernel_model(source: &str, kernel: &str) -> String {
    use kernelpro_source::kernel_model::{Pattern, model_kernel};
    let parsed = kernelpro_source::parse(source);
    let Some(model) = model_kernel(source, &parsed, kernel, None) else {
        return "(not modelled)".to_owned();
    };
    let expert = model.pattern().map(|p| match p.pattern {
        Pattern::Map => "a grid-stride loop with 128-bit (float4) loads and stores, consecutive lanes on consecutive elements",
        Pattern::RowReduction => "a warp per row (a block for few long rows): lanes walk the row contiguously, then shuffle reductions",
        Pattern::Gather => "a warp per gathered row, lanes along the row, 128-bit accesses where aligned",
        Pattern::Contraction => "shared-memory tiles of both operands with a register tile per thread (e.g. 64x64 blocks, 4x4 per thread), or tensor cores",
        Pattern::ScalarReduction => "grid-stride partial sums per thread, warp shuffles, one atomic (or one store) per block",
        Pattern::Histogram => "per-block bins in shared memory, then one global atomic per bin per block",
        Pattern::Stencil => "a shared-memory tile with its halo, each input read from global memory once per block",
        Pattern::Transpose => "a 32x33 shared-memory tile so both the reads and the writes are coalesced",
    });
    let mut out = format!("```\n{}\n```\n", model.render().trim_end());
    out.push_str("(`lane*K`: neighbouring threads of a warp are K elements apart; 1 is coalesced.)\n");
    if let Some(e) = expert {
        out.push_str(&format!("Expert form of this pattern: {e}.\n"));
    }
    out
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
