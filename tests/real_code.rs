//! Real code over the real binary and the real nvcc: kernels in an included
//! project header (findings on the header, a summary on the `#include` line,
//! published for the header's URI), template kernels with resources per
//! instantiation, and `kernelpro check dir/file.cu` with a relative path.

mod support;

use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use support::lsp_client::{Client, bin, fixtures, trusted, uri};

const LONG: Duration = Duration::from_secs(120);

/// A copy of tests/fixtures/realcode (train.cu, llmc/kernels.cuh, llmc/common.h).
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let from = fixtures().join("realcode");
    std::fs::create_dir_all(dir.path().join("llmc")).unwrap();
    for f in ["train.cu", "llmc/kernels.cuh", "llmc/common.h"] {
        std::fs::copy(from.join(f), dir.path().join(f)).unwrap();
    }
    dir
}

fn check_output(cwd: &Path, args: &[&str]) -> String {
    let out = Command::new(bin()).arg("check").args(args).current_dir(cwd).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `kernelpro check -I inc dir/file.cu`: the include folder is the caller's,
/// though nvcc runs in the file's folder.
#[test]
fn check_with_a_relative_include_folder() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("inc")).unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("inc/scale.h"), "#define SCALE 2.0f\n").unwrap();
    std::fs::write(
        dir.path().join("src/k.cu"),
        "#include \"scale.h\"\n__global__ void k(float* y) { y[threadIdx.x] = SCALE; }\n",
    )
    .unwrap();
    let text = check_output(dir.path(), &["-I", "inc", "src/k.cu"]);
    assert!(!text.contains("error"), "{text}");
}

#[test]
fn check_with_a_relative_path_analyses_header_kernels_and_templates() {
    let dir = project();
    let root = dir.path().parent().unwrap();
    let relative = format!("{}/train.cu", dir.path().file_name().unwrap().to_string_lossy());
    let text = check_output(root, &[&relative]);
    let name = dir.path().file_name().unwrap().to_string_lossy().into_owned();
    let lines: Vec<String> = text.lines().filter(|l| !l.starts_with("    →")).map(|l| l.replace(&name, "P")).collect();
    assert_eq!(
        lines,
        [
            "P/llmc/kernels.cuh:5:38: info: `x` is loaded in the same loop as a store through `y`, and neither is `__restrict__`: the compiler must assume they overlap [MissingRestrict]",
            "P/llmc/kernels.cuh:11:53: warning: FP64 in float kernel `row_sum`: `acc` is a `double` accumulator: each update converts to double and runs on the FP64 pipe [Fp64Promotion]",
            "P/train.cu:2:1: info: 3 kernels in kernels.cuh: 2 findings (1 warning) [header-kernels]",
        ],
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&check_output(root, &[&relative, "--format", "json"])).unwrap();
    let kernels: Vec<String> = json["files"][0]["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| format!("{} {}", k["name"].as_str().unwrap(), k["summary"].as_str().unwrap_or("-")))
        .collect();
    assert_eq!(
        kernels,
        [
            "tile_sum 2 instantiations · 10–12 regs · 0 B spill · 512 B–2 KB smem · occupancy 100%",
            "scale_rows 16 regs · 0 B spill · 0 B smem · occupancy 100% (limit: warps)",
            "row_sum 16 regs · 0 B spill · 0 B smem · occupancy 100% (limit: warps)",
            "add 2 instantiations · 10 regs · 0 B spill · 0 B smem · occupancy 100%",
        ]
    );
}

#[test]
fn lsp_publishes_header_findings_for_the_header_and_hovers_templates() {
    let dir = project();
    let main = dir.path().join("train.cu");
    let header = dir.path().canonicalize().unwrap().join("llmc/kernels.cuh");
    let text = std::fs::read_to_string(&main).unwrap();
    let (mu, hu) = (uri(&main), uri(&header));
    let mut c = Client::spawn(trusted());
    c.open(&mu, &text, 1);
    let d = c.wait_diagnostics(&mu, LONG);
    let summary: Vec<String> = d["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{} {} {}",
                d["range"]["start"]["line"],
                d["code"].as_str().unwrap_or(""),
                d["message"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(summary, ["1 header-kernels 3 kernels in kernels.cuh: 2 findings (1 warning)"]);
    // Each step of the save published on the header (before the file): the last is settled.
    let h = c
        .backlog
        .iter()
        .rev()
        .find(|m| m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == hu.as_str())
        .expect("diagnostics on the header")["params"]
        .clone();
    let codes: Vec<String> = h["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| format!("{} {}", d["range"]["start"]["line"], d["code"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(codes, ["4 MissingRestrict", "10 Fp64Promotion"]);

    // The template kernel's name: one row per instantiation, not "Save the file".
    let hover =
        c.request("textDocument/hover", json!({"textDocument": {"uri": mu}, "position": {"line": 4, "character": 20}}));
    let md = hover["result"]["contents"]["value"].as_str().unwrap();
    assert!(md.contains("| `tile_sum<double, 256>` |") && md.contains("| `tile_sum<float, 128>` |"), "{md}");
    assert!(!md.contains("Save the file"), "{md}");
    assert!(c.shutdown().success());
}

/// `kernelpro optimize` says why a finding's promised rewrite did not apply: a row walk whose
/// running mean (Welford's recurrence) has no known combine gets no warp per row, and the
/// output names the value and its update.
#[test]
fn optimize_says_why_a_promised_rewrite_did_not_apply() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("running_mean.cu");
    std::fs::write(
        &path,
        r#"// kernelpro: let ROWS = 4096
// kernelpro: let C = 1024
// kernelpro: grid = ceil_div(ROWS, 256)
// kernelpro: block = 256
// kernelpro: out = out float[ROWS]
// kernelpro: x = in float[ROWS * C] uniform(-1, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = C
__global__ void running_mean(float* out, const float* x, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float mean = 0.0f;
  for (int c = 0; c < cols; c++) {
    float v = x[r * cols + c];
    mean = mean + (v - mean) / (c + 1);
  }
  out[r] = mean;
}
"#,
    )
    .unwrap();
    let run = Command::new(bin())
        .args([
            "optimize",
            path.to_str().unwrap(),
            "--kernel",
            "running_mean",
            "--evaluator",
            "stub:0.5",
            "--budget",
            "3",
            "--no-profile",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(
        stdout.contains(
            "note: RowWalk (Row walk) promises rewrites, and none applied: HoistRowWork, BlockUnits, ClusterUnits, WarpUnits, WarpScan and ColumnUnits did not apply because the loop-carried value `mean` is updated by a recurrence with no known combine (`mean = mean + (v - mean) / (c + 1)` on line 15)"
        ),
        "{stdout}"
    );
}
