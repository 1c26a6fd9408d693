//! Launch specs: the `// kernelpro: ...` comments above a kernel that say how
//! to run it (sizes, launch shape, buffers, scalars, tolerances, tunables).
//!
//! [`parse_file`] finds and groups the spec lines of a file; [`resolve`]
//! checks one kernel's lines against its signature and evaluates them into a
//! [`LaunchSpec`], or returns every problem as a [`Finding`](kernelpro_model::Finding)
//! on its spec line.
#![forbid(unsafe_code)]

mod directive;
mod expr;
mod launch;
mod resolve;
mod signature;
mod source;
mod types;

pub use expr::{ExprError, ExprErrorKind, Scope, eval};
pub use launch::*;
pub use resolve::{KernelSignature, Param, ResolveOptions, code, resolve};
pub use source::{FileSpecs, KernelSpecRaw, LAUNCH_PARTS, SpecLine, launch_part, parse_file, split_top_level};
pub use types::{ElemType, ScalarType, base_c_type};

#[cfg(test)]
mod tests;
