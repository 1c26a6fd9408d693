//! One kernel of a file as the units reading sees it: its tree-sitter nodes,
//! its parameters and the launches it may get. `source` reads no spec: the
//! launches come from the caller ([`Launches`]), the recipes from the spec.

use crate::syntax::{compact, descendants};
use crate::{FnKind, Function, Param};
use std::rc::Rc;
use tree_sitter::{Node, Tree};

/// One launch a kernel may get, as far as reading its units needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// The integer scalar arguments, by parameter name.
    pub ints: Vec<(String, i64)>,
}

/// The launches a kernel may get, from whoever reads its spec. Both must depend on nothing but the
/// file's text and the kernel's name: the reading keeps what it computes from them per text and name
/// ([`crate::parsed::memo`]).
pub trait Launches {
    /// The launch with the spec's first `tune` values; `None` without a valid spec.
    fn first(&self) -> Option<Launch>;
    /// Every launch the search may pick (one per combination of `tune` values); `None` when the
    /// spec does not resolve or has too many combinations.
    fn all(&self) -> Option<Vec<Launch>>;
}

/// A kernel with a body, found by name in a file, and its launches.
pub struct Kernel<'a> {
    pub text: &'a str,
    tree: Tree,
    pub func: Function,
    launches: Option<Rc<dyn Launches>>,
}

impl<'a> Kernel<'a> {
    /// The kernel `name` with a body, template or not, launched as `launches` says (`None`: unknown).
    pub fn find(text: &'a str, name: &str, launches: Option<Rc<dyn Launches>>) -> Option<Kernel<'a>> {
        let func = crate::parse(text).kernel(name)?.clone();
        func.body_bytes?;
        let tree = crate::parse_tree(text)?;
        Some(Kernel { text, tree, func, launches })
    }

    /// This kernel launched as `launches` says.
    pub fn launched(self, launches: Rc<dyn Launches>) -> Kernel<'a> {
        Kernel { launches: Some(launches), ..self }
    }

    /// The same kernel in `text`, a view of this one's file that changed the kernel's body only
    /// (so its signature and spec, and with them its launches, are this one's).
    pub fn reread<'b>(&self, text: &'b str) -> Option<Kernel<'b>> {
        Kernel::find(text, &self.func.name, self.launches.clone())
    }

    pub fn body(&self) -> Node<'_> {
        self.body_at(self.func.body_bytes.expect("checked in find")).expect("body is a compound statement")
    }

    /// The compound statement whose braces span `start..end` (a function's `body_bytes`).
    fn body_at(&self, (start, end): (usize, usize)) -> Option<Node<'_>> {
        let mut node = self.tree.root_node().descendant_for_byte_range(start, end)?;
        while node.kind() != "compound_statement" || node.start_byte() != start {
            node = node.parent()?;
        }
        Some(node)
    }

    /// The definition (`function_definition` node) of the `__device__` or `__host__ __device__`
    /// function `name` in the kernel's file, as the source layer classifies the file's functions.
    pub fn device_function(&self, name: &str) -> Option<Node<'_>> {
        let file = crate::parse(self.text);
        let f =
            file.functions.iter().find(|f| f.name == name && matches!(f.kind, FnKind::Device | FnKind::HostDevice))?;
        self.body_at(f.body_bytes?)?.parent()
    }

    /// The whole file with the kernel's body (braces included) replaced by `body`.
    pub fn with_body(&self, body: &str) -> String {
        let mut source = self.text.to_string();
        source.replace_range(self.body().byte_range(), body);
        source
    }

    /// The kernel model (thread-index values, accesses, loops) under the first launch's block.
    /// Within a node's expansion (a `parse_once` scope) made once per text and kernel.
    pub fn model(&self) -> Option<crate::kernel_model::KernelModel> {
        crate::parsed::memo("units::Kernel::model", self.text, &self.func.name, || {
            let block = self.launches.as_ref().and_then(|l| l.first()).map(|l| l.block);
            crate::kernel_model::model_kernel(self.text, &crate::parse(self.text), &self.func.name, block)
        })
    }

    /// The `function_definition` node.
    pub fn definition(&self) -> Node<'_> {
        self.body().parent().expect("a body has a definition")
    }

    /// The kernel's `__launch_bounds__`, if its definition has one.
    pub fn launch_bounds(&self) -> Option<crate::launch::LaunchBounds> {
        crate::launch::bounds(&self.tree, &self.func)
    }

    pub fn text_of(&self, node: Node) -> &'a str {
        &self.text[node.byte_range()]
    }

    /// Whether `name` is a function or macro this file defines (whose body a recipe cannot see from a call site).
    pub fn file_defines(&self, name: &str) -> bool {
        crate::syntax::file_defines(self.text, name)
    }

    pub fn param(&self, name: &str) -> Option<&Param> {
        self.func.params.iter().find(|p| p.name == name)
    }

    /// The `parameter_declaration` nodes, in order.
    pub fn param_nodes(&self) -> Vec<Node<'_>> {
        let def = self.definition();
        let Some(declarator) = descendants(def).into_iter().find(|n| n.kind() == "function_declarator") else {
            return Vec::new();
        };
        let Some(list) = declarator.child_by_field_name("parameters") else { return Vec::new() };
        let mut cursor = list.walk();
        list.named_children(&mut cursor).filter(|n| n.kind() == "parameter_declaration").collect()
    }

    /// `NAME` of `T NAME = <global index on axis>;` (`blockIdx*blockDim+threadIdx` in any order).
    pub fn index_decl(&self, decl: Node, axis: &str) -> Option<String> {
        let init = decl.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
        let (b, d, t) = (format!("blockIdx.{axis}"), format!("blockDim.{axis}"), format!("threadIdx.{axis}"));
        let forms = [format!("{b}*{d}+{t}"), format!("{d}*{b}+{t}"), format!("{t}+{b}*{d}"), format!("{t}+{d}*{b}")];
        let name = self.text_of(init.child_by_field_name("declarator")?);
        forms.contains(&compact(self.text, init.child_by_field_name("value")?)).then(|| name.to_string())
    }

    /// Every launch the search may pick; `None` when they are not known.
    pub fn launches(&self) -> Option<Vec<Launch>> {
        self.launches.as_ref()?.all()
    }

    /// The threads a block of each launch the search may pick (any block shape).
    pub fn block_threads(&self) -> Option<Vec<u32>> {
        Some(self.launches()?.iter().map(|l| l.block.iter().product()).collect())
    }

    /// Whether every launch the search may pick has a 1D block of whole warps.
    pub fn whole_warp_1d_blocks(&self) -> bool {
        self.launches().is_some_and(|ls| ls.iter().all(|l| l.block[0] % 32 == 0 && l.block[1] == 1 && l.block[2] == 1))
    }

    /// The block shape shared by every launch the search may pick.
    pub fn fixed_block(&self) -> Option<[u32; 3]> {
        let launches = self.launches()?;
        let block = launches.first()?.block;
        launches.iter().all(|l| l.block == block).then_some(block)
    }
}
