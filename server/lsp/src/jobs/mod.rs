//! Work that outlives a request: the analysis after a save, publishing
//! diagnostics, profiles and optimize searches. Handlers start these and read
//! their stored results; jobs never call handlers (`structure.rs` checks it, and
//! that the crate's modules import each other without a circle).

pub mod analysis;
pub mod optimize;
pub mod profile;
pub mod publish;
