//! The in-memory index: every source file of the tree with its line starts,
//! and an identifier → (file, line) inverted index.

use crate::read::ReadLimits;
use crate::search::SearchLimits;
use crate::tokens::identifiers;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The parts of a CUTLASS tree worth searching: headers, examples, and the
/// host utilities (a checkout's tests, docs and Python are left out).
const INDEXED_DIRS: [&str; 3] = ["include", "examples", "tools/util/include"];

const SOURCE_EXTENSIONS: [&str; 10] = ["h", "hpp", "hxx", "cuh", "inl", "cu", "cpp", "cc", "md", "py"];

/// Larger files are generated tables, not something to read.
const MAX_FILE_BYTES: u64 = 2 << 20;

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{0} is not a CUTLASS tree (no include/cute and include/cutlass)")]
    NotCutlass(PathBuf),
    #[error("reading {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// A header under `include/`: where definitions live.
    Header,
    Example,
    Other,
}

pub(crate) struct SourceFile {
    /// Relative to the root, with `/` separators.
    pub path: String,
    pub text: String,
    /// Byte offset of each line's start.
    pub line_starts: Vec<usize>,
    pub kind: FileKind,
}

impl SourceFile {
    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// The 0-based line `i`, without its line break.
    pub fn line(&self, i: usize) -> &str {
        let start = self.line_starts[i];
        let end = self.line_starts.get(i + 1).copied().unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }

    /// The 0-based line holding byte `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= offset) - 1
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Posting {
    pub file: u32,
    /// 0-based.
    pub line: u32,
}

/// Sizes and build time, for the benchmark and `doctor`-style reports.
#[derive(Debug, Clone, Copy)]
pub struct IndexStats {
    pub files: usize,
    pub bytes: usize,
    pub identifiers: usize,
    pub postings: usize,
    pub build_time: Duration,
}

/// A CUTLASS tree loaded once; searches and reads never touch the disk.
pub struct Index {
    pub(crate) root: PathBuf,
    pub(crate) files: Vec<SourceFile>,
    pub(crate) by_path: HashMap<String, usize>,
    pub(crate) postings: HashMap<String, Vec<Posting>>,
    pub search_limits: SearchLimits,
    pub read_limits: ReadLimits,
    build_time: Duration,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("root", &self.root).field("files", &self.files.len()).finish()
    }
}

impl Index {
    pub fn build(root: &Path) -> Result<Index, BuildError> {
        if !crate::locate::is_cutlass_root(root) {
            return Err(BuildError::NotCutlass(root.to_path_buf()));
        }
        let started = Instant::now();
        let canonical_root =
            std::fs::canonicalize(root).map_err(|source| BuildError::Io { path: root.to_path_buf(), source })?;
        let mut paths = Vec::new();
        for dir in INDEXED_DIRS {
            collect_sources(&canonical_root, &root.join(dir), &mut paths)?;
        }
        paths.sort();
        let mut index = Index {
            root: root.to_path_buf(),
            files: Vec::with_capacity(paths.len()),
            by_path: HashMap::with_capacity(paths.len()),
            postings: HashMap::new(),
            search_limits: SearchLimits::default(),
            read_limits: ReadLimits::default(),
            build_time: Duration::ZERO,
        };
        for path in paths {
            let Some(bytes) = read_regular(&path).map_err(|source| BuildError::Io { path: path.clone(), source })?
            else {
                continue; // swapped for a FIFO or a device since the walk: skipped, never read
            };
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let relative = relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
            index.add(relative, String::from_utf8_lossy(&bytes).into_owned());
        }
        index.build_time = started.elapsed();
        Ok(index)
    }

    fn add(&mut self, path: String, text: String) {
        let id = self.files.len() as u32;
        let line_starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1).filter(|&i| i < text.len()))
            .collect();
        for (line, window) in line_starts.iter().enumerate() {
            let end = line_starts.get(line + 1).copied().unwrap_or(text.len());
            let line_text = &text[*window..end];
            for (s, e) in identifiers(line_text) {
                let posting = Posting { file: id, line: line as u32 };
                let ident = &line_text[s..e];
                match self.postings.get_mut(ident) {
                    // One posting per line, however often the identifier occurs on it.
                    Some(list) if list.last() == Some(&posting) => {}
                    Some(list) => list.push(posting),
                    None => {
                        self.postings.insert(ident.to_owned(), vec![posting]);
                    }
                }
            }
        }
        let kind = if path.starts_with("include/") && !path.ends_with(".md") {
            FileKind::Header
        } else if path.starts_with("examples/") {
            FileKind::Example
        } else {
            FileKind::Other
        };
        self.by_path.insert(path.clone(), id as usize);
        self.files.push(SourceFile { path, text, line_starts, kind });
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Relative paths of every indexed file, sorted.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|f| f.path.as_str())
    }

    pub fn stats(&self) -> IndexStats {
        IndexStats {
            files: self.files.len(),
            bytes: self.files.iter().map(|f| f.text.len()).sum(),
            identifiers: self.postings.len(),
            postings: self.postings.values().map(Vec::len).sum(),
            build_time: self.build_time,
        }
    }
}

/// The bytes of `path` if it is a regular file (by the type of the file
/// opened, so a FIFO or device put there after the walk is not read: opening
/// a FIFO without a writer would block and reading `/dev/zero` never ends);
/// `None` for any other type. Read at most `MAX_FILE_BYTES` + 1.
fn read_regular(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    if !file.metadata()?.is_file() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// Source files below `dir`, walked with an explicit stack. Each directory
/// is entered once (by its canonical path, so a symlink loop ends), folders
/// are entered only inside `dir` and files taken only inside `root`
/// (canonical): a link out of the tree would hand its target to the model.
/// Only regular files are taken (by type, through links): a FIFO or a device
/// named like a header would hang the read or never end it.
fn collect_sources(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), BuildError> {
    let Ok(top) = std::fs::canonicalize(dir) else {
        return Ok(()); // optional directory (a wheel has no tools/util)
    };
    let mut visited = HashSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(canonical) = std::fs::canonicalize(&dir) else {
            continue;
        };
        // Folders stay inside the walk's own top (include/, examples/...).
        if !canonical.starts_with(&top) || !top.starts_with(root) || !visited.insert(canonical) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue; // optional directory (a wheel has no tools/util)
        };
        for entry in entries {
            let entry = entry.map_err(|source| BuildError::Io { path: dir.clone(), source })?;
            let path = entry.path();
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file()
                && meta.len() <= MAX_FILE_BYTES
                && path.extension().and_then(|e| e.to_str()).is_some_and(|e| SOURCE_EXTENSIONS.contains(&e))
                && std::fs::canonicalize(&path).is_ok_and(|c| c.starts_with(root))
            {
                out.push(path);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file swapped for a FIFO or a device after the walk: the read checks the
    /// type of what it opened and returns at once.
    #[test]
    fn a_fifo_or_a_device_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("x.hpp");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        assert_eq!(read_regular(&fifo).unwrap(), None);
        assert_eq!(read_regular(Path::new("/dev/zero")).unwrap(), None);
        let file = dir.path().join("y.hpp");
        std::fs::write(&file, "int y;\n").unwrap();
        assert_eq!(read_regular(&file).unwrap().as_deref(), Some(&b"int y;\n"[..]));
    }
}
