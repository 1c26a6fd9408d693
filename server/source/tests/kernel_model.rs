//! The kernel model of each fixture under `tests/fixtures/model/`, rendered
//! as text and compared with its snapshot (`NAME.model.txt` beside it;
//! `UPDATE_EXPECT=1 cargo test -p kernelpro-source` rewrites them).
//! A fixture line `// model-block: KERNEL X Y Z` gives a kernel's launch
//! block as a launch spec would.

use expect_test::{ExpectFile, expect_file};
use kernelpro_source::kernel_model::model_file;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/model");

fn check(name: &str, expected: ExpectFile) {
    let text = std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap();
    let blocks: Vec<(String, [u32; 3])> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("// model-block:"))
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            Some((w.first()?.to_string(), [w.get(1)?.parse().ok()?, w.get(2)?.parse().ok()?, w.get(3)?.parse().ok()?]))
        })
        .collect();
    let source = kernelpro_source::parse(&text);
    let models = model_file(&text, &source, &|k| blocks.iter().find(|(n, _)| n == k).map(|(_, b)| *b));
    let rendered: String = models.iter().map(|m| m.render()).collect::<Vec<_>>().join("\n");
    expected.assert_eq(&rendered);
}

#[test]
fn rows_in_several_styles() {
    check("rows.cu", expect_file!["../../../tests/fixtures/model/rows.model.txt"]);
}

#[test]
fn two_dimensional_launches() {
    check("launch2d.cu", expect_file!["../../../tests/fixtures/model/launch2d.model.txt"]);
}

#[test]
fn macros_templates_and_epilogues() {
    check("macros_templates.cu", expect_file!["../../../tests/fixtures/model/macros_templates.model.txt"]);
}

#[test]
fn grid_stride_atomics_gathers_and_stencils() {
    check("scatter.cu", expect_file!["../../../tests/fixtures/model/scatter.model.txt"]);
}

#[test]
fn reductions_branches_and_barriers() {
    check("reduce.cu", expect_file!["../../../tests/fixtures/model/reduce.model.txt"]);
}

/// A 6 KB expression of nested parentheses must not overflow the stack.
#[test]
fn deep_nesting_is_bounded() {
    let depth = 3000;
    let text =
        format!("__global__ void k(float* y) {{ y[threadIdx.x] = {}1{}; }}\n", "(".repeat(depth), ")".repeat(depth));
    let source = kernelpro_source::parse(&text);
    let models = model_file(&text, &source, &|_| None);
    assert!(models.len() <= 1);
}

/// A launch spec's small scalars are structural: `stride = 1` makes a convolution's read
/// coalesced and `ks = 3` a three-tap loop; a problem size (`w = 512`) stays symbolic.
#[test]
fn spec_values_specialize_strides_and_tap_counts() {
    let text = "__global__ void conv(float* y, const float* x, int w, int ks, int stride) {
  int ox = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  for (int j = 0; j < ks; ++j) acc += x[ox * stride + j];
  y[ox] = acc;
}
";
    let source = kernelpro_source::parse(text);
    let mut model = model_file(text, &source, &|_| None).remove(0);
    let read = |m: &kernelpro_source::kernel_model::KernelModel| {
        m.accesses.iter().find(|a| a.base == "x").unwrap().lane_coefficient().to_string()
    };
    assert_eq!(read(&model), "stride");
    model.specialize(&[("stride".into(), 1), ("ks".into(), 3), ("w".into(), 512)]);
    assert_eq!(read(&model), "1");
    assert_eq!(model.loops[0].bound.as_ref().unwrap().as_constant(), Some(3));
}

#[test]
fn clamped_window_bounds_read_at_the_interior() {
    check("windows.cu", expect_file!["../../../tests/fixtures/model/windows.model.txt"]);
}
