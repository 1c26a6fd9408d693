pub mod lsp_client;
pub mod procs;
