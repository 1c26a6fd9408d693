//! The editors' protocol-free heart: what `lsp` (and, where it fits, the CLI)
//! knows about each open document besides its text, the policies of the jobs
//! that work on it, and what the editor shows, as plain data (0-based lines,
//! UTF-8 byte columns, whole texts) on the text as it is now.
//!
//! - [`Document`]: a document's version, latest analysis, last profile and the
//!   line changes made since each ([`EditLog`]), so findings, lenses and hover
//!   stay on the lines they belong to until the next analysis (and a line the
//!   user rewrote loses its stale finding at once).
//! - [`views`]: the diagnostics (with a header's merge across its includers),
//!   the hover, the lenses and the apply edit of a finished search.
//! - [`policy`]: trust, profile-on-save, what a missing tool refuses, what a
//!   finished profile leaves; [`optimizations`]: finished searches kept with
//!   the text they were made against, and their result in words.
//! - [`rebase`]: a finished search's edit moved onto the current text while the
//!   text it replaces is unchanged — an edit elsewhere, or an undo, keeps it.
//! - [`Jobs`]: one running job per (document, kind), each tagged with the
//!   version it started from and cancelled when a newer one starts.
//!
//! Architecture Invariant: nothing here knows LSP types, spawns a process or
//! does I/O; adapters convert positions before they call in and convert the
//! views after.
#![forbid(unsafe_code)]

mod document;
mod edit_log;
mod jobs;
pub mod optimizations;
pub mod policy;
mod rebase;
pub mod views;

pub use document::{Document, ProfileState, Verdict, moved};
pub use edit_log::{EditLog, LineChange};
pub use jobs::{JobKind, JobTicket, Jobs};
pub use optimizations::StoredOptimization;
pub use rebase::{LineEdit, NotApplicable, apply, rebase};
