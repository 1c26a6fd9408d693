//! The resource report of `nvcc -Xptxas -v` (or `ptxas -v`):
//!
//! ```text
//! ptxas info    : Compiling entry function '_Z9divergentPfPKfi' for 'sm_90'
//! ptxas info    : Function properties for _Z9divergentPfPKfi
//!     32 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//! ptxas info    : Used 19 registers, used 0 barriers, 32 bytes cumulative stack size, 372 bytes cmem[0]
//! ```
//!
//! Module-wide lines (`24 bytes gmem`), compile times and warnings are skipped.

use crate::symbol;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KernelResources {
    pub mangled: String,
    /// Demangled without parameters, e.g. `saxpy_fp64`.
    pub name: String,
    pub arch: String,
    /// `false` for `__noinline__` device functions, which get only stack and spill figures.
    pub entry: bool,
    pub registers: u32,
    pub stack_frame: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
    /// Static `__shared__` bytes (`N bytes smem`); dynamic shared memory is a launch parameter.
    pub shared_static: u32,
    /// `(bank, bytes)` for each `N bytes cmem[bank]`.
    pub constant_bytes: Vec<(u8, u32)>,
    pub barriers: u32,
}

impl KernelResources {
    pub fn spills(&self) -> bool {
        self.spill_stores > 0 || self.spill_loads > 0
    }
}

/// Every function the report describes, in report order.
pub fn parse_ptxas(text: &str) -> Vec<KernelResources> {
    let mut kernels: Vec<KernelResources> = Vec::new();
    let mut arch = String::new();
    for line in text.lines() {
        let info = line.split_once("ptxas info").map(|(_, rest)| rest.trim_start_matches([' ', ':']));
        if let Some(rest) = info.and_then(|i| i.strip_prefix("Compiling entry function ")) {
            let (mangled, for_arch) = compiling(rest);
            arch = for_arch.unwrap_or_default();
            kernels.push(KernelResources { entry: true, ..new_kernel(mangled, &arch) });
        } else if let Some(mangled) = info.and_then(|i| i.strip_prefix("Function properties for ")) {
            // Non-entry (noinline) functions only get this header.
            let mangled = mangled.trim();
            if kernels.last().is_none_or(|k| k.mangled != mangled) {
                kernels.push(new_kernel(mangled, &arch));
            }
        } else if let Some(kernel) = kernels.last_mut() {
            let items =
                info.and_then(|i| i.strip_prefix("Used ")).or_else(|| line.contains("stack frame").then_some(line));
            for item in items.into_iter().flat_map(|items| items.split(',')) {
                apply_item(kernel, item.trim());
            }
        }
    }
    kernels
}

/// `'_Z9divergentPfPKfi' for 'sm_90'` → name and arch.
fn compiling(rest: &str) -> (&str, Option<String>) {
    let mut quoted = rest.split('\'').skip(1).step_by(2);
    let mangled = quoted.next().unwrap_or(rest.trim());
    (mangled, quoted.next().map(str::to_string))
}

fn new_kernel(mangled: &str, arch: &str) -> KernelResources {
    KernelResources {
        mangled: mangled.to_string(),
        name: symbol::names(mangled).name,
        arch: arch.to_string(),
        ..KernelResources::default()
    }
}

/// One comma-separated item such as `19 registers`, `used 1 barriers`, `372 bytes cmem[0]`.
fn apply_item(kernel: &mut KernelResources, item: &str) {
    let words: Vec<&str> = item.split_whitespace().filter(|w| *w != "used" && *w != "Used").collect();
    let Some(value) = words.first().and_then(|w| w.parse::<u32>().ok()) else {
        return;
    };
    let what = words[1..].join(" ");
    match what.as_str() {
        "registers" => kernel.registers = value,
        "barriers" => kernel.barriers = value,
        "bytes stack frame" => kernel.stack_frame = value,
        "bytes spill stores" => kernel.spill_stores = value,
        "bytes spill loads" => kernel.spill_loads = value,
        "bytes smem" => kernel.shared_static = value,
        other => {
            let bank = other.strip_prefix("bytes cmem[").and_then(|b| b.strip_suffix(']'));
            if let Some(bank) = bank.and_then(|b| b.parse().ok()) {
                kernel.constant_bytes.push((bank, value));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noinline_device_function_gets_its_own_entry() {
        // nvcc 13.2 -arch=sm_90 -Xptxas -v on a kernel calling a __noinline__ g0(float);
        // g0's stack and spill figures raised from 0 so that they show.
        let report = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90'
ptxas info    : Function properties for _Z1kPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers
ptxas info    : Compile time = 27.574 ms
ptxas info    : Function properties for _Z2g0f
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
";
        let kernels = parse_ptxas(report);
        let summary: Vec<_> = kernels
            .iter()
            .map(|k| (k.name.as_str(), k.arch.as_str(), k.entry, k.registers, k.stack_frame, k.spills()))
            .collect();
        assert_eq!(summary, vec![("k", "sm_90", true, 12, 0, false), ("g0", "sm_90", false, 0, 8, true)]);
    }
}
