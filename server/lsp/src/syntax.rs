//! A document's syntax tree, kept from one version of its text to the next so
//! a change re-parses only what it touched (tree-sitter's incremental
//! parsing): each change is applied to the kept tree as it comes
//! ([`KeptTree::edit`], `Tree::edit` with the change's byte offsets and
//! points), and the next parse starts from it ([`parse`]). A one-line change
//! of a 1 MB file then re-parses in milliseconds instead of the whole file.
//!
//! tree-sitter's points count rows at "\n" only; the rope (`cr_lines`) also
//! breaks lines at a lone "\r". The tree is kept only while the text has no
//! lone "\r" (then rope lines are tree-sitter rows); a text with one is parsed
//! whole every time, as before.

use kernelpro_model::Span;
use kernelpro_source::FnKind;
use kernelpro_source::budget::{self, Budget, Refused};
use ropey::Rope;
use tree_sitter::{InputEdit, Node, Point, Tree};

/// The last tree parsed of a document's text, with every change made since
/// applied to it; none before the first parse, after a change that replaced
/// the whole text, or while the text has a lone "\r".
#[derive(Default)]
pub struct KeptTree(Option<Tree>);

impl KeptTree {
    /// The tree to start the next parse from (a copy: the kept one goes on
    /// taking changes).
    pub fn get(&self) -> Option<Tree> {
        self.0.clone()
    }

    /// Keeps `tree`, parsed from a text without a lone "\r" (see [`parse`]).
    pub fn set(&mut self, tree: Tree) {
        free(self.0.replace(tree));
    }

    pub fn forget(&mut self) {
        free(self.0.take());
    }

    /// Records that bytes `start..end` of `before` (the text as it is still)
    /// are about to be replaced by `new`.
    pub fn edit(&mut self, before: &Rope, start: usize, end: usize, new: &str) {
        let Some(tree) = &mut self.0 else { return };
        let start_position = point(before, start);
        tree.edit(&InputEdit {
            start_byte: start,
            old_end_byte: end,
            new_end_byte: start + new.len(),
            start_position,
            old_end_position: point(before, end),
            new_end_position: advance(start_position, new),
        });
    }

    /// After the change recorded by [`KeptTree::edit`] is made (`after` is
    /// the new text, `new_len` bytes inserted at `start`): forgets the tree if
    /// the change left a lone "\r" (in the inserted text, or just before it).
    pub fn check(&mut self, after: &Rope, start: usize, new_len: usize) {
        if self.0.is_none() {
            return;
        }
        // Only a "\r" from the byte before the change to the change's last byte can have become lone.
        let from = start.saturating_sub(1);
        let to = (start + new_len).min(after.len_bytes());
        let mut bytes = after.bytes_at(from).peekable();
        for _ in from..to {
            let b = bytes.next();
            if b == Some(b'\r') && bytes.peek() != Some(&b'\n') {
                self.forget();
                return;
            }
        }
    }
}

/// Frees `tree` on a blocking thread when there is a runtime: freeing the
/// tree of a large file takes milliseconds (27 ms for 20,000 kernels in a
/// debug build), which must not be spent under the documents' lock nor on a
/// runtime's worker while a hover waits.
pub fn free(tree: Option<Tree>) {
    if let (Some(tree), Ok(runtime)) = (tree, tokio::runtime::Handle::try_current()) {
        runtime.spawn_blocking(move || drop(tree));
    }
}

/// A closed document's tree too is freed off the documents' lock.
impl Drop for KeptTree {
    fn drop(&mut self) {
        free(self.0.take());
    }
}

/// The tree-sitter point of byte `at` of a text without a lone "\r".
fn point(text: &Rope, at: usize) -> Point {
    let row = text.byte_to_line(at);
    Point::new(row, at - text.line_to_byte(row))
}

/// Where the insertion of `new` at `start` ends.
fn advance(start: Point, new: &str) -> Point {
    match new.rfind('\n') {
        None => Point::new(start.row, start.column + new.len()),
        Some(last) => Point::new(start.row + new.matches('\n').count(), new.len() - last - 1),
    }
}

/// Whether `text` has a "\r" not followed by "\n" (a line break for LSP and
/// the rope, not for tree-sitter).
pub fn has_lone_cr(text: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices('\r').any(|(i, _)| bytes.get(i + 1) != Some(&b'\n'))
}

/// The tree of `text` within `budget`'s parse part (its size, template
/// nesting and parse time: `kernelpro_source::budget::parse_tree_from`, the
/// one definition), starting from `old`: the tree of an earlier text with
/// every change since applied ([`KeptTree`]), or none.
pub fn parse(text: &str, old: Option<&Tree>, budget: &Budget) -> Result<Tree, Refused> {
    budget::parse_tree_from(text, old, budget, &|| false)
}

/// One function of an outline: what documentSymbol shows of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outlined {
    pub name: String,
    pub kind: FnKind,
    /// The whole definition, template header included.
    pub span: Span,
    pub name_span: Span,
}

/// The functions defined in `tree` (of `text`), in source order: the
/// functions of `kernelpro_source::of_tree`, with their names, kinds and
/// spans as it gives them (a test holds the two equal), without the rest
/// (parameters, bodies) that documentSymbol does not show. The walk stops at
/// each definition (a body is never entered) and keeps each node's parent
/// on an explicit stack (nesting is the user's: no recursion).
pub fn outline(tree: &Tree, text: &str) -> Vec<Outlined> {
    // Kinds and fields by id, looked up once (by name, each call scans the grammar's names).
    let language = tree.language();
    let ids = Ids {
        definition: language.id_for_node_kind("function_definition", true),
        template: language.id_for_node_kind("template_declaration", true),
        function_declarator: language.id_for_node_kind("function_declarator", true),
        declarator: language.field_id_for_name("declarator").map_or(0, |f| f.get()),
    };
    let root = tree.root_node();
    let mut out = Vec::new();
    let mut stack = vec![(root, None)];
    let mut cursor = root.walk();
    while let Some((node, parent)) = stack.pop() {
        if node.kind_id() == ids.definition {
            out.extend(outlined(node, parent, text, &ids));
            continue;
        }
        let at = stack.len();
        stack.extend(node.children(&mut cursor).map(|c| (c, Some(node))));
        stack[at..].reverse();
    }
    out
}

/// The node kinds and the field [`outline`] looks for, by id.
struct Ids {
    definition: u16,
    template: u16,
    function_declarator: u16,
    declarator: u16,
}

fn outlined<'t>(node: Node<'t>, parent: Option<Node<'t>>, text: &str, ids: &Ids) -> Option<Outlined> {
    let declarator = function_declarator(node.child_by_field_id(ids.declarator)?, ids)?;
    let name_node = declarator.child_by_field_id(ids.declarator)?;
    let name = text.get(name_node.byte_range())?.rsplit("::").next()?.trim().to_string();
    let head = text.get(node.start_byte()..declarator.start_byte())?;
    let (mut global, mut device, mut host) = (false, false, false);
    for word in head.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        match word {
            "__global__" => global = true,
            "__device__" => device = true,
            "__host__" => host = true,
            _ => {}
        }
    }
    let kind = match (global, device, host) {
        (true, _, _) => FnKind::Kernel,
        (false, true, true) => FnKind::HostDevice,
        (false, true, false) => FnKind::Device,
        _ => FnKind::Host,
    };
    let outer = parent.filter(|p| p.kind_id() == ids.template).unwrap_or(node);
    Some(Outlined {
        name,
        kind,
        span: kernelpro_source::span_of(outer),
        name_span: kernelpro_source::span_of(name_node),
    })
}

/// The first `function_declarator` at or under `node`, in source order.
fn function_declarator<'t>(node: Node<'t>, ids: &Ids) -> Option<Node<'t>> {
    if node.kind_id() == ids.function_declarator {
        return Some(node); // the usual case: no walk
    }
    let mut stack = vec![node];
    let mut cursor = node.walk();
    while let Some(n) = stack.pop() {
        if n.kind_id() == ids.function_declarator {
            return Some(n);
        }
        let at = stack.len();
        stack.extend(n.named_children(&mut cursor));
        stack[at..].reverse();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What documentSymbol shows of a tree ([`outline`]), checked against the
    /// functions `kernelpro_source::of_tree` finds (the rest of the server's).
    fn checked_outline(tree: &Tree, text: &str) -> Vec<Outlined> {
        let ours = outline(tree, text);
        let source: Vec<Outlined> = kernelpro_source::of_tree(tree, text)
            .functions
            .into_iter()
            .map(|f| Outlined { name: f.name, kind: f.kind, span: f.span, name_span: f.name_span })
            .collect();
        assert_eq!(ours, source, "the outline differs from the source crate's functions on {text:?}");
        ours
    }

    /// A small deterministic generator (xorshift), so a failure replays.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    /// Pieces an edit inserts: whole kernels, parts of them, line breaks
    /// ("\r\n" too; a lone "\r" comes from a change that cuts one, and
    /// `lone_cr_forgets_the_tree`), braces, comments, templates, non-ASCII.
    const PIECES: &[&str] = &[
        "__global__ void g(float* y) { y[0] = 1.0f; }\n",
        "__device__ float h(float x) { return x * 2; }\n",
        "template <typename T>\n__global__ void t(T* y) { y[1] = T(); }\n",
        "__host__ __device__ int hd() { return 1; }\r\n",
        "void host(int n) {\n  for (int i = 0; i < n; ++i) {}\n}\n",
        "namespace ns {\n",
        "}\n",
        "{",
        "}",
        "/* ",
        " */",
        "// comment é😀\n",
        "\n",
        "\r\n",
        "__global__",
        " void ",
        "k(",
        ")",
        ";",
        "x",
        "é",
        "",
    ];

    fn kernels(n: usize) -> String {
        (0..n).map(|i| format!("__global__ void k{i}(float* y) {{ y[{i}] = {i}.0f; }}\n")).collect()
    }

    /// After a sequence of random changes, each applied to the kept tree as
    /// the document applies it (`KeptTree::edit`, then `check`) and re-parsed
    /// from it now and then, the outline of the incremental tree is the
    /// outline of a fresh parse of the same text: names, kinds and spans.
    #[test]
    fn incremental_trees_give_the_outline_of_a_fresh_parse() {
        let budget = Budget::default();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut reparses = 0;
        let mut incremental = 0;
        for round in 0..40 {
            let mut text = Rope::from_str(&kernels(20 + round));
            let mut kept = KeptTree::default();
            for step in 0..60 {
                // A change at a random char boundary: replace up to 40 chars by up to 3 pieces.
                let len = text.len_chars();
                let start = rng.below(len + 1);
                let end = (start + rng.below(41).min(len - start)).min(len);
                let new: String = (0..rng.below(4)).map(|_| PIECES[rng.below(PIECES.len())]).collect();
                let (start_byte, end_byte) = (text.char_to_byte(start), text.char_to_byte(end));
                kept.edit(&text, start_byte, end_byte, &new);
                text.remove(start..end);
                text.insert(start, &new);
                kept.check(&text, start_byte, new.len());
                if step % 3 != 0 {
                    continue;
                }
                let now = text.to_string();
                let old = kept.get();
                incremental += old.is_some() as usize;
                let tree = parse(&now, old.as_ref(), &budget).unwrap();
                let fresh = parse(&now, None, &budget).unwrap();
                assert_eq!(
                    checked_outline(&tree, &now),
                    checked_outline(&fresh, &now),
                    "round {round}, step {step}: the incremental tree's outline differs on {now:?}"
                );
                // The whole trees too, error recovery included.
                assert_eq!(tree.root_node().to_sexp(), fresh.root_node().to_sexp(), "round {round}, step {step}");
                // The document keeps a parse only of a text without a lone "\r".
                if !has_lone_cr(&now) {
                    kept.set(tree);
                } else {
                    assert!(kept.get().is_none(), "a tree was kept across a lone CR: {now:?}");
                }
                reparses += 1;
            }
        }
        // Most re-parses started from a kept tree (the test tests the incremental path).
        assert!(incremental * 2 > reparses, "{incremental} of {reparses} re-parses were incremental");
    }

    /// A one-line change of 20,000 kernels: the re-parse from the kept tree
    /// finds the 20,000 and the new one where a fresh parse does.
    #[test]
    fn one_line_change_of_twenty_thousand_kernels() {
        let budget = Budget::default();
        let mut text = Rope::from_str(&kernels(20_000));
        let first = parse(&text.to_string(), None, &budget).unwrap();
        let mut kept = KeptTree::default();
        kept.set(first);
        let at = text.line_to_byte(10_000);
        let new = "__global__ void inserted(float* y) { y[0] = 0; }\n";
        kept.edit(&text, at, at, new);
        text.insert(text.byte_to_char(at), new);
        kept.check(&text, at, new.len());
        let now = text.to_string();
        let tree = parse(&now, kept.get().as_ref(), &budget).unwrap();
        let got = checked_outline(&tree, &now);
        assert_eq!(got.len(), 20_001);
        assert_eq!((got[10_000].name.as_str(), got[10_000].span.start.line), ("inserted", 10_000));
        assert_eq!((got[20_000].name.as_str(), got[20_000].span.start.line), ("k19999", 20_000));
        assert_eq!(got, checked_outline(&parse(&now, None, &budget).unwrap(), &now));
    }

    /// The outline is the source crate's functions on every `.cu`/`.cuh` of
    /// the repository (kernels, CUTLASS-style templates, the naive corpus) and
    /// on shapes it must walk through or past.
    #[test]
    fn outline_is_the_source_crates_functions() {
        let budget = Budget::default();
        let shapes = "namespace a { namespace b {\ntemplate <int N> __global__ void t(float* y) {}\n} }\n\
             extern \"C\" { __device__ __host__ int hd(int) { return 0; } }\n\
             #ifdef X\n__device__ float d() { return 1; }\n#else\nvoid h() {}\n#endif\n\
             struct S { __device__ void m() {} static void s(); };\nvoid S::s() {}\n\
             int (*fp(int x))(int) { return 0; }\n__global__ void __launch_bounds__(256) lb() {}\n\
             void broken( { }\n__global__ void after() {}\n";
        let mut checked = 0;
        let mut texts = vec![shapes.to_string()];
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for dir in ["tests/fixtures", "bench", "server/recipes", "examples"] {
            let mut stack = vec![root.join(dir)];
            while let Some(d) = stack.pop() {
                for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                    let path = entry.path();
                    if path.is_dir() {
                        stack.push(path);
                    } else if path.extension().is_some_and(|e| e == "cu" || e == "cuh") {
                        texts.extend(std::fs::read_to_string(&path).ok());
                    }
                }
            }
        }
        for text in &texts {
            if let Ok(tree) = parse(text, None, &budget) {
                checked += checked_outline(&tree, text).len();
            }
        }
        assert!(texts.len() > 100 && checked > 500, "{} files, {checked} functions", texts.len());
    }

    #[test]
    fn lone_cr_forgets_the_tree() {
        let budget = Budget::default();
        let mut text = Rope::from_str("__global__ void a() {}\r\n__global__ void b() {}\n");
        let mut kept = KeptTree::default();
        kept.set(parse(&text.to_string(), None, &budget).unwrap());
        // A "\r\n" inserted keeps it; deleting the "\n" of a "\r\n" leaves a lone "\r".
        kept.edit(&text, 0, 0, "\r\n");
        text.insert(0, "\r\n");
        kept.check(&text, 0, 2);
        assert!(kept.get().is_some());
        let lf = text.to_string().find("{}\r\n").unwrap() + 3;
        kept.edit(&text, lf, lf + 1, "");
        text.remove(lf..lf + 1);
        kept.check(&text, lf, 0);
        assert!(kept.get().is_none());
        assert!(has_lone_cr(&text.to_string()) && !has_lone_cr("a\r\nb\n") && has_lone_cr("a\r"));
    }
}
