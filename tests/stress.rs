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
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
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
            let (u, Some(v)) = (m["params"]["uri"].as_str().unwrap().to_string(), m["params"]["version"].as_i64())
            else {
                continue;
            };
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
    format!(
        "// version {version}\n__global__ void k{i}(float* y, int n) {{\n  int t = blockIdx.x * blockDim.x + threadIdx.x;\n  if (t < n) y[t] = y[t] * {version}.0f + {i};\n}}\n"
    )
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
    let real =
        kernelpro_core::analysis::Analyzer::find_nvcc(&Default::default()).expect("nvcc (run scripts/setup.sh)").path;
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

/// 20,000 one-line kernels (1 MB), once with one lone `\r` (a line break for
/// LSP, not for nvcc): documentSymbol used to take 7 s (19 s with the `\r`),
/// quadratic in the kernels, and held every other request. Timed here in the
/// debug build; a hover on another file must be answered while three
/// documentSymbol requests for the big file are in flight.
#[test]
fn twenty_thousand_kernels() {
    const KERNELS: usize = 20_000;
    /// Generous for a debug build on a loaded two-core machine with the other
    /// stress tests beside it (see docs/reliability.md for the figures).
    const COLD_BOUND: Duration = Duration::from_secs(20);
    let mut c = Client::spawn(json!({}));
    let big: String =
        (0..KERNELS).map(|i| format!("__global__ void k{i}(float* y) {{ y[{i}] = {i}.0f; }}\n")).collect();
    let (big_uri, small_uri) = ("file:///stress/big.cu", "file:///stress/small.cu");
    c.open(small_uri, "__global__ void s(float* y) { y[0] = 1.0f; }\n", 1);
    c.wait_publish(small_uri, Duration::from_secs(60));
    c.open(big_uri, &big, 1);
    c.wait_publish(big_uri, Duration::from_secs(120));
    let symbols = |c: &mut Client| -> Duration {
        let t = Instant::now();
        let r = c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": big_uri}}));
        let elapsed = t.elapsed();
        let list = r["result"].as_array().unwrap_or_else(|| panic!("{r}"));
        assert_eq!(list.len(), KERNELS);
        assert_eq!(
            (list[KERNELS - 1]["name"].as_str(), list[KERNELS - 1]["range"]["start"]["line"].as_u64()),
            (Some("k19999"), Some(KERNELS as u64 - 1))
        );
        elapsed
    };
    let plain = symbols(&mut c);
    // Asked again on the same version: from the index kept per version.
    let warm = (0..3).map(|_| symbols(&mut c)).min().unwrap();
    // A one-line change in the middle (a comment line above k10000, then
    // removed): re-parsed from the tree kept of the version before (syntax.rs).
    let mut one_line = Vec::new();
    for (v, text, range) in [(2, "// one line\n", [10_000, 0, 10_000, 0]), (3, "", [10_000, 0, 10_001, 0])] {
        c.notify("textDocument/didChange", json!({"textDocument": {"uri": big_uri, "version": v}, "contentChanges": [{"range": {"start": {"line": range[0], "character": range[1]}, "end": {"line": range[2], "character": range[3]}}, "text": text}]}));
        let t = Instant::now();
        let r = c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": big_uri}}));
        one_line.push(t.elapsed());
        let list = r["result"].as_array().unwrap();
        let shift = (v == 2) as u64;
        assert_eq!(
            (
                list.len(),
                list[9_999]["range"]["start"]["line"].as_u64(),
                list[10_000]["range"]["start"]["line"].as_u64()
            ),
            (KERNELS, Some(9_999), Some(10_000 + shift))
        );
    }
    // One lone "\r" in a comment on the first line: LSP lines shift by one after it.
    c.notify("textDocument/didChange", json!({"textDocument": {"uri": big_uri, "version": 4}, "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "// a\rb\n"}]}));
    let t = Instant::now();
    let r = c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": big_uri}}));
    let lone_cr = t.elapsed();
    let list = r["result"].as_array().unwrap();
    assert_eq!((list.len(), list[KERNELS - 1]["range"]["start"]["line"].as_u64()), (KERNELS, Some(KERNELS as u64 + 1)));
    // A new version, so the three requests below parse again (whole: the lone "\r" stays).
    c.notify("textDocument/didChange", json!({"textDocument": {"uri": big_uri, "version": 5}, "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "// v3\n"}]}));
    // Three documentSymbol requests on the big file, then a hover on the small one.
    let pending: Vec<i64> = (0..3)
        .map(|_| c.send_request("textDocument/documentSymbol", json!({"textDocument": {"uri": big_uri}})))
        .collect();
    let t = Instant::now();
    let hover = c.send_request(
        "textDocument/hover",
        json!({"textDocument": {"uri": small_uri}, "position": {"line": 0, "character": 17}}),
    );
    let mut order = Vec::new();
    while order.len() < 4 {
        let m =
            c.wait(Duration::from_secs(120), |m| m.get("id").is_some() && m.get("method").is_none()).expect("answers");
        order.push((m["id"].as_i64().unwrap(), t.elapsed()));
    }
    let hover_after = order.iter().find(|(id, _)| *id == hover).unwrap().1;
    let first_symbols = order.iter().filter(|(id, _)| pending.contains(id)).map(|(_, at)| *at).min().unwrap();
    println!("twenty_thousand_kernels: documentSymbol on an unchanged version {} ms (best of 3)", warm.as_millis());
    println!(
        "twenty_thousand_kernels: documentSymbol right after a one-line change {:?} ms (the first request of the version)",
        one_line.iter().map(|d| d.as_millis()).collect::<Vec<_>>()
    );
    println!(
        "twenty_thousand_kernels: documentSymbol {} ms (first on its version), with a lone CR {} ms; hover on another file answered after {} ms, the first of three concurrent documentSymbols after {} ms",
        plain.as_millis(),
        lone_cr.as_millis(),
        hover_after.as_millis(),
        first_symbols.as_millis()
    );
    // The first request on a version parses; with the other stress tests
    // running beside it, that took up to 10 s on the loaded two-core machine.
    assert!(plain < COLD_BOUND && lone_cr < COLD_BOUND, "documentSymbol took {plain:?} ({lone_cr:?} with a lone CR)");
    assert!(one_line.iter().all(|d| *d < COLD_BOUND), "documentSymbol after a one-line change took {one_line:?}");
    // The goal is 200 ms for the answer kept per version (written as it is,
    // raw_answer.rs); the figure is the benchmark's
    // (bench/document_symbol.py, docs/reliability.md): this timed test
    // only guards against a repeat costing a parse, and prints its figure.
    // Against the lone-CR request, which surely parsed (whole, asked at once
    // after its change); `plain` may have been answered by the prefetch
    // 150 ms after the open, so it is no parse to compare with.
    assert!(
        warm < COLD_BOUND && warm <= lone_cr,
        "documentSymbol on an unchanged version took {warm:?} (a whole parse: {lone_cr:?})"
    );
    assert!(hover_after < first_symbols, "the hover waited for the big file: {order:?}");
    assert!(c.shutdown().success());
}

/// A compiler that lingers: a grandchild `sleep` in the compile's process group
/// (as cicc and ptxas are nvcc's), then the real nvcc.
fn lingering_nvcc(dir: &Path) -> std::path::PathBuf {
    let real =
        kernelpro_core::analysis::Analyzer::find_nvcc(&Default::default()).expect("nvcc (run scripts/setup.sh)").path;
    let nvcc = dir.join("nvcc");
    std::fs::write(&nvcc, format!("#!/bin/sh\nsleep 1003 &\n{} \"$@\"\nwait\n", real.display())).unwrap();
    std::fs::set_permissions(&nvcc, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(real.with_file_name("nvdisasm"), dir.join("nvdisasm")).unwrap();
    nvcc
}

/// SIGTERM (Neovim's `client:stop(true)`, a service manager) while compiles are
/// in flight: every child's process group dies with the server (they lead
/// their own groups, so the signal alone reached none of them).
#[test]
fn sigterm_with_compiles_in_flight_leaves_no_child() {
    signal_with_compiles_in_flight_leaves_no_child(libc::SIGTERM, "sigterm");
}

/// SIGHUP (the terminal or the editor's pty closing) is handled the same way.
#[test]
fn sighup_with_compiles_in_flight_leaves_no_child() {
    signal_with_compiles_in_flight_leaves_no_child(libc::SIGHUP, "sighup");
}

fn signal_with_compiles_in_flight_leaves_no_child(signal: i32, tag: &str) {
    let dir = tempfile::tempdir().unwrap();
    let nvcc = lingering_nvcc(dir.path());
    let mut cmd = Command::new(bin());
    cmd.env("KP_TEST_TAG", tag);
    let mut c = Client::spawn_with(cmd, json!({"trusted": true, "nvcc": nvcc}));
    let server = server_pid(tag);
    for i in 0..20 {
        c.open(&uri(&dir.path().join(format!("f{i}.cu"))), &kernel(i, 1), 1);
    }
    // Compiles in flight: children of the server, each with a grandchild in its group.
    let mut groups: HashSet<u32> = HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let children: Vec<u32> =
            pids().into_iter().filter(|&p| stat(p).is_some_and(|(pp, _, _)| pp == server)).collect();
        groups.extend(children.iter().copied());
        let in_groups = pids()
            .into_iter()
            .filter(|&p| stat(p).is_some_and(|(_, g, st)| st != 'Z' && children.contains(&g)))
            .count();
        if !children.is_empty() && in_groups > children.len() {
            break;
        }
        assert!(Instant::now() < deadline, "no compile started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let in_flight = live(|_, g| groups.contains(&g)).len();
    // SAFETY: a signal to the server this test started.
    unsafe {
        libc::kill(server as i32, signal);
    }
    let status = c.wait_exit(Duration::from_secs(10)).expect("the server ends on the signal");
    let left = live(|pp, g| pp == server || groups.contains(&g));
    println!(
        "{tag}: {in_flight} processes in {} compile groups at the signal, exit {status}, {} left",
        groups.len(),
        left.len()
    );
    assert_eq!(status.code(), Some(128 + signal), "{status}");
    assert_eq!(left, Vec::<u32>::new(), "processes left after {tag}");
}

/// 50 files opened at once: at most one compile per core runs (the children of
/// the server, sampled, and the compiler's own record of overlapping runs), and
/// versions superseded while waiting are never compiled.
#[test]
fn fifty_files_opened_at_once() {
    let cap = std::thread::available_parallelism().map_or(2, |n| n.get());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs.log");
    // A compiler that logs each run's file and version (the copy's line 2: line 1 is KernelPro's `#line`), takes 0.3 s (4 s for the first `cap` runs,
    // so that every other version is queued before a place frees), and reports an error.
    let nvcc = dir.path().join("nvcc");
    std::fs::write(
        &nvcc,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in *.cu) tag=$(sed -n 2p \"$a\");; esac; done\necho \"start $tag\" >> {0}\nif [ $(grep -c start {0}) -le {1} ]; then sleep 4; else sleep 0.3; fi\necho \"end $tag\" >> {0}\necho \"k.cu(2): error: fake compiler\" >&2\nexit 2\n",
            log.display(),
            cap
        ),
    )
    .unwrap();
    std::fs::set_permissions(&nvcc, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut cmd = Command::new(bin());
    cmd.env("KP_TEST_TAG", "fifty");
    let mut c = Client::spawn_with(cmd, json!({"trusted": true, "nvcc": nvcc}));
    let server = server_pid("fifty");
    let uris: Vec<String> = (0..50).map(|i| uri(&dir.path().join(format!("f{i}.cu")))).collect();
    let text = |i: usize, v: i64| format!("// f{i} v{v}\n{}", kernel(i, v));
    for (i, u) in uris.iter().enumerate() {
        c.open(u, &text(i, 1), 1);
    }
    // Superseded while waiting: files 10..20 get a second version at once.
    for (i, u) in uris.iter().enumerate().take(20).skip(10) {
        c.change_all(u, &text(i, 2), 2);
        c.notify("textDocument/didSave", json!({"textDocument": {"uri": u}}));
    }
    let mut most_children = 0;
    let mut published: HashMap<String, i64> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(180);
    while (0..50).any(|i| published.get(&uris[i]) != Some(&if (10..20).contains(&i) { 2 } else { 1 })) {
        assert!(Instant::now() < deadline, "not all published: {published:?}");
        most_children = most_children.max(live_children(server));
        c.wait(Duration::from_millis(10), |_| false);
        for m in c.backlog.drain(..) {
            if m["method"] == "textDocument/publishDiagnostics"
                && let Some(v) = m["params"]["version"].as_i64()
            {
                published.insert(m["params"]["uri"].as_str().unwrap().to_string(), v);
            }
        }
    }
    let runs = std::fs::read_to_string(&log).unwrap();
    // A run killed because its version was superseded (SIGKILL to its group)
    // never logs its end: leave it out of the overlap count (the sampled
    // children above still bound it), and check that only superseded versions
    // were killed.
    let ended: std::collections::HashSet<&str> = runs.lines().filter_map(|l| l.strip_prefix("end ")).collect();
    let killed: Vec<&str> =
        runs.lines().filter_map(|l| l.strip_prefix("start ")).filter(|t| !ended.contains(t)).collect();
    for t in &killed {
        let superseded = (10..20).any(|i| *t == format!("// f{i} v1"));
        assert!(superseded, "the run of `{t}` never ended, and its version was not superseded: {runs}");
    }
    let (mut running, mut most_running) = (0usize, 0usize);
    for line in runs.lines() {
        match line.split_once(' ') {
            Some(("start", t)) if !killed.contains(&t) => running += 1,
            Some(("end", _)) => running -= 1,
            _ => {}
        }
        most_running = most_running.max(running);
    }
    let started: Vec<&str> = runs.lines().filter_map(|l| l.strip_prefix("start ")).collect();
    println!(
        "fifty_files: cap {cap}, at most {most_children} children seen, at most {most_running} compiles overlapping, {} compiles for 60 versions; started: {:?}",
        started.len(),
        started
    );
    assert!(
        most_children <= cap && most_running <= cap,
        "{most_children} children, {most_running} compiles at once, cap {cap}"
    );
    // Newest first is checked in `core::jobs` (the order here depends on when each analysis,
    // after its progress handshake with this client, reaches the queue).
    // A version superseded while its compile ran is killed (no end logged); one superseded
    // while waiting must never start.
    let superseded: Vec<&&str> =
        started.iter().filter(|t| (10..20).any(|i| **t == format!("// f{i} v1")) && !killed.contains(t)).collect();
    assert!(superseded.is_empty(), "superseded versions compiled: {superseded:?}");
    assert!(c.shutdown().success());
}

fn live_children(server: u32) -> usize {
    pids().into_iter().filter(|&p| stat(p).is_some_and(|(pp, _, st)| pp == server && st != 'Z')).count()
}

/// 16 slow requests on one file (documentSymbol on 8,000 kernels, each on a
/// new version so each parses) while a hover on another file answers in at
/// most 100 ms; half of them cancelled with `$/cancelRequest` and answered
/// with RequestCancelled (-32800). tower-lsp-server served four requests at
/// a time and read nothing else meanwhile (a hover waited 11.3 s behind 16).
#[test]
fn sixteen_slow_requests_a_quick_hover_and_cancels() {
    const SLOW: usize = 16;
    const KERNELS: usize = 8_000;
    let mut c = Client::spawn(json!({}));
    // Slow enough that the pool is full while the hover comes, light enough
    // not to starve the other stress tests running beside it. The lone "\r"
    // (a line break for LSP, not for tree-sitter) keeps the server from
    // keeping its tree (syntax.rs), so each version is parsed whole: a
    // one-line change of a file without one re-parses in milliseconds.
    let big: String = std::iter::once("// a\rb\n".to_string())
        .chain((0..KERNELS).map(|i| format!("__global__ void k{i}(float* y) {{ y[{i}] = {i}.0f; }}\n")))
        .collect();
    let (big_uri, small_uri) = ("file:///stress/slow.cu", "file:///stress/quick.cu");
    c.open(small_uri, "__global__ void s(float* y) { y[0] = 1.0f; }\n", 1);
    c.wait_publish(small_uri, Duration::from_secs(60));
    c.open(big_uri, &big, 1);
    c.wait_publish(big_uri, Duration::from_secs(120));
    let t = Instant::now();
    let mut ids = Vec::new();
    for v in 0..SLOW {
        c.notify("textDocument/didChange", json!({"textDocument": {"uri": big_uri, "version": v + 2}, "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "// edit\n"}]}));
        ids.push(c.send_request("textDocument/documentSymbol", json!({"textDocument": {"uri": big_uri}})));
    }
    // The last eight are cancelled while they wait for a place in the pool.
    for id in &ids[SLOW / 2..] {
        c.notify("$/cancelRequest", json!({"id": id}));
    }
    let hovers: Vec<Duration> = (0..3)
        .map(|_| {
            let h = Instant::now();
            c.request(
                "textDocument/hover",
                json!({"textDocument": {"uri": small_uri}, "position": {"line": 0, "character": 17}}),
            );
            h.elapsed()
        })
        .collect();
    let mut cancelled = 0;
    let mut answered = 0;
    for id in &ids {
        let r = c.response(*id, Duration::from_secs(300));
        if r["error"]["code"] == -32800 {
            cancelled += 1;
        } else {
            assert!(
                r["result"].as_array().is_some_and(|l| l.len() == KERNELS),
                "{}",
                &r.to_string()[..200.min(r.to_string().len())]
            );
            answered += 1;
        }
    }
    println!(
        "sixteen slow requests: hovers on another file answered in {:?} meanwhile; {answered} answered, {cancelled} cancelled (-32800), all in {} ms",
        hovers.iter().map(|h| h.as_millis()).collect::<Vec<_>>(),
        t.elapsed().as_millis()
    );
    assert!(cancelled >= SLOW / 4, "{cancelled} of {} cancelled requests answered as cancelled", SLOW / 2);
    assert!(answered >= SLOW / 2, "{answered}");
    assert!(hovers[0] <= Duration::from_millis(100), "hover took {hovers:?} behind {SLOW} slow requests");
    assert!(c.shutdown().success());
}

fn vm_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

/// The analysis budget: a 2.3 MB file of nested loops and a 600 KB file of
/// nested template arguments are each answered with an `analysis-budget`
/// diagnostic within a stated time and memory (peak RSS of the server, from
/// /proc), saving the big one six times cancels the analyses in flight (the
/// server's threads stay few), and `exit` is not held.
#[test]
fn huge_nested_files_are_refused_within_the_budget() {
    /// Generous for a debug build on a loaded two-core machine; docs/reliability.md has the figures.
    const TIME: Duration = Duration::from_secs(30);
    const PEAK_RSS_KIB: u64 = 1 << 20; // 1 GiB (it took 2.9 GB for the template file)
    let mut cmd = Command::new(bin());
    cmd.env("KP_TEST_TAG", "budget");
    let mut c = Client::spawn_with(cmd, json!({}));
    let server = server_pid("budget");
    let mut loops = String::from("__global__ void k(float* y, int n) {\n");
    let mut depth = 0;
    while loops.len() < 2_300_000 {
        loops.push_str(&format!("for (int i{depth} = 0; i{depth} < n; ++i{depth}) {{\n"));
        depth += 1;
    }
    loops.push_str("y[i0] += 1.0f;\n");
    loops.push_str(&"}\n".repeat(depth));
    loops.push_str("}\n");
    let nest = 200_000;
    let templates = format!(
        "template <typename T> struct S {{}};\nusing X = {}int{};\n__global__ void k(float* y) {{ y[0] = 1; }}\n",
        "S<".repeat(nest),
        ">".repeat(nest)
    );
    assert!(templates.len() >= 600_000);
    for (name, text) in [("loops", &loops), ("templates", &templates)] {
        let u = format!("file:///stress/budget_{name}.cu");
        let t = Instant::now();
        c.open(&u, text, 1);
        let d = c.wait_publish(&u, Duration::from_secs(300));
        let took = t.elapsed();
        let budget = d["diagnostics"].as_array().unwrap().iter().find(|d| d["code"] == "analysis-budget").cloned();
        let peak = vm_kib(server, "VmHWM:");
        println!(
            "budget: {name}, {} bytes: diagnostic after {} ms, server peak RSS {} MiB: {}",
            text.len(),
            took.as_millis(),
            peak / 1024,
            budget.as_ref().map_or("none".to_string(), |b| b["message"].to_string())
        );
        assert!(budget.is_some(), "{name}: no analysis-budget diagnostic: {d}");
        assert!(took < TIME, "{name}: {took:?}");
        assert!(peak < PEAK_RSS_KIB, "{name}: peak RSS {peak} KiB");
    }
    // Six saves of the big one in a row: each cancels the one before.
    let u = "file:///stress/budget_loops.cu";
    for _ in 0..6 {
        c.save(u, &loops);
    }
    std::thread::sleep(Duration::from_millis(500));
    let threads = vm_kib(server, "Threads:");
    println!("budget: {threads} server threads after six saves");
    // Exit with analyses in flight: not held by them.
    let t = Instant::now();
    let status = c.shutdown();
    println!("budget: shutdown and exit took {} ms", t.elapsed().as_millis());
    assert!(status.success());
    assert!(t.elapsed() < Duration::from_secs(5), "exit held {:?}", t.elapsed());
    assert!(threads < 64, "{threads} threads");
}
