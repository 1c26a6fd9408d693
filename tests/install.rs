//! `kernelpro install-cuda` (the editors' "Install CUDA compiler"): a managed
//! environment with the pinned compiler wheels whose nvcc the server then uses;
//! and the one clear error when Python is missing.

use std::process::Command;

fn kernelpro() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kernelpro"))
}

#[test]
fn installs_a_working_nvcc_and_the_server_uses_it() {
    let dir = tempfile::tempdir().unwrap();
    let env_dir = dir.path().join("cuda");
    let out = kernelpro().args(["install-cuda", "--json", "--dir"]).arg(&env_dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let nvcc = reply["nvcc"].as_str().unwrap();
    assert!(nvcc.starts_with(env_dir.to_str().unwrap()) && nvcc.ends_with("/nvcc"), "{reply}");
    // `check` with only that nvcc (no venv, no PATH entry) compiles and reports nvcc's error.
    let planted = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/lsp/planted.cu");
    let check = kernelpro()
        .arg("check")
        .arg(&planted)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", dir.path())
        .env("KERNELPRO_NVCC", nvcc)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(text.contains("identifier \"factor\" is undefined"), "{text}\n{}", String::from_utf8_lossy(&check.stderr));
    // Again: already there, the same nvcc.
    let again = kernelpro().args(["install-cuda", "--json", "--dir"]).arg(&env_dir).output().unwrap();
    assert!(again.status.success());
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&again.stdout).unwrap()["nvcc"], nvcc);
}

#[test]
fn without_python_it_says_what_to_install() {
    let dir = tempfile::tempdir().unwrap();
    let out = kernelpro()
        .args(["install-cuda", "--dir"])
        .arg(dir.path().join("cuda"))
        .env("PATH", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("python3 was not found on PATH: install Python 3.9 or newer"), "{err}");
}
