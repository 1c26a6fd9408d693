//! The KernelBench slice without a GPU (`bench/kernelbench/`): every task's
//! naive kernel compiles clean with the real nvcc and its launch spec
//! resolves; the harness script compiles; its dry run (no torch) generates a
//! launcher for every task and planted cheat, and each launcher builds into a
//! shared library with the real nvcc and the GPU run's own arguments, so the
//! GPU run builds only what was already checked here.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bench() -> PathBuf {
    root().join("bench/kernelbench")
}

fn cu_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .collect();
    files.sort();
    files
}

fn kernelpro(args: &[&str]) -> (bool, String, String) {
    let out =
        Command::new(env!("CARGO_BIN_EXE_kernelpro")).args(args).current_dir(root()).output().expect("run kernelpro");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn nvcc() -> PathBuf {
    let env = kernelpro_toolchain::toolchain::Env::process();
    kernelpro_toolchain::toolchain::find_tool("nvcc", None, "KERNELPRO_NVCC", &env)
        .expect("nvcc (set KERNELPRO_VENV or KERNELPRO_NVCC)")
        .path
}

#[test]
fn the_slice_has_at_least_twenty_tasks_each_with_a_name_a_class_and_a_reference() {
    let tasks = cu_files(&bench().join("tasks"));
    assert!(tasks.len() >= 20, "{} tasks", tasks.len());
    for t in &tasks {
        let text = std::fs::read_to_string(t).unwrap();
        for line in ["// task: ", "// class: ", "// torch: "] {
            assert!(text.contains(line), "{} has no `{line}` line", t.display());
        }
    }
}

#[test]
fn every_task_compiles_clean_and_its_spec_resolves() {
    let tasks = cu_files(&bench().join("tasks"));
    let mut args = vec!["check".to_string()];
    args.extend(tasks.iter().map(|t| t.display().to_string()));
    let (ok, out, err) = kernelpro(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(ok, "kernelpro check failed:\n{out}\n{err}");
    let errors: Vec<&str> = out.lines().filter(|l| l.contains(": error: ")).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert!(!out.contains("[no-nvcc]"), "nvcc was not found, so nothing was compiled: set KERNELPRO_VENV");
    for t in &tasks {
        let (ok, out, err) = kernelpro(&["spec", &t.display().to_string()]);
        assert!(ok, "{}: {err}", t.display());
        let spec: Value = serde_json::from_str(&out).unwrap();
        let block: u64 = spec["launch"]["block"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).product();
        assert!(block >= 32, "{}: block {block}", t.display());
        assert!(
            spec["launch"]["args"].as_array().unwrap().iter().any(|a| a["dir"] == "out" || a["dir"] == "inout"),
            "{}: no output",
            t.display()
        );
    }
}

#[test]
fn the_harness_compiles_and_every_generated_launcher_builds_with_nvcc() {
    let script = bench().join("run.py");
    let compiled = Command::new("python3").args(["-m", "py_compile"]).arg(&script).status().expect("python3");
    assert!(compiled.success(), "python3 -m py_compile {}", script.display());

    let out = tempfile::tempdir().unwrap();
    let dry = Command::new("python3")
        .arg(&script)
        .args(["--dry-run", "--kernelpro", env!("CARGO_BIN_EXE_kernelpro"), "--out"])
        .arg(out.path())
        .arg(bench().join("tasks"))
        .arg(bench().join("cheats"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.status.success(), "dry run failed:\n{text}\n{}", String::from_utf8_lossy(&dry.stderr));
    let tasks = cu_files(&bench().join("tasks")).len() + cu_files(&bench().join("cheats")).len();
    assert!(text.contains(&format!("dry run: {tasks} of {tasks} tasks")), "{text}");

    let launchers = cu_files(&out.path().join("dry-run"));
    assert_eq!(launchers.len(), tasks, "one naive launcher per task");
    // The launcher calls the kernel with the spec's grid, block and arguments on the caller's stream.
    let mse = std::fs::read_to_string(out.path().join("dry-run/94_MSELoss.naive.cu")).unwrap();
    let launcher = &mse[mse.find("#line 1 \"kernelpro-launcher\"").expect("launcher marker")..];
    for want in [
        "extern \"C\" int kp_launch_naive(void* const* kp_buffers, void* kp_stream_handle)",
        "cudaStream_t kp_stream = kp_caller_stream(kp_stream_handle);",
        "mse_loss<<<dim3(262144u, 1u, 1u), dim3(256u, 1u, 1u), 0, kp_stream>>>(",
        "static_cast<double*>(kp_buffers[0])",
        "static_cast<int>(67108864LL)",
        "return (int)cudaGetLastError();",
    ] {
        assert!(launcher.contains(want), "`{want}` not in\n{launcher}");
    }

    // Build each launcher into a shared library exactly as the GPU run does (its nvcc
    // arguments beside it), a few at a time.
    let nvcc = nvcc();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(4);
    let failures: Vec<String> = std::thread::scope(|s| {
        let chunks: Vec<Vec<PathBuf>> =
            (0..threads).map(|i| launchers.iter().skip(i).step_by(threads).cloned().collect()).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let nvcc = &nvcc;
                s.spawn(move || {
                    let mut failed = Vec::new();
                    for cu in chunk {
                        let args = std::fs::read_to_string(cu.with_extension("flags")).unwrap();
                        let so = cu.with_extension("so");
                        let o = Command::new(nvcc).args(args.lines()).arg(&cu).arg("-o").arg(&so).output().unwrap();
                        if !o.status.success() {
                            failed.push(format!("{}:\n{}", cu.display(), String::from_utf8_lossy(&o.stderr)));
                        } else if std::fs::metadata(&so).map_or(0, |m| m.len()) == 0 {
                            failed.push(format!("{}: empty library", cu.display()));
                        }
                    }
                    failed
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
