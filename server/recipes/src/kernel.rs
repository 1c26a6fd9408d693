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
    /// The non-template kernel `name` with a body, if the file has one.
    pub fn find(text: &'a str, name: &str) -> Option<Kernel<'a>> {
        let func = kernelpro_source::parse(text).kernel(name)?.clone();
        if func.is_template || func.body_bytes.is_none() {
            return None;
        }
        let tree = kernelpro_source::parse_tree(text)?;
        Some(Kernel { text, tree, func, specs: kernelpro_spec::parse_file(text) })
    }

    pub fn body(&self) -> Node<'_> {
        let (start, end) = self.func.body_bytes.expect("checked in find");
        let mut node = self.tree.root_node().descendant_for_byte_range(start, end).expect("body in tree");
        while node.kind() != "compound_statement" || node.start_byte() != start {
            node = node.parent().expect("body is a compound statement");
        }
        node
    }

    /// The `function_definition` node.
    pub fn definition(&self) -> Node<'_> {
        self.body().parent().expect("a body has a definition")
    }

    pub fn text_of(&self, node: Node) -> &'a str {
        &self.text[node.byte_range()]
    }

    pub fn param(&self, name: &str) -> Option<&Param> {
        self.func.params.iter().find(|p| p.name == name)
    }

    /// The `parameter_declaration` nodes, in order.
    pub fn param_nodes(&self) -> Vec<Node<'_>> {
        let def = self.definition();
        let Some(declarator) = crate::syntax::descendants(def).into_iter().find(|n| n.kind() == "function_declarator") else { return Vec::new() };
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
                .flat_map(|c| t.candidates.iter().map(move |v| {
                    let mut c = c.clone();
                    c.insert(t.name.clone(), *v);
                    c
                }))
                .collect();
            if combos.len() > MAX_TUNE_COMBOS {
                return None;
            }
        }
        combos.into_iter().map(|c| self.launch_with(c)).collect()
    }

    fn launch_with(&self, overrides: BTreeMap<String, i64>) -> Option<LaunchSpec> {
        let raw = self.specs.kernel(&self.func.name)?;
        let signature = KernelSignature {
            name: self.func.name.clone(),
            params: self
                .func
                .params
                .iter()
                .map(|p| kernelpro_spec::Param { name: p.name.clone(), ty: p.ty.replace('*', " ").trim().to_string(), pointer: p.pointer })
                .collect(),
        };
        let opts = ResolveOptions { overrides, ..ResolveOptions::default() };
        kernelpro_spec::resolve(raw, &self.specs.file_lets, &signature, &opts).ok()
    }

    /// The block shape shared by every launch the search may pick.
    pub fn fixed_block(&self) -> Option<[u32; 3]> {
        let launches = self.all_launches()?;
        let block = launches.first()?.block;
        launches.iter().all(|l| l.block == block).then_some(block)
    }
}
