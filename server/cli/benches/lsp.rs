//! LSP latency and memory, side by side with the bare compiler in one run:
//! `cargo bench -p kernelpro --bench lsp`. Prints ratios, asserts nothing.

#[path = "../../../tests/support/lsp_client.rs"]
mod lsp_client;

use lsp_client::{Client, fixtures, uri};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(300);
const ROUNDS: usize = 5;

/// A 2,000-line file: 80 kernels of 25 lines with loops, shared memory and math.
fn big_file() -> String {
    let mut s = String::from("#include <cstdint>\n");
    for k in 0..80 {
        s.push_str(&format!(
            "__global__ void k{k}(float* __restrict__ y, const float* __restrict__ x, int n) {{\n  __shared__ float tile[256];\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  float acc = 0.0f;\n  if (i < n) tile[threadIdx.x] = x[i];\n  __syncthreads();\n  for (int j = 0; j < 16; ++j) {{\n    acc += tile[(threadIdx.x + j) % 256] * {k}.5f;\n    acc = fmaf(acc, 0.5f, 1.0f);\n  }}\n  if (i < n) {{\n    float v = acc;\n    v = v * v + 1.0f;\n    v = sqrtf(v);\n    y[i] = v;\n  }}\n  // padding line a\n  // padding line b\n  // padding line c\n  // padding line d\n  // padding line e\n  // padding line f\n  // padding line g\n}}\n\n"
        ));
    }
    s
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn bare_nvcc(path: &Path) -> f64 {
    let nvcc =
        kernelpro_core::analysis::Analyzer::find_nvcc(&Default::default()).expect("nvcc (bash scripts/setup.sh)").path;
    let out = std::env::temp_dir().join("kernelpro-bench.cubin");
    let t = Instant::now();
    let st = std::process::Command::new(nvcc)
        .args(["-arch=sm_90", "-cubin", "-lineinfo", "-Xptxas", "-v", "-o"])
        .arg(&out)
        .arg(path)
        .output()
        .unwrap();
    assert!(st.status.success());
    t.elapsed().as_secs_f64() * 1e3
}

/// Milliseconds from didSave to the first publish (the compiler's messages)
/// and to the settled state (SASS and static findings published too).
fn save_to_publish(c: &mut Client, u: &str, text: &str, version: i32) -> (f64, f64) {
    c.change_all(u, text, version);
    let t = Instant::now();
    c.save(u, text);
    c.wait(LONG, |m| {
        m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == u && m["params"]["version"] == version
    })
    .expect("diagnostics");
    let first = t.elapsed().as_secs_f64() * 1e3;
    let prefix = format!("kernelpro-analysis:{u}#");
    c.wait(LONG, |m| {
        m["method"] == "$/progress"
            && m["params"]["value"]["kind"] == "end"
            && m["params"]["token"].as_str().is_some_and(|t| t.starts_with(&prefix))
    })
    .expect("settled");
    (first, t.elapsed().as_secs_f64() * 1e3)
}

fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: f64 =
        status.lines().find(|l| l.starts_with("VmRSS:")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    kb / 1024.0
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let probe = std::fs::read_to_string(fixtures().join("h200-probe/kernels.cu")).unwrap();
    println!(
        "| file | bare nvcc (ms) | save → compiler diagnostics (ms) | ratio | save → SASS + static findings (ms) | ratio | no-change save (ms) | hover p50 / p95 (ms) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (name, text) in [("kernels.cu (probe)", probe.clone()), ("2,000-line file", big_file())] {
        let path = dir.path().join("bench.cu");
        std::fs::write(&path, &text).unwrap();
        let u = uri(&path);
        let mut c = Client::spawn(json!({"trusted": true}));
        c.open(&u, &text, 1);
        c.wait_diagnostics(&u, LONG);
        let (mut bare, mut lsp, mut settled) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..ROUNDS {
            // A changed comment defeats the cache, as a real edit would.
            let edited = format!("{text}// round {r}\n");
            std::fs::write(&path, &edited).unwrap();
            bare.push(bare_nvcc(&path));
            let (first, done) = save_to_publish(&mut c, &u, &edited, 10 + r as i32);
            lsp.push(first);
            settled.push(done);
        }
        let last = format!("{text}// round {}\n", ROUNDS - 1);
        let nochange: Vec<f64> = (0..ROUNDS).map(|r| save_to_publish(&mut c, &u, &last, 100 + r as i32).1).collect();
        let lines = last.lines().count();
        let mut hovers = Vec::new();
        for i in 0..200 {
            let line = (i * 7919) % lines;
            let t = Instant::now();
            c.request(
                "textDocument/hover",
                json!({"textDocument": {"uri": u}, "position": {"line": line, "character": 4}}),
            );
            hovers.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let b = median(bare);
        println!(
            "| {name} | {:.0} | {:.0} | {:.2} | {:.0} | {:.2} | {:.1} | {:.2} / {:.2} |",
            b,
            median(lsp.clone()),
            median(lsp) / b,
            median(settled.clone()),
            median(settled) / b,
            median(nochange),
            percentile(hovers.clone(), 0.5),
            percentile(hovers, 0.95)
        );
    }
    // Resident memory with 20 files open (each its own 2,000-line variant).
    let mut c = Client::spawn(json!({"trusted": true}));
    let base = rss_mb(c.pid());
    let big = big_file();
    for i in 0..20 {
        let p = dir.path().join(format!("f{i}.cu"));
        let text = format!("{big}// file {i}\n");
        std::fs::write(&p, &text).unwrap();
        c.open(&uri(&p), &text, 1);
    }
    for i in 0..20 {
        c.wait_diagnostics(&uri(&dir.path().join(format!("f{i}.cu"))), LONG);
    }
    std::thread::sleep(Duration::from_secs(1));
    println!(
        "\nresident memory: {:.0} MB at start, {:.0} MB with 20 analysed 2,000-line files open",
        base,
        rss_mb(c.pid())
    );
}
