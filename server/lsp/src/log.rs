//! Logging to the client's log (VS Code's output channel, Neovim's `lsp.log`)
//! through `window/logMessage`, with `tracing`: events of the server's crates
//! at INFO and above (`KERNELPRO_LOG`, an env-filter directive, changes that),
//! and every panic — in a handler or in background work, which would
//! otherwise vanish with its task — as an ERROR with where it happened.

use std::fmt::Write as _;
use std::sync::OnceLock;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Registry};

/// One line for the client's log.
pub type Line = (Level, String);

/// Formats events into lines and hands them to a channel (the client's log,
/// drained by a task, since `tracing` is synchronous and the client is not).
pub struct ClientLayer {
    tx: UnboundedSender<Line>,
}

impl ClientLayer {
    pub fn new() -> (ClientLayer, UnboundedReceiver<Line>) {
        let (tx, rx) = unbounded_channel();
        (ClientLayer { tx }, rx)
    }
}

#[derive(Default)]
struct Fields {
    message: String,
    rest: String,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.rest, " {}={value:?}", field.name());
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.rest, " {}={value}", field.name());
        }
    }
}

impl<S: Subscriber> Layer<S> for ClientLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut f = Fields::default();
        event.record(&mut f);
        let _ = self.tx.send((*event.metadata().level(), format!("{}{}", f.message, f.rest)));
    }
}

/// The filter: `KERNELPRO_LOG` if set and valid, else INFO for our crates.
pub fn filter() -> EnvFilter {
    std::env::var("KERNELPRO_LOG").ok().and_then(|d| EnvFilter::try_new(d).ok()).unwrap_or_else(|| {
        EnvFilter::new("warn,kernelpro=info,kernelpro_lsp=info,kernelpro_core=info,kernelpro_toolchain=info,kernelpro_measure=info,kernelpro_optimize=info")
    })
}

/// Logs every panic (then lets the previous hook print it to stderr as before).
pub fn log_panics() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let what = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
            let thread = std::thread::current().name().unwrap_or("unnamed").to_string();
            tracing::error!(
                "panic in KernelPro (thread {thread}){at}: {what}; this is a bug, please report it with this log"
            );
            previous(info);
        }));
    });
}

/// Sends the server's log to `client` for the rest of the process.
pub fn to_client(client: tower_lsp_server::Client) {
    let (layer, mut rx) = ClientLayer::new();
    if Registry::default().with(filter()).with(layer).try_init().is_err() {
        return; // a subscriber is already set (a second server in one process)
    }
    log_panics();
    tokio::spawn(async move {
        while let Some((level, text)) = rx.recv().await {
            let kind = match level {
                Level::ERROR => tower_lsp_server::ls_types::MessageType::ERROR,
                Level::WARN => tower_lsp_server::ls_types::MessageType::WARNING,
                Level::INFO => tower_lsp_server::ls_types::MessageType::INFO,
                _ => tower_lsp_server::ls_types::MessageType::LOG,
            };
            client.log_message(kind, text).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_and_panics_become_lines() {
        let (layer, mut rx) = ClientLayer::new();
        let subscriber = Registry::default().with(EnvFilter::new("info")).with(layer);
        log_panics();
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(file = "k.cu", version = 3, "analysed");
            tracing::debug!("not at the default level");
            let _ = std::panic::catch_unwind(|| panic!("boom in a job"));
        });
        let mut lines = Vec::new();
        while let Ok(l) = rx.try_recv() {
            lines.push(l);
        }
        assert_eq!(lines[0], (Level::INFO, "analysed file=k.cu version=3".to_string()));
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[1].0, Level::ERROR);
        assert!(lines[1].1.contains("boom in a job") && lines[1].1.contains("log.rs:"), "{lines:?}");
    }
}
