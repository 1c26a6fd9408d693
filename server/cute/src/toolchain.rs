//! How nvcc must compile a file holding CuTe code.

use std::path::{Path, PathBuf};

/// The CUTLASS include folder (holding `cute/` and `cutlass/`): from the
/// `setting`, `$CUTLASS_PATH`, `$KERNELPRO_VENV` or `ROOT/.venv` for each of
/// `roots` (the `nvidia-cutlass` wheel), in that order.
pub fn cutlass_include(setting: Option<&Path>, roots: &[PathBuf]) -> Result<PathBuf, String> {
    kernelpro_cutlass::find_root(setting, roots)
        .map(|root| root.join("include"))
        .ok_or_else(|| format!("no CUTLASS headers found. {}", kernelpro_cutlass::CUTLASS_INSTALL_HINT))
}

/// The architecture to build CuTe code for: Hopper's `sm_90` becomes `sm_90a`,
/// which WGMMA and TMA need; others stay.
pub fn cute_arch(arch: &str) -> String {
    match arch {
        "sm_90" => "sm_90a".to_string(),
        other => other.to_string(),
    }
}

/// The nvcc flags CuTe needs beyond the evaluator's own: C++17, constexpr
/// calls across host/device, the include folder, and the arch from [`cute_arch`].
pub fn cute_flags(arch: &str, include: &Path) -> Vec<String> {
    vec![
        "-std=c++17".to_string(),
        "--expt-relaxed-constexpr".to_string(),
        format!("-I{}", include.display()),
        format!("-arch={}", cute_arch(arch)),
    ]
}
