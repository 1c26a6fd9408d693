//! The layering of this crate, checked on its source: the real import graph
//! between its modules (every `use crate::…` and every `crate::x::…` path of
//! every file, groups `{…}` included) has no circle, handlers import no
//! handler, and jobs import no handler (ARCHITECTURE.md states these).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path of a source file relative to `src/` (`jobs/mod.rs` → `jobs`,
/// `handlers/hover.rs` → `handlers::hover`, `lib.rs` → the root, ``).
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts.join("::")
}

/// The text without its comments.
fn code_of(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// Every path written after `root::` in `code` (where `root` starts a path,
/// not inside `a::root::` or `other_root::`), groups expanded
/// (`crate::jobs::{analysis, publish::publish}` gives `jobs::analysis` and
/// `jobs::publish::publish`).
fn paths_after(code: &str, root: &str) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let root = format!("{root}::");
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = code[at..].find(&root) {
        let start = at + i;
        at = start + root.len();
        if start > 0
            && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_' || bytes[start - 1] == b':')
        {
            continue; // `kernelpro_crate::` or `a::crate::`: not a path from here
        }
        let (paths, _) = parse_tree(&code[at..]);
        out.extend(paths);
    }
    out
}

/// Parses `a::b::{c, d::e}` (a use tree) from the start of `s`; returns its
/// paths and how many bytes it took.
fn parse_tree(s: &str) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    let mut i = 0;
    let b = s.as_bytes();
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i < b.len() && b[i] == b'{' {
            i += 1;
            let mut paths = Vec::new();
            loop {
                while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b',') {
                    i += 1;
                }
                if i >= b.len() || b[i] == b'}' {
                    i += 1;
                    break;
                }
                let (inner, used) = parse_tree(&s[i..]);
                if used == 0 {
                    i += 1;
                    continue;
                }
                i += used;
                for p in inner {
                    paths.push(prefix.iter().cloned().chain(p).collect());
                }
            }
            return (paths, i);
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'*') {
            i += 1;
        }
        if i == start {
            return (if prefix.is_empty() { Vec::new() } else { vec![prefix] }, i);
        }
        prefix.push(s[start..i].to_string());
        if s[i..].starts_with("::") {
            i += 2;
        } else {
            return (vec![prefix], i);
        }
    }
}

/// Module → the modules it names, from `(module, source text)` pairs: each
/// path resolved to the longest prefix that is a module of the crate. A
/// module imported by name (`use crate::handlers;`) is followed into the
/// paths that start with that name (`handlers::hover::hover(…)`).
fn graph(files: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<&str> = files.iter().map(|(m, _)| m.as_str()).collect();
    let mut g = BTreeMap::new();
    for (module, text) in files {
        let code = code_of(text);
        let mut paths = paths_after(&code, "crate");
        let imported: Vec<Vec<String>> =
            paths.iter().filter(|p| modules.contains(p.join("::").as_str())).cloned().collect();
        for m in imported {
            let name = m.last().cloned().unwrap_or_default();
            for rest in paths_after(&code, &name) {
                paths.push(m.iter().cloned().chain(rest).collect());
            }
        }
        let mut used = BTreeSet::new();
        for path in paths {
            let target = (1..=path.len()).rev().map(|n| path[..n].join("::")).find(|p| modules.contains(p.as_str()));
            if let Some(t) = target
                && t != *module
            {
                used.insert(t);
            }
        }
        g.insert(module.clone(), used);
    }
    g
}

/// Every circle of the graph, each once, as the modules around it.
fn circles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Depth-first search; a back edge closes a circle (each reported from its smallest module).
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        out: &mut BTreeSet<Vec<String>>,
    ) {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut c = path[i..].to_vec();
            let min = c.iter().enumerate().min_by_key(|(_, m)| *m).map(|(i, _)| i).unwrap_or(0);
            c.rotate_left(min);
            out.insert(c);
            return;
        }
        if done.contains(n) {
            return;
        }
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            visit(m, g, path, done, out);
        }
        path.pop();
        done.insert(n.to_string());
    }
    let mut out = BTreeSet::new();
    let mut done = BTreeSet::new();
    for n in g.keys() {
        visit(n, g, &mut Vec::new(), &mut done, &mut out);
    }
    out.into_iter().collect()
}

fn sources() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(&src).unwrap();
                files.push((module_of(rel), std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn lsp_modules_import_each_other_without_a_circle() {
    let files = sources();
    assert!(files.len() >= 20, "the source was found: {} files", files.len());
    let g = graph(&files);
    // The check sees imports of every form.
    for (from, to) in [
        ("dispatch", "handlers::hover"), // `handlers::hover::hover(…)` after `use crate::handlers;`
        ("handlers::text_sync", "jobs::analysis"), // `use crate::jobs::{analysis, publish};`
        ("jobs::profile", "jobs::publish"), // `crate::jobs::publish::republish(…)`
        ("jobs::publish", "convert"),
    ] {
        assert!(g[from].contains(to), "{from} -> {to} not seen: {:?}", g[from]);
    }
    assert_eq!(circles(&g), Vec::<Vec<String>>::new(), "import circles in lsp (graph: {g:#?})");
    for (module, used) in &g {
        if module.starts_with("handlers::") || module.starts_with("jobs") {
            let handlers: Vec<_> = used.iter().filter(|u| u.starts_with("handlers")).collect();
            assert!(handlers.is_empty(), "{module} imports {handlers:?}: what handlers share belongs in jobs/");
        }
    }
}

#[test]
fn the_check_finds_the_circle_through_the_server() {
    // The circle this crate had: the server routed to handlers, which imported the server back.
    let c = concat!("crate", "::");
    let files = vec![
        (
            "server".to_string(),
            format!("use {c}handlers;\nfn f() {{ handlers::hover::hover(); {c}jobs::optimize::cancel(); }}"),
        ),
        ("handlers".to_string(), String::new()),
        ("handlers::hover".to_string(), format!("use {c}{{state::State, server::Server}};")),
        ("jobs".to_string(), String::new()),
        ("jobs::optimize".to_string(), format!("use {c}server::Server; // {c}handlers::hover")),
        ("state".to_string(), String::new()),
    ];
    let g = graph(&files);
    assert_eq!(g["handlers::hover"], ["server", "state"].map(String::from).into());
    assert_eq!(g["jobs::optimize"], ["server"].map(String::from).into(), "comments are not imports");
    assert_eq!(g["server"], ["handlers", "handlers::hover", "jobs::optimize"].map(String::from).into());
    assert_eq!(
        circles(&g),
        [["handlers::hover", "server"], ["jobs::optimize", "server"]].map(|c| c.map(String::from).to_vec())
    );
}
