//! The cost budget of analysing one file: how big and how deep it may be
//! before the analyses that walk it (the kernel model, the source tools) are
//! skipped with a diagnostic instead of taking minutes or gigabytes.
//!
//! Measured once per text, in one pass over the tree (an explicit cursor, no
//! recursion), checking a cancel flag as it goes; the parse itself stops when
//! it is cancelled or runs past its time (tree-sitter's GLR parser keeps every
//! reading of an ambiguous `a < b < c …` alive, so nested template arguments
//! cost time and memory together: the time limit bounds both).

use std::time::{Duration, Instant};
use tree_sitter::{Parser, Tree};

/// Limits on one file. The defaults leave every real file we know of (20,000
/// kernels in 1 MB, CUTLASS headers, the naive corpus) well inside, and stop the
/// shapes that made the analysis quadratic: tens of thousands of nested loops,
/// thousands of nested template arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Syntax nodes in the whole tree.
    pub max_nodes: usize,
    /// Statement nesting: blocks, loops and branches inside each other.
    pub max_depth: usize,
    /// Template argument lists inside each other (`A<B<C<…>>>`).
    pub max_template_depth: usize,
    /// The text's size in bytes.
    pub max_bytes: usize,
    /// The parse itself: past this it is stopped.
    pub max_parse_time: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_nodes: 4_000_000,
            max_depth: 256,
            max_template_depth: 64,
            max_bytes: 8 << 20,
            max_parse_time: Duration::from_secs(10),
        }
    }
}

/// What one file costs, as measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    pub nodes: usize,
    pub depth: usize,
    pub template_depth: usize,
    pub bytes: usize,
}

/// Why a file is not analysed further.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("{what} is {value}, over the analysis budget of {limit}")]
    Exceeded { what: &'static str, value: usize, limit: usize },
    #[error("parsing took longer than the analysis budget of {0:?}")]
    ParseTime(Duration),
    #[error("cancelled by a newer version")]
    Cancelled,
}

impl Refused {
    /// The sentence shown to the user, on the file's first line.
    pub fn message(&self) -> String {
        format!(
            "this file is too large or too deeply nested to analyse statically ({self}); the compiler's messages still \
             come, but the source tools, hover and lenses skip it"
        )
    }
}

/// Node kinds that nest statements (each level is one more scope the model walks).
fn nests(kind: &str) -> bool {
    matches!(
        kind,
        "compound_statement"
            | "for_statement"
            | "for_range_loop"
            | "while_statement"
            | "do_statement"
            | "if_statement"
            | "switch_statement"
    )
}

/// How deep `name <` openings nest before a `>` closes them, a `;`, `{` or
/// `}` ends the statement, outside comments and literals: a linear look at
/// the text that finds nested template arguments before tree-sitter spends
/// seconds and gigabytes on their ambiguous readings. Comparisons
/// (`i < n;`) open one level that the statement's end closes.
pub fn template_openings(text: &str) -> usize {
    let b = text.as_bytes();
    let (mut i, mut depth, mut max) = (0usize, 0usize, 0usize);
    let mut last_word = false; // the previous token is an identifier
    let mut directive = false; // on a preprocessor line (`#if A < B` ends with the line)
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        if line_start && c == b'#' {
            directive = true;
        }
        if c == b'\n' {
            line_start = true;
            if std::mem::take(&mut directive) {
                depth = 0;
            }
        } else if !c.is_ascii_whitespace() {
            line_start = false;
        }
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = memchr_from(b, i, b'\n');
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                continue;
            }
            b'"' | b'\'' => {
                // To the closing quote on the line (escapes skipped).
                let mut j = i + 1;
                while j < b.len() && b[j] != c && b[j] != b'\n' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                i = j + 1;
                last_word = false;
                continue;
            }
            b'<' if b.get(i + 1) == Some(&b'<') => {
                i += 2;
                last_word = false;
                continue;
            }
            b'<' if last_word => {
                depth += 1;
                max = max.max(depth);
            }
            b'>' => depth = depth.saturating_sub(1),
            b';' | b'{' | b'}' => depth = 0,
            _ => {}
        }
        if !c.is_ascii_whitespace() {
            last_word = c.is_ascii_alphanumeric() || c == b'_';
        }
        i += 1;
    }
    max
}

fn memchr_from(b: &[u8], from: usize, what: u8) -> usize {
    b[from..].iter().position(|&c| c == what).map_or(b.len(), |p| from + p)
}

/// Parses `text` unless it is over the size budget, `cancel` is set, or the
/// parse runs past `max_parse_time`.
pub fn parse_tree_within(text: &str, budget: &Budget, cancelled: &dyn Fn() -> bool) -> Result<Tree, Refused> {
    parse_tree_from(text, None, budget, cancelled)
}

/// [`parse_tree_within`] starting from `old`: the tree of an earlier text
/// with every change since applied (`Tree::edit`), so tree-sitter re-parses
/// only what changed (the language server's kept trees); `None` parses whole.
/// The one definition of the parse part of the budget: size, template
/// nesting, parse time and cancellation, whichever tree it starts from.
pub fn parse_tree_from(
    text: &str,
    old: Option<&Tree>,
    budget: &Budget,
    cancelled: &dyn Fn() -> bool,
) -> Result<Tree, Refused> {
    if text.len() > budget.max_bytes {
        return Err(Refused::Exceeded { what: "the file's size in bytes", value: text.len(), limit: budget.max_bytes });
    }
    let openings = template_openings(text);
    if openings > budget.max_template_depth {
        return Err(Refused::Exceeded {
            what: "the template argument nesting depth",
            value: openings,
            limit: budget.max_template_depth,
        });
    }
    crate::parsed::tally(text);
    let mut parser = Parser::new();
    parser.set_language(&tree_sitter_cuda::LANGUAGE.into()).map_err(|_| Refused::Cancelled)?;
    let started = Instant::now();
    let mut timed_out = false;
    let mut progress = |_: &tree_sitter::ParseState| {
        if cancelled() {
            return true;
        }
        timed_out = started.elapsed() > budget.max_parse_time;
        timed_out
    };
    let bytes = text.as_bytes();
    let tree = parser.parse_with_options(
        &mut |at, _| bytes.get(at..).unwrap_or_default(),
        old,
        Some(tree_sitter::ParseOptions::new().progress_callback(&mut progress)),
    );
    match tree {
        Some(t) => Ok(t),
        None if timed_out => Err(Refused::ParseTime(budget.max_parse_time)),
        None => Err(Refused::Cancelled),
    }
}

/// Walks the tree once and measures it, stopping at the first limit passed.
pub fn measure(tree: &Tree, text: &str, budget: &Budget, cancelled: &dyn Fn() -> bool) -> Result<Cost, Refused> {
    let mut cost = Cost { bytes: text.len(), ..Cost::default() };
    let mut cursor = tree.walk();
    // Per level of the cursor: whether that node nests statements / template arguments.
    let mut levels: Vec<(bool, bool)> = Vec::new();
    let (mut depth, mut template_depth) = (0usize, 0usize);
    loop {
        let node = cursor.node();
        let kind = node.kind();
        let (n, t) = (nests(kind), kind == "template_argument_list");
        depth += n as usize;
        template_depth += t as usize;
        cost.nodes += 1;
        cost.depth = cost.depth.max(depth);
        cost.template_depth = cost.template_depth.max(template_depth);
        if cost.nodes.is_multiple_of(4096) && cancelled() {
            return Err(Refused::Cancelled);
        }
        if cost.nodes > budget.max_nodes {
            return Err(Refused::Exceeded {
                what: "the number of syntax nodes",
                value: cost.nodes,
                limit: budget.max_nodes,
            });
        }
        if cost.depth > budget.max_depth {
            return Err(Refused::Exceeded {
                what: "the statement nesting depth",
                value: cost.depth,
                limit: budget.max_depth,
            });
        }
        if cost.template_depth > budget.max_template_depth {
            return Err(Refused::Exceeded {
                what: "the template argument nesting depth",
                value: cost.template_depth,
                limit: budget.max_template_depth,
            });
        }
        levels.push((n, t));
        if cursor.goto_first_child() {
            continue;
        }
        // Up until a sibling: each level left gives its nesting back.
        loop {
            let (n, t) = levels.pop().unwrap_or_default();
            depth -= n as usize;
            template_depth -= t as usize;
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return Ok(cost);
            }
        }
    }
}

/// Parses and measures `text` under `budget`: the tree when it is inside it.
pub fn check(text: &str, budget: &Budget, cancelled: &dyn Fn() -> bool) -> Result<(Tree, Cost), Refused> {
    let tree = parse_tree_within(text, budget, cancelled)?;
    let cost = measure(&tree, text, budget, cancelled)?;
    Ok((tree, cost))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested_loops(depth: usize) -> String {
        let mut s = String::from("__global__ void k(float* y, int n) {\n");
        for d in 0..depth {
            s.push_str(&format!("for (int i{d} = 0; i{d} < n; ++i{d}) {{\n"));
        }
        s.push_str("y[i0] += 1.0f;\n");
        s.push_str(&"}\n".repeat(depth));
        s + "}\n"
    }

    #[test]
    fn a_small_kernel_is_inside_the_budget() {
        let text = "__global__ void k(float* y) { for (int i = 0; i < 4; ++i) { if (i) y[i] = 1; } }\n";
        let (_, cost) = check(text, &Budget::default(), &|| false).unwrap();
        assert_eq!((cost.depth, cost.template_depth), (4, 0), "{cost:?}");
        let (_, cost) = check("A<B<C<int>>> x;\n", &Budget::default(), &|| false).unwrap();
        assert_eq!(cost.template_depth, 3, "{cost:?}");
    }

    #[test]
    fn deep_loops_and_templates_are_refused_with_what_and_how_much() {
        let got = check(&nested_loops(300), &Budget::default(), &|| false).map(|_| ()).unwrap_err();
        assert!(matches!(got, Refused::Exceeded { what: "the statement nesting depth", limit: 256, .. }), "{got}");
        let tpl = format!("using X = {}int{};\n", "S<".repeat(100), ">".repeat(100));
        let got = check(&tpl, &Budget::default(), &|| false).map(|_| ()).unwrap_err();
        assert!(matches!(got, Refused::Exceeded { what: "the template argument nesting depth", .. }), "{got}");
        assert!(got.message().contains("too large or too deeply nested"), "{}", got.message());
    }

    #[test]
    fn template_openings_skip_comparisons_comments_and_literals() {
        assert_eq!(template_openings("for (int i = 0; i < n; ++i) { a = b < c; }"), 1);
        assert_eq!(template_openings("A<B<C<int>>> x; y = z << 2;"), 3);
        assert_eq!(template_openings("// A<B<C<D<\n\"E<F<G<\" /* H<I<J< */ x;"), 0);
        let directives = "#if A < B\n#elif C < D\n".repeat(100);
        assert_eq!(template_openings(&directives), 1, "each directive's comparison ends with its line");
        assert_eq!(template_openings("#include <cuda.h>\nA<B<int>> x;"), 2);
        let deep = format!("int x = {}1{};", "f<".repeat(1000), ">()".repeat(1000));
        assert_eq!(template_openings(&deep), 1000);
    }

    #[test]
    fn a_set_cancel_flag_stops_the_parse() {
        let got = check(&nested_loops(10), &Budget::default(), &|| true).map(|_| ()).unwrap_err();
        assert_eq!(got, Refused::Cancelled);
    }

    /// Figures for docs/reliability.md: `cargo test -p kernelpro-source --lib budget::tests::figures -- --ignored --nocapture`.
    #[test]
    #[ignore = "prints figures"]
    fn figures() {
        let shapes = [
            ("nested loops", nested_loops(55_000)),
            ("nested template arguments", format!("using X = {}int{};\n", "S<".repeat(200_000), ">".repeat(200_000))),
            ("nested template calls", format!("int x = {}1{};\n", "f<".repeat(200_000), ">()".repeat(200_000))),
        ];
        for (what, text) in shapes {
            let t = Instant::now();
            let got = check(&text, &Budget::default(), &|| false).map(|(_, c)| c);
            println!("{what}: {} bytes, {:?}, {:?}", text.len(), t.elapsed(), got);
        }
    }

    /// Real headers stay inside the pre-scan's limit: `KERNELPRO_HEADERS=DIR:DIR
    /// cargo test -p kernelpro-source --lib budget::tests::real_headers -- --ignored --nocapture`
    /// (CUTLASS's `include/` and CUDA's: 64 is far above what they nest).
    #[test]
    #[ignore = "needs KERNELPRO_HEADERS"]
    fn real_headers_stay_inside_the_template_limit() {
        let dirs = std::env::var("KERNELPRO_HEADERS").expect("KERNELPRO_HEADERS");
        let (mut files, mut worst) = (0, (0, String::new()));
        let mut stack: Vec<std::path::PathBuf> = std::env::split_paths(&dirs).collect();
        while let Some(p) = stack.pop() {
            if p.is_dir() {
                stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            } else if let Ok(text) = std::fs::read_to_string(&p) {
                files += 1;
                let n = template_openings(&text);
                if n > worst.0 {
                    worst = (n, p.display().to_string());
                }
            }
        }
        println!("{files} headers, deepest template openings {} in {}", worst.0, worst.1);
        assert!(files > 0 && worst.0 <= Budget::default().max_template_depth, "{worst:?}");
    }
}
