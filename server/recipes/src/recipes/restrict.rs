//! `const` on read-only pointer parameters and `__restrict__` on every pointer
//! parameter (kept simple: the kernel's pointers are taken not to alias).
//!
//! `const` follows every write: a pointer stored through, the target of an atomic, passed to a
//! function of the file, aliased or cast is never made const ([`read_only_loads`]). A template's
//! explicit specialisations (`template <> __global__ void k<half>(...)`) and explicit
//! instantiations (`template __global__ void k<float>(float*, ...);`) keep the primary's
//! signature: each gets the same `const`, or the parameter stays as it is where a specialisation
//! writes through it; a specialisation itself gets `__restrict__` only.

use crate::access::read_only_loads;
use crate::edit::Edits;
use crate::kernel::Kernel;
use crate::syntax::descendants;
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;
use tree_sitter::Node;

pub struct RestrictConst;

/// The `parameter_declaration` nodes of a `function_declarator`.
fn declared_params(declarator: Node) -> Vec<Node> {
    let Some(list) = declarator.child_by_field_name("parameters") else { return Vec::new() };
    let mut cursor = list.walk();
    list.named_children(&mut cursor).filter(|n| n.kind() == "parameter_declaration").collect()
}

/// Whether a parameter declaration's type is already `const` (`const float*`, `float const*`).
fn declared_const(text: &str, p: Node) -> bool {
    let decl = p.child_by_field_name("declarator").map_or(p.end_byte(), |d| d.start_byte());
    text[p.start_byte()..decl].split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == "const")
        || p.child_by_field_name("declarator").is_some_and(|d| {
            // `float const * p`: the qualifier sits before the `*`.
            let t = &text[d.byte_range()];
            t.split('*').next().is_some_and(|head| head.split_whitespace().any(|w| w == "const"))
        })
}

/// The kernel's explicit specialisations (their names, `k<half>`) and the parameter lists of its
/// explicit instantiations, in the file.
pub(crate) fn template_companions<'t>(k: &'t Kernel) -> (Vec<String>, Vec<Vec<Node<'t>>>) {
    let name = &k.func.name;
    let is_ours = |n: &str| n.starts_with(&format!("{name}<")) || n.starts_with(&format!("{name} <"));
    let specialisations = kernelpro_source::parse(k.text)
        .functions
        .iter()
        .filter(|f| f.kind == kernelpro_source::FnKind::Kernel && is_ours(&f.name))
        .map(|f| f.name.clone())
        .collect();
    let mut root = k.definition();
    while let Some(p) = root.parent() {
        root = p;
    }
    let instantiations = descendants(root)
        .into_iter()
        .filter(|n| n.kind() == "template_instantiation")
        .filter_map(|n| {
            let d = descendants(n).into_iter().find(|d| d.kind() == "function_declarator")?;
            is_ours(k.text_of(d.child_by_field_name("declarator")?)).then(|| declared_params(d))
        })
        .collect();
    (specialisations, instantiations)
}

impl Recipe for RestrictConst {
    fn name(&self) -> &'static str {
        "RestrictConst"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Micro
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::MissingRestrict, Code::HighDRAMThroughput, Code::MemoryCoalescing]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else { return Vec::new() };
        let (spec_names, instantiations) = template_companions(&k);
        let specialisations: Vec<Kernel> = spec_names.iter().filter_map(|n| Kernel::find(text, n)).collect();
        if specialisations.len() != spec_names.len() {
            return Vec::new();
        }
        let mut edits = Edits::default();
        let mut changed = Vec::new();
        for (at, (node, param)) in k.param_nodes().into_iter().zip(&k.func.params).enumerate() {
            let Some(pointer) = node.child_by_field_name("declarator").filter(|d| d.kind() == "pointer_declarator")
            else {
                continue;
            };
            // Every specialisation reads the parameter only (or has it const already).
            let companions_read_only = specialisations.iter().all(|s| {
                s.func
                    .params
                    .get(at)
                    .is_some_and(|p| p.pointer && (p.is_const || read_only_loads(s, &p.name).is_some()))
            }) && instantiations.iter().all(|ps| ps.len() == k.func.params.len());
            // An explicit specialisation (`k<half>`) must keep its primary template's parameter types.
            let specialisation = k.func.name.contains('<');
            if !param.is_const && read_only_loads(&k, &param.name).is_some() && companions_read_only && !specialisation
            {
                edits.insert(node.start_byte(), "const ");
                for s in &specialisations {
                    if let (Some(p), Some(n)) = (s.func.params.get(at), s.param_nodes().get(at))
                        && !p.is_const
                    {
                        edits.insert(n.start_byte(), "const ");
                    }
                }
                for ps in &instantiations {
                    if !declared_const(text, ps[at]) {
                        edits.insert(ps[at].start_byte(), "const ");
                    }
                }
                changed.push(format!("const {}", param.name));
            }
            if !param.restrict {
                let Some(name) = pointer.child_by_field_name("declarator") else { continue };
                edits.insert(name.start_byte(), "__restrict__ ");
                changed.push(format!("__restrict__ {}", param.name));
            }
        }
        if edits.is_empty() {
            return Vec::new();
        }
        let note = changed.join(", ");
        edits.apply(text).map(|source| Rewrite { source, note }).into_iter().collect()
    }
}
