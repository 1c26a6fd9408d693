//! The injection library builds with the toolchain's nvcc against CUPTI, once:
//! the second call finds it in the cache. Needs CUPTI's headers and library
//! (a CUDA toolkit's, or the PyPI nvidia-cuda-cupti package's; point
//! KERNELPRO_CUPTI at the folder holding `include/` and `lib/` if they are
//! not beside nvcc): `cargo test -p kernelpro-measure --test cupti_build -- --ignored`.

use kernelpro_measure::cupti::{build_library, find_cupti, roots_of};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

#[tokio::test]
#[ignore = "needs CUPTI (a CUDA toolkit, or KERNELPRO_CUPTI)"]
async fn the_library_builds_once_and_is_cached() {
    let nvcc = kernelpro_core::analysis::Analyzer::find_nvcc(&kernelpro_config::settings::Settings::default())
        .expect("nvcc (set KERNELPRO_VENV)");
    let cupti = find_cupti(&roots_of(&[&nvcc.path])).expect("CUPTI (set KERNELPRO_CUPTI)");
    let cache = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let t = Instant::now();
    let lib = build_library(&nvcc.path, &cupti, cache.path(), Duration::from_secs(120), &cancel).await.unwrap();
    let built = t.elapsed();
    assert!(lib.exists() && lib.starts_with(cache.path()), "{}", lib.display());
    let t = Instant::now();
    let again = build_library(&nvcc.path, &cupti, cache.path(), Duration::from_secs(120), &cancel).await.unwrap();
    assert_eq!(again, lib);
    println!("built in {:.2} s, found in the cache in {:.3} s", built.as_secs_f64(), t.elapsed().as_secs_f64());
    assert!(t.elapsed() < built / 10);
}
