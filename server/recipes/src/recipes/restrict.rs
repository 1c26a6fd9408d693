//! `const` on read-only pointer parameters and `__restrict__` on every pointer
//! parameter (kept simple: the kernel's pointers are taken not to alias).

use crate::access::read_only_loads;
use crate::edit::Edits;
use crate::kernel::Kernel;
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;

pub struct RestrictConst;

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
        let mut edits = Edits::default();
        let mut changed = Vec::new();
        for (node, param) in k.param_nodes().into_iter().zip(&k.func.params) {
            let Some(pointer) = node.child_by_field_name("declarator").filter(|d| d.kind() == "pointer_declarator")
            else {
                continue;
            };
            if !param.is_const && read_only_loads(&k, &param.name).is_some() {
                edits.insert(node.start_byte(), "const ");
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
