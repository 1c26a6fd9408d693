//! An offered edit that changes the kernel's launch also changes the file's
//! own launch of it (`kernel<<<…>>>`), in the LSP's code action and in
//! `kernelpro optimize --out`: over the real binary, real nvcc, and the stub
//! evaluator that reports launch-changing candidates faster
//! (`stub:1.5:3`), so the best candidate is one with a new launch.

mod support;

use serde_json::json;
use std::process::Command;
use std::time::Duration;
use support::lsp_client::{Client, bin, fixtures, uri};

const LONG: Duration = Duration::from_secs(120);
const KERNEL: &str = "rmsnorm_fwd";
/// The host launch as the fixture writes it.
const OLD_LAUNCH: &str = "rmsnorm_fwd<<<(n_rows + threads - 1) / threads, threads, 0, stream>>>(y, x, w, n_rows, d);";

fn fixture() -> (tempfile::TempDir, std::path::PathBuf, String) {
    let text = std::fs::read_to_string(fixtures().join("launch_site/rmsnorm.cu")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rmsnorm.cu");
    std::fs::write(&path, &text).unwrap();
    (dir, path, text)
}

/// `(grid, block)` of the spec's launch lines.
fn spec_launch(text: &str) -> (String, String) {
    let part = |name: &str| {
        text.lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("// kernelpro:")
                    .and_then(|r| r.trim().strip_prefix(name))
                    .and_then(|r| r.trim().strip_prefix('='))
                    .map(|v| v.trim().to_string())
            })
            .unwrap_or_else(|| panic!("no `{name}` line in\n{text}"))
    };
    (part("grid"), part("block"))
}

/// The new file's host launch follows its new spec: the spec's block, a grid
/// written with the call's `n_rows` (the spec's `N`, bound to `rows`), and
/// the call's own stream and kernel arguments.
fn check_new_file(old: &str, new: &str) {
    let (grid, block) = spec_launch(new);
    assert_ne!(spec_launch(old), (grid.clone(), block.clone()), "the best candidate changes the launch");
    let launch = new.lines().find(|l| l.contains("rmsnorm_fwd<<<")).expect("the host launch").trim();
    assert_ne!(launch, OLD_LAUNCH, "the host launch was updated:\n{new}");
    // A changed block is the spec's number; an unchanged one stays the host's `threads`.
    let host_block = if block == spec_launch(old).1 { "threads".to_string() } else { block.clone() };
    assert!(
        launch.contains(&format!(", {host_block}, 0, stream>>>(y, x, w, n_rows, d);")),
        "block {host_block} in `{launch}`"
    );
    assert!(grid.contains('N') && launch.contains("n_rows"), "grid `{grid}` in the call's terms: `{launch}`");
    // Everything else outside the kernel's region is as it was.
    let host = |t: &str| {
        t[t.find("void rmsnorm(").unwrap()..]
            .lines()
            .filter(|l| !l.contains("<<<"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(host(new), host(old));
}

#[test]
fn the_code_action_also_rewrites_the_in_file_launch() {
    let (_d, path, text) = fixture();
    let u = uri(&path);
    let mut c = Client::spawn(json!({"trusted": true, "optimize": {"evaluator": "stub:1.5:3", "budget": 6}}));
    c.open(&u, &text, 1);
    c.wait_diagnostics(&u, LONG);
    let reply =
        c.request("workspace/executeCommand", json!({"command": "kernelpro.optimize", "arguments": [u, KERNEL]}));
    assert_eq!(reply["result"]["applicable"], true, "{reply}");
    let told = c.wait(Duration::from_secs(5), |m| m["method"] == "window/showMessage").expect("the result is shown");
    let message = told["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("3.00x faster with a new launch") && message.contains("and this file's launch of it to match"),
        "{message}"
    );
    let kernel_line = text.lines().position(|l| l.contains("void rmsnorm_fwd")).unwrap();
    let actions = c.request("textDocument/codeAction", json!({"textDocument": {"uri": u}, "range": {"start": {"line": kernel_line, "character": 0}, "end": {"line": kernel_line, "character": 0}}, "context": {"diagnostics": []}}));
    let apply = actions["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"].as_str().unwrap().starts_with("Apply optimized rmsnorm_fwd"))
        .expect("apply action")
        .clone();
    // One WorkspaceEdit: the kernel's region and the launch site, applied together (last first).
    let edits = apply["edit"]["changes"][u.as_str()].as_array().expect("edits").clone();
    assert_eq!(edits.len(), 2, "{apply}");
    let site_line = text.lines().position(|l| l.contains("rmsnorm_fwd<<<")).unwrap() as u64;
    assert_eq!(edits[1]["range"]["start"]["line"], site_line, "{apply}");
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    let mut sorted = edits.clone();
    sorted.sort_by_key(|e| std::cmp::Reverse(e["range"]["start"]["line"].as_u64()));
    for e in sorted {
        let (s, end) = (
            e["range"]["start"]["line"].as_u64().unwrap() as usize,
            e["range"]["end"]["line"].as_u64().unwrap() as usize,
        );
        lines.splice(s..end, [e["newText"].as_str().unwrap().to_string()]);
    }
    check_new_file(&text, &lines.concat());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "the file on disk is untouched until the client applies the edit"
    );
}

#[test]
fn optimize_out_writes_the_in_file_launch_too() {
    let (dir, path, text) = fixture();
    let out = dir.path().join("optimized.cu");
    let run = Command::new(bin())
        .args([
            "optimize",
            path.to_str().unwrap(),
            "--kernel",
            KERNEL,
            "--evaluator",
            "stub:1.5:3",
            "--budget",
            "6",
            "--no-profile",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("edit (launch site): lines "), "{stdout}");
    assert!(stdout.contains("note: The edit also changes the launch of `rmsnorm_fwd` on line "), "{stdout}");
    check_new_file(&text, &std::fs::read_to_string(&out).unwrap());
}

/// `--apply` writes the result into the file itself, onto the file as it is
/// when the search ends: a line the user added meanwhile stays; a change to the
/// lines the result replaces refuses, saying why, and leaves the file alone.
#[test]
fn optimize_apply_rebases_onto_edits_made_during_the_search() {
    use std::io::{BufRead, BufReader};
    let run_editing = |edit: &dyn Fn(&str) -> String| {
        let (dir, path, text) = fixture();
        let mut child = Command::new(bin())
            .args([
                "optimize",
                path.to_str().unwrap(),
                "--kernel",
                KERNEL,
                "--evaluator",
                "stub:1.5:3",
                "--budget",
                "6",
                "--no-profile",
                "--apply",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The first progress line: the file has been read; now the user edits it.
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut seen = Vec::new();
        err.read_until(b'\r', &mut seen).unwrap();
        let edited = edit(&text);
        std::fs::write(&path, &edited).unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
        let status = child.wait().unwrap();
        (dir, status, std::fs::read_to_string(&path).unwrap(), edited, text, rest)
    };
    // A comment typed at the top during the search: kept, and the result applied below it.
    let (_d, status, now, _edited, text, stderr) = run_editing(&|t| format!("// typed meanwhile\n{t}"));
    assert!(status.success(), "{stderr}");
    assert!(now.starts_with("// typed meanwhile\n"), "{now}");
    check_new_file(&text, &now["// typed meanwhile\n".len()..]);
    // The launch line the result rewrites changed during the search: nothing written, the reason given.
    let (_d, status, now, edited, _text, stderr) =
        run_editing(&|t| t.replace("(n_rows + threads - 1) / threads", "(n_rows + threads - 1)/threads"));
    assert!(!status.success());
    assert_eq!(now, edited, "the user's file is left as they wrote it");
    assert!(stderr.contains("was not changed: the lines this result replaces"), "{stderr}");
}
