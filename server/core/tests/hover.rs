//! Hover text on recorded nvcc output (tests/fixtures/lints: nvcc 13.2,
//! sm_90): a busy line's summary and costly instructions first, kernel names
//! with one row per template instantiation, and what a failed or missing
//! compile says.

use expect_test::{Expect, expect};
use kernelpro_config::settings::Settings;
use kernelpro_config::words::Words;
use kernelpro_core::analysis::FileAnalysis;
use kernelpro_core::hover::{hover_markdown, line_hover, sass_listing};
use kernelpro_model::Pos;
use kernelpro_toolchain::compile::CompileOutput;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// The analysis of `cu` with recorded `sass`/`ptxas` (or a failed compile when both are `None`).
fn analysis(name: &str, cu: &str, recorded: Option<(&str, &str)>) -> FileAnalysis {
    let mut a = FileAnalysis::without_tools(Path::new(name), cu, &Settings::default());
    a.compile = Some(Arc::new(match recorded {
        Some((sass, ptxas)) => CompileOutput {
            ok: true,
            disassembly: Some(kernelpro_sass::disasm::parse_sass(sass)),
            resources: kernelpro_sass::ptxas::parse_ptxas(ptxas),
            ..Default::default()
        },
        None => CompileOutput::default(),
    }));
    a
}

fn planted() -> FileAnalysis {
    let read = |f: &str| std::fs::read_to_string(fixtures().join("lints").join(f)).unwrap();
    analysis(
        "planted.cu",
        &read("planted.cu"),
        Some((&read("planted.sm90.nvdisasm.txt"), &read("planted.sm90.ptxas.txt"))),
    )
}

fn check(got: Option<String>, expected: Expect) {
    expected.assert_eq(&got.unwrap_or_else(|| "(none)".into()));
}

/// Only the fenced listing's instruction lines, without control bits.
fn opcodes_of(markdown: &str) -> Vec<String> {
    markdown
        .lines()
        .filter(|l| l.starts_with("/*"))
        .map(|l| l.split(';').next().unwrap().split_whitespace().nth(1).unwrap().to_string())
        .collect()
}

#[test]
fn busy_line_summary_then_costly_instructions_first() {
    let a = planted();
    // Line 28: the spilled accumulator update, 385 local-memory instructions among 772.
    let md = line_hover(&a, 27, 27).unwrap();
    let head: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("SASS of line") || l.starts_with("Costly") || l.starts_with("// …"))
        .collect();
    expect![[r#"
        SASS of line 28 in `spill_accumulators`: 772 instructions: 385 local-memory (LDL, STL)
        // … and 756 more
        Costly instructions first; the full listing: the **Show SASS for Line** command or `kernelpro check FILE --sass LINE`."#]]
    .assert_eq(&head.join("\n"));
    // Two lines inserted above it in the editor: the same listing, titled with the line as it is now.
    let moved = line_hover(&a, 27, 29).unwrap();
    assert_eq!(moved, md.replace("SASS of line 28 ", "SASS of line 30 "));
    let shown = opcodes_of(&md);
    assert_eq!(shown.len(), 16);
    assert!(shown.iter().all(|op| op.starts_with("LDL") || op.starts_with("STL")), "{shown:?}");
    // The full listing has every instruction, in program order.
    let full = sass_listing(&a, 27, 27).unwrap();
    assert_eq!(opcodes_of(&full).len(), 772);
    assert!(!full.contains("… and"));
}

#[test]
fn fp64_line_names_its_opcodes() {
    let a = planted();
    let md = line_hover(&a, 8, 8).unwrap();
    check(
        md.lines().next().map(str::to_string),
        expect!["SASS of line 9 in `fp64_promoted`: 5 instructions: 1 FP64 (F2F), 1 global load"],
    );
}

#[test]
fn kernel_name_resources_and_occupancy() {
    let a = planted();
    let k = a.source.kernel("big_shared").unwrap();
    check(
        hover_markdown(&a, k.name_span.start, k.name_span.start.line),
        expect![[r#"
            **big_shared** · `__global__` · sm_90

            | registers | stack | spill stores / loads | shared (static) | barriers |
            |---|---|---|---|---|
            | 15 | 0 B | 0 B / 0 B | 48 KB | 1 |

            Theoretical occupancy at 256 threads/block (dynamic shared memory unknown: not counted): **50%** (32 of 64 warps, 4 blocks/SM), limited by **shared memory**. Block size from the blockSize setting: no launch spec, `<<<…>>>` launch or `__launch_bounds__` says.
        "#]],
    );
}

const TEMPLATES: &str = r#"template <typename T, int B>
__global__ void tsum(T* out, const T* in) { __shared__ T s[B]; s[threadIdx.x] = in[threadIdx.x]; __syncthreads(); out[0] = s[0]; }
void host(float* f, double* d) {
  tsum<float, 128><<<1, 128>>>(f, f);
  tsum<double, 256><<<1, 128>>>(d, d);
}
"#;

/// nvcc 13.2 -arch=sm_90 -Xptxas -v on TEMPLATES (the report lines only).
const TEMPLATES_PTXAS: &str = "\
ptxas info    : Compiling entry function '_Z4tsumIdLi256EEvPT_PKS0_' for 'sm_90'
ptxas info    : Function properties for _Z4tsumIdLi256EEvPT_PKS0_
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 2048 bytes smem, 368 bytes cmem[0]
ptxas info    : Compiling entry function '_Z4tsumIfLi128EEvPT_PKS0_' for 'sm_90'
ptxas info    : Function properties for _Z4tsumIfLi128EEvPT_PKS0_
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 1 barriers, 512 bytes smem, 368 bytes cmem[0]
";

#[test]
fn template_kernel_lists_each_instantiation() {
    let a = analysis("t.cu", TEMPLATES, Some(("", TEMPLATES_PTXAS)));
    check(
        hover_markdown(&a, Pos::new(1, 17), 1),
        expect![[r#"
            **tsum** · `__global__` · sm_90

            | instantiation | registers | stack | spill stores / loads | shared (static) | barriers | occupancy |
            |---|---|---|---|---|---|---|
            | `tsum<double, 256>` | 10 | 0 B | 0 B / 0 B | 2 KB | 1 | 100% (warps) |
            | `tsum<float, 128>` | 8 | 0 B | 0 B / 0 B | 512 B | 1 | 100% (warps) |

            Theoretical occupancy at 128 threads/block, from the launch on line 4.
        "#]],
    );
    assert_eq!(
        a.kernel_summary("tsum").as_deref(),
        Some("2 instantiations · 8–10 regs · 0 B spill · 512 B–2 KB smem · occupancy 100%")
    );
}

#[test]
fn kernel_without_resources_says_why() {
    let failed = analysis("t.cu", TEMPLATES, None);
    check(
        hover_markdown(&failed, Pos::new(1, 17), 1),
        expect![[r#"
        **tsum** · `__global__` · sm_90

        The last compile failed: see the errors."#]],
    );
    let uncompiled = FileAnalysis::without_tools(Path::new("t.cu"), TEMPLATES, &Settings::default());
    check(
        hover_markdown(&uncompiled, Pos::new(1, 17), 1),
        expect![[r#"
            **tsum** · `__global__` · sm_90

            Not compiled: the workspace is not trusted, so nothing is compiled or run here. To compile it and see its resources, set `trusted = true` in the server's settings or initializationOptions."#]],
    );
    // Issue 32: trusted and not compiled yet, a save compiles it; untrusted, a save
    // would not: the hover says how to trust, in the user's editor's words.
    let trusted = Settings { trusted: true, ..Default::default() };
    let waiting = FileAnalysis::without_tools(Path::new("t.cu"), TEMPLATES, &trusted);
    assert!(
        hover_markdown(&waiting, Pos::new(1, 17), 1)
            .unwrap()
            .ends_with("Not compiled yet: save the file to compile it and see its resources.")
    );
    let client = Words { trust: "press the trust button", ..Words::ANY_CLIENT };
    let untrusted =
        FileAnalysis::without_tools(Path::new("t.cu"), TEMPLATES, &Settings { words: client, ..Default::default() });
    let md = hover_markdown(&untrusted, Pos::new(1, 17), 1).unwrap();
    assert!(
        md.contains("the workspace is not trusted")
            && md.contains("press the trust button")
            && !md.contains("save the file"),
        "{md}"
    );
    // Show SASS on a line without any: the reason fits the file's state.
    assert_eq!(
        [kernelpro_core::hover::no_sass(Some(&failed), 0), kernelpro_core::hover::no_sass(Some(&uncompiled), 0), kernelpro_core::hover::no_sass(None, 0)],
        [
            "No SASS for line 1: the last compile failed (see the errors).".to_string(),
            "No SASS for line 1: not compiled: the workspace is not trusted, so nothing is compiled or run here. To compile it and see its resources, set `trusted = true` in the server's settings or initializationOptions.".to_string(),
            "No SASS yet: save the file (in a trusted workspace) to compile it.".to_string(),
        ]
    );
    let no_instance = analysis("t.cu", "template <typename T> __global__ void k(T* y) { y[0] = 1; }\n", Some(("", "")));
    assert!(
        hover_markdown(&no_instance, Pos::new(0, 38), 0)
            .unwrap()
            .contains("No instantiation of this template was compiled")
    );
}
