//! The project headers a `.cu` file includes, so kernels defined in them are
//! analysed with the file that compiles them: every `#include "…"` resolved
//! the way nvcc does (the including file's directory, then the `-I` dirs),
//! followed through headers, kept when it is a project file: reached by a
//! relative include, or inside the project (the nearest directory with `.git`,
//! else the file's own). The CUDA toolkit's headers never are.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// At most this many headers are read per file, each at most this big.
pub const MAX_HEADERS: usize = 64;
const MAX_HEADER_BYTES: u64 = 4 << 20;

#[derive(Debug, Clone, PartialEq)]
pub struct ProjectHeader {
    pub path: PathBuf,
    pub text: Arc<str>,
    /// The 0-based line of the main file's `#include` that brings it in (directly or through other headers).
    pub include_line: u32,
}

/// The project headers `main` (with `text`) includes, in include order.
/// `flags` are the compile's (their `-I` dirs count); `toolkit` is the CUDA root to leave out.
pub fn project_headers(main: &Path, text: &str, flags: &[String], toolkit: Option<&Path>) -> Vec<ProjectHeader> {
    // A relative path is an unsaved buffer's: it has no folder to read headers from.
    let Some(main_dir) = main.parent().filter(|d| d.is_absolute()) else {
        return Vec::new();
    };
    let root = project_root(main_dir);
    let include_dirs = include_dirs(flags, main_dir);
    let mut seen: HashSet<PathBuf> = HashSet::from([main.to_path_buf()]);
    let mut out = Vec::new();
    // (file's directory, its text, the main file's include line it hangs off)
    let mut work: Vec<(PathBuf, Arc<str>, Option<u32>)> = vec![(main_dir.to_path_buf(), Arc::from(text), None)];
    let mut next = 0;
    while next < work.len() && out.len() < MAX_HEADERS {
        let (dir, text, top) = work[next].clone();
        next += 1;
        for (line, name) in quoted_includes(&text) {
            let relative = dir.join(&name);
            let (found, by_relative) = if relative.is_file() {
                (relative, true)
            } else if let Some(p) = include_dirs.iter().map(|d| d.join(&name)).find(|p| p.is_file()) {
                (p, false)
            } else {
                continue;
            };
            let found = found.canonicalize().unwrap_or(found);
            let in_toolkit = toolkit.is_some_and(|t| found.starts_with(t));
            if in_toolkit || !(by_relative || found.starts_with(&root)) || !seen.insert(found.clone()) {
                continue;
            }
            if std::fs::metadata(&found).map_or(true, |m| m.len() > MAX_HEADER_BYTES) {
                continue;
            }
            let Ok(header_text) = std::fs::read_to_string(&found) else {
                continue;
            };
            let header_text: Arc<str> = Arc::from(header_text);
            let include_line = top.unwrap_or(line);
            out.push(ProjectHeader { path: found.clone(), text: header_text.clone(), include_line });
            if out.len() == MAX_HEADERS {
                break;
            }
            work.push((found.parent().map(Path::to_path_buf).unwrap_or_default(), header_text, Some(include_line)));
        }
    }
    out
}

/// `(0-based line, name)` of each `#include "name"`.
fn quoted_includes(text: &str) -> Vec<(u32, String)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let rest = l.trim_start().strip_prefix('#')?.trim_start().strip_prefix("include")?.trim_start();
            let name = rest.strip_prefix('"')?.split('"').next()?;
            (!name.is_empty()).then(|| (i as u32, name.to_string()))
        })
        .collect()
}

/// `-Idir`, `-I dir`, `--include-path dir`/`=dir`, `-isystem dir` (which
/// `#include "…"` searches too, after `-I`); relative ones are relative to
/// the file's directory (nvcc's cwd).
fn include_dirs(flags: &[String], base: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut system = Vec::new();
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        if f == "-isystem" || f == "--system-include" {
            system.extend(it.next().filter(|d| !d.is_empty()).map(|d| base.join(d)));
            continue;
        }
        let dir = if f == "-I" || f == "--include-path" {
            it.next().cloned()
        } else {
            f.strip_prefix("--include-path=").or_else(|| f.strip_prefix("-I")).map(str::to_string)
        };
        if let Some(d) = dir.filter(|d| !d.is_empty()) {
            dirs.push(base.join(d));
        }
    }
    dirs.extend(system);
    dirs
}

/// The nearest ancestor of `dir` (itself included) holding `.git`, else `dir`.
fn project_root(dir: &Path) -> PathBuf {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors().find(|a| a.join(".git").exists()).unwrap_or(&dir).to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_project_includes_and_skips_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("llmc")).unwrap();
        std::fs::create_dir_all(root.join("include/lib")).unwrap();
        std::fs::create_dir_all(root.join("toolkit")).unwrap();
        std::fs::write(root.join("llmc/encoder.cuh"), "#include \"common.h\"\n__global__ void enc() {}\n").unwrap();
        std::fs::write(root.join("llmc/common.h"), "#include \"encoder.cuh\"\n").unwrap();
        std::fs::write(root.join("include/lib/k.cuh"), "__global__ void k() {}\n").unwrap();
        std::fs::write(root.join("toolkit/cuda_fp16.h"), "").unwrap();
        let main = root.join("train.cu");
        let text = "#include <cstdio>\n#include \"llmc/encoder.cuh\"\n#include \"missing.h\"\n  #  include \"lib/k.cuh\"\n#include \"cuda_fp16.h\"\n";
        let flags = vec!["-I".to_string(), "include".to_string(), format!("-I{}", root.join("toolkit").display())];
        let found: Vec<(String, u32)> = project_headers(&main, text, &flags, Some(&root.join("toolkit")))
            .iter()
            .map(|h| (h.path.strip_prefix(&root).unwrap().display().to_string(), h.include_line))
            .collect();
        // common.h hangs off the encoder's include line; the cycle back to encoder.cuh stops.
        assert_eq!(
            found,
            [
                ("llmc/encoder.cuh".to_string(), 1),
                ("include/lib/k.cuh".to_string(), 3),
                ("llmc/common.h".to_string(), 1)
            ]
        );
    }
}
