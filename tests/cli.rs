//! The command line over the real binary (and the real nvcc where a command
//! compiles): inputs it refuses by type or size, values it validates before
//! any work, and the shape of its text and JSON output (issues 30 and 32).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_kernelpro")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(name)
}

/// Runs the binary with `args` (no LLM settings from the caller's
/// environment), killing it after `limit`: a hang is a failure, not a stuck suite.
fn kernelpro(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(bin())
        .args(args)
        .env_remove("KERNELPRO_LLM_KEY")
        .env_remove("KERNELPRO_LLM_MODEL")
        .env_remove("KERNELPRO_LLM_ENDPOINT")
        .env_remove("KERNELPRO_LLM_PROVIDER")
        .env("KERNELPRO_VENV", std::env::var("KERNELPRO_VENV").unwrap_or_default())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            panic!("`kernelpro {}` ran over {limit:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn fifos_devices_and_huge_files_are_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("k.cu");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: c is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let huge = dir.path().join("huge.cu");
    std::fs::File::create(&huge).unwrap().set_len(64 << 20).unwrap();
    let link = dir.path().join("zero.cu");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let cases = [
        (fifo.as_path(), "a FIFO (named pipe), not a source file"),
        (Path::new("/dev/zero"), "a character device, not a source file"),
        (link.as_path(), "a character device, not a source file"),
        (huge.as_path(), "larger than 16 MiB"),
        (dir.path(), "a directory, not a source file"),
    ];
    for (path, says) in cases {
        let p = path.to_str().unwrap();
        for command in [
            vec!["check", p],
            vec!["spec", p],
            vec!["run", p, "--json"],
            vec!["optimize", p, "--kernel", "k", "--evaluator", "stub:1.5"],
        ] {
            let out = kernelpro(&command, Duration::from_secs(20));
            assert!(!out.status.success(), "{command:?}");
            assert!(stderr(&out).contains(says), "{command:?}: {}", stderr(&out));
        }
    }
}

#[test]
fn optimize_out_may_not_be_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("rmsnorm.cu");
    std::fs::copy(fixture("launch_site/rmsnorm.cu"), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    std::os::unix::fs::symlink(&input, dir.path().join("link.cu")).unwrap();
    std::fs::hard_link(&input, dir.path().join("hard.cu")).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let same = [
        input.display().to_string(),
        dir.path().join("sub/../rmsnorm.cu").display().to_string(),
        dir.path().join("link.cu").display().to_string(),
        dir.path().join("hard.cu").display().to_string(),
    ];
    for out_path in &same {
        let input = input.to_str().unwrap();
        let args = [
            "optimize",
            input,
            "--kernel",
            "rmsnorm_fwd",
            "--evaluator",
            "stub:1.5",
            "--budget",
            "2",
            "--out",
            out_path,
        ];
        let out = kernelpro(&args, Duration::from_secs(20));
        assert_eq!(out.status.code(), Some(2), "{out_path}: {}", stderr(&out));
        assert!(stderr(&out).contains("is the input file itself"), "{}", stderr(&out));
    }
    assert_eq!(std::fs::read(&input).unwrap(), before, "the input is never changed");
}

#[test]
fn optimize_values_are_validated_before_any_work() {
    let file = fixture("launch_site/rmsnorm.cu");
    let file = file.to_str().unwrap();
    for (bad, says) in [
        ("stub:nan", "`stub:nan` is not an evaluator"),
        ("bogus", "`bogus` is not an evaluator"),
        ("stub:-1", "is not an evaluator"),
        ("stub:1.5:inf", "is not an evaluator"),
    ] {
        let out =
            kernelpro(&["optimize", file, "--kernel", "rmsnorm_fwd", "--evaluator", bad], Duration::from_secs(10));
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(stderr(&out).contains(says) && stderr(&out).contains("--evaluator"), "{bad}: {}", stderr(&out));
    }
    // An --llm that can never work says what to set, before a search starts.
    let out = kernelpro(
        &["optimize", file, "--kernel", "rmsnorm_fwd", "--evaluator", "stub:1.5", "--llm"],
        Duration::from_secs(10),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--llm-model") && stderr(&out).contains("KERNELPRO_LLM_MODEL"), "{}", stderr(&out));
    let args = ["optimize", file, "--kernel", "rmsnorm_fwd", "--evaluator", "stub:1.5", "--llm", "--llm-model", "m"];
    let out = kernelpro(&args, Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("KERNELPRO_LLM_KEY"), "{}", stderr(&out));
}

#[test]
fn optimize_says_why_it_stopped_and_which_variant_each_try_is() {
    let file = fixture("launch_site/rmsnorm.cu");
    let args = [
        "optimize",
        file.to_str().unwrap(),
        "--kernel",
        "rmsnorm_fwd",
        "--evaluator",
        "stub:1.5",
        "--budget",
        "10",
        "--strategy",
        "greedy",
    ];
    let out = kernelpro(&args, Duration::from_secs(300));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let stopped = text.lines().find(|l| l.contains("stopped: ")).unwrap_or_else(|| panic!("{text}"));
    assert!(
        stopped.ends_with("stopped: evaluation budget (10) spent")
            || stopped.ends_with("stopped: no rewrite left to try"),
        "{stopped}"
    );
    // A rewrite tried several times says which variant each try is: no two tried lines read the same.
    let tried: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "tried:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split(" → ").next().unwrap())
        .collect();
    assert!(tried.len() > 3, "{text}");
    let distinct: std::collections::HashSet<&&str> = tried.iter().collect();
    assert_eq!(distinct.len(), tried.len(), "{text}");
    assert!(tried.iter().any(|t| t.contains(" [grid = ")), "{text}");
    // In JSON the recipe names stay plain (scripts compare them); the variants are beside them.
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let out = kernelpro(&json_args, Duration::from_secs(300));
    let json: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    let recipes: Vec<&str> = json["tried"].as_array().unwrap().iter().map(|t| t["recipe"].as_str().unwrap()).collect();
    assert!(recipes.iter().all(|r| !r.contains('[')), "{recipes:?}");
    let variants = json["tried_variants"].as_array().unwrap();
    assert_eq!(variants.len(), recipes.len());
    assert!(variants.iter().any(|v| v.as_str().unwrap().starts_with("grid = ")), "{variants:?}");
    assert!(
        ["evaluation budget (10) spent", "no rewrite left to try"].contains(&json["stop"].as_str().unwrap()),
        "{}",
        json["stop"]
    );
}

#[test]
fn run_json_without_a_gpu_prints_a_json_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.cu");
    let out = kernelpro(&["run", missing.to_str().unwrap(), "--json"], Duration::from_secs(20));
    assert!(!out.status.success());
    let json: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    assert!(json["error"].as_str().unwrap().contains("missing.cu"), "{json}");

    // Issue 32 item 7: a kernel that compiles, on a machine without a GPU (or its driver), also
    // answers in JSON (the binary of 4dca5e6 printed "kernelpro run: no CUDA driver found …" as
    // plain text); on a GPU machine the answer is the run's JSON.
    let out = kernelpro(
        &[
            "run",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../editors/fixtures/kernels_spec.cu").to_str().unwrap(),
            "--json",
        ],
        Duration::from_secs(300),
    );
    let json: Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("{e}: stdout {:?}, stderr {:?}", stdout(&out), stderr(&out)));
    if !out.status.success() {
        assert!(json["error"].as_str().is_some_and(|e| !e.is_empty()), "{json}");
    }
}

#[test]
fn check_output_is_in_line_order_with_0_based_json_and_no_sentinels() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("k.cu");
    std::fs::write(
        &file,
        "#include <cstdio>\n__global__ void scale(double* y, const double* x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = 2.0 * x[i];\n}\n\n__global__ void add(float* y, const float* x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = y[i] + 1.0 * x[i];\n}\n",
    )
    .unwrap();
    let p = file.to_str().unwrap();
    // A rejected flag is blamed on the command line, not on an editor's settings.
    let out = kernelpro(&["check", p, "--flag=--bogus-flag"], Duration::from_secs(120));
    let text = stdout(&out);
    assert!(text.contains("nvcc flag `--bogus-flag` given with --flag or -I was not passed"), "{text}");
    assert!(!text.contains("kernelpro.extraFlags"), "{text}");
    let positions: Vec<(u32, u32)> = text
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{p}:")))
        .map(|rest| {
            let mut parts = rest.splitn(3, ':');
            (parts.next().unwrap().parse().unwrap(), parts.next().unwrap().parse().unwrap())
        })
        .collect();
    assert!(positions.len() >= 2, "{text}");
    assert!(positions.windows(2).all(|w| w[0] <= w[1]), "not in line order: {positions:?}\n{text}");

    let out = kernelpro(&["check", p, "--flag=--bogus-flag", "--format", "json"], Duration::from_secs(120));
    let raw = stdout(&out);
    assert!(!raw.contains("4294967295"), "{raw}");
    let json: Value = serde_json::from_str(&raw).unwrap();
    let lines: Vec<&str> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect::<Vec<_>>()
        .leak()
        .iter()
        .map(String::as_str)
        .collect();
    for f in json["files"][0]["findings"].as_array().unwrap() {
        let end = &f["span"]["end"];
        let line = lines[end["line"].as_u64().unwrap() as usize];
        assert!(end["col"].as_u64().unwrap() as usize <= line.len(), "{f}");
    }
    // Kernels are 0-based like the spans: `add` is on the 7th line.
    let kernels = json["files"][0]["kernels"].as_array().unwrap();
    let add = kernels.iter().find(|k| k["name"] == "add").unwrap();
    assert_eq!(add["line"], 6, "{add}");
}

#[test]
fn header_errors_keep_their_column_and_multi_line_messages_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("h.cuh"),
        "#pragma once\n__device__ inline float f(float x) {\n  return x +  undefined_thing;\n}\n",
    )
    .unwrap();
    let file = dir.path().join("k.cu");
    std::fs::write(
        &file,
        "#include \"h.cuh\"\n#include <vector>\nvoid g() { std::vector<int> v; v.push_back(\"x\", 1); }\n__global__ void k(float* y) { y[0] = f(1.0f); }\n",
    )
    .unwrap();
    let p = file.to_str().unwrap();
    let out = kernelpro(&["check", p], Duration::from_secs(120));
    let text = stdout(&out);
    let header = dir.path().join("h.cuh").display().to_string();
    // `undefined_thing` starts at the 15th column of the header's third line.
    assert!(text.contains(&format!("{header}:3:15: error: identifier \"undefined_thing\" is undefined")), "{text}");
    // nvcc's message on three lines keeps them, indented under the first.
    let at = text.find("matches the argument list").unwrap_or_else(|| panic!("{text}"));
    assert!(
        text[at..].starts_with(
            "matches the argument list\n    argument types are: (const char [2], int)\n    object type is:"
        ),
        "{text}"
    );
    let out = kernelpro(&["check", p, "--format", "json"], Duration::from_secs(120));
    let raw = stdout(&out);
    assert!(!raw.contains("4294967295"), "{raw}");
    let json: Value = serde_json::from_str(&raw).unwrap();
    let in_header =
        json["files"][0]["findings"].as_array().unwrap().iter().find(|f| f["file"] == header.as_str()).unwrap();
    assert_eq!(in_header["span"]["start"], serde_json::json!({ "line": 2, "col": 14 }), "{in_header}");
}

/// `--verbose` logs what ran on stderr (issue 31): the analysis steps, each
/// tool's command line and how it ended; each candidate of a search with its
/// recipe, compile time and outcome. Without it, stderr has none of that.
#[test]
fn verbose_logs_each_tool_and_each_candidate_on_stderr() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/saxpy.cu");
    let file = example.to_str().unwrap();
    let quiet = kernelpro(&["check", file], Duration::from_secs(120));
    assert!(!stderr(&quiet).contains("tool{"), "{}", stderr(&quiet));
    let out = kernelpro(&["check", "--verbose", file], Duration::from_secs(120));
    let log = stderr(&out);
    assert_eq!(stdout(&out), stdout(&quiet), "--verbose changes stderr only");
    for want in [
        "analysis.compile{file=",
        "}:tool{program=nvcc args=\"-arch=sm_90 ",
        ": finished code=Some(0) ms=",
        "compile step done ok=true",
        "}:tool{program=nvdisasm ",
        "machine-code step done",
    ] {
        assert!(log.contains(want), "no `{want}` in:\n{log}");
    }
    let out = kernelpro(
        &["optimize", "-v", file, "--kernel", "saxpy", "--evaluator", "stub:1.5", "--budget", "3", "--no-profile"],
        Duration::from_secs(300),
    );
    let log = stderr(&out);
    assert!(out.status.success(), "{log}");
    let evaluated: Vec<&str> = log.lines().filter(|l| l.contains(": evaluated candidate=")).collect();
    assert!(!evaluated.is_empty() && evaluated.iter().all(|l| l.contains(" recipe=")), "{log}");
    for want in
        ["optimize.compile{candidate=", "compiled a candidate ok=", "optimize.stub_job{candidate=", "search stopped"]
    {
        assert!(log.contains(want), "no `{want}` in:\n{log}");
    }
}
