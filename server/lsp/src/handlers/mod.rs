//! One module per LSP method (or tight group of methods).

pub mod code_action;
pub mod code_lens;
pub mod document_symbol;
pub mod execute_command;
pub mod hover;
pub mod lifecycle;
pub mod optimize;
pub mod profile;
pub mod text_sync;
