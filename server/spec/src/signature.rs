//! The one kernel signature: a kernel's parameters as the source layer reads them, in the
//! spec's terms (types without `*` and `__restrict__`). The analysis, the recipes and the CuTe
//! recipe resolve a launch spec against this.

use crate::{KernelSignature, Param};
use kernelpro_source::Function;

impl KernelSignature {
    pub fn of(f: &Function) -> KernelSignature {
        KernelSignature {
            name: f.name.clone(),
            params: f
                .params
                .iter()
                .map(|p| Param {
                    name: p.name.clone(),
                    ty: p
                        .ty
                        .replace('*', " ")
                        .replace("__restrict__", " ")
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" "),
                    pointer: p.pointer,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernels_signature_drops_pointers_and_restrict() {
        let file = kernelpro_source::parse("__global__ void k(const float* __restrict__ x, int n, T* y) {}\n");
        let sig = KernelSignature::of(file.kernel("k").unwrap());
        let params: Vec<(&str, &str, bool)> = sig.params.iter().map(|p| (&*p.name, &*p.ty, p.pointer)).collect();
        assert_eq!(params, [("x", "const float", true), ("n", "int", false), ("y", "T", true)]);
    }
}
