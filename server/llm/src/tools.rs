//! The CUTLASS tools offered to the model, and running its calls against the index.

use crate::wire::{ToolCall, ToolSpec};
use kernelpro_cutlass::Index;
use serde_json::{Value, json};
use std::collections::BTreeSet;

pub const SEARCH: &str = "search_cutlass";
pub const READ: &str = "read_cutlass_file";

/// Hits returned per search.
const SEARCH_HITS: usize = 8;

pub fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: SEARCH,
            description: "Search the CUTLASS/CuTe sources (include/cute, include/cutlass, examples). A single identifier \
                          finds its definition first; other text is matched as a phrase; /regex/ is a regular expression. \
                          Returns path:line with a few lines of context.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "identifier, phrase or /regex/"},
                    "path_glob": {"type": "string", "description": "optional glob on the path, e.g. include/cute/** or examples/**"}
                },
                "required": ["query"]
            }),
        },
        ToolSpec {
            name: READ,
            description: "Read lines start_line..end_line (1-based, inclusive) of a file of the CUTLASS tree, \
                          by the path that search_cutlass shows. Long ranges are cut.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "start_line": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 1}
                },
                "required": ["path", "start_line", "end_line"]
            }),
        },
    ]
}

/// Runs tool calls and remembers what the model looked at.
pub struct ToolRunner<'a> {
    index: &'a Index,
    max_bytes: usize,
    /// Files the model read, relative to the tree.
    pub files_read: BTreeSet<String>,
    pub queries: Vec<String>,
}

impl<'a> ToolRunner<'a> {
    pub fn new(index: &'a Index, max_bytes: usize) -> ToolRunner<'a> {
        ToolRunner { index, max_bytes, files_read: BTreeSet::new(), queries: Vec::new() }
    }

    /// The text handed back for `call`: a result, or an error the model can act on.
    pub fn run(&mut self, call: &ToolCall) -> String {
        let args = match &call.arguments {
            Ok(args) => args,
            Err(e) => return format!("error: {e}"),
        };
        let text = match call.name.as_str() {
            SEARCH => self.search(args),
            READ => self.read(args),
            other => Err(format!("unknown tool `{other}`; the tools are {SEARCH} and {READ}")),
        };
        cap(text.unwrap_or_else(|e| format!("error: {e}")), self.max_bytes)
    }

    fn search(&mut self, args: &Value) -> Result<String, String> {
        let query = args.get("query").and_then(Value::as_str).ok_or("`query` (a string) is required")?;
        let glob = args.get("path_glob").and_then(Value::as_str);
        self.queries.push(query.to_owned());
        let hits = self.index.search(query, glob, SEARCH_HITS).map_err(|e| e.to_string())?;
        if hits.is_empty() {
            return Ok(format!("no matches for `{query}`"));
        }
        Ok(hits.iter().map(|h| h.numbered()).collect::<Vec<_>>().join("\n"))
    }

    fn read(&mut self, args: &Value) -> Result<String, String> {
        let path = args.get("path").and_then(Value::as_str).ok_or("`path` (a string) is required")?;
        let line = |name: &str| {
            args.get(name)
                .and_then(Value::as_u64)
                .map(|n| n as usize)
                .ok_or(format!("`{name}` (an integer) is required"))
        };
        let slice = self.index.read_file(path, line("start_line")?, line("end_line")?).map_err(|e| e.to_string())?;
        self.files_read.insert(slice.path.clone());
        let mut out = format!("{} lines {}-{} of {}\n", slice.path, slice.start, slice.end, slice.total_lines);
        for (i, text) in slice.text.lines().enumerate() {
            out.push_str(&format!("{:>6}| {text}\n", slice.start + i));
        }
        if slice.truncated {
            out.push_str(&format!("[cut at line {}; read on from there]\n", slice.end));
        }
        Ok(out)
    }
}

/// `text` cut to at most `max` bytes at a line boundary, saying so.
fn cap(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let note = format!("[cut at {max} bytes]\n");
    let budget = max.saturating_sub(note.len());
    let boundary = (0..=budget).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    let end = text[..boundary].rfind('\n').map_or(0, |i| i + 1);
    format!("{}{note}", &text[..end])
}

#[cfg(test)]
mod tests {
    #[test]
    fn cap_cuts_at_a_line() {
        let text = "line one\nline two\nline three\n".to_owned();
        assert_eq!(super::cap(text.clone(), 100), text);
        assert_eq!(super::cap(text, 28), "line one\n[cut at 28 bytes]\n");
    }
}
