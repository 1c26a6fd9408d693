//! A kernel's work units: the global thread indices it declares, the bounds
//! its guard puts on them and the statements each unit runs ([`recognize`]),
//! read from the kernel as written or through views of its file in styles the
//! reading knows ([`views`]). The reading is here, beside the kernel model it
//! consults; the structural rewrites in `recipes` write their text from it.

mod kernel;
pub mod recognize;
pub mod views;

pub use kernel::{Kernel, Launch, Launches};

#[cfg(test)]
mod tests;
