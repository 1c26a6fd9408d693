//! One module per LSP method (or tight group of methods).
//!
//! Architecture Invariant: a handler never imports another handler; what
//! several share (analysis, publishing, profile, optimize) is in `crate::jobs`.

pub mod code_action;
pub mod code_lens;
pub mod document_symbol;
pub mod execute_command;
pub mod hover;
pub mod lifecycle;
pub mod text_sync;
