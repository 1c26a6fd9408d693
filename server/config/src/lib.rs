//! KernelPro's configuration: the settings (each described once in
//! `settings_doc`), the words of the user's client ([`words::Words`], chosen
//! by the adapters above), where the tool docs are installed and where the
//! cache lives.
//!
//! Architecture invariant: no LSP types and no editor named here.
#![forbid(unsafe_code)]

pub mod docs;
pub mod settings;
pub mod settings_doc;
pub mod words;

/// Where KernelPro keeps profiles and baselines between sessions.
pub fn cache_dir() -> std::path::PathBuf {
    dirs::cache_dir().unwrap_or_else(std::env::temp_dir).join("kernelpro")
}
