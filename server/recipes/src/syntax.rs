//! The recipes read the one syntax view of the source layer ([`kernelpro_source::syntax`]).

pub(crate) use kernelpro_source::syntax::*;
