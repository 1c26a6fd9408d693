//! `kernelpro doctor`: what KernelPro can find and use on this machine, and
//! the fix for each missing piece. The editors' health views show the same.
//! For an untrusted workspace it says where it would look and what it found
//! there, and runs nothing (not even `nvcc --version`).

use kernelpro_config::settings::Settings;
use kernelpro_core::lens::Readiness;
use kernelpro_runner::process::{ToolCommand, run_tool};
use kernelpro_toolchain::toolchain::{self, Env, Found};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, serde::Serialize)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
    /// What to do when not ok.
    pub fix: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    fn failed(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.name == name && !c.ok)
    }

    /// What Profile and Optimize need and lack (an untrusted workspace runs
    /// nothing: its report says so, and its readiness names the trust).
    pub fn readiness(&self, settings: &Settings) -> Readiness {
        if self.failed("workspace trust").is_some() {
            let why = "the workspace is not trusted".to_string();
            let fix = self.failed("workspace trust").and_then(|c| c.fix.clone()).unwrap_or_default();
            return Readiness {
                compile: Some(why.clone()),
                optimize: Some(why.clone()),
                profile: Some(why),
                optimize_fix: fix.clone(),
                profile_fix: fix,
            };
        }
        let mut compile = Vec::new();
        let mut compile_checks = Vec::new();
        if self.failed("nvcc").is_some() {
            compile.push("nvcc");
            compile_checks.push("nvcc");
        }
        if self.failed("host compiler").is_some() {
            compile.push("host compiler (g++)");
            compile_checks.push("host compiler");
        }
        // A runner reaches a GPU elsewhere; a stub evaluator needs none.
        let gpu_missing = self.failed("GPU").is_some() && settings.runner.is_empty();
        let stub = settings.optimize.evaluator.starts_with("stub");
        let mut optimize = compile.clone();
        let mut optimize_checks = compile_checks.clone();
        if gpu_missing && !stub {
            optimize.push("NVIDIA GPU or driver");
            optimize_checks.push("GPU");
        }
        let mut profile = compile.clone();
        let mut profile_checks = compile_checks.clone();
        if gpu_missing {
            profile.push("NVIDIA GPU or driver");
            profile_checks.push("GPU");
        }
        if self.failed("ncu").is_some() {
            profile.push("Nsight Compute (ncu)");
            profile_checks.push("ncu");
        }
        if self.failed("counter permissions").is_some() {
            profile.push("access to the performance counters");
            profile_checks.push("counter permissions");
        }
        let missing = |v: Vec<&str>| (!v.is_empty()).then(|| format!("no {}", v.join(", no ")));
        let fixes = |names: Vec<&str>| {
            names.iter().filter_map(|n| self.failed(n).and_then(|c| c.fix.clone())).collect::<Vec<_>>().join("; ")
        };
        Readiness {
            compile: missing(compile),
            optimize: missing(optimize),
            profile: missing(profile),
            optimize_fix: fixes(optimize_checks),
            profile_fix: fixes(profile_checks),
        }
    }

    /// The fixes of the checks that failed, one per line, for a message that says what is missing.
    pub fn fixes(&self) -> Vec<String> {
        self.checks
            .iter()
            .filter(|c| !c.ok)
            .filter_map(|c| c.fix.as_ref().map(|f| format!("{}: {f}", c.name)))
            .collect()
    }

    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for c in &self.checks {
            s.push_str(&format!("{} {}: {}\n", if c.ok { "ok " } else { "!! " }, c.name, c.detail));
            if let Some(f) = &c.fix {
                s.push_str(&format!("      fix: {f}\n"));
            }
        }
        s
    }
}

async fn version_of(found: &Found, arg: &str, run: Run) -> String {
    match run {
        Run::Untrusted => {
            return format!("{} (via {}; not run: the workspace is not trusted)", found.path.display(), found.via);
        }
        Run::Locate => return format!("{} (via {})", found.path.display(), found.via),
        Run::Versions => {}
    }
    let cmd = ToolCommand::new(&found.path, Duration::from_secs(20)).arg(arg);
    match run_tool(&cmd, &CancellationToken::new()).await {
        Ok(out) => {
            let text = format!("{}{}", out.stdout, out.stderr);
            let line = text
                .lines()
                .rev()
                .find(|l| l.contains("release") || l.contains("Version") || l.contains("version"))
                // g++'s first line ("g++ (Debian 12.2.0-14) 12.2.0") has none of those words.
                .or_else(|| text.lines().next())
                .unwrap_or("")
                .trim()
                .to_string();
            format!("{} ({}, via {})", found.path.display(), line, found.via)
        }
        Err(e) => format!("{} (does not run: {e})", found.path.display()),
    }
}

/// nvcc preprocesses every `.cu` with a host C++ compiler (`g++` on PATH, or
/// `NVCC_CCBIN`): without one, every compile fails with "Failed to preprocess
/// host compiler properties". The `-ccbin` flag is refused in settings (it
/// runs a program), so PATH and NVCC_CCBIN are the ways to name one.
async fn host_compiler(env: &Env<'_>, run: Run) -> Check {
    let named = (env.var)("NVCC_CCBIN").filter(|v| !v.is_empty());
    let found = match &named {
        Some(p) => {
            let p = std::path::PathBuf::from(p);
            let on_path = (!p.is_absolute())
                .then(|| (env.var)("PATH"))
                .flatten()
                .and_then(|path| std::env::split_paths(&path).map(|d| d.join(&p)).find(|c| is_executable(c)));
            on_path.or_else(|| is_executable(&p).then_some(p)).map(|path| Found { path, via: "NVCC_CCBIN" })
        }
        None => (env.var)("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join("g++"))
                .find(|c| is_executable(c))
                .map(|path| Found { path, via: "PATH" })
        }),
    };
    match found {
        Some(f) => Check { name: "host compiler".into(), ok: true, detail: version_of(&f, "--version", run).await, fix: None },
        None => Check {
            name: "host compiler".into(),
            ok: false,
            detail: match named {
                Some(n) => format!("NVCC_CCBIN is `{n}`, which is not an executable file: nvcc cannot preprocess any file (\"Failed to preprocess host compiler properties\")"),
                None => "no g++ on PATH: nvcc cannot preprocess any file (\"Failed to preprocess host compiler properties\"), so nothing compiles".into(),
            },
            fix: Some(toolchain::HOST_COMPILER_HINT.into()),
        },
    }
}

/// A tool named by its setting or variable is used as named (nothing else is
/// searched), so when that names no executable file nothing can run it: the
/// check fails. (It passed with "does not run", and the editors' status bar,
/// lenses and notices went on as if the tool were there: issue 32 item 3.)
/// A bare name is looked up on PATH, as running it would.
fn named_but_not_executable(found: &Found, env: &Env<'_>) -> bool {
    if !matches!(found.via, "setting" | "environment variable") {
        return false;
    }
    let p = &found.path;
    if !p.is_absolute() && p.components().count() == 1 {
        let on_path =
            (env.var)("PATH").is_some_and(|path| std::env::split_paths(&path).any(|d| is_executable(&d.join(p))));
        return !on_path;
    }
    !is_executable(p)
}

/// "`/x/nvcc` (the `kernelpro.nvcc` setting)": where a named tool's path came from.
fn named(found: &Found, tool: &str, settings: &Settings) -> String {
    let by = if found.via == "setting" {
        settings.words.setting(tool)
    } else {
        format!("KERNELPRO_{}", tool.to_uppercase())
    };
    format!("`{}` ({by})", found.path.display())
}

fn is_executable(p: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// Where discovery looks, for an untrusted workspace's report.
fn search_order(env: &Env) -> String {
    let venv = (env.var)("KERNELPRO_VENV").map(|v| format!("KERNELPRO_VENV ({v}), ")).unwrap_or_default();
    let install =
        env.roots.first().map(|r| format!(", .venv above the kernelpro binary ({})", r.display())).unwrap_or_default();
    format!(
        "looked in the setting, the KERNELPRO_* variable, CUDA_HOME, PATH, {venv}the binary's install{install}; not in the workspace"
    )
}

/// How far doctor goes with each tool it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    /// Nothing is run in an untrusted workspace.
    Untrusted,
    /// Found, not run: the readiness the server keeps from its start, which
    /// must not run a configured tool (one that hangs would outlive the check).
    Locate,
    /// `--version` of each: the doctor command.
    Versions,
}

/// Every check, each tool's `--version` included (`kernelpro doctor`, the editors' doctor command).
pub async fn report(settings: &Settings) -> Report {
    report_with(settings, Run::Versions).await
}

/// The same checks with the tools located, not run (nvidia-smi still is):
/// what Profile and Optimize need, cheap enough for every server start.
pub async fn located(settings: &Settings) -> Report {
    report_with(settings, Run::Locate).await
}

async fn report_with(settings: &Settings, versions: Run) -> Report {
    let env = Env::for_settings(settings);
    let trusted = settings.trusted;
    let run = if trusted { versions } else { Run::Untrusted };
    let mut checks = Vec::new();
    if !trusted {
        checks.push(Check {
            name: "workspace trust".into(),
            ok: false,
            detail: format!("not trusted: nothing below was run (not even nvidia-smi: the GPU is not checked), and the workspace's own .venv is not searched ({})", search_order(&env)),
            fix: Some(settings.words.trust_hint().into()),
        });
    }
    let nvcc = toolchain::find_tool("nvcc", settings.nvcc.as_deref(), "KERNELPRO_NVCC", &env);
    match &nvcc {
        Some(f) if named_but_not_executable(f, &env) => checks.push(Check {
            name: "nvcc".into(),
            ok: false,
            detail: format!("{}, which is not an executable file: nothing is compiled", named(f, "nvcc", settings)),
            fix: Some(format!(
                "point it at an existing nvcc, or clear it to let KernelPro search. {}",
                toolchain::nvcc_install_hint(settings.words)
            )),
        }),
        Some(f) => checks.push(Check {
            name: "nvcc".into(),
            ok: true,
            detail: version_of(f, "--version", run).await,
            fix: None,
        }),
        None => checks.push(Check {
            name: "nvcc".into(),
            ok: false,
            detail: "not found".into(),
            fix: Some(toolchain::nvcc_install_hint(settings.words)),
        }),
    }
    for tool in ["ptxas", "nvdisasm", "cuobjdump"] {
        let found = nvcc.as_ref().and_then(|n| toolchain::find_sibling(n, tool, &env));
        match found {
            Some(f) => checks.push(Check {
                name: tool.into(),
                ok: true,
                detail: version_of(&f, "--version", run).await,
                fix: None,
            }),
            None => checks.push(Check {
                name: tool.into(),
                ok: false,
                detail: "not found".into(),
                fix: Some(format!("install the nvidia-cuda-{tool} wheel (scripts/setup.sh does)")),
            }),
        }
    }
    checks.push(host_compiler(&env, run).await);
    match toolchain::find_tool("ncu", settings.ncu.as_deref(), "KERNELPRO_NCU", &env) {
        Some(f) if named_but_not_executable(&f, &env) => checks.push(Check {
            name: "ncu".into(),
            ok: false,
            detail: format!("{}, which is not an executable file: profiling is off", named(&f, "ncu", settings)),
            fix: Some(format!(
                "point it at an existing ncu, or clear it to let KernelPro search. {}",
                toolchain::ncu_install_hint(settings.words)
            )),
        }),
        Some(f) => checks.push(Check {
            name: "ncu".into(),
            ok: true,
            detail: version_of(&f, "--version", run).await,
            fix: None,
        }),
        None => checks.push(Check {
            name: "ncu".into(),
            ok: false,
            detail: "not found: profiling is off; compile, SASS and static findings still work".into(),
            fix: Some(toolchain::ncu_install_hint(settings.words)),
        }),
    }
    let smi = ToolCommand::new("nvidia-smi", Duration::from_secs(20))
        .args(["--query-gpu=name,driver_version", "--format=csv,noheader"]);
    // Untrusted: no GPU line at all (editors read the GPU's name from it).
    match if trusted { Some(run_tool(&smi, &CancellationToken::new()).await) } else { None } {
        None => {}
        Some(Ok(out)) if out.success() => checks.push(Check {
            name: "GPU".into(),
            ok: true,
            detail: out.stdout.trim().replace('\n', "; "),
            fix: None,
        }),
        _ => checks.push(Check {
            name: "GPU".into(),
            ok: false,
            detail: "no NVIDIA GPU or driver visible (nvidia-smi did not answer)".into(),
            fix: Some(format!(
                "run on a GPU machine, or set {} to reach one (e.g. [\"srun\", \"--gres=gpu:1\", \"--\"])",
                settings.words.setting("runner")
            )),
        }),
    }
    let counters = std::fs::read_to_string("/proc/driver/nvidia/params")
        .ok()
        .and_then(|p| p.lines().find(|l| l.starts_with("RmProfilingAdminOnly")).map(|l| l.to_string()));
    checks.push(match counters {
        Some(l) if l.ends_with(": 0") => Check { name: "counter permissions".into(), ok: true, detail: "performance counters open to all users".into(), fix: None },
        Some(_) => Check {
            name: "counter permissions".into(),
            ok: false,
            detail: "performance counters are admin-only (ncu would fail with ERR_NVGPUCTRPERM)".into(),
            fix: Some("run as root / with CAP_PERFMON, or set NVreg_RestrictProfilingToAdminUsers=0 (see NVIDIA's ERR_NVGPUCTRPERM page)".into()),
        },
        None => Check { name: "counter permissions".into(), ok: true, detail: "unknown until ncu runs (no driver parameters visible here)".into(), fix: None },
    });
    let cache = kernelpro_config::cache_dir();
    checks.push(match std::fs::create_dir_all(&cache) {
        Ok(()) => Check { name: "cache directory".into(), ok: true, detail: cache.display().to_string(), fix: None },
        Err(e) => Check {
            name: "cache directory".into(),
            ok: false,
            detail: format!("{}: {e}", cache.display()),
            fix: Some("set XDG_CACHE_HOME to a writable directory".into()),
        },
    });
    let key_set = std::env::var("KERNELPRO_LLM_KEY").is_ok_and(|k| !k.is_empty());
    checks.push(Check {
        name: "LLM".into(),
        ok: true,
        detail: if settings.llm.enabled {
            format!(
                "enabled: {} at {} model {} (key {})",
                settings.llm.provider,
                settings.llm.endpoint.as_deref().unwrap_or("(default endpoint)"),
                settings.llm.model.as_deref().unwrap_or("(default model)"),
                if key_set { "set" } else { "not set" }
            )
        } else {
            "disabled: the optimizer uses its built-in recipes only".into()
        },
        fix: None,
    });
    Report { checks }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with_path(path: &std::path::Path) -> (String, Env<'static>) {
        let p = path.display().to_string();
        let leaked: &'static str = Box::leak(p.clone().into_boxed_str());
        let var: &'static (dyn Fn(&str) -> Option<String> + Send + Sync) =
            Box::leak(Box::new(move |k: &str| (k == "PATH").then(|| leaked.to_string())));
        (p, Env { var, roots: Vec::new() })
    }

    /// Issue 32: with no g++ on PATH every compile fails, so doctor must say so
    /// and how to get one; with one (here the machine's real g++) it is ok and runs.
    #[tokio::test]
    async fn a_missing_host_compiler_is_reported_with_how_to_install_one() {
        let empty = tempfile::tempdir().unwrap();
        let (_, env) = env_with_path(empty.path());
        let c = host_compiler(&env, Run::Versions).await;
        assert!(!c.ok, "{c:?}");
        assert!(
            c.detail.contains("no g++ on PATH") && c.detail.contains("Failed to preprocess host compiler properties")
        );
        let fix = c.fix.unwrap();
        assert!(fix.contains("apt-get install g++") && fix.contains("NVCC_CCBIN"), "{fix}");

        let gxx = std::env::split_paths(&std::env::var("PATH").unwrap())
            .map(|d| d.join("g++"))
            .find(|p| is_executable(p))
            .expect("g++ on this machine's PATH (nvcc needs it for every other test)");
        let (_, env) = env_with_path(gxx.parent().unwrap());
        let c = host_compiler(&env, Run::Versions).await;
        assert!(c.ok && c.detail.contains("g++") && c.detail.contains("via PATH"), "{c:?}");
    }

    /// Issue 32 item 3: an nvcc or ncu setting that names no executable file
    /// fails its check (it passed with "does not run": the editors' status bar,
    /// lenses and notices then went on as if the tool were there). The same
    /// setting naming a real file passes.
    #[tokio::test]
    async fn a_setting_that_names_no_executable_fails_its_check() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            trusted: true,
            nvcc: Some(dir.path().join("no-such/bin/nvcc")),
            ncu: Some(dir.path().join("ncu-not-executable")),
            ..Default::default()
        };
        std::fs::write(dir.path().join("ncu-not-executable"), "").unwrap();
        let r = located(&settings).await;
        let nvcc = r.checks.iter().find(|c| c.name == "nvcc").unwrap();
        assert!(
            !nvcc.ok && nvcc.detail.contains("no-such/bin/nvcc") && nvcc.detail.contains("not an executable file"),
            "{nvcc:?}"
        );
        assert!(nvcc.fix.as_deref().unwrap().contains("clear it"), "{nvcc:?}");
        let ncu = r.checks.iter().find(|c| c.name == "ncu").unwrap();
        assert!(!ncu.ok && ncu.detail.contains("profiling is off"), "{ncu:?}");
        assert_eq!(r.readiness(&settings).compile.as_deref(), Some("no nvcc"));

        let real = dir.path().join("nvcc");
        std::fs::write(&real, "#!/bin/sh\necho 'Cuda compilation tools, release 13.0'\n").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
        let r = located(&Settings { nvcc: Some(real), ..settings }).await;
        assert!(r.checks.iter().any(|c| c.name == "nvcc" && c.ok), "{:?}", r.checks);
    }

    /// Profile and Optimize are offered only where they can run: the
    /// readiness names what is missing (nvcc first: without it nothing runs).
    #[test]
    fn readiness_names_what_is_missing() {
        let check = |name: &str, ok: bool| Check { name: name.into(), ok, detail: String::new(), fix: None };
        let settings = Settings { trusted: true, ..Default::default() };
        let report = Report {
            checks: vec![check("nvcc", true), check("host compiler", true), check("ncu", false), check("GPU", false)],
        };
        let r = report.readiness(&settings);
        assert_eq!(r.compile, None);
        assert_eq!(r.optimize.as_deref(), Some("no NVIDIA GPU or driver"));
        assert_eq!(r.profile.as_deref(), Some("no NVIDIA GPU or driver, no Nsight Compute (ncu)"));
        // A stub evaluator needs no GPU; a runner reaches one elsewhere.
        let mut stub = settings.clone();
        stub.optimize.evaluator = "stub:1.5".into();
        assert_eq!(report.readiness(&stub).optimize, None);
        let mut runner = settings.clone();
        runner.runner = vec!["srun".into(), "--".into()];
        assert_eq!(report.readiness(&runner).profile.as_deref(), Some("no Nsight Compute (ncu)"));
        let no_nvcc = Report { checks: vec![check("nvcc", false), check("GPU", true), check("ncu", true)] };
        assert_eq!(no_nvcc.readiness(&settings).compile.as_deref(), Some("no nvcc"));
        assert_eq!(no_nvcc.readiness(&settings).optimize.as_deref(), Some("no nvcc"));
    }

    #[tokio::test]
    async fn an_untrusted_workspace_gets_a_report_and_nothing_runs() {
        use std::os::unix::fs::PermissionsExt;
        let ws = tempfile::tempdir().unwrap();
        let marker = ws.path().join("ran");
        let bin = ws.path().join(".venv/lib/python3.11/site-packages/nvidia/cu13/bin");
        std::fs::create_dir_all(&bin).unwrap();
        for tool in ["nvcc", "ptxas", "nvdisasm", "cuobjdump", "ncu"] {
            let p = bin.join(tool);
            std::fs::write(&p, format!("#!/bin/sh\necho {tool} >> {}\n", marker.display())).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        // A tool named by the settings is reported with its path, not run.
        let settings = Settings {
            project_roots: vec![ws.path().to_path_buf()],
            nvcc: Some(bin.join("nvcc")),
            ..Default::default()
        };
        let text = report(&settings).await.to_text();
        assert!(!marker.exists(), "an untrusted doctor ran {}", std::fs::read_to_string(&marker).unwrap_or_default());
        assert!(
            text.contains("workspace trust: not trusted") && text.contains("not run: the workspace is not trusted"),
            "{text}"
        );
        assert!(text.contains("the GPU is not checked") && !text.contains("GPU:"), "{text}");
        // Trusted, the same settings run the tool: the marker is how a run shows.
        let trusted = Settings { trusted: true, ..settings };
        report(&trusted).await;
        assert!(std::fs::read_to_string(&marker).unwrap_or_default().contains("nvcc"));
    }
}
