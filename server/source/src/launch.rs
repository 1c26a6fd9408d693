//! The one reading of the launches a file states: every
//! `kernel<<<grid, block[, smem[, stream]]>>>(args)` site and a kernel's
//! `__launch_bounds__(max[, min])`. Plain data (byte ranges and spans of the
//! expressions); what an expression is worth is each reader's question (the
//! lints fold the file's constants and the caller's locals, the kernel model
//! its macros, the optimizer rewrites the text).

use crate::{Function, span_of};
use kernelpro_model::Span;
use std::ops::Range;
use tree_sitter::{Node, Tree};

/// One expression of a launch, where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub bytes: Range<usize>,
    pub span: Span,
}

impl Part {
    fn of(node: Node) -> Part {
        Part { bytes: node.byte_range(), span: span_of(node) }
    }
}

/// One `kernel<<<…>>>(…)` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchSite {
    /// The launched kernel's plain name: no namespace, no template arguments.
    pub kernel: String,
    /// The `<<<…>>>`, chevrons included.
    pub launch: Part,
    /// The launch arguments in order: grid, block, dynamic shared memory, stream (comments left out).
    pub config: Vec<Part>,
    /// The kernel arguments (comments left out).
    pub args: Vec<Part>,
    /// The function definition the call sits in, if any.
    pub caller: Option<Range<usize>>,
}

impl LaunchSite {
    pub fn grid(&self) -> Option<&Part> {
        self.config.first()
    }
    pub fn block(&self) -> Option<&Part> {
        self.config.get(1)
    }
    pub fn smem(&self) -> Option<&Part> {
        self.config.get(2)
    }
}

/// A kernel's `__launch_bounds__(max[, min])`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchBounds {
    /// The whole attribute, `__launch_bounds__(256, 2)`.
    pub attribute: Part,
    /// The most threads a block may have.
    pub max_threads: Part,
    /// The fewest resident blocks per SM asked for.
    pub min_blocks: Option<Part>,
}

/// Every launch site of the file, in source order.
pub fn sites(tree: &Tree, text: &str) -> Vec<LaunchSite> {
    let mut out = Vec::new();
    let mut stack = vec![(tree.root_node(), None::<Range<usize>>)];
    while let Some((node, caller)) = stack.pop() {
        let caller = if node.kind() == "function_definition" { Some(node.byte_range()) } else { caller };
        if node.kind() == "call_expression"
            && let Some(launch) = child_of_kind(node, "kernel_call_syntax")
            && let Some(callee) = node.child_by_field_name("function")
        {
            let written = &text[callee.byte_range()];
            let without_args = written.split('<').next().unwrap_or(written);
            out.push(LaunchSite {
                kernel: without_args.rsplit("::").next().unwrap_or(without_args).trim().to_string(),
                launch: Part::of(launch),
                config: named(launch).into_iter().map(Part::of).collect(),
                args: node
                    .child_by_field_name("arguments")
                    .map(named)
                    .unwrap_or_default()
                    .into_iter()
                    .map(Part::of)
                    .collect(),
                caller: caller.clone(),
            });
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor).map(|c| (c, caller.clone())));
    }
    out.sort_by_key(|s| s.launch.bytes.start);
    out
}

/// The text with every host launch statement run twice, `k<<<…>>>(…);` as
/// `{ for (int kp_twice_ = 0; kp_twice_ < 2; ++kp_twice_) k<<<…>>>(…); }`, on
/// the same lines, and how many were doubled. The in-process profiler reads a
/// kernel's per-instruction counters on its second launch in a process (the
/// H100 gave none on a first), so a program's profile runs this copy; a launch
/// inside an expression, a macro or device code is left as written.
pub fn launched_twice(text: &str) -> (String, usize) {
    let Some(tree) = crate::parse_tree(text) else { return (text.to_string(), 0) };
    let in_device_code = |caller: &Option<Range<usize>>| {
        caller.as_ref().is_some_and(|c| {
            let head = text[c.clone()].split('{').next().unwrap_or("");
            head.contains("__global__") || head.contains("__device__")
        })
    };
    let mut statements: Vec<Range<usize>> = sites(&tree, text)
        .iter()
        .filter(|s| !in_device_code(&s.caller))
        .filter_map(|s| {
            let call = node_at(&tree, &s.launch.bytes)?.parent()?;
            let statement = call.parent().filter(|p| p.kind() == "expression_statement")?;
            (statement.named_child_count() == 1).then(|| statement.byte_range())
        })
        .collect();
    statements.sort_by_key(|r| std::cmp::Reverse(r.start));
    statements.dedup();
    let mut out = text.to_string();
    for r in &statements {
        out.insert_str(r.end, " }");
        out.insert_str(r.start, "{ for (int kp_twice_ = 0; kp_twice_ < 2; ++kp_twice_) ");
    }
    (out, statements.len())
}

/// What a program's host build reads of `text`: the text with the bodies of
/// its kernels and `__device__`-only functions emptied (`{}`), or `None`
/// where the file does not parse cleanly. Two texts with the same host part
/// build the same host code (the kernels' stubs, the host functions, the
/// registrations), so a build may keep the host object of one and replace
/// only its device code (`kernelpro_measure::program`).
pub fn host_part(text: &str) -> Option<String> {
    let tree = crate::parse_tree(text)?;
    let file = crate::of_tree(&tree, text);
    if file.has_syntax_errors {
        return None;
    }
    let mut bodies: Vec<(usize, usize)> = file
        .functions
        .iter()
        .filter(|f| matches!(f.kind, crate::FnKind::Kernel | crate::FnKind::Device))
        .filter_map(|f| f.body_bytes)
        .collect();
    bodies.sort_by_key(|b| std::cmp::Reverse(b.0));
    let mut out = text.to_string();
    for (start, end) in bodies {
        out.replace_range(start..end, "{}");
    }
    Some(out)
}

/// `kernel`'s `__launch_bounds__`, if its definition has one.
pub fn bounds(tree: &Tree, kernel: &Function) -> Option<LaunchBounds> {
    let head_end = kernel.body_bytes.map_or(kernel.end_byte, |(s, _)| s);
    let mut stack: Vec<Node> =
        tree.root_node().descendant_for_byte_range(kernel.start_byte, head_end).into_iter().collect();
    while let Some(node) = stack.pop() {
        if node.kind() == "launch_bounds" && node.end_byte() <= head_end {
            let args = named(node);
            return Some(LaunchBounds {
                attribute: Part::of(node),
                max_threads: Part::of(*args.first()?),
                min_blocks: args.get(1).map(|n| Part::of(*n)),
            });
        }
        // The attribute sits between the return type and the declarator, never in the body.
        if node.kind() == "compound_statement" {
            continue;
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    None
}

/// The outermost node of `tree` spanning exactly `bytes` (a [`Part`]'s expression, a site's caller).
pub fn node_at<'t>(tree: &'t Tree, bytes: &Range<usize>) -> Option<Node<'t>> {
    let mut node = tree.root_node().descendant_for_byte_range(bytes.start, bytes.end)?;
    while let Some(parent) = node.parent().filter(|p| p.byte_range() == *bytes) {
        node = parent;
    }
    (node.byte_range() == *bytes).then_some(node)
}

fn child_of_kind<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut cursor = node.walk();
    node.children(&mut cursor).find(|c| c.kind() == kind)
}

fn named(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).filter(|n| n.kind() != "comment").collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    /// Each site as `kernel@line <<<config>>> (args) in caller`, then each kernel's bounds.
    fn check(text: &str, expected: Expect) {
        let tree = crate::parse_tree(text).unwrap();
        let show = |parts: &[Part]| parts.iter().map(|p| &text[p.bytes.clone()]).collect::<Vec<_>>().join(" | ");
        let mut out = String::new();
        for s in sites(&tree, text) {
            let caller = s.caller.map(|c| text[c].split('(').next().unwrap_or("").trim().to_string());
            out += &format!(
                "{}@{} <<<{}>>> ({}) in {:?}\n",
                s.kernel,
                s.launch.span.start.line,
                show(&s.config),
                show(&s.args),
                caller.unwrap_or_default()
            );
        }
        for k in crate::of_tree(&tree, text).kernels() {
            if let Some(b) = bounds(&tree, k) {
                let min = b.min_blocks.map(|m| text[m.bytes].to_string());
                out += &format!(
                    "{}: {} max {} min {:?}\n",
                    k.name, &text[b.attribute.bytes], &text[b.max_threads.bytes], min
                );
            }
        }
        expected.assert_eq(&out);
    }

    /// Host launch statements run twice on their own lines; launches in an
    /// expression or in device code stay as written.
    #[test]
    fn host_launch_statements_run_twice() {
        let text = "__global__ void k(float* y) { y[0] = 1; }\n\
                    __global__ void parent(float* y) { k<<<1, 1>>>(y); }\n\
                    int main() {\n\
                      float* y;\n\
                      if (y) k<<<1, 32>>>(y);\n\
                      for (int i = 0; i < 3; i++) { k<<<dim3(2), 64, 0>>>(y); }\n\
                      auto e = (k<<<1, 1>>>(y), 0);\n\
                      return 0;\n\
                    }\n";
        let (twice, n) = launched_twice(text);
        expect![[r#"
            __global__ void k(float* y) { y[0] = 1; }
            __global__ void parent(float* y) { k<<<1, 1>>>(y); }
            int main() {
            float* y;
            if (y) { for (int kp_twice_ = 0; kp_twice_ < 2; ++kp_twice_) k<<<1, 32>>>(y); }
            for (int i = 0; i < 3; i++) { { for (int kp_twice_ = 0; kp_twice_ < 2; ++kp_twice_) k<<<dim3(2), 64, 0>>>(y); } }
            auto e = (k<<<1, 1>>>(y), 0);
            return 0;
            }
        "#]]
        .assert_eq(&twice);
        assert_eq!(n, 2);
        assert_eq!(twice.lines().count(), text.lines().count());
    }

    /// A kernel's or a `__device__` function's body is not the host's; a
    /// `__host__ __device__` function's and a host function's are.
    #[test]
    fn the_host_part_empties_device_bodies_only() {
        let text = "__device__ float sq(float v) { return v * v; }\n\
                    __host__ __device__ float twice(float v) { return 2 * v; }\n\
                    __global__ void k(float* y) { y[0] = sq(1); }\n\
                    int main() { k<<<1, 1>>>(0); return 0; }\n";
        expect![[r#"
            __device__ float sq(float v) {}
            __host__ __device__ float twice(float v) { return 2 * v; }
            __global__ void k(float* y) {}
            int main() { k<<<1, 1>>>(0); return 0; }
        "#]]
        .assert_eq(&host_part(text).unwrap());
        let edited = text.replace("y[0] = sq(1);", "y[0] = sq(2) + 1;");
        assert_eq!(host_part(&edited), host_part(text));
        assert_ne!(host_part(&text.replace("2 * v", "3 * v")), host_part(text));
        assert_eq!(host_part("__global__ void k( {"), None);
    }

    #[test]
    fn sites_and_bounds() {
        check(
            "#define B 128\n\
             template <typename T> __global__ void __launch_bounds__(B, 2) k(T* y, int n) { y[0] = n; }\n\
             __global__ void __launch_bounds__(256) plain(float* y) { y[0] = 1; }\n\
             namespace ns { __global__ void q(int* p) {} }\n\
             void run(float* d, int n, cudaStream_t s) {\n\
             \x20 dim3 g((n + B - 1) / B);\n\
             \x20 k<float><<<g, B, 0, s>>>(d, n);\n\
             \x20 ns::q<<</* grid */ 1,\n    dim3(32, 8)>>>(nullptr);\n\
             }\n\
             int main() { plain<<<1, 64>>>(0); }\n",
            expect![[r#"
                k@6 <<<g | B | 0 | s>>> (d | n) in "void run"
                q@7 <<<1 | dim3(32, 8)>>> (nullptr) in "void run"
                plain@10 <<<1 | 64>>> (0) in "int main"
                k: __launch_bounds__(B, 2) max B min Some("2")
                plain: __launch_bounds__(256) max 256 min None
            "#]],
        );
    }
}
