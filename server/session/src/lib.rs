//! The editors' state, without a protocol: what `lsp` and the CLI keep per
//! document between analyses, in plain data (0-based lines, whole texts).
//!
//! - [`EditLog`]: the line changes since a result was computed, so findings,
//!   lenses and hover stay on the lines they belong to until the next analysis
//!   (and a line the user rewrote loses its stale finding at once).
//! - [`rebase`]: a finished search's edit moved onto the current text while the
//!   text it replaces is unchanged — an edit elsewhere, or an undo, keeps it.
//! - [`Jobs`]: one running job per (document, kind), each tagged with the
//!   version it started from and cancelled when a newer one starts.
//!
//! Architecture Invariant: nothing here knows LSP types, spawns a process or
//! does I/O; adapters convert positions before they call in.
#![forbid(unsafe_code)]

mod edit_log;
mod jobs;
mod rebase;

pub use edit_log::{EditLog, LineChange};
pub use jobs::{JobKind, JobTicket, Jobs};
pub use rebase::{LineEdit, NotApplicable, apply, rebase};
