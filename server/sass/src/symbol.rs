//! Itanium C++ symbol names as the CUDA tools print them.

use cpp_demangle::{DemangleOptions, Symbol};

/// A kernel's names: `_Z10saxpy_fp64PfPKffi`, `saxpy_fp64(float*, float const*, float, int)`
/// and the short `saxpy_fp64` that source code and ncu reports use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    pub mangled: String,
    pub demangled: String,
    pub name: String,
}

/// Demangles `mangled`; names that are not C++ symbols (`extern "C"` kernels,
/// `$__internal_…` helpers) are kept as they are in all three fields.
pub fn names(mangled: &str) -> Names {
    let demangle = |options: DemangleOptions| Symbol::new(mangled).ok().and_then(|sym| sym.demangle(&options).ok());
    let demangled = demangle(DemangleOptions::new()).unwrap_or_else(|| mangled.to_string());
    let name = demangle(DemangleOptions::new().no_params().no_return_type()).unwrap_or_else(|| mangled.to_string());
    Names { mangled: mangled.to_string(), demangled, name }
}

/// The name source code uses for a demangled symbol: `ns::scale<256>` and
/// `scale<float>` → `scale`. Template instantiations and overloads of one
/// kernel share it.
pub fn plain_name(demangled: &str) -> &str {
    let without_args = demangled.split('<').next().unwrap_or(demangled);
    without_args.rsplit("::").next().unwrap_or(without_args).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(mangled: &str, demangled: &str, name: &str) {
        let n = names(mangled);
        assert_eq!((n.demangled.as_str(), n.name.as_str()), (demangled, name));
    }

    #[test]
    fn kernel_names() {
        check("_Z10saxpy_fp64PfPKffi", "saxpy_fp64(float*, float const*, float, int)", "saxpy_fp64");
        check("_Z8tile_sumP6float4PKS_", "tile_sum(float4*, float4 const*)", "tile_sum");
        check("_Z6kernelIfLi4EEvPT_", "void kernel<float, 4>(float*)", "kernel<float, 4>");
        check("plain_c_kernel", "plain_c_kernel", "plain_c_kernel");
        // nvcc 13.2: `template <typename T> __global__ void add(T*, const T*, int)` for float.
        check("_Z3addIfEvPT_PKS0_i", "void add<float>(float*, float const*, int)", "add<float>");
        check(
            "$__internal_0_$__cuda_sm20_rem_s64",
            "$__internal_0_$__cuda_sm20_rem_s64",
            "$__internal_0_$__cuda_sm20_rem_s64",
        );
    }

    #[test]
    fn plain_names() {
        for (name, plain) in [
            ("add<float>", "add"),
            ("ns::scale<256>", "scale"),
            ("kernel<float, tile<4> >", "kernel"),
            ("saxpy", "saxpy"),
            ("a::b::k", "k"),
        ] {
            assert_eq!(plain_name(name), plain);
        }
    }
}
