//! End-to-end LSP tests over the real binary and the real nvcc.

mod support;

use serde_json::{Value, json};
use std::time::Duration;
use support::lsp_client::{Client, fixtures, trusted, uri};

const LONG: Duration = Duration::from_secs(120);

fn summarize(diags: &Value) -> Vec<String> {
    diags["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{}:{}-{}:{} {} {} [{}] {}",
                d["range"]["start"]["line"],
                d["range"]["start"]["character"],
                d["range"]["end"]["line"],
                d["range"]["end"]["character"],
                d["severity"],
                d["source"].as_str().unwrap_or(""),
                d["code"].as_str().unwrap_or(""),
                d["message"].as_str().unwrap_or("").lines().next().unwrap_or("")
            )
        })
        .collect()
}

fn temp_copy(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    (dir, p)
}

#[test]
fn open_change_save_publishes_exact_nvcc_diagnostics() {
    let text = std::fs::read_to_string(fixtures().join("lsp/planted.cu")).unwrap();
    let (_d, path) = temp_copy("planted.cu", &text);
    let u = uri(&path);
    let mut c = Client::spawn(trusted());
    c.open(&u, &text, 1);
    let d = c.wait_diagnostics(&u, LONG);
    assert_eq!(d["version"], 1);
    assert_eq!(
        summarize(&d),
        vec![
            "4:27-4:33 1 nvcc [] identifier \"factor\" is undefined",
            "2:6-2:18 2 nvcc [#177-D] variable \"unused_index\" was declared but never referenced",
        ]
    );
    // The analysis is in the client's log (VS Code's output channel, Neovim's lsp.log).
    let logged = c.wait(Duration::from_secs(10), |m| {
        m["method"] == "window/logMessage"
            && m["params"]["message"]
                .as_str()
                .is_some_and(|t| t.starts_with("analysed") && t.contains("planted.cu") && t.contains("version=1"))
    });
    assert!(logged.is_some(), "no log line for the analysis");
    // Fix the error in the buffer, save: the warning is left, tagged with version 2, and now
    // that the kernel compiles the model's elementwise finding joins it.
    let fixed = text.replace("factor", "2.0f");
    c.change_all(&u, &fixed, 2);
    c.save(&u, &fixed);
    let d = c.wait_diagnostics(&u, LONG);
    assert_eq!(d["version"], 2);
    assert_eq!(
        summarize(&d),
        vec![
            "2:6-2:18 2 nvcc [#177-D] variable \"unused_index\" was declared but never referenced",
            "4:20-4:24 3 kernelpro [ScalarLoads] `x[i]`: one 4-byte load per thread per element in an elementwise kernel: 128-bit loads of 4 elements per thread would issue a quarter of the load instructions",
        ]
    );
    // Two lines typed above, not saved: the findings move with their lines at once.
    c.notify("textDocument/didChange", json!({"textDocument": {"uri": u, "version": 3}, "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "// a\n// b\n"}]}));
    let d = c.wait_publish(&u, LONG);
    assert_eq!(d["version"], 3);
    assert_eq!(
        summarize(&d),
        vec![
            "4:6-4:18 2 nvcc [#177-D] variable \"unused_index\" was declared but never referenced",
            "6:20-6:24 3 kernelpro [ScalarLoads] `x[i]`: one 4-byte load per thread per element in an elementwise kernel: 128-bit loads of 4 elements per thread would issue a quarter of the load instructions",
        ]
    );
    // The finding's line rewritten: its finding goes until the next analysis says otherwise.
    c.notify("textDocument/didChange", json!({"textDocument": {"uri": u, "version": 4}, "contentChanges": [{"range": {"start": {"line": 6, "character": 0}, "end": {"line": 7, "character": 0}}, "text": "  if (i < n) y[i] = 0.0f;\n"}]}));
    let d = c.wait_publish(&u, LONG);
    assert_eq!(d["version"], 4);
    assert_eq!(
        summarize(&d),
        vec!["4:6-4:18 2 nvcc [#177-D] variable \"unused_index\" was declared but never referenced"]
    );
    assert!(c.shutdown().success());
}

/// The codes of a publish, in order (`#177-D`, `UncoalescedAccess`, …).
fn codes(diags: &Value) -> Vec<String> {
    diags["diagnostics"].as_array().unwrap().iter().map(|d| d["code"].as_str().unwrap_or("").to_string()).collect()
}

/// A save publishes twice: the first publish (right after nvcc, before nvdisasm)
/// already holds the kernel model's findings beside the compiler's messages,
/// tagged with the saved version; the second adds the SASS tools'. A later save's
/// first publish keeps the last SASS findings on lines it left alone (no flicker),
/// and no publish in between is empty.
#[test]
fn first_publish_after_a_save_has_the_model_findings() {
    let text = std::fs::read_to_string(fixtures().join("lsp/row_walk.cu")).unwrap();
    let (_d, path) = temp_copy("row_walk.cu", &text);
    let u = uri(&path);
    let mut c = Client::spawn(trusted());
    c.open(&u, &text, 1);
    let first = c.wait_publish(&u, LONG);
    assert_eq!(first["version"], 1);
    let early = codes(&first);
    for code in ["#177-D", "RowWalk"] {
        assert!(early.iter().any(|c| c == code), "{code} missing from the first publish: {:?}", summarize(&first));
    }
    // Issue 32: the row walk is one finding; no UncoalescedAccess tells it again on its line.
    assert!(!early.iter().any(|c| c == "UncoalescedAccess"), "told twice: {:?}", summarize(&first));
    assert!(
        !early.iter().any(|c| c == "Fp64Promotion"),
        "the first publish comes before the SASS: {:?}",
        summarize(&first)
    );
    let settled = c.wait_diagnostics(&u, LONG);
    assert_eq!(settled["version"], 1);
    let full = codes(&settled);
    assert!(early.iter().all(|c| full.contains(c)), "the SASS step dropped a finding: {early:?} then {full:?}");
    assert!(full.iter().any(|c| c == "Fp64Promotion"), "{:?}", summarize(&settled));

    // An edit below the kernels: the next save's first publish has everything at once.
    let edited = format!("{text}// edited\n");
    c.change_all(&u, &edited, 2);
    c.save(&u, &edited);
    let first = c.wait_publish(&u, LONG);
    assert_eq!(first["version"], 2);
    let sorted = |d: &Value| {
        let mut s = summarize(d);
        s.sort();
        s
    };
    assert_eq!(sorted(&first), sorted(&settled), "the first publish of the second save");
    let settled = c.wait_diagnostics(&u, LONG);
    assert_eq!(settled["version"], 2);
    assert_eq!(codes(&settled), full);

    // Every publish of the file, in order: none empty, versions never go back.
    let publishes: Vec<Value> = c
        .transcript
        .iter()
        .map(|m| serde_json::from_str::<Value>(m).unwrap())
        .filter(|m| m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == u.as_str())
        .collect();
    assert!(publishes.len() >= 4, "{}", publishes.len());
    assert!(publishes.iter().all(|m| !m["params"]["diagnostics"].as_array().unwrap().is_empty()));
    let versions: Vec<i64> = publishes.iter().map(|m| m["params"]["version"].as_i64().unwrap()).collect();
    assert!(versions.windows(2).all(|w| w[0] <= w[1]), "{versions:?}");
    assert!(c.shutdown().success());
}

#[test]
fn symbols_hover_and_lenses() {
    let text = std::fs::read_to_string(fixtures().join("h200-probe/kernels.cu")).unwrap();
    let (_d, path) = temp_copy("kernels.cu", &text);
    let u = uri(&path);
    let mut c = Client::spawn(trusted());
    c.open(&u, &text, 1);
    c.wait_diagnostics(&u, LONG);
    let symbols = c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": u}}));
    let names: Vec<String> = symbols["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| format!("{} {}", s["name"].as_str().unwrap(), s["detail"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            "saxpy_fp64 __global__",
            "strided_copy __global__",
            "matmul_naive __global__",
            "transpose_conflicts __global__",
            "divergent __global__",
            "main host"
        ]
    );

    // Hover on line 9 (0-based 8): the FP64 conversion shows in the SASS.
    let h =
        c.request("textDocument/hover", json!({"textDocument": {"uri": u}, "position": {"line": 8, "character": 20}}));
    let md = h["result"]["contents"]["value"].as_str().unwrap();
    assert!(md.contains("```sass") && md.contains("F2F.F64.F32") && md.contains("Widens float to double"), "{md}");
    let show_sass = |c: &mut Client, line: u32| {
        let r = c.request("workspace/executeCommand", json!({"command": "kernelpro.showSass", "arguments": [u, line]}));
        r["result"].as_str().unwrap().to_string()
    };
    let listing = show_sass(&mut c, 8);
    assert!(listing.starts_with("SASS of line 9 ") && listing.contains("F2F.F64.F32"), "{listing}");

    // Hover on a kernel name: its resources and occupancy.
    let h =
        c.request("textDocument/hover", json!({"textDocument": {"uri": u}, "position": {"line": 26, "character": 20}}));
    let md = h["result"]["contents"]["value"].as_str().unwrap();
    assert!(
        md.contains("**transpose_conflicts**")
            && md.contains("| 4 KB |")
            && md.contains("Theoretical occupancy at 1024 threads/block")
            && md.contains("from the launch on line 54"),
        "{md}"
    );

    let lenses = c.request("textDocument/codeLens", json!({"textDocument": {"uri": u}}));
    let titles: Vec<&str> =
        lenses["result"].as_array().unwrap().iter().map(|l| l["command"]["title"].as_str().unwrap()).collect();
    assert!(titles.contains(&"14 regs · 0 B spill · 4 KB smem · occupancy 100% (limit: warps)"), "{titles:?}");
    // "⚡ Optimize", or where doctor finds no GPU, "⚡ Optimize: no NVIDIA GPU or driver".
    assert!(titles.iter().any(|t| t.starts_with("⚡ Optimize")), "{titles:?}");
    let lens_lines = |lenses: &Value| -> Vec<(u64, String)> {
        lenses["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (l["range"]["start"]["line"].as_u64().unwrap(), l["command"]["title"].as_str().unwrap().to_string())
            })
            .collect()
    };
    let before = lens_lines(&lenses);

    // Two lines typed above everything, not saved: hover and lenses follow their lines.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": u, "version": 2}, "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "// one\n// two\n"}]}),
    );
    let h =
        c.request("textDocument/hover", json!({"textDocument": {"uri": u}, "position": {"line": 10, "character": 20}}));
    let md = h["result"]["contents"]["value"].as_str().unwrap();
    assert!(md.contains("F2F.F64.F32"), "the moved line's SASS: {md}");
    let h =
        c.request("textDocument/hover", json!({"textDocument": {"uri": u}, "position": {"line": 1, "character": 3}}));
    assert!(h["result"].is_null(), "a typed line has no SASS yet: {h}");
    // Show SASS follows the lines too, titled with the line as it is now.
    assert_eq!(show_sass(&mut c, 10), listing.replace("SASS of line 9 ", "SASS of line 11 "));
    let typed = show_sass(&mut c, 1);
    assert!(typed.starts_with("No SASS for line 2: it changed since the last compile"), "{typed}");
    let after = lens_lines(&c.request("textDocument/codeLens", json!({"textDocument": {"uri": u}})));
    assert_eq!(after, before.iter().map(|(l, t)| (l + 2, t.clone())).collect::<Vec<_>>());
}

/// A compile that is overtaken by a newer save is cancelled and never published.
#[test]
fn stale_compile_is_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let real_nvcc =
        kernelpro_core::analysis::Analyzer::find_nvcc(&Default::default()).expect("nvcc (run scripts/setup.sh)").path;
    let slow = dir.path().join("nvcc");
    std::fs::write(&slow, format!("#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in *.cu) grep -q SLOW \"$a\" && sleep 20;; esac; done\nexec {} \"$@\"\n", real_nvcc.display())).unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(&mut std::fs::metadata(&slow).unwrap().permissions(), 0o755);
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // nvdisasm must sit beside the wrapper, as it does beside a real nvcc.
    std::os::unix::fs::symlink(real_nvcc.with_file_name("nvdisasm"), dir.path().join("nvdisasm")).unwrap();
    let path = dir.path().join("k.cu");
    let v1 = "// SLOW\n__global__ void k(float* y) { y[0] = 1.0f; }\n";
    let v2 = "__global__ void k(float* y) { y[0] = undefined_v2; }\n";
    std::fs::write(&path, v1).unwrap();
    let u = uri(&path);
    let mut c = Client::spawn(json!({"trusted": true, "nvcc": slow}));
    let start = std::time::Instant::now();
    c.open(&u, v1, 1);
    std::thread::sleep(Duration::from_millis(500));
    c.change_all(&u, v2, 2);
    c.save(&u, v2);
    let d = c.wait_diagnostics(&u, LONG);
    assert_eq!(d["version"], 2, "only the newest version is published");
    assert!(summarize(&d)[0].contains("undefined_v2"));
    assert!(start.elapsed() < Duration::from_secs(15), "the newer save did not wait for the slow compile");
    assert!(
        c.wait(Duration::from_secs(2), |m| m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["version"] != 2)
            .is_none(),
        "a stale result was published"
    );
}

/// Without nvcc anywhere, one clear diagnostic says how to install it.
#[test]
fn no_nvcc_gives_one_clear_diagnostic() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("kernelpro");
    std::fs::copy(support::lsp_client::bin(), &exe).unwrap();
    let mut cmd = std::process::Command::new(&exe);
    cmd.env_clear().env("PATH", "/usr/bin:/bin").env("HOME", dir.path()).current_dir(dir.path());
    let mut c = Client::spawn_with(cmd, trusted());
    let path = dir.path().join("k.cu");
    c.open(&uri(&path), "__global__ void k() {}\n", 1);
    let d = c.wait_diagnostics(&uri(&path), LONG);
    let s = summarize(&d);
    assert_eq!(s.len(), 1, "{s:?}");
    assert!(s[0].contains("[no-nvcc] nvcc was not found"), "{s:?}");
    let message = d["diagnostics"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("pip install nvidia-cuda-nvcc") && message.contains("run `kernelpro install-cuda`"),
        "{message}"
    );
}

/// Until the client says the workspace is trusted, nothing is compiled.
#[test]
fn untrusted_workspace_compiles_nothing() {
    let mut c = Client::spawn(json!({}));
    let msg = c.wait(LONG, |m| m["method"] == "window/showMessage").expect("a message about trust");
    assert!(msg["params"]["message"].as_str().unwrap().contains("not trusted"));
    let (_d, path) = temp_copy("k.cu", "__global__ void k(float* y) { y[0] = broken; }\n");
    c.open(&uri(&path), "__global__ void k(float* y) { y[0] = broken; }\n", 1);
    let d = c.wait_publish(&uri(&path), LONG);
    // No compiler message: only the one that says why (severity 3: information).
    let diags = d["diagnostics"].as_array().unwrap();
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!((diags[0]["code"].as_str(), diags[0]["severity"].as_u64()), (Some("Untrusted"), Some(3)), "{diags:?}");
}

/// Messages name the user's editor (clientInfo): a Neovim user is told about
/// :KernelProTrust and Neovim's settings, never VS Code's; VS Code's extension
/// says the trust message itself, so the server only logs it there.
#[test]
fn messages_speak_the_clients_editor() {
    let mut nvim = Client::spawn_as("Neovim", json!({"blockSize": "big", "arhc": "sm_80"}));
    let mut shown = Vec::new();
    while let Some(m) = nvim.wait(Duration::from_secs(2), |m| m["method"] == "window/showMessage") {
        shown.push(m["params"]["message"].as_str().unwrap().to_string());
    }
    let all = shown.join("\n");
    assert!(
        all.contains(":KernelProTrust")
            && all.contains("`settings.blockSize` in require('kernelpro').setup()")
            && all.contains("unknown setting `arhc`"),
        "{all}"
    );
    assert!(!all.contains("kernelpro.") && !all.contains("VS Code") && !all.contains("Workspace Trust"), "{all}");

    let mut code = Client::spawn_as("Visual Studio Code", json!({}));
    assert!(
        code.wait(LONG, |m| m["method"] == "window/logMessage"
            && m["params"]["message"].as_str().is_some_and(|t| t.contains("not trusted")))
            .is_some()
    );
    assert!(
        code.wait(Duration::from_secs(1), |m| m["method"] == "window/showMessage").is_none(),
        "one toast: the extension's"
    );
}

/// Odd files get sensible answers and the server keeps serving.
#[test]
fn bad_input_files() {
    let mut c = Client::spawn(trusted());
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, String)> = vec![
        ("empty.cu", String::new()),
        ("braces.cu", "__global__ void k(float* y) { if (1) { y[0] = 1;\n".into()),
        (
            "big.cu",
            format!(
                "__global__ void k(float* y) {{ y[0] = 1; }}\n{}",
                "// padding padding padding padding padding padding padding padding\n".repeat(75_000)
            ),
        ),
    ];
    for (i, (name, text)) in cases.iter().enumerate() {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        c.open(&uri(&p), text, 1);
        let d = c.wait_diagnostics(&uri(&p), LONG);
        let s = summarize(&d);
        match i {
            0 => assert!(s.is_empty(), "{s:?}"),
            1 => assert_eq!(s[0], "0:0-0:48 1 nvcc [] expected a \"}\"", "{s:?}"),
            _ => assert!(s.is_empty(), "{s:?}"),
        }
    }
    // An unsaved buffer outside any workspace still compiles.
    c.open("untitled:Untitled-1", "__global__ void k(float* y) { y[0] = nope; }\n", 1);
    let d = c.wait_diagnostics("untitled:Untitled-1", LONG);
    assert!(summarize(&d)[0].contains("nope"), "{:?}", summarize(&d));
    // Requests for unknown documents and out-of-range positions are answered, not fatal.
    let h = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": "file:///nowhere.cu"}, "position": {"line": 99999, "character": 99999}}),
    );
    assert_eq!(h["result"], Value::Null);
    assert!(c.alive());
}

fn optimize_fixture() -> (tempfile::TempDir, std::path::PathBuf, String) {
    let text = std::fs::read_to_string(fixtures().join("../../examples/saxpy.cu")).unwrap();
    let (d, p) = temp_copy("saxpy.cu", &text);
    (d, p, text)
}

/// The optimize command runs the search with progress, and the result comes
/// back as a code action whose edit replaces only the kernel's region; its
/// notes are in the message and the hover.
#[test]
fn optimize_command_then_apply_code_action() {
    let (_d, path, text) = optimize_fixture();
    let u = uri(&path);
    // An LLM enabled without a model: the search runs on the recipes, and says why.
    let mut c = Client::spawn(
        json!({"trusted": true, "optimize": {"evaluator": "stub:1.5", "budget": 6}, "llm": {"enabled": true}}),
    );
    c.open(&u, &text, 1);
    c.wait_diagnostics(&u, LONG);
    let reply =
        c.request("workspace/executeCommand", json!({"command": "kernelpro.optimize", "arguments": [u, "saxpy"]}));
    assert_eq!(reply["result"]["applicable"], true, "{reply}");
    assert!(
        c.wait(Duration::from_secs(1), |m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "end")
            .is_some(),
        "progress ended"
    );
    let note = "the LLM proposer is not used: set llm.model";
    let told = c.wait(Duration::from_secs(1), |m| m["method"] == "window/showMessage").expect("the result is shown");
    assert!(told["params"]["message"].as_str().unwrap().contains("saxpy"), "{told}");
    // What went wrong with the LLM: a warning of its own, and in the reply.
    let warned = c
        .wait(Duration::from_secs(1), |m| {
            m["method"] == "window/showMessage" && m["params"]["message"].as_str().is_some_and(|t| t.contains(note))
        })
        .expect("the LLM note is shown");
    assert_eq!(warned["params"]["type"], 2, "{warned}");
    assert!(reply["result"]["warnings"][0].as_str().unwrap().contains(note), "{reply}");
    let kernel_line = text.lines().position(|l| l.contains("void saxpy")).unwrap();
    let actions = c.request("textDocument/codeAction", json!({"textDocument": {"uri": u}, "range": {"start": {"line": kernel_line, "character": 0}, "end": {"line": kernel_line, "character": 0}}, "context": {"diagnostics": []}}));
    let apply = actions["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"].as_str().unwrap().starts_with("Apply optimized saxpy: 1.50x faster"))
        .expect("apply action")
        .clone();
    let edit = &apply["edit"]["changes"][u.as_str()][0];
    let (start, end) = (
        edit["range"]["start"]["line"].as_u64().unwrap() as usize,
        edit["range"]["end"]["line"].as_u64().unwrap() as usize,
    );
    let spec_start = text.lines().position(|l| l.contains("kernelpro: let N")).unwrap();
    assert!(start >= spec_start && end <= kernel_line + 3, "edit {start}..{end} stays in the kernel's region");
    assert_ne!(
        edit["newText"].as_str().unwrap(),
        text.lines().skip(start).take(end - start).map(|l| format!("{l}\n")).collect::<String>()
    );
    // The kernel's hover shows the best path and the diff.
    let name_col = text.lines().nth(kernel_line).unwrap().find("saxpy").unwrap();
    let hover = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": u}, "position": {"line": kernel_line, "character": name_col}}),
    );
    let shown = hover["result"]["contents"]["value"].as_str().unwrap_or_default();
    assert!(
        shown.contains("Apply optimized saxpy")
            && shown.contains(note)
            && shown.contains("1. ")
            && shown.contains("1.50x")
            && shown.contains("```diff"),
        "{hover}"
    );
    // The file on disk is untouched until the client applies the edit.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    // A line typed above the kernel: the result still applies, one line lower.
    c.notify("textDocument/didChange", json!({"textDocument": {"uri": u, "version": 2}, "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "// edited\n"}]}));
    let apply_at = |c: &mut Client, line: usize| -> Value {
        let actions = c.request("textDocument/codeAction", json!({"textDocument": {"uri": u}, "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}}, "context": {"diagnostics": []}}));
        actions["result"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["title"].as_str().unwrap().starts_with("Apply optimized"))
            .expect("apply action")
            .clone()
    };
    let moved = apply_at(&mut c, kernel_line + 1);
    let moved_edit = &moved["edit"]["changes"][u.as_str()][0];
    assert_eq!(moved_edit["range"]["start"]["line"].as_u64().unwrap() as usize, start + 1, "{moved}");
    assert_eq!(moved_edit["newText"], edit["newText"]);
    // A change inside the lines it replaces (their first, one lower now): offered disabled, with the reason.
    let sig = start + 1;
    c.notify("textDocument/didChange", json!({"textDocument": {"uri": u, "version": 3}, "contentChanges": [{"range": {"start": {"line": sig, "character": 0}, "end": {"line": sig, "character": 0}}, "text": "/*x*/"}]}));
    let stale = apply_at(&mut c, kernel_line + 1);
    assert!(stale["disabled"]["reason"].as_str().unwrap().contains("changed since the search"), "{stale}");
    assert!(stale.get("edit").is_none_or(|e| e.is_null()));
    // Undo that change: offered again.
    c.notify("textDocument/didChange", json!({"textDocument": {"uri": u, "version": 4}, "contentChanges": [{"range": {"start": {"line": sig, "character": 0}, "end": {"line": sig, "character": 5}}, "text": ""}]}));
    let again = apply_at(&mut c, kernel_line + 1);
    assert!(again["disabled"].is_null(), "{again}");
    assert_eq!(again["edit"]["changes"][u.as_str()][0]["range"]["start"]["line"].as_u64().unwrap() as usize, start + 1);
}

/// Cancel on the progress bar stops the search and returns the best so far.
#[test]
fn optimize_can_be_cancelled_from_the_progress_bar() {
    let (_d, path, text) = optimize_fixture();
    let u = uri(&path);
    let mut c = Client::spawn(json!({"trusted": true, "optimize": {"evaluator": "stub:1.5", "budget": 500}}));
    c.open(&u, &text, 1);
    c.wait_diagnostics(&u, LONG);
    let id = c.send_request(
        "workspace/executeCommand",
        json!({"command": "kernelpro.optimize", "arguments": [u, "saxpy"], "workDoneToken": "opt-1"}),
    );
    let report = c
        .wait(LONG, |m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "report")
        .expect("a progress report");
    assert_eq!(report["params"]["token"], "opt-1");
    c.notify("window/workDoneProgress/cancel", json!({"token": "opt-1"}));
    let reply = c.response(id, Duration::from_secs(60));
    assert_eq!(reply["result"]["cancelled"], true, "{reply}");
    // Said as cancelled, never as a finished "Apply optimized …"; the client
    // that gave the token renders it, so no window/showMessage as well.
    let message = reply["result"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("Optimize saxpy was cancelled after"), "{reply}");
    assert!(c.wait(Duration::from_millis(500), |m| m["method"] == "window/showMessage").is_none());
}

/// A stand-in for ncu that replays the real H200 recordings: the pass writes
/// the recorded raw page (both stages' counters) to its `--log-file`,
/// exports print the recorded pages.
fn fake_ncu(dir: &std::path::Path, denied: bool) -> std::path::PathBuf {
    let rec = fixtures().join("h200-probe");
    let script = if denied {
        "#!/bin/sh\necho '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0.'\nexit 1\n".to_string()
    } else {
        format!(
            r#"#!/bin/sh
case "$*" in
  *"--log-file "*) while [ "$1" != --log-file ]; do shift; done; cp {rec}/full_raw.csv "$2" ;;
  *"-i "*"--page raw"*) cat {rec}/full_raw.csv ;;
  *"--page source"*) for a in "$@"; do k="$a"; done; cat {rec}/src_$k.csv ;;
  *) exit 0 ;;
esac
"#,
            rec = rec.display()
        )
    };
    let p = dir.join("ncu");
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    p
}

#[test]
fn profile_command_puts_findings_on_their_lines() {
    let text = std::fs::read_to_string(fixtures().join("h200-probe/kernels.cu")).unwrap();
    let (dir, path) = temp_copy("kernels.cu", &text);
    let ncu = fake_ncu(dir.path(), false);
    let u = uri(&path);
    let mut c = Client::spawn(json!({"trusted": true, "ncu": ncu, "profileBackend": "ncu"}));
    c.open(&u, &text, 1);
    c.wait_diagnostics(&u, LONG);
    let reply = c.request("workspace/executeCommand", json!({"command": "kernelpro.profile", "arguments": [u]}));
    assert_eq!(reply["result"]["kernels"].as_array().map(|k| k.len()), Some(5), "{reply}");
    let d = c.wait_publish(&u, LONG);
    let ncu_lines: Vec<String> = d["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["source"] == "ncu")
        .map(|d| format!("{} {}", d["range"]["start"]["line"], d["code"].as_str().unwrap()))
        .collect();
    for want in ["8 FP64Math", "13 Uncoalesced", "21 SharedMemTiling", "32 SharedBankConflicts", "39 ThreadDivergence"]
    {
        assert!(ncu_lines.iter().any(|l| l == want), "{want} missing from {ncu_lines:?}");
    }
    let lenses = c.request("textDocument/codeLens", json!({"textDocument": {"uri": u}}));
    let titles: Vec<&str> =
        lenses["result"].as_array().unwrap().iter().map(|l| l["command"]["title"].as_str().unwrap()).collect();
    assert!(titles.iter().any(|t| t.starts_with("memory-bound · L2 95% of peak")), "{titles:?}");
    // After an edit above them, a save republishes the profile findings shifted and marked stale.
    c.notify("textDocument/didChange", json!({"textDocument": {"uri": u, "version": 2}, "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "// new line\n"}]}));
    c.save(&u, &format!("// new line\n{text}"));
    let d = json!({"params": c.wait_diagnostics(&u, LONG)});
    let uncoalesced =
        d["params"]["diagnostics"].as_array().unwrap().iter().find(|d| d["code"] == "Uncoalesced").unwrap().clone();
    assert_eq!(uncoalesced["range"]["start"]["line"], 14);
    assert!(uncoalesced["message"].as_str().unwrap().contains("profiled before your latest edits"));
}

/// With profile-on-save, a save stops the profile of the older text at once
/// (its ncu killed), instead of letting it run until the new profile starts.
#[test]
fn a_save_cancels_the_profile_of_the_older_text() {
    let text = std::fs::read_to_string(fixtures().join("h200-probe/kernels.cu")).unwrap();
    let (dir, path) = temp_copy("kernels.cu", &text);
    let ncu = dir.path().join("ncu");
    std::fs::write(&ncu, "#!/bin/sh\nsleep 120\n").unwrap();
    std::fs::set_permissions(&ncu, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let u = uri(&path);
    let mut c = Client::spawn(json!({"trusted": true, "ncu": ncu, "profileOnSave": true, "profileBackend": "ncu"}));
    c.open(&u, &text, 1);
    let is_profile = |m: &Value, kind: &str| {
        m["method"] == "$/progress"
            && m["params"]["token"].as_str().is_some_and(|t| t.starts_with("kernelpro-profile-"))
            && m["params"]["value"]["kind"] == kind
    };
    let begun = c.wait(LONG, |m| is_profile(m, "begin")).expect("the profile of the opened text starts");
    let token = begun["params"]["token"].clone();
    let edited = format!("{text}\n// saved again\n");
    c.change_all(&u, &edited, 2);
    c.save(&u, &edited);
    // It ends before the new version's compile is even published.
    let first = c
        .wait(Duration::from_secs(60), |m| {
            (is_profile(m, "end") && m["params"]["token"] == token)
                || (m["method"] == "textDocument/publishDiagnostics" && m["params"]["version"] == 2)
        })
        .expect("the older profile ends or the new version is published");
    assert_eq!(first["method"], "$/progress", "published before the older profile ended: {first}");
    assert_eq!(first["params"]["value"]["message"], "cancelled", "{first}");
}

/// With profile-on-save, the profile starts once the compile's diagnostics
/// are out, beside the machine-code step (here an nvdisasm that takes 3 s),
/// and compiles nothing again: one nvcc per save.
#[test]
fn a_save_profiles_once_the_compile_is_published_without_compiling_again() {
    let text = std::fs::read_to_string(fixtures().join("naive/sum/sum_atomic_1d.cu")).unwrap();
    let (dir, path) = temp_copy("sum_atomic_1d.cu", &text);
    let real =
        kernelpro_core::analysis::Analyzer::find_nvcc(&Default::default()).expect("nvcc (run scripts/setup.sh)").path;
    let log = dir.path().join("tools.log");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = |name: &str, body: String| {
        let p = bin.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        p
    };
    let l = log.display();
    let nvcc =
        script("nvcc", format!("case \"$*\" in *.cu*) echo nvcc >> '{l}' ;; esac\nexec {} \"$@\"", real.display()));
    let nvdisasm = real.with_file_name("nvdisasm");
    script(
        "nvdisasm",
        format!(
            "echo nvdisasm begin >> '{l}'\nsleep 3\n{} \"$@\"\nrc=$?\necho nvdisasm end >> '{l}'\nexit $rc",
            nvdisasm.display()
        ),
    );
    let ncu = script("ncu", format!("case \"$*\" in *--log-file*) echo ncu >> '{l}' ; exit 1 ;; esac\nexit 0"));
    let u = uri(&path);
    let mut c = Client::spawn(
        json!({"trusted": true, "nvcc": nvcc, "ncu": ncu, "profileOnSave": true, "profileBackend": "ncu"}),
    );
    let profile_end = |m: &Value| {
        m["method"] == "$/progress"
            && m["params"]["token"].as_str().is_some_and(|t| t.starts_with("kernelpro-profile-"))
            && m["params"]["value"]["kind"] == "end"
    };
    let settled = |c: &mut Client| {
        let deadline = std::time::Instant::now() + LONG;
        while !std::fs::read_to_string(&log).unwrap_or_default().contains("nvdisasm end") {
            assert!(std::time::Instant::now() < deadline, "nvdisasm never ended");
            c.wait(Duration::from_millis(200), |_| false);
        }
        std::fs::read_to_string(&log).unwrap().lines().map(str::to_string).collect::<Vec<_>>()
    };
    c.open(&u, &text, 1);
    c.wait(LONG, profile_end).expect("the profile of the opened text ends");
    settled(&mut c);
    std::fs::remove_file(&log).unwrap();
    let edited = format!("{text}\n// saved again\n");
    c.change_all(&u, &edited, 2);
    c.save(&u, &edited);
    c.wait(LONG, profile_end).expect("the profile of the saved text ends");
    // One nvcc, and ncu beside the machine-code step (before nvdisasm ends; which of
    // the two starts first is a race, since both wait for the compile's publish).
    let log = settled(&mut c);
    let at = |s: &str| log.iter().position(|l| l == s).unwrap_or_else(|| panic!("no {s}: {log:?}"));
    assert_eq!(log.iter().filter(|l| *l == "nvcc").count(), 1, "{log:?}");
    assert!(at("nvcc") < at("ncu") && at("ncu") < at("nvdisasm end"), "{log:?}");
    // The compile's diagnostics went out before the profile began.
    let messages: Vec<Value> = c.transcript.iter().map(|m| serde_json::from_str(m).unwrap()).collect();
    let published = messages
        .iter()
        .position(|m| m["method"] == "textDocument/publishDiagnostics" && m["params"]["version"] == 2)
        .expect("the saved text's diagnostics");
    let begun = messages
        .iter()
        .rposition(|m| {
            m["method"] == "$/progress"
                && m["params"]["value"]["kind"] == "begin"
                && m["params"]["token"].as_str().is_some_and(|t| t.starts_with("kernelpro-profile-"))
        })
        .expect("the saved text's profile");
    assert!(published < begun, "the profile began before the compile's diagnostics went out");
}

/// With profile-on-save the profile begins beside the compile, but a save
/// that does not compile shows no profile and runs no profiler.
#[test]
fn a_save_that_does_not_compile_profiles_nothing() {
    let text = std::fs::read_to_string(fixtures().join("naive/sum/sum_atomic_1d.cu")).unwrap();
    let (dir, path) = temp_copy("sum_atomic_1d.cu", &text);
    let log = dir.path().join("ncu.log");
    let ncu = dir.path().join("ncu");
    std::fs::write(&ncu, format!("#!/bin/sh\necho ncu >> '{}'\nexit 1\n", log.display())).unwrap();
    std::fs::set_permissions(&ncu, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let u = uri(&path);
    let mut c = Client::spawn(json!({"trusted": true, "ncu": ncu, "profileOnSave": true, "profileBackend": "ncu"}));
    let broken = text.replace("atomicAdd(", "atomicAdd(undeclared_name + ");
    c.open(&u, &broken, 1);
    let d = c.wait_publish(&u, LONG);
    assert!(d["diagnostics"].as_array().unwrap().iter().any(|d| d["severity"] == 1), "no compile error: {d}");
    // Long enough for a profile that had begun to show itself.
    c.wait(Duration::from_secs(3), |_| false);
    let messages: Vec<Value> = c.transcript.iter().map(|m| serde_json::from_str(m).unwrap()).collect();
    assert!(
        !messages.iter().any(|m| m["params"]["token"].as_str().is_some_and(|t| t.starts_with("kernelpro-profile-"))),
        "a profile showed itself"
    );
    assert!(!log.exists(), "the profiler ran");
}

#[test]
fn counter_permission_error_says_how_to_fix_it() {
    let text = std::fs::read_to_string(fixtures().join("h200-probe/kernels.cu")).unwrap();
    let (dir, path) = temp_copy("kernels.cu", &text);
    let ncu = fake_ncu(dir.path(), true);
    let u = uri(&path);
    let mut c = Client::spawn(json!({"trusted": true, "ncu": ncu, "profileBackend": "ncu"}));
    c.open(&u, &text, 1);
    c.wait_diagnostics(&u, LONG);
    let reply = c.request("workspace/executeCommand", json!({"command": "kernelpro.profile", "arguments": [u]}));
    // Said in the reply (the editor's message), never left as a lasting entry in Problems.
    let msg = reply["result"]["message"].as_str().unwrap_or_default().to_string();
    let d = c.wait_publish(&u, LONG);
    assert!(!d["diagnostics"].as_array().unwrap().iter().any(|d| d["code"] == "profile-unavailable"), "{d}");
    assert!(
        msg.contains("ERR_NVGPUCTRPERM")
            && msg.contains("CAP_PERFMON")
            && msg.contains("Compile, SASS and timing still work"),
        "{msg}"
    );
    // The compile-time findings are still there.
    let fp64 = d["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "Fp64Promotion")
        .expect("Fp64Promotion")
        .clone();
    // Its link opens the docs installed beside the server (here: this checkout's docs/tools.md).
    let href = fp64["codeDescription"]["href"].as_str().unwrap_or_default();
    let (file, anchor) = href
        .strip_prefix("file://")
        .and_then(|h| h.split_once('#'))
        .unwrap_or_else(|| panic!("a file: link with an anchor: {fp64}"));
    assert!(
        std::path::Path::new(file).ends_with("docs/tools.md")
            && std::path::Path::new(file).is_file()
            && anchor == "fp64promotion",
        "{href}"
    );
}

/// A loopback HTTP server that counts requests and answers 400 with the
/// request's headers echoed back, as a careless proxy might.
fn echo_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = format!("http://{}", listener.local_addr().unwrap());
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(64) {
            let Ok(mut s) = stream else { continue };
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = vec![0u8; 65536];
            let n = s.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).split("\r\n\r\n").next().unwrap_or("").to_string();
            let body = format!("{{\"error\": {{\"message\": {}}}}}", serde_json::to_string(&head).unwrap());
            let _ = write!(
                s,
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (addr, count)
}

/// Nothing goes to an LLM until the user enables it for the workspace, and
/// the key never appears in anything the server says or writes.
#[test]
fn llm_needs_consent_and_the_key_never_leaks() {
    const KEY: &str = "sk-kernelpro-FAKE-7f3a9c";
    let (endpoint, requests) = echo_server();
    let home = tempfile::tempdir().unwrap();
    let stderr = home.path().join("stderr.log");
    let mut cmd = std::process::Command::new(support::lsp_client::bin());
    cmd.env("XDG_CACHE_HOME", home.path().join("cache"))
        .env("TMPDIR", home.path().join("tmp"))
        .env("HOME", home.path())
        .env_remove("KERNELPRO_LLM_KEY");
    std::fs::create_dir_all(home.path().join("tmp")).unwrap();
    cmd.stderr(std::fs::File::create(&stderr).unwrap());
    let llm =
        |enabled: bool| json!({"enabled": enabled, "provider": "openai", "endpoint": endpoint, "model": "test-model"});
    let mut c = Client::spawn_with(
        cmd,
        json!({"trusted": true, "llmKey": KEY, "llm": llm(false), "optimize": {"evaluator": "stub:1.5", "budget": 4}}),
    );
    let (_d, path, text) = optimize_fixture();
    let u = uri(&path);
    c.open(&u, &text, 1);
    c.wait_diagnostics(&u, LONG);
    c.request("workspace/executeCommand", json!({"command": "kernelpro.optimize", "arguments": [u, "saxpy"]}));
    assert_eq!(requests.load(std::sync::atomic::Ordering::SeqCst), 0, "nothing is sent while llm.enabled is false");
    // A configuration change may carry a repository's values: it cannot turn the LLM on.
    c.notify("workspace/didChangeConfiguration", json!({"settings": {"kernelpro": {"llm": llm(true)}}}));
    let told = c.wait(Duration::from_secs(10), |m| {
        m["method"] == "window/showMessage"
            && m["params"]["message"].as_str().is_some_and(|t| t.contains("llm.enabled") && t.contains("restart"))
    });
    assert!(told.is_some(), "the ignored setting is reported");
    c.request("workspace/executeCommand", json!({"command": "kernelpro.optimize", "arguments": [u, "saxpy"]}));
    assert_eq!(
        requests.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "llm.enabled from a configuration change sent nothing"
    );
    let mut transcript = c.transcript.join("\n");
    assert!(c.shutdown().success());
    // From the user's own settings (initializationOptions) it is used.
    let mut cmd = std::process::Command::new(support::lsp_client::bin());
    cmd.env("XDG_CACHE_HOME", home.path().join("cache"))
        .env("TMPDIR", home.path().join("tmp"))
        .env("HOME", home.path())
        .env_remove("KERNELPRO_LLM_KEY");
    cmd.stderr(std::fs::OpenOptions::new().append(true).open(&stderr).unwrap());
    let mut c = Client::spawn_with(
        cmd,
        json!({"trusted": true, "llmKey": KEY, "llm": llm(true), "optimize": {"evaluator": "stub:1.5", "budget": 4}}),
    );
    c.open(&u, &text, 1);
    c.wait_diagnostics(&u, LONG);
    c.request("workspace/executeCommand", json!({"command": "kernelpro.optimize", "arguments": [u, "saxpy"]}));
    assert!(requests.load(std::sync::atomic::Ordering::SeqCst) > 0, "the enabled LLM was asked");
    transcript.push_str(&c.transcript.join("\n"));
    assert!(c.shutdown().success());
    assert!(!transcript.contains(KEY), "the key leaked into the protocol");
    assert!(!std::fs::read_to_string(&stderr).unwrap().contains(KEY), "the key leaked into the log");
    for entry in walk(home.path()) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        assert!(!String::from_utf8_lossy(&bytes).contains(KEY), "the key leaked into {}", entry.display());
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

/// In an untrusted workspace the GPU commands refuse to run.
#[test]
fn untrusted_workspace_runs_nothing() {
    let (_d, path, text) = optimize_fixture();
    let u = uri(&path);
    let mut c = Client::spawn(json!({"optimize": {"evaluator": "stub:1.5"}}));
    c.open(&u, &text, 1);
    c.wait_publish(&u, LONG);
    let opt =
        c.request("workspace/executeCommand", json!({"command": "kernelpro.optimize", "arguments": [u, "saxpy"]}));
    assert!(opt["error"]["message"].as_str().unwrap().contains("untrusted"), "{opt}");
    let prof = c.request("workspace/executeCommand", json!({"command": "kernelpro.profile", "arguments": [u]}));
    assert!(prof["result"]["error"].as_str().unwrap().contains("untrusted"), "{prof}");
}

/// Flags from settings reach nvcc as one argument each, never through a shell.
#[test]
fn flags_are_argv_not_shell() {
    let dir = tempfile::tempdir().unwrap();
    let canary = dir.path().join("canary");
    std::fs::write(&canary, "alive").unwrap();
    let flag = format!("-DEVIL=; rm -rf {}", canary.display());
    let mut c = Client::spawn(json!({"trusted": true, "extraFlags": [flag]}));
    let p = dir.path().join("k.cu");
    let text = "__global__ void k(float* y) { y[0] = 1.0f; }\n";
    std::fs::write(&p, text).unwrap();
    c.open(&uri(&p), text, 1);
    let d = c.wait_diagnostics(&uri(&p), LONG);
    assert_eq!(d["diagnostics"], json!([]), "the macro is defined, nothing else happens");
    assert!(canary.exists());
}

/// A structural finding's diagnostic offers its quick fix: the optimizer restricted to the
/// rewrites the finding promises, whose result comes back as the usual apply action. Where none
/// of them can apply, the fix is offered disabled, with the fact that blocked each.
#[test]
fn a_structural_finding_offers_its_quick_fix() {
    let text = std::fs::read_to_string(fixtures().join("naive/layernorm/layernorm_rowptr.cu")).unwrap();
    let (_d, path) = temp_copy("layernorm_rowptr.cu", &text);
    let u = uri(&path);
    let mut c = Client::spawn(json!({"trusted": true, "optimize": {"evaluator": "stub:1.5", "budget": 4}}));
    c.open(&u, &text, 1);
    let d = c.wait_diagnostics(&u, LONG);
    let row_walk = d["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "RowWalk")
        .unwrap_or_else(|| panic!("a RowWalk finding: {:?}", summarize(&d)))
        .clone();
    let actions = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": u}, "range": row_walk["range"], "context": {"diagnostics": [row_walk]}}),
    );
    let fix = actions["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"] == "Make one warp per row")
        .unwrap_or_else(|| panic!("the quick fix: {actions}"))
        .clone();
    assert_eq!(fix["kind"], "quickfix");
    assert!(fix["disabled"].is_null(), "{fix}");
    assert_eq!(fix["diagnostics"][0]["code"], "RowWalk");
    let args = fix["command"]["arguments"].clone();
    assert_eq!(fix["command"]["command"], "kernelpro.optimize");
    assert!(args[2].as_array().unwrap().iter().any(|n| n == "WarpUnits"), "{fix}");
    let reply = c.request("workspace/executeCommand", json!({"command": "kernelpro.optimize", "arguments": args}));
    assert_eq!(reply["result"]["applicable"], true, "{reply}");
    let kernel_line = text.lines().position(|l| l.contains("void layernorm_forward_v1")).unwrap();
    let actions = c.request("textDocument/codeAction", json!({"textDocument": {"uri": u}, "range": {"start": {"line": kernel_line, "character": 0}, "end": {"line": kernel_line, "character": 0}}, "context": {"diagnostics": []}}));
    let apply = actions["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"].as_str().unwrap().starts_with("Apply optimized layernorm_forward_v1: 1.50x faster"))
        .unwrap_or_else(|| panic!("apply action: {actions}"))
        .clone();
    let new_text = apply["edit"]["changes"][u.as_str()][0]["newText"].as_str().unwrap();
    assert!(new_text.contains("kp_lane"), "a warp per row: {new_text}");

    // A running mean (Welford's recurrence): the promise cannot be kept, and the fix says why.
    let welford = r#"// kernelpro: let ROWS = 4096
// kernelpro: let C = 1024
// kernelpro: grid = ceil_div(ROWS, 256)
// kernelpro: block = 256
// kernelpro: out = out float[ROWS]
// kernelpro: x = in float[ROWS * C] uniform(-1, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = C
__global__ void running_mean(float* out, const float* x, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float mean = 0.0f;
  for (int c = 0; c < cols; c++) {
    float v = x[r * cols + c];
    mean = mean + (v - mean) / (c + 1);
  }
  out[r] = mean;
}
"#;
    let (_d2, path2) = temp_copy("running_mean.cu", welford);
    let u2 = uri(&path2);
    c.open(&u2, welford, 1);
    let d = c.wait_diagnostics(&u2, LONG);
    let row_walk = d["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "RowWalk")
        .unwrap_or_else(|| panic!("a RowWalk finding: {:?}", summarize(&d)))
        .clone();
    let actions = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": u2}, "range": row_walk["range"], "context": {"diagnostics": [row_walk]}}),
    );
    let fix = actions["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"] == "Make one warp per row")
        .unwrap_or_else(|| panic!("the quick fix: {actions}"))
        .clone();
    let reason = fix["disabled"]["reason"].as_str().unwrap_or_else(|| panic!("disabled: {fix}"));
    assert!(
        reason.contains(
            "did not apply because the loop-carried value `mean` is updated by a recurrence with no known combine"
        ),
        "{reason}"
    );
    assert_eq!(fix["command"]["command"], "kernelpro.explain");
    assert!(c.alive());
}
