//! One kernel of a file as the recipes see it: its tree-sitter nodes, its
//! parameters, its spec lines and its resolved launch shapes.

use kernelpro_source::{Function, Param};
use kernelpro_spec::{FileSpecs, KernelSignature, LaunchSpec, ResolveOptions, SpecLine};
use std::collections::BTreeMap;
use tree_sitter::{Node, Tree};

/// The most tune combinations resolved when a recipe needs every possible launch.
const MAX_TUNE_COMBOS: usize = 256;

pub(crate) struct Kernel<'a> {
    pub text: &'a str,
    tree: Tree,
    pub func: Function,
    specs: FileSpecs,
}

impl<'a> Kernel<'a> {
    /// The kernel `name` with a body, template or not: rewrites keep the user's types as written, and
    /// one that does not compile for the instantiation is rejected like any other candidate.
    pub fn find(text: &'a str, name: &str) -> Option<Kernel<'a>> {
        let func = kernelpro_source::parse(text).kernel(name)?.clone();
        func.body_bytes?;
        let tree = kernelpro_source::parse_tree(text)?;
        let specs = kernelpro_source::parsed::memo("spec::parse_file", text, "", || kernelpro_spec::parse_file(text));
        Some(Kernel { text, tree, func, specs })
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
        use kernelpro_source::FnKind;
        let file = kernelpro_source::parse(self.text);
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

    /// The kernel model (thread-index values, accesses, loops) under the spec's launch block.
    /// Within a node's expansion (a `parse_once` scope) made once per text and kernel.
    pub fn model(&self) -> Option<kernelpro_source::kernel_model::KernelModel> {
        kernelpro_source::parsed::memo("recipes::Kernel::model", self.text, &self.func.name, || {
            let block = self.launch().map(|l| l.block);
            kernelpro_source::kernel_model::model_kernel(
                self.text,
                &kernelpro_source::parse(self.text),
                &self.func.name,
                block,
            )
        })
    }

    /// The C type of buffer parameter `name` as the spec's launch gives it (a template's `T` resolved).
    pub fn buffer_type(&self, name: &str) -> Option<&'static str> {
        use kernelpro_spec::ElemType;
        let launch = self.launch()?;
        let b = launch.buffers().find(|b| b.name == name)?;
        Some(match b.elem {
            ElemType::Float => "float",
            ElemType::Double => "double",
            ElemType::Int => "int",
            ElemType::Unsigned => "unsigned",
            ElemType::Int64 => "long long",
            _ => return None,
        })
    }

    /// The `function_definition` node.
    pub fn definition(&self) -> Node<'_> {
        self.body().parent().expect("a body has a definition")
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
        let Some(declarator) = crate::syntax::descendants(def).into_iter().find(|n| n.kind() == "function_declarator")
        else {
            return Vec::new();
        };
        let Some(list) = declarator.child_by_field_name("parameters") else { return Vec::new() };
        let mut cursor = list.walk();
        list.named_children(&mut cursor).filter(|n| n.kind() == "parameter_declaration").collect()
    }

    /// The kernel's own spec lines (empty without a spec block).
    pub fn spec_lines(&self) -> &[SpecLine] {
        self.specs.kernel(&self.func.name).map_or(&[], |k| &k.lines)
    }

    /// Byte offset of a spec line's text in the file.
    pub fn spec_offset(&self, line: &SpecLine) -> usize {
        let start: usize = self.text.split_inclusive('\n').take(line.line as usize).map(str::len).sum();
        start + line.col as usize
    }

    /// The launch with the spec's first `tune` values; `None` without a valid spec.
    pub fn launch(&self) -> Option<LaunchSpec> {
        self.launch_with(BTreeMap::new())
    }

    /// Every launch the search may pick (one per combination of `tune` values);
    /// `None` when the spec does not resolve or has too many combinations.
    pub fn all_launches(&self) -> Option<Vec<LaunchSpec>> {
        let first = self.launch()?;
        let mut combos: Vec<BTreeMap<String, i64>> = vec![BTreeMap::new()];
        for t in &first.tunables {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    t.candidates.iter().map(move |v| {
                        let mut c = c.clone();
                        c.insert(t.name.clone(), *v);
                        c
                    })
                })
                .collect();
            if combos.len() > MAX_TUNE_COMBOS {
                return None;
            }
        }
        combos.into_iter().map(|c| self.launch_with(c)).collect()
    }

    fn launch_with(&self, overrides: BTreeMap<String, i64>) -> Option<LaunchSpec> {
        let raw = self.specs.kernel(&self.func.name)?;
        let signature = KernelSignature::of(&self.func);
        let opts = ResolveOptions { overrides, ..ResolveOptions::default() };
        kernelpro_spec::resolve(raw, &self.specs.file_lets, &signature, &opts).ok()
    }

    /// `NAME` of `T NAME = <global index on axis>;` (`blockIdx*blockDim+threadIdx` in any order).
    pub fn index_decl(&self, decl: Node, axis: &str) -> Option<String> {
        let init = decl.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
        let (b, d, t) = (format!("blockIdx.{axis}"), format!("blockDim.{axis}"), format!("threadIdx.{axis}"));
        let forms = [format!("{b}*{d}+{t}"), format!("{d}*{b}+{t}"), format!("{t}+{b}*{d}"), format!("{t}+{d}*{b}")];
        let name = self.text_of(init.child_by_field_name("declarator")?);
        forms.contains(&crate::syntax::compact(self.text, init.child_by_field_name("value")?)).then(|| name.to_string())
    }

    /// The element count of buffer parameter `name`, when every launch the search may pick gives it the same one.
    pub fn buffer_count(&self, name: &str) -> Option<u64> {
        let counts: Vec<u64> = self
            .all_launches()?
            .iter()
            .map(|l| l.buffers().find(|b| b.name == name).map(|b| b.count))
            .collect::<Option<_>>()?;
        let first = *counts.first()?;
        counts.iter().all(|c| *c == first).then_some(first)
    }

    /// The threads a block of each launch the search may pick (any block shape).
    pub fn block_threads(&self) -> Option<Vec<u32>> {
        Some(self.all_launches()?.iter().map(|l| l.block.iter().product()).collect())
    }

    /// Whether every launch the search may pick has a 1D block of whole warps.
    pub fn whole_warp_1d_blocks(&self) -> bool {
        self.all_launches()
            .is_some_and(|ls| ls.iter().all(|l| l.block[0] % 32 == 0 && l.block[1] == 1 && l.block[2] == 1))
    }

    /// The block shape shared by every launch the search may pick.
    pub fn fixed_block(&self) -> Option<[u32; 3]> {
        let launches = self.all_launches()?;
        let block = launches.first()?.block;
        launches.iter().all(|l| l.block == block).then_some(block)
    }
}
