//! The server: the client to talk to and the shared state. What each LSP
//! method does is in `handlers/`, routed by `dispatch`.

use crate::state::State;
use std::sync::Arc;
use tower_lsp_server::Client;

pub struct Server {
    pub client: Client,
    pub state: Arc<State>,
}

impl Server {
    pub fn new(client: Client) -> Self {
        Server { client, state: Arc::new(State::default()) }
    }
}
