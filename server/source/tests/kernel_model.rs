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
