//! Read-only global loads of `const` pointer parameters through `__ldg`.

use crate::access::{read_only_loads, under_ldg};
use crate::edit::Edits;
use crate::kernel::Kernel;
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;

pub struct Ldg;

/// Element types `__ldg` has overloads for.
const LDG_TYPES: &[&str] = &[
    "float",
    "double",
    "int",
    "unsigned",
    "unsigned int",
    "char",
    "signed char",
    "unsigned char",
    "short",
    "unsigned short",
    "long long",
    "unsigned long long",
    "float2",
    "float4",
    "int2",
    "int4",
    "uint2",
    "uint4",
    "double2",
    "__half",
    "__half2",
];

impl Recipe for Ldg {
    fn name(&self) -> &'static str {
        "Ldg"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Micro
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::MemoryCoalescing, Code::Uncoalesced, Code::HighDRAMThroughput, Code::MissingRestrict]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else { return Vec::new() };
        let mut edits = Edits::default();
        let mut names = Vec::new();
        for p in k.func.params.iter().filter(|p| p.pointer && p.is_const && LDG_TYPES.contains(&p.base.as_str())) {
            let Some(loads) = read_only_loads(&k, &p.name) else { continue };
            let fresh: Vec<_> = loads.into_iter().filter(|l| !under_ldg(*l, text)).collect();
            for l in &fresh {
                edits.insert(l.start_byte(), "__ldg(&");
                edits.insert(l.end_byte(), ")");
            }
            if !fresh.is_empty() {
                names.push(p.name.clone());
            }
        }
        if edits.is_empty() {
            return Vec::new();
        }
        let note = format!("__ldg loads of {}", names.join(", "));
        edits.apply(text).map(|source| Rewrite { source, note }).into_iter().collect()
    }
}
