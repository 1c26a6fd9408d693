//! The model-based tools over the naive-kernel corpus (`tests/fixtures/naive/`,
//! no compile): every naive kernel's `// expect: A|B` line gets one of its
//! codes, and a `// corpus: clean` or `expert` file gets at most one warning.
//! Prints a per-file table; fails below 90% of expectations met. Also prints
//! how often the model's pattern matches a file's `// class:` line. The
//! corpus is committed: a missing folder, no kernel or no expectation fails.

mod common;

use kernelpro_lints::{LintInput, run_all};
use kernelpro_model::Severity;
use std::path::Path;

/// `// kernelpro: block = (16, 16)`, `= 256` or `= NAME` with `// kernelpro: let NAME = 256`.
fn spec_block(text: &str) -> Option<[u32; 3]> {
    let spec = |key: &str| {
        text.lines().find_map(|l| {
            let rest = l.trim().strip_prefix("// kernelpro:")?.trim();
            let (k, v) = rest.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    let block = spec("block")?;
    let value =
        |s: &str| -> Option<u32> { s.trim().parse().ok().or_else(|| spec(&format!("let {}", s.trim()))?.parse().ok()) };
    let parts: Vec<&str> = block.trim_start_matches('(').trim_end_matches(')').split(',').collect();
    let mut dims = [1u32; 3];
    for (d, p) in dims.iter_mut().zip(&parts) {
        *d = value(p)?;
    }
    Some(dims)
}

#[test]
fn naive_corpus_names_the_main_problem() {
    let root = Path::new(common::FIXTURES).join("naive");
    let classes = std::fs::read_dir(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    let mut files: Vec<_> = classes
        .flatten()
        .flat_map(|c| std::fs::read_dir(c.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: no naive kernel (`*/*.cu`)", root.display());
    let (mut hits, mut expected, mut noisy) = (0, 0, Vec::new());
    let mut table = String::new();
    let (mut classes, mut patterns) = ((0usize, 0usize), String::new());
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let source = kernelpro_source::parse(&text);
        let block = spec_block(&text);
        let launches = |_: &str| {
            block.map(|b| kernelpro_lints::launch::Launch {
                block: b.iter().product(),
                smem: None,
                from: kernelpro_lints::launch::LaunchFrom::Spec,
            })
        };
        let dims = |_: &str| block;
        let input = LintInput {
            path: "k.cu",
            text: &text,
            source: &source,
            sass: None,
            resources: &[],
            arch: "sm_90",
            launches: &launches,
            default_block: 256,
            block_dims: &dims,
            spec_values: &|_: &str| Vec::new(),
        };
        let found = run_all(&input);
        if let Some(class) = text.lines().find_map(|l| l.trim().strip_prefix("// class:")).map(str::trim) {
            let models = kernelpro_source::kernel_model::model_file(&text, &source, &dims);
            let got: Vec<&str> =
                models.iter().filter(|m| m.is_kernel).filter_map(|m| m.pattern()).map(|p| p.pattern.name()).collect();
            classes.0 += 1;
            classes.1 += got.contains(&class) as usize;
            patterns.push_str(&format!(
                "{:<6} {class:<16} {:<24} {}\n",
                if got.contains(&class) { "ok" } else { "OTHER" },
                got.join(","),
                path.strip_prefix(&root).unwrap().display()
            ));
        }
        let name = path.strip_prefix(&root).unwrap().display().to_string();
        let warnings: Vec<String> = found
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .map(|f| format!("{}@{}", f.code.as_deref().unwrap_or("?"), f.span.start.line + 1))
            .collect();
        if text.contains("// corpus: clean") || text.contains("// corpus: expert") {
            if warnings.len() > 1 {
                noisy.push(name.clone());
            }
            table.push_str(&format!(
                "{:<8} {name}: {}\n",
                if warnings.len() > 1 { "NOISY" } else { "clean" },
                warnings.join(" ")
            ));
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            let Some((_, codes)) = line.split_once("// expect: ") else {
                continue;
            };
            expected += 1;
            let codes: Vec<&str> = codes.split('|').map(str::trim).collect();
            let hit = found
                .iter()
                .any(|f| f.span.start.line as usize == i && codes.contains(&f.code.as_deref().unwrap_or("")));
            hits += hit as usize;
            table.push_str(&format!(
                "{:<8} {name}:{} want {} got {}\n",
                if hit { "hit" } else { "MISS" },
                i + 1,
                codes.join("|"),
                warnings.join(" ")
            ));
        }
    }
    println!("{table}{hits}/{expected} expectations met; noisy clean/expert files: {noisy:?}");
    println!("{patterns}{}/{} `// class:` lines match the model's pattern", classes.1, classes.0);
    assert!(expected > 0, "no `// expect:` line in {}", root.display());
    assert!(hits * 10 >= expected * 9, "{hits}/{expected} expectations met");
    assert!(noisy.is_empty(), "clean or expert kernels with more than one warning: {noisy:?}");
}
