//! Finding the CUDA tools: a setting, then an environment variable, then
//! `CUDA_HOME`, then `PATH`, then the virtual environment that the README's
//! set-up creates (`KERNELPRO_VENV`, `.venv` in a project root the user
//! vouched for, or in the binary's install folder: [`install_roots`]).
//!
//! Never every ancestor of the binary: a shared parent folder (`/opt`, `/home`)
//! is not the install, and a `.venv` planted there would be run.
//!
//! Never the working directory: editors start the server in the workspace,
//! and a workspace's own `.venv/.../nvcc` is the workspace's program. Its
//! `.venv` is searched only through `Settings::project_roots`, which the
//! server fills from the client's workspace folders and only while trusted.

use std::path::{Path, PathBuf};

/// How to install the compiler when none is found; shown to the user as is.
/// Editor-neutral; [`nvcc_install_hint`] names the setting in the user's client's words.
pub const NVCC_INSTALL_HINT: &str = "Install the CUDA compiler wheels into the project's .venv \
(`pip install nvidia-cuda-nvcc nvidia-cuda-crt nvidia-cuda-nvdisasm nvidia-cuda-cccl`), \
or point the nvcc setting, KERNELPRO_NVCC or CUDA_HOME at an existing CUDA toolkit.";

pub const NCU_INSTALL_HINT: &str = "Nsight Compute (ncu) ships with the CUDA toolkit on GPU machines; \
set the ncu setting or KERNELPRO_NCU to its path, or add it to PATH.";

pub fn nvcc_install_hint(words: kernelpro_config::words::Words) -> String {
    format!(
        "To install it, {}. {}",
        words.install_cuda_hint(),
        NVCC_INSTALL_HINT
            .replace("Install the CUDA compiler wheels into", "Or install the CUDA compiler wheels into")
            .replace("the nvcc setting", &words.setting("nvcc"))
    )
}

pub fn ncu_install_hint(words: kernelpro_config::words::Words) -> String {
    NCU_INSTALL_HINT.replace("the ncu setting", &words.setting("ncu"))
}

/// How to get a host compiler, for the doctor's fix and the compile error.
pub const HOST_COMPILER_HINT: &str = "install one: `sudo apt-get install g++` (Debian, Ubuntu), `sudo dnf install gcc-c++` (Fedora), \
or without root `conda install -c conda-forge gxx_linux-64`; then put its folder on the PATH the editor or server starts with, \
or set NVCC_CCBIN to the g++ to use";

/// Where a tool was found, for `kernelpro doctor` and error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub path: PathBuf,
    pub via: &'static str,
}

/// The process environment as discovery sees it; tests supply their own.
pub struct Env<'a> {
    pub var: &'a (dyn Fn(&str) -> Option<String> + Send + Sync),
    pub roots: Vec<PathBuf>,
}

impl Env<'static> {
    /// The process's variables and the install the binary runs from; no project.
    pub fn process() -> Self {
        let roots = std::env::current_exe().map(|exe| install_roots(&exe)).unwrap_or_default();
        Env { var: &|k| std::env::var(k).ok(), roots }
    }

    /// The project roots of `settings` (first: a project pins its own
    /// toolchain), only when trusted, then [`Env::process`].
    pub fn for_settings(settings: &kernelpro_config::settings::Settings) -> Self {
        let mut env = Self::process();
        if settings.trusted {
            env.roots.splice(0..0, settings.project_roots.iter().cloned());
        }
        env
    }
}

/// The folders the binary `exe` is installed in, whose `.venv` holds its
/// toolchain: the binary's own folder; `PREFIX` for `PREFIX/bin/kernelpro`;
/// and for a cargo build (`ROOT/target/PROFILE[/deps]/kernelpro`, `ROOT`
/// holding `Cargo.toml`) the checkout `ROOT`. Nothing above those.
pub fn install_roots(exe: &Path) -> Vec<PathBuf> {
    let Some(dir) = exe.parent() else { return Vec::new() };
    let mut roots = vec![dir.to_path_buf()];
    if dir.file_name().is_some_and(|n| n == "bin") {
        roots.extend(dir.parent().map(Path::to_path_buf));
    }
    // `target/debug/kernelpro`, `target/debug/deps/test-binary`, `target/x86_64-…/debug/kernelpro`.
    let cargo_root = dir
        .ancestors()
        .skip(1)
        .take(3)
        .find(|a| a.file_name().is_some_and(|n| n == "target"))
        .and_then(Path::parent)
        .filter(|root| root.join("Cargo.toml").is_file());
    roots.extend(cargo_root.map(Path::to_path_buf));
    roots
}

/// Find `tool` (e.g. "nvcc", "nvdisasm", "ncu"). `env_var` is e.g. `KERNELPRO_NVCC`.
pub fn find_tool(tool: &str, setting: Option<&Path>, env_var: &str, env: &Env) -> Option<Found> {
    if let Some(p) = setting {
        return Some(Found { path: p.to_path_buf(), via: "setting" });
    }
    if let Some(p) = (env.var)(env_var).filter(|s| !s.is_empty()) {
        return Some(Found { path: PathBuf::from(p), via: "environment variable" });
    }
    for home in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(h) = (env.var)(home) {
            let candidate = Path::new(&h).join("bin").join(tool);
            if is_executable(&candidate) {
                return Some(Found { path: candidate, via: "CUDA_HOME" });
            }
        }
    }
    if let Some(path) = (env.var)("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(tool);
            if is_executable(&candidate) {
                return Some(Found { path: candidate, via: "PATH" });
            }
        }
    }
    let mut venvs: Vec<PathBuf> = (env.var)("KERNELPRO_VENV").map(PathBuf::from).into_iter().collect();
    venvs.extend(env.roots.iter().map(|r| r.join(".venv")));
    for venv in venvs {
        if let Some(bin) = venv_cuda_bin(&venv) {
            let candidate = bin.join(tool);
            if is_executable(&candidate) {
                return Some(Found { path: candidate, via: "project .venv" });
            }
        }
    }
    None
}

/// A sibling tool of an already-found one (nvdisasm next to nvcc), else a fresh search.
pub fn find_sibling(found: &Found, tool: &str, env: &Env) -> Option<Found> {
    let sibling = found.path.with_file_name(tool);
    if is_executable(&sibling) {
        return Some(Found { path: sibling, via: found.via });
    }
    find_tool(tool, None, "", env)
}

fn venv_cuda_bin(venv: &Path) -> Option<PathBuf> {
    let lib = std::fs::read_dir(venv.join("lib")).ok()?;
    for entry in lib.flatten() {
        let nvidia = entry.path().join("site-packages/nvidia");
        for cu in ["cu13", "cu12", "cuda_nvcc"] {
            let bin = nvidia.join(cu).join("bin");
            if bin.join("nvcc").exists() {
                return Some(bin);
            }
        }
    }
    None
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn fake_tool(dir: &Path, name: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn check(vars: &[(&str, String)], roots: Vec<PathBuf>, setting: Option<&Path>, expected: Option<(&Path, &str)>) {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        let lookup = move |k: &str| map.get(k).cloned();
        let env = Env { var: &lookup, roots };
        let got = find_tool("nvcc", setting, "KERNELPRO_NVCC", &env);
        assert_eq!(got.as_ref().map(|f| (f.path.as_path(), f.via)), expected);
    }

    #[test]
    fn discovery_order() {
        let t = tempfile::tempdir().unwrap();
        let home_nvcc = fake_tool(&t.path().join("cuda/bin"), "nvcc");
        let path_nvcc = fake_tool(&t.path().join("pathdir"), "nvcc");
        let venv_nvcc = fake_tool(&t.path().join("proj/.venv/lib/python3.11/site-packages/nvidia/cu13/bin"), "nvcc");
        let home = ("CUDA_HOME", t.path().join("cuda").display().to_string());
        let path = ("PATH", t.path().join("pathdir").display().to_string());
        let roots = vec![t.path().join("proj")];
        check(std::slice::from_ref(&home), vec![], Some(Path::new("/x/nvcc")), Some((Path::new("/x/nvcc"), "setting")));
        check(
            &[("KERNELPRO_NVCC", "/y/nvcc".into()), home.clone()],
            vec![],
            None,
            Some((Path::new("/y/nvcc"), "environment variable")),
        );
        check(&[home.clone(), path.clone()], vec![], None, Some((&home_nvcc, "CUDA_HOME")));
        check(std::slice::from_ref(&path), roots.clone(), None, Some((&path_nvcc, "PATH")));
        check(&[], roots, None, Some((&venv_nvcc, "project .venv")));
        check(&[], vec![t.path().join("nowhere")], None, None);
    }

    /// The install folder only: never the ancestors above it.
    #[test]
    fn the_install_folder_and_no_ancestor() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        let roots = |exe: &str| install_roots(&root.join(exe));
        assert_eq!(roots("opt/kp/bin/kernelpro"), [root.join("opt/kp/bin"), root.join("opt/kp")]);
        assert_eq!(roots("shared/tools/kernelpro"), [root.join("shared/tools")]);
        // A cargo build: the checkout holding Cargo.toml, not a `target` folder elsewhere.
        assert_eq!(roots("repo/target/debug/kernelpro"), [root.join("repo/target/debug")]);
        std::fs::create_dir_all(root.join("repo")).unwrap();
        std::fs::write(root.join("repo/Cargo.toml"), "").unwrap();
        assert_eq!(roots("repo/target/debug/kernelpro"), [root.join("repo/target/debug"), root.join("repo")]);
        assert_eq!(roots("repo/target/debug/deps/t-1"), [root.join("repo/target/debug/deps"), root.join("repo")]);
        let process = Env::process().roots;
        assert!(process.len() <= 3 && !process.contains(&PathBuf::from("/")), "{process:?}");
        // A .venv in a parent of the install is not searched.
        let planted = fake_tool(&root.join(".venv/lib/python3.11/site-packages/nvidia/cu13/bin"), "nvcc");
        let env = Env { var: &|_| None, roots: roots("opt/kp/bin/kernelpro") };
        assert_eq!(find_tool("nvcc", None, "KERNELPRO_NVCC", &env), None, "{planted:?} was found");
    }

    #[test]
    fn the_workspace_is_searched_only_when_trusted_and_never_by_cwd() {
        let cwd = std::env::current_dir().unwrap();
        assert!(!Env::process().roots.contains(&cwd), "the working directory is searched: {:?}", Env::process().roots);
        let mut settings = kernelpro_config::settings::Settings {
            project_roots: vec![PathBuf::from("/work/ws")],
            ..Default::default()
        };
        assert!(!Env::for_settings(&settings).roots.contains(&PathBuf::from("/work/ws")));
        settings.trusted = true;
        assert_eq!(Env::for_settings(&settings).roots.first(), Some(&PathBuf::from("/work/ws")));
    }
}
