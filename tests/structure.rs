//! The structure facts of ARCHITECTURE.md ("Structure"), checked on the
//! workspace as Cargo and the sources say it: the crates in one layer order,
//! no dependency running back up it, `core` kept thin, no editor named below
//! `lsp`, and `runner`/`source` imported directly, never re-exported.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layer order, lowest first, written once: a crate may depend only on
/// crates of lower layers (dev- and build-dependencies too).
const LAYERS: &[&[&str]] = &[
    &["model", "runner", "search", "cutlass", "config"],
    &["source", "sass", "profile"],
    &["spec"],
    &["lints", "gpu", "recipes", "llm"],
    &["cute", "toolchain"],
    &["core"],
    &["measure"],
    &["optimize"],
    &["session"],
    &["lsp"],
    &["cli"],
];

/// `core` stays the thin analysis layer (issue 31).
const CORE_MAX_LINES: usize = 1500;

/// How editors are named; none of these may appear in the code of a crate below `lsp`.
const EDITOR_NAMES: &[&str] =
    &["vs code", "vscode", "vscodium", "visual studio code", "code-server", "neovim", "nvim", "require('kernelpro')"];

/// The editor name in `line`, if any: one of [`EDITOR_NAMES`] in any case, or
/// a Neovim command (`:KernelProSass`; a path's `::KernelProfile` is none).
fn editor_named(line: &str) -> Option<&'static str> {
    let lower = line.to_lowercase();
    if let Some(name) = EDITOR_NAMES.iter().find(|e| lower.contains(**e)) {
        return Some(name);
    }
    line.match_indices(":KernelPro").any(|(i, _)| !line[..i].ends_with(':')).then_some(":KernelPro… command")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn layer_of(dir: &str) -> usize {
    LAYERS.iter().position(|l| l.contains(&dir)).unwrap_or_else(|| {
        panic!("server/{dir} is in no layer: add it to LAYERS in tests/structure.rs and to ARCHITECTURE.md")
    })
}

/// Each workspace crate's folder under `server/` and the folders of the workspace crates it depends on, from `cargo metadata`.
fn workspace() -> BTreeMap<String, Vec<String>> {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata is JSON");
    let dir_of =
        |manifest: &str| Path::new(manifest).parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
    let packages = meta["packages"].as_array().unwrap();
    let by_name: BTreeMap<&str, String> =
        packages.iter().map(|p| (p["name"].as_str().unwrap(), dir_of(p["manifest_path"].as_str().unwrap()))).collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|d| by_name.get(d["name"].as_str().unwrap()).cloned())
                .collect();
            (dir_of(p["manifest_path"].as_str().unwrap()), deps)
        })
        .collect()
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The code of a source file: no comment lines, nothing from the first
/// `#[cfg(test)]` on, and nothing of a test module's own file (`tests.rs`, `*_tests.rs`).
fn code_lines(path: &Path) -> Vec<(usize, String)> {
    let name = path.file_name().unwrap().to_string_lossy();
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return Vec::new();
    }
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .enumerate()
        .take_while(|(_, l)| !l.trim_start().starts_with("#[cfg(test)]"))
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect()
}

#[test]
fn no_dependency_runs_back_up_the_layers() {
    let crates = workspace();
    assert!(crates.len() >= 20 && crates.contains_key("core") && crates.contains_key("lsp"), "{crates:?}");
    let mut up = Vec::new();
    for (krate, deps) in &crates {
        for dep in deps {
            if layer_of(dep) >= layer_of(krate) {
                up.push(format!("{krate} -> {dep}"));
            }
        }
    }
    assert_eq!(up, Vec::<String>::new(), "dependencies that run back up (or sideways in) the layer order");
    // Every layer names a crate that exists: the order is the workspace's, not an old one.
    for dir in LAYERS.iter().flat_map(|l| l.iter()) {
        assert!(crates.contains_key(*dir), "LAYERS names server/{dir}, which is not a workspace crate");
    }
}

#[test]
fn core_stays_thin() {
    let lines: usize = rust_files(&root().join("server/core/src"))
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap().lines().count())
        .sum();
    assert!(lines > 500, "core's sources were read: {lines} lines");
    assert!(
        lines < CORE_MAX_LINES,
        "server/core/src has {lines} lines (at most {CORE_MAX_LINES}): move what is not analysis, launch, hover or lens to its own crate"
    );
}

#[test]
fn no_crate_below_lsp_names_an_editor() {
    let lsp = layer_of("lsp");
    let mut named = Vec::new();
    let mut scanned = 0;
    for krate in workspace().keys().filter(|k| layer_of(k) < lsp) {
        for path in rust_files(&root().join("server").join(krate).join("src")) {
            for (n, line) in code_lines(&path) {
                scanned += 1;
                if let Some(name) = editor_named(&line) {
                    named.push(format!(
                        "{}:{n}: {name}: {}",
                        path.strip_prefix(root()).unwrap_or(&path).display(),
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(scanned > 10_000, "the crates below lsp were read: {scanned} lines");
    assert!(
        named.is_empty(),
        "editors named below lsp (say which setting or command is meant, through kernelpro_config::words::Words, and let lsp choose the words):\n{}",
        named.join("\n")
    );
    // The check sees a name where one is: lsp's own editor words.
    let lsp_words = code_lines(&root().join("server/lsp/src/editor.rs"));
    assert!(lsp_words.iter().any(|(_, l)| editor_named(l) == Some("neovim")));
    assert!(lsp_words.iter().any(|(_, l)| editor_named(l) == Some(":KernelPro… command")));
    assert_eq!(editor_named("use crate::csv_pages::KernelProfile;"), None);
}

#[test]
fn runner_and_source_are_imported_not_re_exported() {
    let mut found = Vec::new();
    for krate in workspace().keys().filter(|k| !["runner", "source"].contains(&k.as_str())) {
        for path in rust_files(&root().join("server").join(krate).join("src")) {
            for (n, line) in code_lines(&path) {
                let l = line.trim_start();
                if l.starts_with("pub use kernelpro_runner") || l.starts_with("pub use kernelpro_source") {
                    found.push(format!("{}:{n}: {}", path.display(), l));
                }
            }
        }
    }
    assert_eq!(found, Vec::<String>::new(), "callers import kernelpro_runner and kernelpro_source themselves");
}
