//! Flags for a file from the nearest `compile_commands.json`, through the one
//! flag filter (`nvcc_flags`): outputs, architectures, the host compiler and
//! the file itself are KernelPro's own business, and a build's ordinary
//! `-c`/`-o`/`-gencode` are dropped without a word. A file with no place on
//! disk (a relative path: an unsaved buffer) has no compile_commands.json.
//!
//! A database is read once per change of its modification time and size,
//! streamed into an index by file (never held as JSON), and one larger than
//! [`MAX_DB_BYTES`] is not read at all: the caller gets a rejection to show.

use crate::nvcc_flags::{Filtered, FlagSource, Rejected, TOO_BIG};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The largest compile_commands.json read (CMake's for a large project is a few MB).
pub const MAX_DB_BYTES: u64 = 64 << 20;
/// Databases whose index is kept (a workspace has one or a few).
const KEPT_INDEXES: usize = 8;

#[derive(serde::Deserialize)]
struct Entry {
    #[serde(default)]
    directory: String,
    file: String,
    #[serde(default)]
    arguments: Option<Vec<String>>,
    #[serde(default)]
    command: Option<String>,
}

/// One database's entries by file (lexically normalised absolute path).
#[derive(Debug)]
struct Index {
    stamp: (SystemTime, u64),
    /// `(directory, argv without the compiler)` per file; the first entry for a file wins.
    by_file: HashMap<PathBuf, (PathBuf, Vec<String>)>,
}

static INDEXES: Mutex<Vec<(PathBuf, Arc<Index>)>> = Mutex::new(Vec::new());

pub fn flags_for(file: &Path) -> Filtered {
    if !file.is_absolute() {
        return Filtered::default();
    }
    let Some(db) = find_db(file) else { return Filtered::default() };
    let index = match index(&db) {
        Ok(Some(index)) => index,
        Ok(None) => return Filtered::default(),
        Err(size) => {
            return Filtered {
                kept: Vec::new(),
                rejected: vec![Rejected {
                    flag: format!("it is {} MiB, and KernelPro reads at most {} MiB", size >> 20, MAX_DB_BYTES >> 20),
                    reason: TOO_BIG,
                    source: FlagSource::CompileDb(db),
                }],
            };
        }
    };
    let entry = index.by_file.get(&normalize(file)).or_else(|| {
        // The database may name the file through a symbolic link, or the other way round.
        let canon = std::fs::canonicalize(file).ok()?;
        index.by_file.get(&canon).or_else(|| {
            index
                .by_file
                .iter()
                .filter(|(p, _)| p.file_name() == file.file_name())
                .find(|(p, _)| std::fs::canonicalize(p).is_ok_and(|c| c == canon))
                .map(|(_, e)| e)
        })
    });
    let Some((dir, argv)) = entry else { return Filtered::default() };
    let mut out = crate::nvcc_flags::filter(argv, Some(dir));
    for r in &mut out.rejected {
        r.source = FlagSource::CompileDb(db.clone());
    }
    out
}

/// The index of `db`, read again only when its modification time or size
/// changed; `Err(size)` when it is too big to read, `Ok(None)` when it cannot be read.
fn index(db: &Path) -> Result<Option<Arc<Index>>, u64> {
    let Ok(meta) = std::fs::metadata(db) else { return Ok(None) };
    if meta.len() > MAX_DB_BYTES {
        return Err(meta.len());
    }
    let stamp = (meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), meta.len());
    let cached = {
        let kept = INDEXES.lock().unwrap_or_else(|p| p.into_inner());
        kept.iter().find(|(p, i)| p == db && i.stamp == stamp).map(|(_, i)| i.clone())
    };
    if let Some(index) = cached {
        return Ok(Some(index));
    }
    let Some(index) = read_index(db, stamp) else { return Ok(None) };
    let index = Arc::new(index);
    let mut kept = INDEXES.lock().unwrap_or_else(|p| p.into_inner());
    kept.retain(|(p, _)| p != db);
    if kept.len() >= KEPT_INDEXES {
        kept.remove(0);
    }
    kept.push((db.to_path_buf(), index.clone()));
    Ok(Some(index))
}

fn read_index(db: &Path, stamp: (SystemTime, u64)) -> Option<Index> {
    let file = std::fs::File::open(db).ok()?;
    // Never more than the limit, even if the file grew since it was measured.
    let reader = std::io::BufReader::new(std::io::Read::take(file, MAX_DB_BYTES));
    // A database that does not parse (half written by a build) gives no flags
    // until it changes: it is not read again on every compile either.
    let entries: Vec<Entry> = serde_json::from_reader(reader).unwrap_or_default();
    let mut by_file = HashMap::with_capacity(entries.len());
    for e in entries {
        let dir = PathBuf::from(if e.directory.is_empty() { "." } else { e.directory.as_str() });
        let argv: Vec<String> = match (e.arguments, e.command) {
            (Some(a), _) => a,
            (None, Some(c)) => split_command(&c),
            _ => continue,
        };
        let argv = argv.get(1..).unwrap_or_default().to_vec();
        by_file.entry(normalize(&dir.join(&e.file))).or_insert((dir, argv));
    }
    Some(Index { stamp, by_file })
}

/// `path` made absolute with `.` and `..` resolved by name (no file system access).
fn normalize(path: &Path) -> PathBuf {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
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
            Filtered::default(),
            "an unsaved buffer reads no compile_commands.json"
        );
        assert_eq!(
            flags_for(&file).kept,
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

    /// Read once per change of its modification time or size; too big: not read, and said.
    #[test]
    fn indexed_once_per_change_and_refused_when_too_big() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("k.cu");
        std::fs::write(&file, "").unwrap();
        let db = t.path().join("compile_commands.json");
        let write = |flag: &str| {
            let entries =
                serde_json::json!([{"directory": t.path(), "file": "k.cu", "arguments": ["nvcc", flag, "-c", "k.cu"]}]);
            std::fs::write(&db, entries.to_string()).unwrap();
        };
        write("-DONE");
        let first = index(&db).unwrap().unwrap();
        assert!(Arc::ptr_eq(&first, &index(&db).unwrap().unwrap()), "read again though unchanged");
        assert_eq!(flags_for(&file).kept, ["-DONE"]);
        write("-DTWO_");
        assert!(!Arc::ptr_eq(&first, &index(&db).unwrap().unwrap()), "a changed database was not read again");
        assert_eq!(flags_for(&file).kept, ["-DTWO_"]);
        // Half written: no flags, and not read again until it changes.
        std::fs::write(&db, "[{\"directory\": \"/x\", \"fi").unwrap();
        let broken = index(&db).unwrap().unwrap();
        assert!(broken.by_file.is_empty() && Arc::ptr_eq(&broken, &index(&db).unwrap().unwrap()));
        assert_eq!(flags_for(&file), Filtered::default());
        // A shell character in an entry: rejected, and named with its source.
        write("-I/inc/$(touch x)");
        let got = flags_for(&file);
        let shell: Vec<_> = got.rejected.iter().filter(|r| r.reason == crate::nvcc_flags::SHELL).collect();
        assert_eq!((got.kept.len(), shell.len()), (0, 1), "{got:?}");
        assert_eq!(
            (shell[0].flag.as_str(), &shell[0].source),
            ("-I/inc/$(touch x)", &FlagSource::CompileDb(db.clone()))
        );
        // Too big: a sparse file past the limit is never read.
        std::fs::File::create(&db).unwrap().set_len(MAX_DB_BYTES + 1).unwrap();
        let got = flags_for(&file);
        assert!(got.kept.is_empty() && got.rejected[0].reason == TOO_BIG, "{got:?}");
        assert!(
            crate::nvcc_flags::rejection_message(&got.rejected[0], kernelpro_config::words::Words::COMMAND_LINE)
                .contains("was not read"),
            "{got:?}"
        );
    }

    /// A CMake-sized database (20,000 entries, about 4 MB): read once, then a
    /// lookup costs a stat and a hash, not a parse.
    #[test]
    fn a_large_database_costs_one_read() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("src/k19999.cu");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "").unwrap();
        let entries: Vec<serde_json::Value> = (0..20_000)
            .map(|i| serde_json::json!({"directory": t.path(), "file": format!("src/k{i}.cu"),
                "command": format!("nvcc -DK={i} -I{}/include -isystem /opt/x/include -O3 -std=c++17 -x cu -c src/k{i}.cu -o k{i}.o -MD -MT k{i}.o -MF k{i}.o.d", t.path().display())}))
            .collect();
        let text = serde_json::Value::from(entries).to_string();
        std::fs::write(t.path().join("compile_commands.json"), &text).unwrap();
        let timed = || {
            let start = std::time::Instant::now();
            let kept = flags_for(&file).kept;
            (start.elapsed(), kept)
        };
        let (first, kept) = timed();
        assert_eq!(kept[0], "-DK=19999");
        let again = (0..10).map(|_| timed().0).max().unwrap();
        println!(
            "compile_commands.json of {} entries, {} KB: first lookup {first:?} (the read), then at most {again:?}",
            20_000,
            text.len() / 1024
        );
        assert!(again * 10 < first, "a lookup read the database again: {again:?} vs {first:?}");
    }
}
