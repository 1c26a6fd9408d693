//! `kernelpro doctor`: what KernelPro can find and use on this machine, and
//! the fix for each missing piece. The editors' health views show the same.
//! For an untrusted workspace it says where it would look and what it found
//! there, and runs nothing (not even `nvcc --version`).

use crate::process::{ToolCommand, run_tool};
use crate::settings::Settings;
use crate::toolchain::{self, Env, Found};
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

async fn version_of(found: &Found, arg: &str, trusted: bool) -> String {
    if !trusted {
        return format!("{} (via {}; not run: the workspace is not trusted)", found.path.display(), found.via);
    }
    let cmd = ToolCommand::new(&found.path, Duration::from_secs(20)).arg(arg);
    match run_tool(&cmd, &CancellationToken::new()).await {
        Ok(out) => {
            let text = format!("{}{}", out.stdout, out.stderr);
            let line = text
                .lines()
                .rev()
                .find(|l| l.contains("release") || l.contains("Version") || l.contains("version"))
                .unwrap_or("")
                .trim()
                .to_string();
            format!("{} ({}, via {})", found.path.display(), line, found.via)
        }
        Err(e) => format!("{} (does not run: {e})", found.path.display()),
    }
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

pub async fn report(settings: &Settings) -> Report {
    let env = Env::for_settings(settings);
    let trusted = settings.trusted;
    let mut checks = Vec::new();
    if !trusted {
        checks.push(Check {
            name: "workspace trust".into(),
            ok: false,
            detail: format!("not trusted: nothing below was run (not even nvidia-smi: the GPU is not checked), and the workspace's own .venv is not searched ({})", search_order(&env)),
            fix: Some(settings.editor.trust_hint().into()),
        });
    }
    let nvcc = toolchain::find_tool("nvcc", settings.nvcc.as_deref(), "KERNELPRO_NVCC", &env);
    match &nvcc {
        Some(f) => checks.push(Check {
            name: "nvcc".into(),
            ok: true,
            detail: version_of(f, "--version", trusted).await,
            fix: None,
        }),
        None => checks.push(Check {
            name: "nvcc".into(),
            ok: false,
            detail: "not found".into(),
            fix: Some(toolchain::nvcc_install_hint(settings.editor)),
        }),
    }
    for tool in ["ptxas", "nvdisasm", "cuobjdump"] {
        let found = nvcc.as_ref().and_then(|n| toolchain::find_sibling(n, tool, &env));
        match found {
            Some(f) => checks.push(Check {
                name: tool.into(),
                ok: true,
                detail: version_of(&f, "--version", trusted).await,
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
    match toolchain::find_tool("ncu", settings.ncu.as_deref(), "KERNELPRO_NCU", &env) {
        Some(f) => checks.push(Check {
            name: "ncu".into(),
            ok: true,
            detail: version_of(&f, "--version", trusted).await,
            fix: None,
        }),
        None => checks.push(Check {
            name: "ncu".into(),
            ok: false,
            detail: "not found: profiling is off; compile, SASS and static findings still work".into(),
            fix: Some(toolchain::ncu_install_hint(settings.editor)),
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
                settings.editor.setting("runner")
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
    let cache = crate::cache_dir();
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
