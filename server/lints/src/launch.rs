//! Where a kernel's launch comes from when occupancy needs it, best first:
//! the launch spec (the caller knows it), an in-file `<<<grid, block, smem>>>`
//! launch site whose block folds to a constant, the kernel's
//! `__launch_bounds__` maximum, else the `blockSize` setting. Dynamic shared
//! memory is known from the spec or the launch site's third argument;
//! otherwise it stays unknown (`None`), never guessed.

use crate::syntax::{Syntax, descendants};
use kernelpro_source::launch::{Part, node_at};
use kernelpro_source::{Function, SourceFile};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use tree_sitter::Node;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// Threads per block.
    pub block: u32,
    /// Bytes of dynamic shared memory per block; `None` when unknown.
    pub smem: Option<u32>,
    pub from: LaunchFrom,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LaunchFrom {
    Spec,
    /// A `<<<…>>>` launch site on this 0-based line of the file it was found in.
    Site {
        line: u32,
    },
    LaunchBounds,
    Setting,
}

impl LaunchFrom {
    /// `the launch spec`, `the launch on line 54`, … (lines 1-based, as editors show them).
    pub fn describe(&self) -> String {
        match self {
            LaunchFrom::Spec => "the launch spec".into(),
            LaunchFrom::Site { line } => format!("the launch on line {}", line + 1),
            LaunchFrom::LaunchBounds => "its `__launch_bounds__` maximum".into(),
            LaunchFrom::Setting => {
                "the blockSize setting: no launch spec, `<<<…>>>` launch or `__launch_bounds__` says".into()
            }
        }
    }
}

impl Launch {
    pub fn assumed(block: u32) -> Launch {
        Launch { block, smem: None, from: LaunchFrom::Setting }
    }
}

/// The launches this file's text shows for its own kernels: a launch site
/// with a constant block (the first such site), else `__launch_bounds__`.
/// `kernels` must be this text's (their byte offsets are looked up in it).
pub fn in_file<'k>(
    text: &str,
    source: &SourceFile,
    kernels: impl IntoIterator<Item = &'k Function>,
) -> HashMap<String, Launch> {
    if !text.contains("<<<") && !text.contains("__launch_bounds__") {
        return HashMap::new();
    }
    let Some(syntax) = Syntax::parse(text) else {
        return HashMap::new();
    };
    let constants = syntax.constants();
    let sites = sites(&syntax, source, &constants);
    let mut out = HashMap::new();
    for kernel in kernels {
        if let Some(site) = sites.get(&kernel.name) {
            out.insert(kernel.name.clone(), *site);
        } else if let Some(max) = launch_bounds(&syntax, kernel, &constants) {
            out.insert(kernel.name.clone(), Launch { block: max, smem: None, from: LaunchFrom::LaunchBounds });
        }
    }
    out
}

/// The first `<<<…>>>` launch with a constant block of each kernel this text
/// launches, by plain name (kernels defined elsewhere included).
pub fn launch_sites(text: &str, source: &SourceFile) -> HashMap<String, Launch> {
    if !text.contains("<<<") {
        return HashMap::new();
    }
    let Some(syntax) = Syntax::parse(text) else {
        return HashMap::new();
    };
    let constants = syntax.constants();
    sites(&syntax, source, &constants)
}

fn sites(syntax: &Syntax, source: &SourceFile, constants: &HashMap<String, i64>) -> HashMap<String, Launch> {
    let mut sites: HashMap<String, Launch> = HashMap::new();
    for site in kernelpro_source::launch::sites(&syntax.tree, syntax.text) {
        if sites.contains_key(&site.kernel) {
            continue;
        }
        let line = site.launch.span.start.line;
        let node = |part: &Part| node_at(&syntax.tree, &part.bytes);
        let scope = local_scope(syntax, source, line, site.launch.bytes.start, constants);
        let Some(block) = site.block().and_then(node).and_then(|b| dims(syntax, b, &scope)) else {
            continue;
        };
        let smem = match site.smem() {
            None => Some(0),
            Some(s) => node(s).and_then(|s| syntax.eval(s, &scope)).and_then(|v| u32::try_from(v).ok()),
        };
        sites.insert(site.kernel, Launch { block, smem, from: LaunchFrom::Site { line } });
    }
    sites
}

/// `__launch_bounds__(MAX, …)`'s first argument.
fn launch_bounds(syntax: &Syntax, kernel: &Function, constants: &HashMap<String, i64>) -> Option<u32> {
    let bounds = kernelpro_source::launch::bounds(&syntax.tree, kernel)?;
    let max = node_at(&syntax.tree, &bounds.max_threads.bytes)?;
    syntax.eval(max, constants).and_then(|v| u32::try_from(v).ok()).filter(|&v| v > 0)
}

/// Threads of a block expression: `256`, `B * 2`, `dim3(16, 16)`, `{32, 8}`, or
/// a variable of the calling function declared with one of these.
fn dims(syntax: &Syntax, node: Node, scope: &Scope) -> Option<u32> {
    let product = |list: Node| -> Option<u32> {
        let mut cursor = list.walk();
        let parts: Vec<Node> = list.named_children(&mut cursor).collect();
        if parts.is_empty() || parts.len() > 3 {
            return None;
        }
        parts
            .iter()
            .try_fold(1u32, |acc, p| acc.checked_mul(u32::try_from(syntax.eval(*p, scope)?).ok()?))
            .filter(|&t| t > 0)
    };
    match node.kind() {
        "call_expression" if node.child_by_field_name("function").is_some_and(|f| syntax.text(f) == "dim3") => {
            product(node.child_by_field_name("arguments")?)
        }
        "initializer_list" | "argument_list" => product(node),
        "identifier" => match scope.dims.get(syntax.text(node)) {
            Some(v) => Some(*v),
            None => syntax.eval(node, scope).and_then(|v| u32::try_from(v).ok()),
        },
        _ => syntax.eval(node, scope).and_then(|v| u32::try_from(v).ok()).filter(|&t| t > 0),
    }
}

/// Integer constants visible at a launch: the file's, plus locals of the
/// calling function assigned exactly once; `dims` holds its `dim3` locals.
struct Scope {
    values: HashMap<String, i64>,
    dims: HashMap<String, u32>,
}

impl std::ops::Deref for Scope {
    type Target = HashMap<String, i64>;
    fn deref(&self) -> &Self::Target {
        &self.values
    }
}

/// `line` and `at`: where the launch's `<<<` is.
fn local_scope(syntax: &Syntax, source: &SourceFile, line: u32, at: usize, constants: &HashMap<String, i64>) -> Scope {
    let mut scope = Scope { values: constants.clone(), dims: HashMap::new() };
    let Some(body) = source.function_at_line(line).and_then(|f| syntax.body(f)) else {
        return scope;
    };
    let nodes = descendants(body);
    let reassigned = |name: &str| {
        nodes.iter().any(|n| {
            matches!(n.kind(), "assignment_expression" | "update_expression")
                && n.child_by_field_name("left")
                    .or_else(|| n.child_by_field_name("argument"))
                    .is_some_and(|l| syntax.text(l) == name)
        })
    };
    for decl in nodes.iter().filter(|n| n.kind() == "init_declarator" && n.start_byte() < at) {
        let (Some(name), Some(value)) = (decl.child_by_field_name("declarator"), decl.child_by_field_name("value"))
        else {
            continue;
        };
        if name.kind() != "identifier" || reassigned(syntax.text(name)) {
            continue;
        }
        let name = syntax.text(name).to_string();
        let is_dim3 =
            decl.parent().and_then(|d| d.child_by_field_name("type")).is_some_and(|t| syntax.text(t) == "dim3");
        if is_dim3 || matches!(value.kind(), "argument_list" | "initializer_list") {
            if let Some(d) = dims(syntax, value, &scope) {
                scope.dims.insert(name, d);
            }
        } else if let Some(v) = syntax.eval(value, &scope) {
            scope.values.insert(name, v);
        }
    }
    scope
}
