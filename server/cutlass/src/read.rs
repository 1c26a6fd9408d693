//! Bounded reads of one indexed file: a line range, capped in lines and
//! bytes, and only for paths inside the tree.

use crate::index::Index;
use std::path::{Component, Path};

#[derive(Debug, Clone, Copy)]
pub struct ReadLimits {
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits { max_lines: 400, max_bytes: 32 * 1024 }
    }
}

/// The lines actually returned, which may be fewer than asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSlice {
    pub path: String,
    /// 1-based, inclusive.
    pub start: usize,
    pub end: usize,
    pub total_lines: usize,
    /// The range asked for went past a limit (not just past the end of the file).
    pub truncated: bool,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("`{0}` is outside the CUTLASS tree; use a path relative to it, as search results show")]
    OutsideTree(String),
    #[error("no file `{0}` in the CUTLASS tree")]
    NotFound(String),
    #[error("lines {start}-{end} are not in `{path}` ({total} lines)")]
    BadRange { path: String, start: usize, end: usize, total: usize },
}

impl Index {
    /// Lines `start..=end` (1-based) of `path`, relative to the root (an
    /// absolute path inside the root is accepted, and `cute/...` is taken as
    /// `include/cute/...`).
    pub fn read_file(&self, path: &str, start: usize, end: usize) -> Result<FileSlice, ReadError> {
        let relative = self.relative(path)?;
        let id = [relative.clone(), format!("include/{relative}")]
            .iter()
            .find_map(|p| self.by_path.get(p).copied())
            .ok_or_else(|| ReadError::NotFound(path.to_owned()))?;
        let file = &self.files[id];
        let total = file.line_count();
        let start = start.max(1);
        if end < start || start > total {
            return Err(ReadError::BadRange { path: file.path.clone(), start, end, total });
        }
        let wanted_end = end.min(total);
        let mut last = (start + self.read_limits.max_lines - 1).min(wanted_end);
        let mut text = String::new();
        for i in start..=last {
            let line = file.line(i - 1);
            if text.len() + line.len() + 1 > self.read_limits.max_bytes {
                last = i - 1;
                break;
            }
            text.push_str(line);
            text.push('\n');
        }
        if last < start {
            // A single line longer than the byte cap: return its head.
            let line = file.line(start - 1);
            let cut =
                line.char_indices().map(|(i, _)| i).take_while(|&i| i < self.read_limits.max_bytes).last().unwrap_or(0);
            text = format!("{}\n", &line[..cut]);
            last = start;
        }
        Ok(FileSlice {
            path: file.path.clone(),
            start,
            end: last,
            total_lines: total,
            truncated: last < wanted_end,
            text,
        })
    }

    /// `path` as a `/`-separated path relative to the root, refusing any
    /// `..`, and absolute paths outside the root.
    fn relative(&self, path: &str) -> Result<String, ReadError> {
        let outside = || ReadError::OutsideTree(path.to_owned());
        let given = Path::new(path.trim());
        let inner = if given.is_absolute() { given.strip_prefix(&self.root).map_err(|_| outside())? } else { given };
        let mut parts = Vec::new();
        for component in inner.components() {
            match component {
                Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
                Component::CurDir => {}
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                    return Err(outside());
                }
            }
        }
        if parts.is_empty() {
            return Err(ReadError::NotFound(path.to_owned()));
        }
        Ok(parts.join("/"))
    }
}
