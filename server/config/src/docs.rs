//! Where a finding's documentation (`docs/tools.md#anchor`, relative to the
//! KernelPro tree) is on this machine: beside the server binary, both in a
//! checkout (`target/debug/kernelpro` → `docs/`) and in the VS Code
//! extension (`server/<platform>/kernelpro` → `docs/`, which the vsix ships).
//! Where none is installed there is no link: a link must open something.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The folder holding `docs/` for this binary, looked up once.
fn root() -> Option<&'static Path> {
    static ROOT: OnceLock<Option<PathBuf>> = OnceLock::new();
    ROOT.get_or_init(|| {
        let exe = std::env::current_exe().ok()?;
        root_near(&exe)
    })
    .as_deref()
}

/// The nearest of the binary's three parent folders that has `docs/tools.md`.
pub fn root_near(exe: &Path) -> Option<PathBuf> {
    exe.ancestors().skip(1).take(3).find(|d| d.join("docs/tools.md").is_file()).map(Path::to_path_buf)
}

/// `docs/tools.md#anchor` → the file on this machine and the anchor, or
/// `None` when the docs are not installed beside the binary.
pub fn resolve(doc: &str) -> Option<(PathBuf, Option<&str>)> {
    resolve_in(root()?, doc)
}

pub fn resolve_in<'a>(root: &Path, doc: &'a str) -> Option<(PathBuf, Option<&'a str>)> {
    let (path, anchor) = match doc.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (doc, None),
    };
    let file = root.join(path);
    file.is_file().then_some((file, anchor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_beside_a_checkout_binary_and_in_the_extension() {
        let tree = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tree.path().join("docs")).unwrap();
        std::fs::write(tree.path().join("docs/tools.md"), "# Tools\n").unwrap();
        for exe in ["target/debug/kernelpro", "server/linux-x64/kernelpro"] {
            assert_eq!(root_near(&tree.path().join(exe)).as_deref(), Some(tree.path()), "{exe}");
        }
        let (file, anchor) = resolve_in(tree.path(), "docs/tools.md#rowwalk").unwrap();
        assert_eq!((file, anchor), (tree.path().join("docs/tools.md"), Some("rowwalk")));
        assert_eq!(resolve_in(tree.path(), "docs/missing.md#x"), None);
        assert_eq!(root_near(Path::new("/usr/local/bin/kernelpro")), None);
    }
}
