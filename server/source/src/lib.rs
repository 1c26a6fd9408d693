//! The structure of a `.cu` file from tree-sitter-cuda: kernels, device and
//! host functions, their parameters and spans. Parse errors never block
//! anything: tree-sitter recovers and nvcc stays the judge of errors.
#![forbid(unsafe_code)]

pub mod budget;
pub mod canonical;
pub mod kernel_model;
pub mod launch;
pub mod parsed;
pub mod prints;
pub mod syntax;
pub mod units;

use kernelpro_model::{Pos, Span};
use serde::Serialize;
use tree_sitter::{Node, Tree};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FnKind {
    /// `__global__`
    Kernel,
    /// `__device__` only
    Device,
    /// `__host__ __device__`
    HostDevice,
    /// no CUDA qualifier, or `__host__`
    Host,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Param {
    pub name: String,
    /// The declared type without the name, e.g. `const float *`.
    pub ty: String,
    /// Base type words without qualifiers, e.g. `float`.
    pub base: String,
    pub pointer: bool,
    pub is_const: bool,
    pub restrict: bool,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Function {
    pub name: String,
    pub kind: FnKind,
    /// The whole definition, template header included.
    pub span: Span,
    pub name_span: Span,
    /// Byte offset of the name: where an attribute of the kernel (`__launch_bounds__`,
    /// `__cluster_dims__`) is inserted.
    pub name_byte: usize,
    pub body: Option<Span>,
    pub params: Vec<Param>,
    pub is_template: bool,
    pub start_byte: usize,
    pub end_byte: usize,
    /// Byte range of the body's braces, for rewrites.
    pub body_bytes: Option<(usize, usize)>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SourceFile {
    pub functions: Vec<Function>,
    pub has_main: bool,
    /// tree-sitter had to recover from syntax errors (informational only).
    pub has_syntax_errors: bool,
}

impl SourceFile {
    pub fn kernels(&self) -> impl Iterator<Item = &Function> {
        self.functions.iter().filter(|f| f.kind == FnKind::Kernel)
    }
    pub fn kernel(&self, name: &str) -> Option<&Function> {
        self.kernels().find(|f| f.name == name)
    }
    /// The innermost function whose definition covers the 0-based line.
    pub fn function_at_line(&self, line: u32) -> Option<&Function> {
        self.functions.iter().filter(|f| f.span.contains_line(line)).min_by_key(|f| f.span.end.line - f.span.start.line)
    }
}

/// The tree of `text`, or `None` past the parse's share of the analysis
/// budget (a text over 8 MiB, template arguments nested past 64, more than
/// 10 s of parsing): every parse of a user's text goes through here or
/// [`budget::check`], so no caller can spend gigabytes on one.
/// Inside a [`parsed::parse_once`] scope, a text already parsed there is not parsed again.
pub fn parse_tree(text: &str) -> Option<Tree> {
    if let Some(tree) = parsed::kept_tree(text) {
        return Some(tree);
    }
    let tree = budget::parse_tree_within(text, &budget::Budget::default(), &|| false).ok()?;
    parsed::keep_tree(text, &tree);
    Some(tree)
}

/// The structure of `text` (inside a [`parsed::parse_once`] scope, read once per text).
pub fn parse(text: &str) -> SourceFile {
    if let Some(file) = parsed::kept_file(text) {
        return file;
    }
    let Some(tree) = parse_tree(text) else {
        return SourceFile::default();
    };
    let file = of_tree(&tree, text);
    parsed::keep_file(text, &file);
    file
}

/// The structure of `text` from its tree (one parsed within a [`budget::Budget`]).
pub fn of_tree(tree: &Tree, text: &str) -> SourceFile {
    let root = tree.root_node();
    let mut file = SourceFile { has_syntax_errors: root.has_error(), ..Default::default() };
    collect(root, text, &mut file);
    file.has_main = file.functions.iter().any(|f| f.name == "main" && f.kind == FnKind::Host);
    file
}

/// Every function definition under `root`, in source order. An explicit stack,
/// not recursion: nesting depth is the user's (10,000 namespaces or braces must
/// not overflow a thread's stack), and each node carries its parent so no
/// `Node::parent` (a walk down from the root, quadratic over a file) is needed.
fn collect(root: Node, text: &str, file: &mut SourceFile) {
    let mut stack = vec![(root, None)];
    let mut cursor = root.walk();
    while let Some((node, parent)) = stack.pop() {
        if node.kind() == "function_definition" {
            if let Some(f) = function(node, parent, text) {
                file.functions.push(f);
            }
            continue;
        }
        let at = stack.len();
        stack.extend(node.children(&mut cursor).map(|c| (c, Some(node))));
        stack[at..].reverse();
    }
}

pub fn span_of(node: Node) -> Span {
    let (s, e) = (node.start_position(), node.end_position());
    Span::new(Pos::new(s.row as u32, s.column as u32), Pos::new(e.row as u32, e.column as u32))
}

fn function<'t>(node: Node<'t>, parent: Option<Node<'t>>, text: &str) -> Option<Function> {
    let declarator = find_function_declarator(node.child_by_field_name("declarator")?)?;
    let name_node = declarator.child_by_field_name("declarator")?;
    let name = text[name_node.byte_range()].rsplit("::").next()?.trim().to_string();
    let head = &text[node.start_byte()..declarator.start_byte()];
    let has = |w: &str| head.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|t| t == w);
    let kind = if has("__global__") {
        FnKind::Kernel
    } else if has("__device__") && has("__host__") {
        FnKind::HostDevice
    } else if has("__device__") {
        FnKind::Device
    } else {
        FnKind::Host
    };
    let outer = match parent {
        Some(p) if p.kind() == "template_declaration" => p,
        _ => node,
    };
    let params = declarator
        .child_by_field_name("parameters")
        .map(|list| {
            let mut cursor = list.walk();
            list.named_children(&mut cursor)
                .filter(|p| p.kind() == "parameter_declaration")
                .filter_map(|p| param(p, text))
                .collect()
        })
        .unwrap_or_default();
    let body = node.child_by_field_name("body");
    Some(Function {
        name,
        kind,
        span: span_of(outer),
        name_span: span_of(name_node),
        name_byte: name_node.start_byte(),
        body: body.map(span_of),
        params,
        is_template: outer.kind() == "template_declaration",
        start_byte: outer.start_byte(),
        end_byte: outer.end_byte(),
        body_bytes: body.map(|b| (b.start_byte(), b.end_byte())),
    })
}

/// The first `function_declarator` at or under `node`, in source order (a
/// declarator may nest in parentheses as deep as the user writes them).
fn find_function_declarator(node: Node) -> Option<Node> {
    let mut stack = vec![node];
    let mut cursor = node.walk();
    while let Some(n) = stack.pop() {
        if n.kind() == "function_declarator" {
            return Some(n);
        }
        let at = stack.len();
        stack.extend(n.named_children(&mut cursor));
        stack[at..].reverse();
    }
    None
}

fn param(node: Node, text: &str) -> Option<Param> {
    let full = &text[node.byte_range()];
    let mut decl = node.child_by_field_name("declarator");
    let mut pointer = false;
    let mut name = String::new();
    let mut name_range = None;
    while let Some(d) = decl {
        match d.kind() {
            "identifier" => {
                name = text[d.byte_range()].to_string();
                name_range = Some(d.byte_range());
                break;
            }
            "pointer_declarator" | "array_declarator" | "abstract_pointer_declarator" => pointer = true,
            _ => {}
        }
        decl = d.child_by_field_name("declarator").or_else(|| {
            let mut c = d.walk();
            d.named_children(&mut c).find(|n| n.kind() == "identifier" || n.kind().ends_with("declarator"))
        });
    }
    let base = node.child_by_field_name("type").map(|t| text[t.byte_range()].to_string()).unwrap_or_default();
    // The type is the declaration with the name's own bytes cut out.
    let ty = match name_range {
        Some(r) => format!("{}{}", &text[node.start_byte()..r.start], &text[r.end..node.end_byte()]),
        None => full.to_string(),
    };
    let ty = ty.split_whitespace().collect::<Vec<_>>().join(" ");
    let before_star = ty.split('*').next().unwrap_or("");
    Some(Param {
        is_const: before_star.split_whitespace().any(|w| w == "const"),
        restrict: ty.contains("__restrict__") || ty.contains("restrict"),
        pointer: pointer || ty.contains('*'),
        name,
        ty,
        base,
        span: span_of(node),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    fn check(src: &str, expected: expect_test::Expect) {
        let file = parse(src);
        let got: Vec<String> = file
            .functions
            .iter()
            .map(|f| {
                let params: Vec<String> = f
                    .params
                    .iter()
                    .map(|p| {
                        format!(
                            "{}: {}{}{}{}",
                            p.name,
                            p.base,
                            if p.pointer { "*" } else { "" },
                            if p.is_const { " const" } else { "" },
                            if p.restrict { " restrict" } else { "" }
                        )
                    })
                    .collect();
                format!(
                    "{:?} {} L{}-{} name@{}:{} tpl={} ({})",
                    f.kind,
                    f.name,
                    f.span.start.line,
                    f.span.end.line,
                    f.name_span.start.line,
                    f.name_span.start.col,
                    f.is_template,
                    params.join(", ")
                )
            })
            .collect();
        expected.assert_eq(&format!("main={} errors={}\n{}", file.has_main, file.has_syntax_errors, got.join("\n")));
    }

    #[test]
    fn functions_and_params() {
        check(
            "template<int B> __global__ void __launch_bounds__(256) k(float* __restrict__ y, const float* x, float a, int n, int nn) { y[0]=1; }\n__device__ inline float h(float x) { return x; }\nstatic __host__ __device__ int both(int a){return a;}\nint main() { k<<<1,1>>>(0,0,1.f,1); }\nnamespace ns { __global__ void inner(int* p) {} }\n",
            expect![[r#"
                main=true errors=false
                Kernel k L0-0 name@0:55 tpl=true (y: float* restrict, x: float* const, a: float, n: int, nn: int)
                Device h L1-1 name@1:24 tpl=false (x: float)
                HostDevice both L2-2 name@2:31 tpl=false (a: int)
                Host main L3-3 name@3:4 tpl=false ()
                Kernel inner L4-4 name@4:31 tpl=false (p: int*)"#]],
        );
    }

    /// Runs `f` on a thread with a tokio worker's stack (2 MiB), where the server parses.
    fn on_worker_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new().stack_size(2 << 20).spawn(f).unwrap().join().expect("no stack overflow")
    }

    /// A kernel after 100,000 levels of nesting of each kind: tree-sitter and the
    /// walks above must neither overflow the stack nor lose the kernel.
    #[test]
    fn deep_nesting_does_not_overflow_the_stack() {
        const DEPTH: usize = 100_000;
        let tail = "__global__ void after(float* y) { y[0] = 1; }\n";
        let cases = [
            (
                "parentheses in a body",
                format!("__global__ void k(float* y) {{ y[0] = {}1{}; }}\n", "(".repeat(DEPTH), ")".repeat(DEPTH)),
            ),
            (
                "braces in a body",
                format!("__global__ void k(float* y) {{ {} }}\n", "{".repeat(DEPTH) + &"}".repeat(DEPTH)),
            ),
            ("top-level parentheses", format!("{}{};\n", "(".repeat(DEPTH), ")".repeat(DEPTH))),
            ("top-level braces", format!("{}{}\n", "{".repeat(DEPTH), "}".repeat(DEPTH))),
            ("namespaces", format!("{}{}\n", "namespace a { ".repeat(DEPTH / 10), "}".repeat(DEPTH / 10))),
            (
                "a declarator in parentheses",
                format!("__device__ int {}f{}(int x) {{ return x; }}\n", "(".repeat(DEPTH), ")".repeat(DEPTH)),
            ),
            ("a long sum", format!("__global__ void k(float* y) {{ y[0] = 1{}; }}\n", " + 1".repeat(DEPTH))),
        ];
        for (what, text) in cases {
            let text = text + tail;
            let file = on_worker_stack(move || parse(&text));
            assert!(file.kernel("after").is_some(), "{what}: the kernel after it is lost");
        }
        // Unclosed: tree-sitter may swallow the rest, but nothing overflows.
        for open in ["(", "{", "[", "namespace a { "] {
            let text = open.repeat(DEPTH) + tail;
            on_worker_stack(move || parse(&text));
        }
    }

    #[test]
    fn unbalanced_braces_still_find_kernels() {
        check(
            "__global__ void ok(float* y) { y[0] = 1; }\n__global__ void broken(float* y) { if (1) { y[0] = 2; }\n",
            expect![[r#"
                main=false errors=true
                Kernel ok L0-0 name@0:16 tpl=false (y: float*)
                Kernel broken L1-1 name@1:16 tpl=false (y: float*)"#]],
        );
    }
}
