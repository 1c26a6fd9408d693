//! The CUTLASS/CuTe source tree as a searchable library for the optimizer's
//! LLM tools `search_cutlass` and `read_cutlass_file`.
//!
//! [`find_root`] locates the tree (a setting, `CUTLASS_PATH`, or the project
//! venv's `nvidia-cutlass` wheel); [`Index::build`] loads it once into memory
//! with an identifier → (file, line) inverted index; [`Index::search`] ranks
//! identifier, phrase and regex queries; [`Index::read_file`] returns a
//! bounded line range of a file inside the tree.
#![forbid(unsafe_code)]

mod index;
mod locate;
mod rank;
mod read;
mod search;
mod tokens;

pub use index::{BuildError, Index, IndexStats};
pub use locate::{CUTLASS_INSTALL_HINT, find_root, is_cutlass_root};
pub use read::{FileSlice, ReadError, ReadLimits};
pub use search::{Hit, SearchError, SearchLimits};
