//! What the editor shows, tested as data at the session: one `check_*` per
//! feature (hover, lenses, diagnostics after edits, the apply edit), each on a
//! fixture whose cursor is marked `$0`, with edits made after the analysis,
//! against a snapshot (`UPDATE_EXPECT=1 cargo test -p kernelpro-session` to
//! rewrite them). The analyses are real: the file's structure and specs from
//! its text, and for the hover the SASS and ptxas resources nvcc 13.2 recorded
//! for `tests/fixtures/lints/planted.cu` (sm_90).

use expect_test::{Expect, expect};
use kernelpro_config::settings::Settings;
use kernelpro_config::words::Words;
use kernelpro_core::analysis::FileAnalysis;
use kernelpro_core::lens::Readiness;
use kernelpro_model::{Finding, LineEdit, Pos, Severity, Span};
use kernelpro_optimize::OptimizeOutcome;
use kernelpro_session::views::{self, LensCommand};
use kernelpro_session::{Document, LineChange, ProfileState, StoredOptimization};
use kernelpro_toolchain::compile::CompileOutput;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn read(name: &str) -> String {
    let path = fixtures().join("lints").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

/// The cursor: where `$0` is in `marked` (line, byte column), and the text without it.
fn cursor(marked: &str) -> (String, Option<Pos>) {
    let Some(at) = marked.find("$0") else { return (marked.to_string(), None) };
    let before = &marked[..at];
    let line = before.matches('\n').count() as u32;
    let col = (at - before.rfind('\n').map_or(0, |i| i + 1)) as u32;
    (marked.replacen("$0", "", 1), Some(Pos::new(line, col)))
}

/// One edit made after the analysis: lines `start..end` replaced by `text` (whole lines).
struct Edit {
    start: u32,
    end: u32,
    text: &'static str,
}

const fn edit(start: u32, end: u32, text: &'static str) -> Edit {
    Edit { start, end, text }
}

/// An open document: analysed at version 1 (with `analyse`), then edited by
/// `edits` (one version each); the text as it is now.
struct Open {
    doc: Document,
    text: String,
}

fn open(text: &str, analysis: Arc<FileAnalysis>, edits: &[Edit]) -> Open {
    let mut doc = Document::new(1);
    doc.set_analysis(1, analysis);
    let mut text = text.to_string();
    for (i, e) in edits.iter().enumerate() {
        doc.version = 2 + i as i32;
        doc.record(LineChange::from_range((e.start, 0), (e.end, 0), e.text));
        text = kernelpro_session::apply(
            &text,
            &[LineEdit { start_line: e.start, end_line: e.end, text: e.text.to_string() }],
        );
    }
    Open { doc, text }
}

/// Structure and specs of `text` (what needs no tool).
fn structural(text: &str) -> Arc<FileAnalysis> {
    Arc::new(FileAnalysis::without_tools(Path::new("k.cu"), text, &Settings::default()))
}

/// `planted.cu` with nvcc's recorded SASS and resources.
fn planted() -> (String, Arc<FileAnalysis>) {
    let text = read("planted.cu");
    let mut a = FileAnalysis::without_tools(Path::new("planted.cu"), &text, &Settings::default());
    a.compile = Some(Arc::new(CompileOutput {
        ok: true,
        disassembly: Some(kernelpro_sass::disasm::parse_sass(&read("planted.sm90.nvdisasm.txt"))),
        resources: kernelpro_sass::ptxas::parse_ptxas(&read("planted.sm90.ptxas.txt")),
        ..Default::default()
    }));
    (text, Arc::new(a))
}

/// A finished search of `kernel` that rewrote lines `start..end` of `original`.
fn searched(original: &str, kernel: &str, start: u32, end: u32, new: &str) -> StoredOptimization {
    let edit = LineEdit { start_line: start, end_line: end, text: new.to_string() };
    let new_text = kernelpro_session::apply(original, std::slice::from_ref(&edit));
    StoredOptimization {
        version: 1,
        original: original.to_string(),
        outcome: OptimizeOutcome {
            kernel: kernel.to_string(),
            speedup: 1.84,
            original_ms: 1.0,
            best_ms: Some(0.54),
            original_energy_j: None,
            best_energy_j: None,
            verified_seeds: vec![1, 2, 3],
            steps: vec![kernelpro_optimize::StepReport {
                recipe: "Vectorize4".into(),
                answers: Some("ScalarLoads".into()),
                speedup: Some(1.84),
                point: None,
            }],
            tried: Vec::new(),
            tried_variants: Vec::new(),
            evaluations: 12,
            pruned_by_prior: 0,
            stop: "budget".into(),
            edit: Some(edit),
            launch_site_edits: Vec::new(),
            new_text: Some(new_text),
            title: format!("Apply optimized {kernel}: 1.84x faster, verified on 3 seeds"),
            stub: true,
            notes: Vec::new(),
            devices: Vec::new(),
            not_applied: Vec::new(),
            pipeline: Default::default(),
        },
    }
}

// ---------------------------------------------------------------- hover

/// The hover at `$0` in `marked` (the text after `edits`) of `planted.cu`'s analysis.
fn check_hover(
    edits: &[Edit],
    marked_line: &str,
    profile: Option<ProfileState>,
    searches: &[StoredOptimization],
    expected: Expect,
) {
    let (text, analysis) = planted();
    let mut open = open(&text, analysis, edits);
    if let Some(p) = profile {
        open.doc.set_profile(p);
    }
    // The marked line, found in the text now.
    let (line_text, at) = cursor(marked_line);
    let at = at.expect("a $0 in the line");
    let line =
        open.text.lines().position(|l| l == line_text).unwrap_or_else(|| panic!("{line_text:?} not in the text"));
    let now = Pos::new(line as u32, at.col);
    let current = open.text.clone();
    let got = views::hover(&open.doc, now, searches, move || current);
    expected.assert_eq(&got.unwrap_or_else(|| "(no hover)".into()));
}

#[test]
fn hover_on_a_kernel_name_moved_by_edits_above_it() {
    // Two lines inserted above: the hover asks the analysis about the line as it was.
    check_hover(
        &[edit(3, 3, "// one\n// two\n")],
        "__global__ void fp64_$0math_call(float* __restrict__ y, const float* __restrict__ x, int n) {",
        None,
        &[],
        expect![[r#"
            **fp64_math_call** · `__global__` · sm_90

            | registers | stack | spill stores / loads | shared (static) | barriers |
            |---|---|---|---|---|
            | 18 | 0 B | 0 B / 0 B | 0 B | 0 |

            Theoretical occupancy at 256 threads/block (dynamic shared memory unknown: not counted): **100%** (64 of 64 warps, 8 blocks/SM), limited by **warps**. Block size from the blockSize setting: no launch spec, `<<<…>>>` launch or `__launch_bounds__` says.
        "#]],
    );
}

#[test]
fn hover_on_a_source_line_moved_by_edits_above_it() {
    check_hover(
        &[edit(0, 0, "// one\n")],
        "  $0double scale = x[i]; // expect: Fp64Promotion, ScalarLoads",
        None,
        &[],
        expect![[r#"
            SASS of line 10 in `fp64_promoted`: 5 instructions: 1 FP64 (F2F), 1 global load
            ```sass
            /*00c0*/ LDG.E.CONSTANT R2, desc[UR4][R2.64];            // stall 2 cycles · sets write barrier SB2
            /*00d0*/ F2F.F64.F32 R4, R2;                             // stall 2 cycles · sets write barrier SB0 · waits on SB2
            /*0080*/ LDC.64 R2, c[0x0][0x218];                       // stall 1 cycle · sets write barrier SB0
            /*0090*/ ULDC.64 UR4, c[0x0][0x208];                     // stall 7 cycles · yields
            /*00b0*/ IMAD.WIDE R2, R13, 0x4, R2;                     // stall 6 cycles · yields · waits on SB0
            ```
            - `F2F.F64.F32`: Widens float to double. — Runs on the FP64 path; usually a sign that float math was promoted to double by a `double` literal or variable.
            - `IMAD.WIDE`: 32 × 32 → 64-bit multiply-add: typically index × element size + base pointer. — FMA-heavy pipe; one per array access with a signed 32-bit index.
            - `LDC.64`: Loads from a constant bank (`c[bank][offset]`): kernel parameters, `__constant__` data. — Fast when all lanes read the same address; divergent addresses serialise.
            - `LDG.E.CONSTANT`: Global load through the read-only (non-coherent) path, what `__ldg`/`const __restrict__` produce. — Same latency, no coherence traffic; good for data read many times.
            - `ULDC.64`: Loads a constant into a uniform register (one value for the whole warp). — Uniform datapath; frees the vector pipes.
        "#]],
    );
}

#[test]
fn hover_on_a_rewritten_line_shows_nothing_until_the_next_analysis() {
    check_hover(
        &[edit(16, 17, "  if (i < n) y[i] = sqrtf(x[i] * 1e-3f);\n")],
        "  if (i < n) y[i] = $0sqrtf(x[i] * 1e-3f);",
        None,
        &[],
        expect![[r#"(no hover)"#]],
    );
}

#[test]
fn hover_on_a_kernel_with_a_stale_profile_and_a_finished_search() {
    let (text, _) = planted();
    let profile = ProfileState {
        summaries: [("scalar_quads".to_string(), "memory-bound · DRAM 82% of peak".to_string())].into(),
        changes: [("scalar_quads".to_string(), "12% faster".to_string())].into(),
        version: 1,
        ..Default::default()
    };
    let search = searched(
        &text,
        "scalar_quads",
        38,
        40,
        "    float4 v = reinterpret_cast<const float4*>(in)[i];\n    out[i] = v.x + v.y + v.z + v.w;\n",
    );
    check_hover(
        &[edit(0, 0, "// a comment above everything\n")],
        "__global__ void scalar_$0quads(float* __restrict__ out, const float* __restrict__ in, int n) {",
        Some(profile),
        &[search],
        expect![[r#"
            **scalar_quads** · `__global__` · sm_90

            | registers | stack | spill stores / loads | shared (static) | barriers |
            |---|---|---|---|---|
            | 16 | 0 B | 0 B / 0 B | 0 B | 0 |

            Theoretical occupancy at 256 threads/block (dynamic shared memory unknown: not counted): **100%** (64 of 64 warps, 8 blocks/SM), limited by **warps**. Block size from the blockSize setting: no launch spec, `<<<…>>>` launch or `__launch_bounds__` says.

            Last profile: **memory-bound · DRAM 82% of peak** (before your latest edits)

            Since the previous profile: 12% faster

            ---
            **Apply optimized scalar_quads: 1.84x faster, verified on 3 seeds**

            1. Vectorize4 (answers ScalarLoads) → 1.84x
            ```diff
            @@ -37,6 +37,6 @@
               int i = blockIdx.x * blockDim.x + threadIdx.x;
               if (i < n) {
            -    float a = in[4 * i + 0], b = in[4 * i + 1], c = in[4 * i + 2], d = in[4 * i + 3]; // expect: ScalarLoads
            -    out[i] = a + b + c + d;
            +    float4 v = reinterpret_cast<const float4*>(in)[i];
            +    out[i] = v.x + v.y + v.z + v.w;
               }
             }
            ```
        "#]],
    );
}

// ---------------------------------------------------------------- lenses

/// The lenses of `text` after `edits`, each drawn above the line it is on.
fn check_lenses(
    text: &str,
    edits: &[Edit],
    trusted: bool,
    ready: Option<Readiness>,
    profile: Option<ProfileState>,
    expected: Expect,
) {
    let mut open = open(text, structural(text), edits);
    if let Some(p) = profile {
        open.doc.set_profile(p);
    }
    let lenses = views::lenses(&open.doc, trusted, Words::ANY_CLIENT, ready.as_ref()).expect("an analysis");
    let mut out = String::new();
    for (i, line) in open.text.lines().enumerate() {
        for l in lenses.iter().filter(|l| l.span.start.line as usize == i) {
            let command = match &l.command {
                LensCommand::None => String::new(),
                LensCommand::Explain(why) => format!(" → explain: {why}"),
                LensCommand::Profile => " → profile".into(),
                LensCommand::Optimize { kernel } => format!(" → optimize {kernel}"),
            };
            out.push_str(&format!("    [{}]{command}\n", l.title));
        }
        out.push_str(&format!("{i:<3}| {line}\n"));
    }
    expected.assert_eq(&out);
}

const SAXPY: &str = "\
// kernelpro: let N = 1 << 20
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: y = inout float[N] uniform(-1, 1)
// kernelpro: x = in float[N] uniform(-1, 1)
// kernelpro: a = 2.0
// kernelpro: n = N
__global__ void saxpy(float* y, const float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
";

#[test]
fn lenses_follow_their_kernel_through_edits_and_carry_the_profile_verdict() {
    let profile = ProfileState {
        summaries: [("saxpy".to_string(), "memory-bound · DRAM 91% of peak".to_string())].into(),
        version: 1,
        ..Default::default()
    };
    check_lenses(
        SAXPY,
        &[edit(7, 7, "#include <cstdio>\n\n")],
        true,
        None,
        Some(profile),
        expect![[r#"
            0  | // kernelpro: let N = 1 << 20
            1  | // kernelpro: grid = ceil_div(N, 256)
            2  | // kernelpro: block = 256
            3  | // kernelpro: y = inout float[N] uniform(-1, 1)
            4  | // kernelpro: x = in float[N] uniform(-1, 1)
            5  | // kernelpro: a = 2.0
            6  | // kernelpro: n = N
            7  | #include <cstdio>
            8  | 
                [memory-bound · DRAM 91% of peak (stale)]
                [▶ Profile] → profile
                [⚡ Optimize] → optimize saxpy
            9  | __global__ void saxpy(float* y, const float* x, float a, int n) {
            10 |   int i = blockIdx.x * blockDim.x + threadIdx.x;
            11 |   if (i < n) y[i] = a * x[i] + y[i];
            12 | }
        "#]],
    );
}

#[test]
fn lenses_say_what_is_missing_and_untrusted_offers_no_run() {
    let ready = Readiness {
        profile: Some("no GPU is visible (nvidia-smi)".into()),
        profile_fix: "run on a machine with a GPU".into(),
        ..Default::default()
    };
    check_lenses(
        SAXPY,
        &[],
        true,
        Some(ready.clone()),
        None,
        expect![[r#"
            0  | // kernelpro: let N = 1 << 20
            1  | // kernelpro: grid = ceil_div(N, 256)
            2  | // kernelpro: block = 256
            3  | // kernelpro: y = inout float[N] uniform(-1, 1)
            4  | // kernelpro: x = in float[N] uniform(-1, 1)
            5  | // kernelpro: a = 2.0
            6  | // kernelpro: n = N
                [▶ Profile: no GPU is visible (nvidia-smi)] → explain: profiling cannot run here: no GPU is visible (nvidia-smi). To fix it: run on a machine with a GPU.
                [⚡ Optimize] → optimize saxpy
            7  | __global__ void saxpy(float* y, const float* x, float a, int n) {
            8  |   int i = blockIdx.x * blockDim.x + threadIdx.x;
            9  |   if (i < n) y[i] = a * x[i] + y[i];
            10 | }
        "#]],
    );
    check_lenses(
        SAXPY,
        &[],
        false,
        Some(ready),
        None,
        expect![[r#"
            0  | // kernelpro: let N = 1 << 20
            1  | // kernelpro: grid = ceil_div(N, 256)
            2  | // kernelpro: block = 256
            3  | // kernelpro: y = inout float[N] uniform(-1, 1)
            4  | // kernelpro: x = in float[N] uniform(-1, 1)
            5  | // kernelpro: a = 2.0
            6  | // kernelpro: n = N
                [🔒 Profile / Optimize: trust the workspace] → explain: nothing is compiled, profiled or optimized in an untrusted workspace; to allow it, set `trusted = true` in the server's settings or initializationOptions
            7  | __global__ void saxpy(float* y, const float* x, float a, int n) {
            8  |   int i = blockIdx.x * blockDim.x + threadIdx.x;
            9  |   if (i < n) y[i] = a * x[i] + y[i];
            10 | }
        "#]],
    );
}

// ---------------------------------------------------------------- diagnostics

/// The diagnostics of `text` after `edits`: the analysis's findings (given)
/// and a profile's, drawn under the lines they are on now; a header's merge
/// of its own findings with an includer's.
fn check_diagnostics(
    text: &str,
    findings: Vec<Finding>,
    profile: Option<ProfileState>,
    edits: &[Edit],
    expected: Expect,
) {
    let mut analysis = (*structural(text)).clone();
    analysis.findings.extend(findings);
    let mut open = open(text, Arc::new(analysis), edits);
    if let Some(p) = profile {
        open.doc.set_profile(p);
    }
    let shown = views::diagnostics(&open.doc);
    let mut out = String::new();
    for (i, line) in open.text.lines().enumerate() {
        out.push_str(&format!("{i:<3}| {line}\n"));
        for s in shown.main.iter().filter(|s| s.finding.span.start.line as usize == i) {
            out.push_str(&format!("     ^ {}\n", describe(s)));
        }
    }
    for (path, shown) in &shown.headers {
        for s in shown {
            out.push_str(&format!("{}: {}\n", path.display(), describe(s)));
        }
    }
    expected.assert_eq(&out);
}

fn describe(s: &views::Shown) -> String {
    let f = &s.finding;
    format!(
        "{}:{}-{}:{} {:?} {} [{}] {}{}",
        f.span.start.line,
        f.span.start.col,
        f.span.end.line,
        f.span.end.col,
        f.severity,
        f.source,
        f.code.as_deref().unwrap_or(""),
        f.message,
        s.note.map(|n| n.replace('\n', " ")).unwrap_or_default()
    )
}

fn at(line: u32, col: u32, end: u32, message: &str) -> Finding {
    Finding::new("nvcc", Severity::Warning, Span::new(Pos::new(line, col), Pos::new(line, end)), message)
}

#[test]
fn diagnostics_move_with_their_lines_and_leave_rewritten_ones() {
    let findings = vec![
        at(8, 6, 7, "variable \"i\" is used before it is checked").with_code("#550-D"),
        at(9, 14, 34, "a finding on the line the edit rewrites"),
        Finding { file: Some("/project/common.cuh".into()), ..at(3, 0, 5, "in the header, found by this file") },
    ];
    let profile = ProfileState {
        findings: vec![Finding::new("ncu", Severity::Information, Span::line(7), "DRAM 91% of peak").with_code("Dram")],
        version: 1,
        ..Default::default()
    };
    // Two lines inserted above the kernel, then its last statement rewritten.
    check_diagnostics(
        SAXPY,
        findings,
        Some(profile),
        &[edit(7, 7, "#include <cstdio>\n\n"), edit(11, 12, "  if (i < n) y[i] = fmaf(a, x[i], y[i]);\n")],
        expect![[r#"
            0  | // kernelpro: let N = 1 << 20
            1  | // kernelpro: grid = ceil_div(N, 256)
            2  | // kernelpro: block = 256
            3  | // kernelpro: y = inout float[N] uniform(-1, 1)
            4  | // kernelpro: x = in float[N] uniform(-1, 1)
            5  | // kernelpro: a = 2.0
            6  | // kernelpro: n = N
            7  | #include <cstdio>
            8  | 
            9  | __global__ void saxpy(float* y, const float* x, float a, int n) {
                 ^ 9:0-9:4294967295 Information ncu [Dram] DRAM 91% of peak (profiled before your latest edits: profile again to refresh)
            10 |   int i = blockIdx.x * blockDim.x + threadIdx.x;
                 ^ 10:6-10:7 Warning nvcc [#550-D] variable "i" is used before it is checked
            11 |   if (i < n) y[i] = fmaf(a, x[i], y[i]);
            12 | }
            /project/common.cuh: 3:0-3:5 Warning nvcc [] in the header, found by this file
        "#]],
    );
}

#[test]
fn a_header_shows_what_each_includer_found_once() {
    let header = Path::new("/project/common.cuh");
    let in_header = |m: &str| Finding { file: Some(header.into()), ..at(2, 0, 4, m) };
    let mut a = (*structural("")).clone();
    a.findings = vec![in_header("one"), in_header("two")];
    let mut b = (*structural("")).clone();
    b.findings = vec![in_header("two"), in_header("three")];
    // The header is open too: its own analysis found "two" where b.cu did.
    let mut h = (*structural("")).clone();
    h.findings = vec![at(2, 0, 4, "two"), at(5, 0, 1, "its own")];
    let (mut da, mut db, mut dh) = (Document::new(1), Document::new(1), Document::new(1));
    da.set_analysis(1, Arc::new(a));
    db.set_analysis(1, Arc::new(b));
    dh.set_analysis(1, Arc::new(h));
    let docs = [("a.cu", &da), ("b.cu", &db), ("common.cuh", &dh)];
    let own = views::diagnostics(&dh).main;
    let includers = views::found_by_includers(docs.iter().map(|(k, d)| (k, *d)), &"common.cuh", header);
    let merged = views::merged(own, includers, |s| (s.finding.span, s.finding.message.clone()));
    let got: Vec<String> = merged.iter().map(describe).collect();
    expect![[r#"
        [
            "2:0-2:4 Warning nvcc [] two",
            "5:0-5:1 Warning nvcc [] its own",
            "2:0-2:4 Warning nvcc [] one",
            "2:0-2:4 Warning nvcc [] three",
        ]
    "#]]
    .assert_debug_eq(&got);
}

// ---------------------------------------------------------------- apply

/// The apply edit of a search of `saxpy` (its body rewritten) on the text
/// after `edits`: the text it makes, or why it no longer applies.
fn check_apply(edits: &[Edit], expected: Expect) {
    let search = searched(SAXPY, "saxpy", 9, 10, "  if (i < n) y[i] = fmaf(a, x[i], y[i]);\n");
    let open = open(SAXPY, structural(SAXPY), edits);
    let view = views::apply(std::slice::from_ref(&search), "saxpy", &open.text).expect("an apply edit");
    let got = match &view.edits {
        Ok(edits) => format!("{}\n{}", view.title, kernelpro_session::apply(&open.text, edits)),
        Err(_) => format!("{}\ndisabled: {}", view.title, view.refusal().unwrap()),
    };
    expected.assert_eq(&got);
    // The hover's account of the same search agrees.
    let md = views::optimization_markdown(std::slice::from_ref(&search), "saxpy", &open.text).unwrap();
    assert_eq!(view.edits.is_err(), md.contains("no longer applies"), "{md}");
}

#[test]
fn the_apply_edit_follows_an_edit_elsewhere() {
    check_apply(
        &[edit(0, 0, "#include <cuda_runtime.h>\n")],
        expect![[r#"
        Apply optimized saxpy: 1.84x faster, verified on 3 seeds
        #include <cuda_runtime.h>
        // kernelpro: let N = 1 << 20
        // kernelpro: grid = ceil_div(N, 256)
        // kernelpro: block = 256
        // kernelpro: y = inout float[N] uniform(-1, 1)
        // kernelpro: x = in float[N] uniform(-1, 1)
        // kernelpro: a = 2.0
        // kernelpro: n = N
        __global__ void saxpy(float* y, const float* x, float a, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) y[i] = fmaf(a, x[i], y[i]);
        }
    "#]],
    );
}

#[test]
fn the_apply_edit_is_refused_once_its_lines_changed() {
    check_apply(
        &[edit(9, 10, "  if (i < n) y[i] = 3.0f * x[i] + y[i];\n")],
        expect![[r#"
        Apply optimized saxpy: 1.84x faster, verified on 3 seeds
        disabled: the optimized saxpy cannot be applied: the lines this result replaces (from line 10) changed since the search: undo the change or run Optimize again"#]],
    );
}

#[test]
fn no_apply_edit_for_a_search_that_found_nothing() {
    let mut search = searched(SAXPY, "saxpy", 9, 10, "");
    search.outcome.edit = None;
    assert_eq!(views::apply(&[search], "saxpy", SAXPY), None);
}

#[test]
fn cursor_markers() {
    assert_eq!(cursor("ab\ncd$0e"), ("ab\ncde".to_string(), Some(Pos::new(1, 2))));
}

// ---------------------------------------------------------------- showSass

/// `kernelpro.showSass` on the marked line of `planted.cu` after `edits`: its first line.
fn check_sass(edits: &[Edit], marked_line: &str, expected: Expect) {
    let (text, analysis) = planted();
    let open = open(&text, analysis, edits);
    let (line_text, _) = cursor(marked_line);
    let line = open.text.lines().position(|l| l == line_text).expect("the line") as u32;
    let got = views::sass_listing(open.doc.current_analysis().map(|a| &**a), open.doc.analysed_line(line), line);
    expected.assert_eq(got.lines().next().unwrap_or(""));
}

#[test]
fn show_sass_follows_edits_and_says_when_a_line_was_rewritten() {
    check_sass(
        &[edit(0, 0, "// one\n// two\n")],
        "  $0double scale = x[i]; // expect: Fp64Promotion, ScalarLoads",
        expect!["SASS of line 11 in `fp64_promoted`: 5 instructions: 1 FP64 (F2F), 1 global load"],
    );
    check_sass(
        &[edit(8, 9, "  float scale = x[i];\n")],
        "  $0float scale = x[i];",
        expect!["No SASS for line 9: it changed since the last compile; save the file to compile it."],
    );
}
