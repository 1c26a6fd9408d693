//! Every built-in rewrite of the benchmark kernels passes the evaluator's
//! compile and guards (with the real nvcc; timing is stubbed). CuTe rewrites
//! are compiled with the CUTLASS headers for sm_90a.

use kernelpro_config::settings::Settings;
use kernelpro_core::analysis::Analyzer;
use kernelpro_optimize::{Context, StubEvaluator};
use kernelpro_recipes::Recipe;
use kernelpro_search::{Evaluator, Outcome};
use std::path::PathBuf;

fn check(file: &str, kernel: &str) -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ctx = Context {
        path: path.clone(),
        original: text.clone(),
        original_src: kernelpro_source::parse(&text),
        kernel: kernel.into(),
        // CuTe's headers take nvcc tens of seconds; on a busy 2-core machine past the
        // editor's 60 s default. This test asserts that candidates compile, not how fast.
        settings: Settings { trusted: true, compile_timeout_secs: 600, ..Default::default() },
        analyzer: Analyzer::default(),
        handle: rt.handle().clone(),
        cancel: Default::default(),
    };
    let mut ev = StubEvaluator::new(ctx, 2.0);
    ev.parallelism = 1;
    let mut recipes: Vec<Box<dyn Recipe>> = kernelpro_recipes::all();
    recipes.push(Box::new(kernelpro_cute::CuteGemmRecipe));
    let mut applied = Vec::new();
    for r in recipes {
        for rw in r.rewrite(&text, kernel) {
            match ev.evaluate(&rw.source) {
                Outcome::Ok { .. } => applied.push(r.name().to_string()),
                other => panic!("{} on {kernel}: {other:?}", r.name()),
            }
        }
    }
    applied
}

#[test]
fn matmul_rewrites_compile_including_cute() {
    let applied = check("bench/kernels/matmul_naive.cu", "matmul_naive");
    assert!(applied.contains(&"SharedTiling".to_string()), "{applied:?}");
    assert!(applied.contains(&"CuteGemm".to_string()), "{applied:?}");
}

#[test]
fn suite_rewrites_compile() {
    for (file, kernel) in [
        ("bench/kernels/elementwise_fp64.cu", "elementwise"),
        ("bench/kernels/transpose.cu", "transpose"),
        ("bench/kernels/reduction.cu", "reduce_sum"),
        ("bench/kernels/softmax.cu", "softmax_rows"),
        ("bench/kernels/strided_copy.cu", "strided_copy"),
        ("bench/kernels/stencil2d.cu", "stencil"),
    ] {
        let applied = check(file, kernel);
        assert!(!applied.is_empty(), "no recipe applies to {kernel}");
        if kernel != "softmax_rows" {
            assert!(applied.contains(&"PrefetchL2".to_string()), "{kernel}: {applied:?}");
        }
    }
}

/// A 16-bit product gets both CuTe rewrites past the guard; the second one
/// changes the launch and says so.
#[test]
fn bf16_gemm_rewrites_pass_the_guard_with_and_without_a_new_launch() {
    let file = "tests/fixtures/cute/bf16_naive.cu";
    assert_eq!(check(file, "matmul_bf16").iter().filter(|r| *r == "CuteGemm").count(), 2);
    let text = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(file)).unwrap();
    let changes: Vec<Vec<String>> = kernelpro_cute::CuteGemmRecipe
        .rewrite(&text, "matmul_bf16")
        .iter()
        .map(|r| kernelpro_optimize::launch_changes(&text, &r.source, "matmul_bf16"))
        .collect();
    assert_eq!(
        changes,
        [
            vec![],
            vec![
                "`grid = (ceil_div(S, 16), ceil_div(S, 16))` → `grid = ceil_div(S, 128) * ceil_div(S, 256)`"
                    .to_string(),
                "`block = (16, 16)` → `block = 384`".into(),
                "`none` → `smem = 198080`".into(),
            ]
        ]
    );
}
