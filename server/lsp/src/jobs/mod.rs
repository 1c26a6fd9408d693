//! Work that outlives a request: the analysis after a save, publishing
//! diagnostics, profiles and optimize searches. Handlers start these and read
//! their stored results; jobs never call handlers.

pub mod analysis;
pub mod optimize;
pub mod profile;
pub mod publish;

#[cfg(test)]
mod structure {
    //! The layering above, checked on the source: handlers import no handler,
    //! jobs import no handler, and the jobs' imports form no circle.
    use std::collections::BTreeMap;
    use std::path::Path;

    fn uses(dir: &str, what: &str) -> BTreeMap<String, Vec<String>> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(dir);
        let mut out = BTreeMap::new();
        for entry in std::fs::read_dir(&root).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            let pat = format!("{what}::");
            let mut used: Vec<String> = text
                .match_indices(&pat)
                .map(|(i, _)| {
                    text[i + pat.len()..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>()
                })
                .filter(|m| !m.is_empty() && *m != name)
                .collect();
            // `use crate::jobs::{analysis, publish};`
            if let Some(i) = text.find(&format!("use crate::{what}::{{")) {
                let list = &text[i..i + text[i..].find('}').unwrap()];
                used.extend(list.split(['{', ',']).skip(1).map(|s| s.trim().to_string()).filter(|s| !s.is_empty()));
            }
            used.sort();
            used.dedup();
            out.insert(name, used);
        }
        out
    }

    #[test]
    fn handlers_import_no_handler_and_jobs_no_circle() {
        for (file, used) in uses("handlers", "handlers") {
            assert!(used.is_empty(), "handlers/{file}.rs imports handlers {used:?}: move what they share into jobs/");
        }
        for (file, used) in uses("jobs", "handlers") {
            assert!(used.is_empty(), "jobs/{file}.rs imports handlers {used:?}");
        }
        let graph = uses("jobs", "jobs");
        // Depth-first search for a back edge.
        fn visit(n: &str, g: &BTreeMap<String, Vec<String>>, path: &mut Vec<String>) {
            assert!(!path.iter().any(|p| p == n), "jobs import each other in a circle: {path:?} -> {n}");
            path.push(n.to_string());
            for m in g.get(n).into_iter().flatten() {
                visit(m, g, path);
            }
            path.pop();
        }
        for n in graph.keys() {
            visit(n, &graph, &mut Vec::new());
        }
        assert!(graph["profile"].contains(&"publish".to_string()), "the check sees imports: {graph:?}");
    }
}
