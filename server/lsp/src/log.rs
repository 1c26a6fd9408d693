//! Logging to the client's log (VS Code's output channel, Neovim's `lsp.log`)
//! through `window/logMessage`, with `tracing`: events of the server's crates
//! at INFO and above (`KERNELPRO_LOG` changes that: a level such as `debug`
//! for KernelPro's crates, or an env-filter directive), and every panic — in
//! a handler or in background work, which would otherwise vanish with its
//! task — as an ERROR with where it happened.
//!
//! Lines are `tracing_subscriber::fmt`'s, without time, level or target (the
//! client adds its own): the spans an event is in, then the event, e.g.
//! `analysis.compile{file=/w/k.cu}:tool{program=nvcc args="…"}: finished code=Some(0) ms=812`.

use std::io;
use std::sync::OnceLock;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tracing::{Level, Metadata, Subscriber};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Registry};

/// One line for the client's log.
pub type Line = (Level, String);

/// Where the formatter writes: one [`LineWriter`] per event, which hands the
/// line to a channel when dropped (the client's log, drained by a task, since
/// `tracing` is synchronous and the client is not).
#[derive(Clone)]
pub struct ClientWriter {
    tx: UnboundedSender<Line>,
}

/// One event's text, sent as one line at its level.
pub struct LineWriter {
    tx: UnboundedSender<Line>,
    level: Level,
    text: Vec<u8>,
}

impl io::Write for LineWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.text);
        let text = text.trim_end();
        if !text.is_empty() {
            let _ = self.tx.send((self.level, text.to_string()));
        }
    }
}

impl<'a> MakeWriter<'a> for ClientWriter {
    type Writer = LineWriter;
    fn make_writer(&'a self) -> LineWriter {
        LineWriter { tx: self.tx.clone(), level: Level::INFO, text: Vec::new() }
    }
    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> LineWriter {
        LineWriter { tx: self.tx.clone(), level: *meta.level(), text: Vec::new() }
    }
}

/// The layer that formats events (with their spans) into lines, and the lines.
pub fn client_layer<S>() -> (impl Layer<S>, UnboundedReceiver<Line>)
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let (tx, rx) = unbounded_channel();
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(ClientWriter { tx })
        .with_ansi(false)
        .without_time()
        .with_level(false)
        .with_target(false);
    (layer, rx)
}

/// KernelPro's crates (a directive's target matches every target it begins).
const OURS: &str = "kernelpro";

/// The filter: `KERNELPRO_LOG` if set and valid, else `default` (a level)
/// for KernelPro's crates and WARN for the rest. A bare level in
/// `KERNELPRO_LOG` (`debug`) is for KernelPro's crates too: at debug and
/// trace, the LSP library would log every message it sends, this log included.
pub fn filter(default: Level) -> EnvFilter {
    let directive = |level: &str| format!("warn,{OURS}={level}");
    let from_env = std::env::var("KERNELPRO_LOG").ok().and_then(|d| {
        let d = d.trim();
        let d = d.parse::<Level>().map(|l| directive(l.as_str())).unwrap_or_else(|_| d.to_string());
        EnvFilter::try_new(d).ok()
    });
    from_env.unwrap_or_else(|| EnvFilter::new(directive(default.as_str())))
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
    let (layer, mut rx) = client_layer();
    if Registry::default().with(filter(Level::INFO)).with(layer).try_init().is_err() {
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
        let (layer, mut rx) = client_layer();
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
        assert_eq!(lines[0], (Level::INFO, "analysed file=\"k.cu\" version=3".to_string()));
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[1].0, Level::ERROR);
        assert!(lines[1].1.contains("boom in a job") && lines[1].1.contains("log.rs:"), "{lines:?}");
    }

    #[test]
    fn a_debug_line_names_its_spans_and_their_fields() {
        let (layer, mut rx) = client_layer();
        let subscriber = Registry::default().with(EnvFilter::new("debug")).with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let _analysis = tracing::debug_span!("analysis.compile", file = %"/w/k.cu").entered();
            let _tool = tracing::debug_span!("tool", program = %"nvcc", args = "-arch=sm_90 k.cu").entered();
            tracing::debug!(code = ?Some(0), ms = 812, "finished");
        });
        let line = rx.try_recv().unwrap();
        assert_eq!(
            line,
            (
                Level::DEBUG,
                "analysis.compile{file=/w/k.cu}:tool{program=nvcc args=\"-arch=sm_90 k.cu\"}: finished code=Some(0) ms=812"
                    .to_string()
            )
        );
    }
}
