//! Flags for a file from the nearest `compile_commands.json`, through the one
//! flag filter (`nvcc_flags`): outputs, architectures, the host compiler and
//! the file itself are KernelPro's own business, and a build's ordinary
//! `-c`/`-o`/`-gencode` are dropped without a word. A file with no place on
//! disk (a relative path: an unsaved buffer) has no compile_commands.json.

use std::path::{Path, PathBuf};

pub fn flags_for(file: &Path) -> Vec<String> {
    if !file.is_absolute() {
        return Vec::new();
    }
    let Some(db) = find_db(file) else { return Vec::new() };
    let Ok(text) = std::fs::read_to_string(&db) else { return Vec::new() };
    let Ok(entries) = serde_json::from_str::<Vec<serde_json::Value>>(&text) else { return Vec::new() };
    let file_canon = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    for e in entries {
        let dir = PathBuf::from(e["directory"].as_str().unwrap_or("."));
        let Some(f) = e["file"].as_str() else { continue };
        let entry_file = std::fs::canonicalize(dir.join(f)).unwrap_or_else(|_| dir.join(f));
        if entry_file != file_canon {
            continue;
        }
        let argv: Vec<String> = match (e["arguments"].as_array(), e["command"].as_str()) {
            (Some(a), _) => a.iter().filter_map(|v| v.as_str().map(String::from)).collect(),
            (None, Some(c)) => split_command(c),
            _ => continue,
        };
        return crate::nvcc_flags::filter(argv.get(1..).unwrap_or_default(), Some(&dir)).kept;
    }
    Vec::new()
}

fn find_db(file: &Path) -> Option<PathBuf> {
    file.parent()?
        .ancestors()
        .flat_map(|d| [d.join("compile_commands.json"), d.join("build/compile_commands.json")])
        .find(|p| p.is_file())
}

/// Splits a command line the way a POSIX shell would for plain words and quotes,
/// without ever running a shell.
fn split_command(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = cmd.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => cur.extend(chars.next()),
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                cur.extend(chars.next());
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_flags_for_the_file_and_drops_the_rest() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("src/k.cu");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "").unwrap();
        let db = serde_json::json!([{
            "directory": t.path(),
            "file": "src/k.cu",
            "command": "nvcc -Iinc -I /abs/inc -DFOO=1 -D BAR \"-DMSG=\\\"a b\\\"\" -std=c++17 -gencode arch=compute_80,code=sm_80 --expt-relaxed-constexpr -o k.o -c src/k.cu '-DX=; rm -rf /'"
        }]);
        std::fs::write(t.path().join("compile_commands.json"), db.to_string()).unwrap();
        let inc = t.path().join("inc").display().to_string();
        assert_eq!(
            flags_for(Path::new("k.cu")),
            Vec::<String>::new(),
            "an unsaved buffer reads no compile_commands.json"
        );
        assert_eq!(
            flags_for(&file),
            vec![
                format!("-I{inc}"),
                "-I/abs/inc".into(),
                "-DFOO=1".into(),
                "-DBAR".into(),
                "-DMSG=\"a b\"".into(),
                "-std=c++17".into(),
                "--expt-relaxed-constexpr".into(),
                "-DX=; rm -rf /".into()
            ]
        );
    }
}
