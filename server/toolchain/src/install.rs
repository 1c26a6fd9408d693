//! "Install CUDA compiler": a managed Python environment holding the pinned
//! NVIDIA compiler wheels (nvcc, ptxas, nvdisasm, cuobjdump, the CUDA headers),
//! so a fresh editor finds nvcc without a CUDA toolkit. The editors choose the
//! folder (VS Code's global storage, Neovim's data dir) and set the `nvcc`
//! setting to the path this returns. The pins are the ones the project's own
//! set-up installs (`scripts/requirements-cuda.txt`), one definition for both.

use kernelpro_runner::process::{ToolCommand, ToolError, run_tool};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const REQUIREMENTS: &str = include_str!("../../../scripts/requirements-cuda.txt");

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(
        "python3 was not found on PATH: install Python 3.9 or newer (python.org, or your system's package manager), then try again"
    )]
    NoPython,
    #[error("could not create the environment in {dir}: {why}")]
    Venv { dir: PathBuf, why: String },
    #[error("pip could not install the CUDA compiler wheels (is PyPI reachable from here?): {0}")]
    Pip(String),
    #[error("the wheels installed, but no nvcc is in {0}: report this with the folder's listing")]
    NoNvcc(PathBuf),
    #[error(
        "{0} already holds files, and not an environment KernelPro made there: KernelPro runs no Python it did not set up. Choose an empty or new folder"
    )]
    NotOurs(PathBuf),
    #[error(transparent)]
    Tool(#[from] ToolError),
}

/// The compiler wheels to install, `name==version` each.
pub fn pinned_wheels() -> Vec<&'static str> {
    REQUIREMENTS
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| l.starts_with("nvidia-cuda-") || l.starts_with("nvidia-nvvm"))
        .collect()
}

/// Creates (or updates) the environment in `dir` and returns its nvcc.
/// `extra_pip_args` go to pip as they are (an index mirror, `--no-index --find-links DIR`).
pub async fn install_cuda(
    dir: &Path,
    extra_pip_args: &[String],
    cancel: &CancellationToken,
) -> Result<PathBuf, InstallError> {
    let python = find_on_path("python3").ok_or(InstallError::NoPython)?;
    let venv_python = dir.join("bin").join("python");
    // The interpreter itself (PATH may hold a shim, as pyenv's): what a venv's bin/python links to.
    let asked = ToolCommand::new(&python, Duration::from_secs(60)).args([
        "-I",
        "-c",
        "import os, sys; print(os.path.realpath(sys.executable))",
    ]);
    let out = run_tool(&asked, cancel).await?;
    let system = PathBuf::from(out.stdout.trim());
    if !out.success() || !system.is_absolute() {
        return Err(InstallError::Venv { dir: dir.to_path_buf(), why: last_line(&out.stderr) });
    }
    if !ours(dir, &system) {
        // Never another's Python: the folder must be new or empty, and the environment ours.
        let empty = std::fs::read_dir(dir).map_or(true, |mut d| d.next().is_none());
        if !empty || std::fs::symlink_metadata(dir).is_ok_and(|m| !m.is_dir()) {
            return Err(InstallError::NotOurs(dir.to_path_buf()));
        }
        std::fs::create_dir_all(dir).map_err(|e| InstallError::Venv { dir: dir.to_path_buf(), why: e.to_string() })?;
        let out = run_tool(
            &ToolCommand::new(&python, Duration::from_secs(300)).args(["-m", "venv"]).arg(dir.as_os_str()),
            cancel,
        )
        .await?;
        if !out.success() {
            return Err(InstallError::Venv { dir: dir.to_path_buf(), why: last_line(&out.stderr) });
        }
    }
    let pip = ToolCommand::new(&venv_python, Duration::from_secs(1800))
        .args(["-m", "pip", "install", "--disable-pip-version-check", "--quiet"])
        .args(extra_pip_args.iter().map(String::as_str))
        .args(pinned_wheels());
    let out = run_tool(&pip, cancel).await?;
    if !out.success() {
        return Err(InstallError::Pip(last_line(&out.stderr)));
    }
    nvcc_in(dir).ok_or_else(|| InstallError::NoNvcc(dir.to_path_buf()))
}

/// Whether `dir` is a Python environment made with the interpreter `system`
/// (by [`install_cuda`] or by hand): its `bin/python` resolves to that very
/// file, so running it runs the system's Python, never a program planted in
/// the folder.
fn ours(dir: &Path, system: &Path) -> bool {
    dir.join("pyvenv.cfg").is_file() && std::fs::canonicalize(dir.join("bin/python")).is_ok_and(|p| p == system)
}

/// The nvcc of an environment made by [`install_cuda`], if there is one.
pub fn nvcc_in(dir: &Path) -> Option<PathBuf> {
    let lib = dir.join("lib");
    std::fs::read_dir(&lib)
        .ok()?
        .flatten()
        .map(|e| e.path().join("site-packages/nvidia/cu13/bin/nvcc"))
        .find(|p| p.is_file())
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(name)).find(|p| p.is_file())
}

fn last_line(text: &str) -> String {
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pins_are_the_compiler_wheels_of_the_projects_set_up() {
        let pins = pinned_wheels();
        assert!(pins.iter().any(|p| p.starts_with("nvidia-cuda-nvcc==")), "{pins:?}");
        assert!(pins.iter().any(|p| p.starts_with("nvidia-cuda-nvdisasm==")), "{pins:?}");
        assert!(pins.iter().all(|p| p.contains("==")), "{pins:?}");
        assert!(!pins.iter().any(|p| p.contains("neovim") || p.contains("cutlass")), "{pins:?}");
    }

    /// A folder the client names that holds its own `bin/python` (a script
    /// that leaves a marker when run) is refused, and nothing in it runs.
    #[tokio::test]
    async fn a_planted_python_is_never_run() {
        if find_on_path("python3").is_none() {
            panic!("python3 is needed on PATH for this test");
        }
        let d = tempfile::tempdir().unwrap();
        let marker = d.path().join("ran");
        let env = d.path().join("env");
        std::fs::create_dir_all(env.join("bin")).unwrap();
        let python = env.join("bin/python");
        std::fs::write(&python, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
        std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        // Even with a pyvenv.cfg: its bin/python is not the system's.
        std::fs::write(env.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        let err = install_cuda(&env, &[], &CancellationToken::new()).await.unwrap_err();
        assert!(matches!(err, InstallError::NotOurs(_)), "{err}");
        assert!(!marker.exists(), "the folder's own python ran");
        // A file where the folder should be: refused too.
        std::fs::write(d.path().join("file"), "").unwrap();
        assert!(matches!(
            install_cuda(&d.path().join("file"), &[], &CancellationToken::new()).await,
            Err(InstallError::NotOurs(_))
        ));
    }

    /// An environment made with the system's python3 is reused (an earlier install).
    #[test]
    fn an_environment_of_the_system_python_is_reused() {
        let python = find_on_path("python3").expect("python3 is needed on PATH for this test");
        let d = tempfile::tempdir().unwrap();
        let env = d.path().join("env");
        let made = std::process::Command::new(&python).args(["-m", "venv", "--without-pip"]).arg(&env).status();
        assert!(made.unwrap().success());
        let asked = std::process::Command::new(&python)
            .args(["-I", "-c", "import os, sys; print(os.path.realpath(sys.executable))"])
            .output()
            .unwrap();
        let system = PathBuf::from(String::from_utf8(asked.stdout).unwrap().trim());
        assert!(ours(&env, &system), "{system:?}");
        assert!(!ours(d.path(), &system));
    }

    #[test]
    fn a_folder_without_nvcc_has_none() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(nvcc_in(d.path()), None);
    }
}
