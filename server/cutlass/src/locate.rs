//! Finding the CUTLASS tree: a setting, then `CUTLASS_PATH`, then the
//! `nvidia-cutlass` wheel in the project venv (`KERNELPRO_VENV`, or `.venv`
//! in one of the given roots).

use std::path::{Path, PathBuf};

/// Shown to the user when no tree is found.
pub const CUTLASS_INSTALL_HINT: &str = "Install CUTLASS with `.venv/bin/pip install nvidia-cutlass==4.2.0.0` \
(or `bash scripts/setup.sh`), or point the cutlass path setting or CUTLASS_PATH at a CUTLASS checkout.";

/// Where the wheel keeps the C++ sources, below `site-packages`.
const WHEEL_SOURCE: &str = "cutlass_library/source";

/// The first CUTLASS root among: `setting`, `$CUTLASS_PATH`, the venv at
/// `$KERNELPRO_VENV`, and `ROOT/.venv` for each of `roots`.
pub fn find_root(setting: Option<&Path>, roots: &[PathBuf]) -> Option<PathBuf> {
    let env = |name| std::env::var_os(name).map(PathBuf::from);
    let direct = setting.map(Path::to_path_buf).into_iter().chain(env("CUTLASS_PATH"));
    let venvs = env("KERNELPRO_VENV").into_iter().chain(roots.iter().map(|r| r.join(".venv")));
    direct.chain(venvs.filter_map(|v| venv_source(&v))).find(|p| is_cutlass_root(p))
}

/// A CUTLASS root holds `include/cute` and `include/cutlass`.
pub fn is_cutlass_root(path: &Path) -> bool {
    path.join("include/cute").is_dir() && path.join("include/cutlass").is_dir()
}

fn venv_source(venv: &Path) -> Option<PathBuf> {
    std::fs::read_dir(venv.join("lib"))
        .ok()?
        .flatten()
        .map(|python| python.path().join("site-packages").join(WHEEL_SOURCE))
        .find(|p| is_cutlass_root(p))
}
