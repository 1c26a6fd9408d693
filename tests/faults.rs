//! Fault injection for the external tools: small scripts made by the test stand
//! in for nvcc (and nvdisasm) to hang, crash, print garbage, flood their output,
//! escape their process group, lack the execute bit or be missing. Each fault
//! must end in one clear diagnostic within its timeout (plus slack for slow
//! machines), with the tool's process group gone, and the server still serving.

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use support::lsp_client::{Client, bin, uri};
use support::procs::{live, pids, server_pid, stat};

const TIMEOUT_SECS: u64 = 2;
/// Upper bound on the wait: the tool's timeout plus generous slack.
const BOUND: Duration = Duration::from_secs(TIMEOUT_SECS + 40);

struct Fault {
    dir: tempfile::TempDir,
    nvcc: PathBuf,
}

fn write_script(path: &Path, body: &str, mode: u32) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(&mut std::fs::metadata(path).unwrap().permissions(), mode);
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
}

impl Fault {
    /// An nvcc that records its pid (its process group) and then runs `body`.
    fn nvcc(body: &str, mode: u32) -> Fault {
        let dir = tempfile::tempdir().unwrap();
        let nvcc = dir.path().join("nvcc");
        let pidfile = dir.path().join("nvcc.pid");
        write_script(&nvcc, &format!("echo $$ > {}\n{body}", pidfile.display()), mode);
        Fault { dir, nvcc }
    }

    /// The real nvcc, with a faulty nvdisasm beside it.
    fn nvdisasm(body: &str) -> Fault {
        let real = kernelpro_core::analysis::Analyzer::find_nvcc(&Default::default())
            .expect("nvcc (run scripts/setup.sh)")
            .path;
        let f = Fault::nvcc(&format!("exec {} \"$@\"", real.display()), 0o755);
        write_script(
            &f.dir.path().join("nvdisasm"),
            &format!("echo $$ > {}\n{body}", f.dir.path().join("nvdisasm.pid").display()),
            0o755,
        );
        f
    }

    fn group(&self, tool: &str) -> Option<u32> {
        std::fs::read_to_string(self.dir.path().join(format!("{tool}.pid"))).ok()?.trim().parse().ok()
    }
}

/// Opens a file with the faulty tool configured; returns the first diagnostic's
/// severity and message once published, after checking the process groups are
/// gone and the server still answers.
fn check(fault: &Fault, tag: &str) -> (u64, String) {
    let mut cmd = Command::new(bin());
    cmd.env("KP_TEST_TAG", tag);
    let mut c =
        Client::spawn_with(cmd, json!({"trusted": true, "nvcc": fault.nvcc, "compileTimeoutSecs": TIMEOUT_SECS}));
    let server = server_pid(tag);
    let path = fault.dir.path().join("k.cu");
    let text = "__global__ void k(float* y) { y[0] = 1.0f; }\n";
    std::fs::write(&path, text).unwrap();
    let u = uri(&path);
    c.open(&u, text, 1);
    let d = c.wait_diagnostics(&u, BOUND);
    for tool in ["nvcc", "nvdisasm"] {
        if let Some(g) = fault.group(tool) {
            assert_eq!(live(|_, pg| pg == g), Vec::<u32>::new(), "{tool}'s process group outlived the fault");
        }
    }
    let left: Vec<String> = live(|pp, _| pp == server)
        .into_iter()
        .map(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            format!("{p}: {}", String::from_utf8_lossy(&cmd).replace('\0', " "))
        })
        .collect();
    assert_eq!(left, Vec::<String>::new(), "children of the server left");
    let symbols = c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": u}}));
    assert_eq!(symbols["result"][0]["name"], "k", "the server stopped serving");
    assert!(c.alive());
    let first: &Value = &d["diagnostics"][0];
    (first["severity"].as_u64().unwrap_or(0), first["message"].as_str().unwrap_or("").to_string())
}

const ERROR: u64 = 1;
const INFO: u64 = 3;

#[test]
fn hanging_compiler_is_stopped_at_its_timeout() {
    // A background child in the same group must die too.
    let f = Fault::nvcc("sleep 1000 &\nsleep 1000", 0o755);
    let (sev, msg) = check(&f, "hang");
    assert_eq!(sev, ERROR);
    assert!(msg.contains("nvcc did not finish within 2 s and was stopped"), "{msg}");
}

#[test]
fn crashing_compiler() {
    let f = Fault::nvcc("echo 'about to crash' >&2\nkill -SEGV $$", 0o755);
    let (sev, msg) = check(&f, "crash");
    assert_eq!(sev, ERROR);
    assert!(msg.contains("nvcc failed (exit None)") && msg.contains("about to crash"), "{msg}");
}

#[test]
fn compiler_printing_garbage() {
    let dir = tempfile::tempdir().unwrap();
    // Seeded bytes, plus lines that look like nvcc messages with absurd numbers.
    let mut x: u64 = 0x9e37_79b9;
    let mut bytes: Vec<u8> = (0..200_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    bytes.extend_from_slice(b"\nk.cu(99999999999): error: boom\nk.cu(0): warning #0-D: zero\n(4294967296): error: x\nptxas info    : Used 4294967297 registers\n\xff\xfe\n");
    let garbage = dir.path().join("garbage.bin");
    std::fs::write(&garbage, &bytes).unwrap();
    let f = Fault::nvcc(&format!("cat {0}\ncat {0} >&2\nexit 1", garbage.display()), 0o755);
    let (sev, msg) = check(&f, "garbage");
    // The fake "warning" line may come first; what matters is a message and a live server.
    assert!(sev == ERROR || sev == 2, "{sev} {msg}");
    assert!(!msg.is_empty());
}

#[test]
fn compiler_flooding_stdout_and_stderr() {
    for (tag, body) in [("flood-out", "yes kernelpro-flood"), ("flood-err", "yes kernelpro-flood >&2")] {
        let f = Fault::nvcc(body, 0o755);
        let (sev, msg) = check(&f, tag);
        assert_eq!(sev, ERROR);
        assert!(msg.contains("nvcc printed more than 64 MiB of output and was stopped"), "{tag}: {msg}");
    }
}

#[test]
fn compiler_not_executable() {
    let f = Fault::nvcc("exit 0", 0o644);
    let (sev, msg) = check(&f, "noexec");
    assert_eq!(sev, ERROR);
    assert!(msg.contains("is not executable (check its permissions: chmod +x)"), "{msg}");
}

#[test]
fn compiler_not_found() {
    let mut f = Fault::nvcc("exit 0", 0o755);
    f.nvcc = f.dir.path().join("no-such-nvcc");
    let (sev, msg) = check(&f, "missing");
    assert_eq!(sev, ERROR);
    assert!(msg.contains("nvcc was not found at"), "{msg}");
}

/// A compiler that exits at once but leaves a detached child holding its
/// stdout: the compile must still end within the timeout.
#[test]
fn compiler_leaving_a_detached_child_on_its_pipes() {
    let f = Fault::nvcc("setsid sleep 1001 &\nsleep 0.5\nexit 1", 0o755);
    let (sev, msg) = check(&f, "setsid");
    // The detached sleep is in its own session, out of our reach: end it here.
    for p in pids() {
        if std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c == b"sleep\x001001\x00")
            && stat(p).is_some_and(|(pp, _, _)| pp == 1 || pp == std::process::id())
        {
            let _ = Command::new("kill").arg(p.to_string()).status();
        }
    }
    assert_eq!(sev, ERROR);
    assert!(msg.contains("nvcc did not finish within 2 s"), "{msg}");
}

#[test]
fn hanging_and_garbage_disassembler() {
    let f = Fault::nvdisasm("sleep 1000 &\nsleep 1000");
    let (sev, msg) = check(&f, "disasm-hang");
    assert_eq!(sev, INFO);
    assert!(msg.contains("no SASS for this file: nvdisasm did not finish within 2 s"), "{msg}");

    let f = Fault::nvdisasm(
        "head -c 300000 /dev/zero | tr '\\0' '\\377'\necho '//## File \"/x.cu\", line 99999999999'\necho '        /*0000*/  MOV R1, c[0x0][0x28] ;'\nexit 0",
    );
    let (sev, msg) = check(&f, "disasm-garbage");
    assert!(sev == 0 || sev == INFO, "{sev} {msg}");
}
