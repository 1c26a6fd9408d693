//! Stress: 20 open files edited and saved over and over for a bounded time,
//! with the real nvcc. Saves come faster than compiles, so most compiles are
//! cancelled by a newer save. Checked: no diagnostics for a version older than
//! one already published for that file; resident memory flat after warm-up;
//! no child process of the server, nor any process in a group it created, left
//! after each quiet period and after exit; no temp file left (nvcc's own
//! intermediates included, even from compiles killed mid-way).

mod support;

use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use support::lsp_client::{Client, bin, uri};
use support::procs::{live, pids, server_pid, stat};

const FILES: usize = 20;
const ROUNDS: usize = 3;
const ROUND: Duration = Duration::from_secs(8);

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok()).unwrap()
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

/// Tracks what the server published: the newest version per file, and any
/// publication older than one already seen.
#[derive(Default)]
struct Published {
    newest: HashMap<String, i64>,
    stale: Vec<String>,
    count: usize,
}

impl Published {
    fn drain(&mut self, c: &mut Client) {
        c.wait(Duration::from_millis(1), |_| false);
        for m in c.backlog.drain(..) {
            if m["method"] != "textDocument/publishDiagnostics" {
                continue;
            }
            let (u, Some(v)) = (m["params"]["uri"].as_str().unwrap().to_string(), m["params"]["version"].as_i64()) else { continue };
            self.count += 1;
            let newest = self.newest.entry(u.clone()).or_insert(v);
            if v < *newest {
                self.stale.push(format!("{u}: version {v} after {newest}"));
            }
            *newest = v.max(*newest);
        }
    }
}

fn kernel(i: usize, version: i64) -> String {
    format!("// version {version}\n__global__ void k{i}(float* y, int n) {{\n  int t = blockIdx.x * blockDim.x + threadIdx.x;\n  if (t < n) y[t] = y[t] * {version}.0f + {i};\n}}\n")
}

#[test]
fn twenty_files_saved_repeatedly() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(bin());
    cmd.env("KP_TEST_TAG", "stress").env("TMPDIR", tmp.path());
    let mut c = Client::spawn_with(cmd, json!({"trusted": true}));
    let server = server_pid("stress");
    let uris: Vec<String> = (0..FILES).map(|i| uri(&work.path().join(format!("f{i}.cu")))).collect();
    let mut versions = [1i64; FILES];
    for (i, u) in uris.iter().enumerate() {
        std::fs::write(work.path().join(format!("f{i}.cu")), kernel(i, 1)).unwrap();
        c.open(u, &kernel(i, 1), 1);
    }
    let mut published = Published::default();
    let mut groups: HashSet<u32> = HashSet::new();
    let mut rss = vec![rss_kib(server)];
    let mut saves = 0;
    let start = Instant::now();
    for round in 0..ROUNDS {
        let end = Instant::now() + ROUND;
        let mut i = round;
        while Instant::now() < end {
            let f = i % FILES;
            versions[f] += 1;
            let text = kernel(f, versions[f]);
            c.change_all(&uris[f], &text, versions[f] as i32);
            c.notify("textDocument/didSave", json!({"textDocument": {"uri": uris[f]}}));
            saves += 1;
            i += 7;
            std::thread::sleep(Duration::from_millis(50));
            // The server's children lead their own groups: remember them.
            groups.extend(pids().into_iter().filter(|&p| stat(p).is_some_and(|(pp, _, _)| pp == server)));
            published.drain(&mut c);
        }
        // Quiet period: every file's newest version gets published, then nothing runs.
        let deadline = Instant::now() + Duration::from_secs(180);
        while (0..FILES).any(|f| published.newest.get(&uris[f]) != Some(&versions[f])) {
            assert!(Instant::now() < deadline, "newest versions not published: {:?}", published.newest);
            std::thread::sleep(Duration::from_millis(100));
            published.drain(&mut c);
        }
        // The newest version's compiler diagnostics may come before its SASS stage
        // ends: give that last stage time to finish; a leak outlives the wait.
        let leftovers = || (live(|pp, g| pp == server || groups.contains(&g)), entries(tmp.path()));
        let settle = Instant::now() + Duration::from_secs(30);
        while Instant::now() < settle && leftovers() != (Vec::new(), Vec::new()) {
            std::thread::sleep(Duration::from_millis(100));
            published.drain(&mut c);
        }
        let (processes, temp_files) = leftovers();
        assert_eq!(processes, Vec::<u32>::new(), "processes left after quiet period {round}");
        assert_eq!(temp_files, Vec::<String>::new(), "temp files left after quiet period {round}");
        rss.push(rss_kib(server));
    }
    assert!(c.shutdown().success());
    let left = live(|pp, g| pp == server || groups.contains(&g));
    let temp_left = entries(tmp.path());
    println!(
        "stress: {FILES} files, {saves} saves in {:.0} s, {} publications, {} process groups seen, RSS KiB per quiet period {rss:?}, processes left {}, temp entries left {temp_left:?}",
        start.elapsed().as_secs_f64(),
        published.count,
        groups.len(),
        left.len()
    );
    assert_eq!(published.stale, Vec::<String>::new(), "stale diagnostics published");
    assert_eq!(left, Vec::<u32>::new(), "processes left after exit");
    assert_eq!(temp_left, Vec::<String>::new(), "temp files left (killed compiles included)");
    // Flat after warm-up: the first quiet period is the baseline.
    assert!(*rss.last().unwrap() < rss[1] * 3 / 2, "resident memory grew: {rss:?} KiB");
}

/// A slow compile killed by a newer save leaves no temp dir and no process.
#[test]
fn killed_compile_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let real = kernelpro_core::analysis::Analyzer::find_nvcc(&Default::default()).expect("nvcc (run scripts/setup.sh)").path;
    let slow = dir.path().join("nvcc");
    std::fs::write(&slow, format!("#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in *.cu) grep -q SLOW \"$a\" && sleep 1002;; esac; done\nexec {} \"$@\"\n", real.display())).unwrap();
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(real.with_file_name("nvdisasm"), dir.path().join("nvdisasm")).unwrap();
    let path = dir.path().join("k.cu");
    let u = uri(&path);
    let mut cmd = Command::new(bin());
    cmd.env("KP_TEST_TAG", "killed").env("TMPDIR", tmp.path());
    let mut c = Client::spawn_with(cmd, json!({"trusted": true, "nvcc": slow}));
    let server = server_pid("killed");
    c.open(&u, "// SLOW\n__global__ void k(float* y) { y[0] = 1.0f; }\n", 1);
    // Wait until the slow compile runs, with its temp dir.
    let deadline = Instant::now() + Duration::from_secs(60);
    let group = loop {
        if let Some(g) = pids().into_iter().find(|&p| stat(p).is_some_and(|(pp, _, _)| pp == server))
            && entries(tmp.path()).iter().any(|e| e.starts_with("kernelpro-"))
        {
            break g;
        }
        assert!(Instant::now() < deadline, "the slow compile never started");
        std::thread::sleep(Duration::from_millis(50));
    };
    let fast = "__global__ void k(float* y) { y[0] = 2.0f; }\n";
    c.change_all(&u, fast, 2);
    c.notify("textDocument/didSave", json!({"textDocument": {"uri": u}}));
    let d = c.wait_diagnostics(&u, Duration::from_secs(120));
    assert_eq!(d["version"], 2);
    assert_eq!(live(|_, g| g == group), Vec::<u32>::new(), "the killed compile's group is still alive");
    assert_eq!(entries(tmp.path()), Vec::<String>::new(), "temp files left by the killed compile");
    assert!(c.shutdown().success());
    assert_eq!(live(|pp, _| pp == server), Vec::<u32>::new());
    assert_eq!(entries(tmp.path()), Vec::<String>::new());
}
