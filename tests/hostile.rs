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
