//! Hostile workspaces against the real `kernelpro` binary: a workspace that
//! plants its own CUDA tools in `.venv` (scripts that append to a marker file
//! when run) must get none of them run while untrusted, over LSP (open, save,
//! `kernelpro.doctor`) or by `kernelpro doctor` started inside it. Trusted,
//! the same workspace's tools do run: that control shows the marker works.

mod support;

use serde_json::json;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use support::lsp_client::{Client, bin, uri};

const KERNEL: &str = "__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n";
const TOOLS: [&str; 6] = ["nvcc", "ptxas", "nvdisasm", "cuobjdump", "ncu", "nvidia-smi"];

struct Hostile {
    ws: tempfile::TempDir,
    /// Outside the workspace: appended to by every planted tool that runs.
    marker_dir: tempfile::TempDir,
    /// An empty folder: the server's PATH, so no real tool is found first.
    empty: tempfile::TempDir,
}

impl Hostile {
    fn plant() -> Hostile {
        let (ws, marker_dir, empty) =
            (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let bin = ws.path().join(".venv/lib/python3.11/site-packages/nvidia/cu13/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let marker = marker_dir.path().join("ran");
        for tool in TOOLS {
            let p = bin.join(tool);
            std::fs::write(&p, format!("#!/bin/sh\necho \"{tool} $*\" >> {}\nexit 1\n", marker.display())).unwrap();
            std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        }
        std::fs::write(ws.path().join("k.cu"), KERNEL).unwrap();
        Hostile { ws, marker_dir, empty }
    }

    fn marker(&self) -> PathBuf {
        self.marker_dir.path().join("ran")
    }

    fn ran(&self) -> String {
        std::fs::read_to_string(self.marker()).unwrap_or_default()
    }

    /// The binary started in the workspace, as editors do, with no CUDA
    /// found through the environment.
    fn command(&self) -> Command {
        let mut cmd = Command::new(bin());
        cmd.current_dir(self.ws.path()).env("PATH", self.empty.path());
        for var in ["KERNELPRO_VENV", "KERNELPRO_NVCC", "KERNELPRO_NCU", "CUDA_HOME", "CUDA_PATH", "CUTLASS_PATH"] {
            cmd.env_remove(var);
        }
        cmd
    }

    fn file(&self) -> String {
        uri(&self.ws.path().join("k.cu"))
    }
}

/// Opens and saves the kernel and asks for the doctor's report.
fn exercise(c: &mut Client, h: &Hostile) -> String {
    let file = h.file();
    c.open(&file, KERNEL, 1);
    c.wait_publish(&file, Duration::from_secs(60));
    c.save(&file, KERNEL);
    let doctor = c.request("workspace/executeCommand", json!({"command": "kernelpro.doctor", "arguments": []}));
    c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": file}}));
    doctor["result"].as_str().unwrap_or_default().to_string()
}

#[test]
fn an_untrusted_workspace_runs_none_of_its_own_tools() {
    let h = Hostile::plant();
    // Both init-option shapes: untrusted is the default, and saying so changes nothing.
    for options in [json!({}), json!({"trusted": false}), json!({"kernelpro": {"trusted": false}})] {
        let mut c = Client::spawn_in(h.command(), options.clone(), h.ws.path());
        let doctor = exercise(&mut c, &h);
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(h.ran(), "", "{options}: an untrusted workspace ran its own tools");
        assert!(doctor.contains("not trusted") && doctor.contains("the GPU is not checked"), "{options}: {doctor}");
        assert!(!doctor.contains(&h.ws.path().display().to_string()), "the workspace's .venv was searched: {doctor}");
        c.shutdown();
    }
    // `kernelpro doctor` started inside the workspace searches no working directory.
    let out = h.command().arg("doctor").output().unwrap();
    assert_eq!(
        h.ran(),
        "",
        "kernelpro doctor ran the working directory's tools:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_trusted_workspace_uses_its_own_tools() {
    let h = Hostile::plant();
    // The nested shape of initializationOptions is read too.
    let mut c = Client::spawn_in(h.command(), json!({"kernelpro": {"trusted": true}}), h.ws.path());
    let file = h.file();
    c.open(&file, KERNEL, 1);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !h.ran().contains("nvcc") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(h.ran().contains("nvcc"), "the trusted workspace's nvcc was not used (the control failed)");
    let doctor = c.request("workspace/executeCommand", json!({"command": "kernelpro.doctor", "arguments": []}));
    assert!(doctor["result"].as_str().unwrap_or_default().contains(&h.ws.path().display().to_string()), "{doctor}");
    c.shutdown();
}

/// An unsaved buffer (a non-`file:` URI) has no folder: it is not compiled
/// with `-I$TMPDIR`, nor with flags from `$TMPDIR/compile_commands.json`,
/// which anyone on the machine can write.
#[test]
fn an_unsaved_buffer_reads_nothing_from_the_temp_dir() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("evil.h"), "int planted_header;\n").unwrap();
    let db = json!([{"directory": tmp.path(), "file": "untitled.cu", "arguments": ["nvcc", "-DEVIL_DB_READ=1", "-c", "untitled.cu"]}]);
    std::fs::write(tmp.path().join("compile_commands.json"), db.to_string()).unwrap();
    let mut cmd = Command::new(bin());
    cmd.env("TMPDIR", tmp.path());
    let mut c = Client::spawn_with(cmd, json!({"trusted": true}));
    let text = "#ifdef EVIL_DB_READ\n#error EVIL_DB_READ\n#endif\n#if __has_include(\"evil.h\")\n#error EVIL_HEADER_FOUND\n#endif\n__global__ void k(float* y) { y[0] = nope; }\n";
    c.open("untitled:Untitled-1", text, 1);
    let d = c.wait_diagnostics("untitled:Untitled-1", Duration::from_secs(120));
    let messages: Vec<&str> =
        d["diagnostics"].as_array().unwrap().iter().filter_map(|d| d["message"].as_str()).collect();
    assert!(messages.iter().any(|m| m.contains("nope")), "the buffer was compiled: {messages:?}");
    assert!(!messages.iter().any(|m| m.contains("EVIL")), "the temp dir was read: {messages:?}");
    c.shutdown();
}

/// Every `file` under `dir` (recursively) whose name starts with `kpmark`.
fn markers(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else if e.file_name().to_string_lossy().starts_with("kpmark") {
                found.push(p);
            }
        }
    }
    found
}

/// A file URI with the characters a URI cannot hold as they are escaped.
fn file_uri(path: &std::path::Path) -> String {
    let mut out = String::from("file://");
    for b in path.display().to_string().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn messages(d: &serde_json::Value) -> Vec<(u64, String)> {
    d["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["range"]["start"]["line"].as_u64().unwrap(), d["message"].as_str().unwrap_or_default().to_string()))
        .collect()
}

/// nvcc runs its host steps through /bin/sh with arguments in double quotes:
/// `$(...)` in a file name, its folder's name, a compile_commands.json define
/// or include path, or the extraFlags/includePaths settings (sent as a
/// configuration change) never runs (no `kpmark*` file appears, anywhere in
/// the workspace, the marker folder or the server's TMPDIR), with the real
/// nvcc. The files still compile: diagnostics land on the real file and
/// line, defines reach the code, a header in the file's own folder is found.
#[test]
fn shell_metacharacters_from_every_source_run_nothing() {
    let (ws, mark, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = |tag: &str| mark.path().join(format!("kpmark_{tag}"));
    let mut cmd = Command::new(bin());
    cmd.env("TMPDIR", tmp.path()).current_dir(ws.path());
    let mut c = Client::spawn_in(cmd, json!({"trusted": true}), ws.path());
    let wrong = "__global__ void k(float* y) {\n  y[0] = nope;\n}\n";

    // 1. The file's name, and its folder's.
    let folder = ws.path().join("dir $(touch kpmark_folder) `touch kpmark_tick` \"q\"");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("near.cuh"), "#define NEAR 3\nint in_header = undefined_in_header;\n").unwrap();
    let named = folder.join("$(touch kpmark_name);touch kpmark_semi.cu");
    let text = format!("#include \"near.cuh\"\n#if NEAR != 3\n#error NEAR\n#endif\n{wrong}");
    std::fs::write(&named, &text).unwrap();
    let named_uri = file_uri(&named);
    c.open(&named_uri, &text, 1);
    let published = c.wait_diagnostics(&named_uri, Duration::from_secs(120));
    let d = messages(&published);
    assert!(d.iter().any(|(l, m)| *l == 5 && m.contains("nope")), "not compiled or misplaced: {d:?}");
    assert!(!d.iter().any(|(_, m)| m.contains("NEAR")), "{d:?}");
    // The header's error: on the #include line, pointing at the header by its real path (never the temp dir's).
    assert!(d.iter().any(|(l, m)| *l == 0 && m.contains("in included file near.cuh")), "{d:?}");
    let related = published.to_string();
    assert!(related.contains("near.cuh") && !related.contains("kernelpro-"), "{related}");

    // 2. compile_commands.json: a define, an include path (rejected, and said so), and a plain define.
    let db_file = ws.path().join("db.cu");
    let db = json!([{"directory": ws.path(), "file": "db.cu", "arguments": [
        "nvcc", format!("-DEVIL=$(touch {})", m("db_define").display()), "-DGOOD=7",
        format!("-I{}/inc$(touch {})", ws.path().display(), m("db_include").display()), "-c", "db.cu"]}]);
    std::fs::write(ws.path().join("compile_commands.json"), db.to_string()).unwrap();
    let db_text = format!("#if GOOD != 7\n#error GOOD\n#endif\n{wrong}");
    std::fs::write(&db_file, &db_text).unwrap();
    c.open(&uri(&db_file), &db_text, 1);
    let d = messages(&c.wait_diagnostics(&uri(&db_file), Duration::from_secs(120)));
    assert!(d.iter().any(|(l, m)| *l == 4 && m.contains("nope")), "{d:?}");
    assert!(!d.iter().any(|(_, m)| m.contains("GOOD")), "the database's define did not reach the code: {d:?}");
    assert!(
        d.iter().any(|(_, m)| m.contains("compile_commands.json") && m.contains("db_include") && m.contains("shell")),
        "the rejected include path is not named with its source: {d:?}"
    );

    // 3. The settings, changed while the server runs.
    let plain = ws.path().join("plain.cu");
    std::fs::write(&plain, wrong).unwrap();
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"kernelpro": {"trusted": true,
            "extraFlags": [format!("-DCFG=$(touch {})", m("cfg_define").display()), "-D", format!("CFG2=`touch {}`", m("cfg_tick").display()),
                format!("-I/tmp/$(touch {})", m("cfg_include").display())],
            "includePaths": [format!("/tmp/$(touch {})", m("include_paths").display())],
            "arch": "sm_90$(touch kpmark_arch)"}}}),
    );
    c.open(&uri(&plain), wrong, 1);
    let d = messages(&c.wait_diagnostics(&uri(&plain), Duration::from_secs(120)));
    assert!(d.iter().any(|(_, m)| m.contains("extraFlags") && m.contains("cfg_include")), "{d:?}");
    assert!(d.iter().any(|(_, m)| m.contains("extraFlags") && m.contains("include_paths")), "{d:?}");
    std::thread::sleep(Duration::from_millis(300));
    c.shutdown();
    let found: Vec<PathBuf> = [ws.path(), mark.path(), tmp.path()].iter().flat_map(|d| markers(d)).collect();
    assert_eq!(found, Vec::<PathBuf>::new(), "a shell ran text from a file name, a database or a setting");
}

/// The same file compiles with the settings' defines too (the control: the
/// header of defines works for every source), and a CMake database's
/// `-isystem DIR` (two tokens) reaches nvcc in the only spelling it takes.
#[test]
fn a_cmake_database_with_isystem_compiles() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("third_party/include")).unwrap();
    std::fs::create_dir_all(ws.path().join("build")).unwrap();
    std::fs::write(ws.path().join("third_party/include/lib.h"), "#define FROM_ISYSTEM 5\n").unwrap();
    let file = ws.path().join("k.cu");
    let text = "#include <lib.h>\n#if FROM_ISYSTEM != 5 || FROM_SETTING != 2 || FROM_DB != 1\n#error MISSING\n#endif\n__global__ void k(float* y) { y[0] = 1.0f; }\n";
    std::fs::write(&file, text).unwrap();
    // As CMake 3.28 writes it for a CUDA target with a SYSTEM include directory.
    let command = format!(
        "/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -DFROM_DB -isystem {} -O3 -DNDEBUG -std=c++17 \"--generate-code=arch=compute_90,code=[compute_90,sm_90]\" -Xcompiler=-fPIC -MD -MT CMakeFiles/k.dir/k.cu.o -MF CMakeFiles/k.dir/k.cu.o.d -x cu -c {} -o CMakeFiles/k.dir/k.cu.o",
        ws.path().join("third_party/include").display(),
        file.display()
    );
    let db = json!([{"directory": ws.path().join("build"), "command": command, "file": file, "output": "CMakeFiles/k.dir/k.cu.o"}]);
    std::fs::write(ws.path().join("build/compile_commands.json"), db.to_string()).unwrap();
    let mut c =
        Client::spawn_in(Command::new(bin()), json!({"trusted": true, "extraFlags": ["-DFROM_SETTING=2"]}), ws.path());
    c.open(&uri(&file), text, 1);
    let d = messages(&c.wait_diagnostics(&uri(&file), Duration::from_secs(120)));
    assert!(
        !d.iter().any(|(_, m)| m.contains("MISSING") || m.contains("lib.h") || m.contains("nvcc failed")),
        "the CMake database's flags did not compile: {d:?}"
    );
    c.shutdown();
}

/// An untitled buffer, with the server started in a folder holding a hostile
/// compile_commands.json (a define that would run a command, one that would
/// show, an include dir) and a header: none of it is read, nothing runs.
#[test]
fn an_untitled_buffer_ignores_the_working_directory() {
    let (cwd, mark) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let sub = cwd.path().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(cwd.path().join("evil.h"), "int planted_header;\n").unwrap();
    let marker = mark.path().join("kpmark_untitled");
    // Entries for the buffer's stand-in name resolved against the server's cwd (`sub`) or its parent.
    let entry = |file: &str| {
        json!({"directory": cwd.path(), "file": file, "arguments": ["nvcc", "-DEVIL_DB_READ=1",
            format!("-DX=$(touch {})", marker.display()), format!("-I{}", cwd.path().display()), "-c", file]})
    };
    let db = json!([entry("untitled.cu"), entry("sub/untitled.cu")]);
    std::fs::write(cwd.path().join("compile_commands.json"), db.to_string()).unwrap();
    std::fs::write(cwd.path().join("untitled.cu"), "").unwrap();
    let mut cmd = Command::new(bin());
    cmd.current_dir(&sub);
    let mut c = Client::spawn_with(cmd, json!({"trusted": true}));
    let text = "#ifdef EVIL_DB_READ\n#error EVIL_DB_READ\n#endif\n#if __has_include(\"evil.h\") || __has_include(\"../evil.h\")\n#error EVIL_HEADER_FOUND\n#endif\n__global__ void k(float* y) { y[0] = nope; }\n";
    c.open("untitled:Untitled-1", text, 1);
    let d = messages(&c.wait_diagnostics("untitled:Untitled-1", Duration::from_secs(120)));
    assert!(d.iter().any(|(l, m)| *l == 6 && m.contains("nope")), "the buffer was not compiled: {d:?}");
    assert!(!d.iter().any(|(_, m)| m.contains("EVIL")), "the working directory was read: {d:?}");
    c.shutdown();
    assert!(!marker.exists(), "a command from the working directory's database ran");
}

/// `kernelpro.installCuda` runs Python: refused while untrusted and for a
/// folder of the workspace; trusted, a folder the client names that holds its
/// own `bin/python` (a script leaving a marker) is refused, and nothing in it runs.
#[test]
fn install_cuda_respects_trust_and_runs_no_planted_python() {
    let (ws, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let marker = outside.path().join("kpmark_python");
    let plant = |dir: &std::path::Path| {
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(dir.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        let python = dir.join("bin/python");
        std::fs::write(&python, format!("#!/bin/sh\ntouch {}\nexit 0\n", marker.display())).unwrap();
        std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    };
    let (inside, elsewhere) = (ws.path().join("env"), outside.path().join("env"));
    plant(&inside);
    plant(&elsewhere);
    let install = |c: &mut Client, dir: &std::path::Path| {
        c.request("workspace/executeCommand", json!({"command": "kernelpro.installCuda", "arguments": [dir]}))
    };
    let mut untrusted = Client::spawn_in(Command::new(bin()), json!({}), ws.path());
    let r = install(&mut untrusted, &elsewhere);
    assert!(r["error"]["message"].as_str().unwrap_or_default().contains("untrusted"), "{r}");
    untrusted.shutdown();
    let mut trusted = Client::spawn_in(Command::new(bin()), json!({"trusted": true}), ws.path());
    let r = install(&mut trusted, &inside);
    assert!(r["error"]["message"].as_str().unwrap_or_default().contains("workspace folder"), "{r}");
    let r = install(&mut trusted, &elsewhere);
    assert!(r["result"]["error"].as_str().unwrap_or_default().contains("KernelPro runs no Python"), "{r}");
    trusted.shutdown();
    assert!(!marker.exists(), "a planted bin/python ran");
}

/// The fuzzer of issue 30's shell shapes: random mixes of `$(…)`, backticks,
/// `;`, `|`, `&&`, redirections, quotes, backslashes, newlines and `\r` in a
/// file name, a folder name, a compile_commands.json define, include path and
/// `-isystem` (its `arguments` and its shell-split `command`), and the
/// settings' `extraFlags`, `includePaths` and `arch` (a configuration change).
/// The compiler is a stand-in that does what nvcc does with its host steps
/// (each argument in double quotes on a `/bin/sh -c` line) and nothing else,
/// so 36 cases take seconds; `shell_metacharacters_from_every_source_run_nothing`
/// is the same with the real nvcc. Seeded: no marker may appear, and the
/// session lives.
#[test]
fn random_shell_shapes_from_every_source_run_nothing() {
    const CASES: u64 = 36;
    const PAYLOADS: &[&str] = &[
        "$(touch $KPMARK)",
        "`touch $KPMARK`",
        "\";touch $KPMARK;\"",
        "';touch $KPMARK;'",
        "|touch $KPMARK",
        "&&touch $KPMARK",
        "\ntouch $KPMARK\n",
        "\r\ntouch $KPMARK\r\n",
        ">$KPMARK",
        "${KPMARK:+$(touch $KPMARK)}",
        "\\\"$(touch $KPMARK)\\\"",
        "$(IFS=_;touch${IFS}$KPMARK)",
    ];
    const FILLERS: &[&str] =
        &["a", " ", "\"", "'", "\\", "$", "(", ")", "é", "\t", "=", "-", ",", "*", "?", "[x]", "!", "~", "#"];
    let (ws, mark, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let marker = mark.path().join("kpmark_fuzz");
    let tools = tempfile::tempdir().unwrap();
    let nvcc = tools.path().join("nvcc");
    // It also notes that the marker's path reached it (the payloads name it through the environment).
    let seen = tools.path().join("env_seen");
    std::fs::write(
        &nvcc,
        format!("#!/bin/sh\necho \"$KPMARK\" > {}\n# nvcc's host steps: each argument in double quotes on a /bin/sh line.\nfor a in \"$@\"; do /bin/sh -c \": \\\"$a\\\"\" >/dev/null 2>&1; done\necho 'stand-in nvcc: error' >&2\nexit 1\n", seen.display()),
    )
    .unwrap();
    std::fs::set_permissions(&nvcc, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // The control: the stand-in runs what nvcc's shell would.
    let control =
        std::process::Command::new(&nvcc).arg("-DX=$(touch $KPMARK)").env("KPMARK", &marker).status().unwrap();
    assert!(!control.success() && marker.exists(), "the stand-in does not run its arguments through a shell");
    std::fs::remove_file(&marker).unwrap();
    std::fs::remove_file(&seen).unwrap();

    let mut state = 0x5EED_0030_u64;
    let mut next = |n: usize| {
        // splitmix64
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    };
    let mut shape = || {
        let mut s = String::new();
        for i in 0..2 + next(3) {
            s.push_str(if i == 1 { PAYLOADS[next(PAYLOADS.len())] } else { FILLERS[next(FILLERS.len())] });
        }
        s
    };
    let mut cmd = Command::new(bin());
    cmd.env("TMPDIR", tmp.path()).env("KPMARK", &marker).current_dir(ws.path());
    let mut c = Client::spawn_in(cmd, json!({"trusted": true, "nvcc": nvcc, "compileTimeoutSecs": 10}), ws.path());
    let text = "__global__ void k(float* y) { y[0] = 1.0f; }\n";
    let mut database = Vec::new();
    let mut files = Vec::new();
    for case in 0..CASES {
        let s = shape();
        let file = match case % 6 {
            0 => ws.path().join(format!("f{case}{s}.cu")),
            1 => ws.path().join(format!("d{case}{s}")).join("k.cu"),
            2 | 3 => {
                let file = ws.path().join(format!("db{case}.cu"));
                let flags =
                    [format!("-DX{case}={s}"), format!("-I{}/{s}", ws.path().display()), "-isystem".into(), s.clone()];
                database.push(if case % 6 == 2 {
                    json!({"directory": ws.path(), "file": file, "arguments": ["nvcc", flags[0], flags[1], flags[2], flags[3], "-c", file]})
                } else {
                    let quoted: Vec<String> = flags.iter().map(|f| format!("'{}'", f.replace('\'', "'\\''"))).collect();
                    json!({"directory": ws.path(), "file": file, "command": format!("nvcc {} -DY=\"{}\" -c {}", quoted.join(" "), s.replace('"', "\\\""), file.display())})
                });
                std::fs::write(
                    ws.path().join("compile_commands.json"),
                    serde_json::Value::from(database.clone()).to_string(),
                )
                .unwrap();
                file
            }
            _ => {
                c.notify(
                    "workspace/didChangeConfiguration",
                    json!({"settings": {"kernelpro": {"trusted": true, "nvcc": nvcc,
                        "extraFlags": [format!("-DCFG{case}={s}"), "-D", format!("C{case}={s}"), format!("-I{s}"), "-isystem", s],
                        "includePaths": [s], "arch": format!("sm_90{s}")}}}),
                );
                ws.path().join(format!("s{case}.cu"))
            }
        };
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
        let u = file_uri(&file);
        c.open(&u, text, 1);
        c.wait_diagnostics(&u, Duration::from_secs(60));
        files.push(u);
    }
    // The session lives: every file still gives its symbols.
    for u in &files {
        let r = c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": u}}));
        assert_eq!(r["result"][0]["name"], "k", "{u}: {r}");
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(c.shutdown().success());
    let found: Vec<PathBuf> = [ws.path(), mark.path(), tmp.path()].iter().flat_map(|d| markers(d)).collect();
    assert_eq!(found, Vec::<PathBuf>::new(), "a shell ran text from a file name, a database or a setting");
    let seen = std::fs::read_to_string(&seen).expect("the server ran the stand-in");
    assert_eq!(seen.trim(), marker.display().to_string(), "the stand-in did not see the marker's path");
    println!("random_shell_shapes_from_every_source_run_nothing: {CASES} cases, 0 markers");
}
