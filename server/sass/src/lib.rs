//! Machine-code insight without a GPU: parses what `nvdisasm`, `cuobjdump -sass`
//! and `ptxas -v` print, decodes scheduling control bits, documents opcodes and
//! computes theoretical occupancy.
//!
//! Architecture invariant: this crate only parses strings it is handed. It never
//! spawns the CUDA tools or reads files; the core crate runs them.
#![forbid(unsafe_code)]

pub mod control;
pub mod cost;
pub mod disasm;
pub mod occupancy;
pub mod opcodes;
pub mod ptxas;
pub mod symbol;
