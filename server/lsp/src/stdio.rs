//! Stdin and stdout on threads of their own. Tokio's `stdin()`/`stdout()`
//! hand every read and write to its blocking pool, so on a loaded machine each
//! message waited for a pool thread to be scheduled, behind the pool's busy
//! threads (a hover waited seconds behind 16 parsing requests before it was
//! even read). Here one thread sits in `read` on stdin (validating each frame,
//! `protocol::validate_frames`) and one in `write` on stdout, and the transport
//! reads and writes channels.

use std::io::Write;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;

/// The client's messages, validated, as an `AsyncRead` for the transport.
pub struct Input {
    rx: mpsc::Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    at: usize,
}

/// Starts the thread that reads stdin.
pub fn input() -> Input {
    let (tx, rx) = mpsc::channel::<Vec<u8>>(64);
    std::thread::Builder::new()
        .name("kernelpro-stdin".into())
        .spawn(move || {
            let sink = Sink(tx);
            if let Err(e) = crate::protocol::validate_frames(std::io::stdin().lock(), sink) {
                tracing::debug!(error = %e, "reading the client's messages ended");
            }
        })
        .expect("a thread for stdin");
    Input { rx, chunk: Vec::new(), at: 0 }
}

/// `Write` into the channel (blocking while the transport is behind: back-pressure).
struct Sink(mpsc::Sender<Vec<u8>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.blocking_send(buf.to_vec()).map_err(|_| std::io::ErrorKind::BrokenPipe)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl AsyncRead for Input {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        while self.at >= self.chunk.len() {
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(chunk)) => {
                    self.chunk = chunk;
                    self.at = 0;
                }
                Poll::Ready(None) => return Poll::Ready(Ok(())), // the end of input
                Poll::Pending => return Poll::Pending,
            }
        }
        let n = buf.remaining().min(self.chunk.len() - self.at);
        let at = self.at;
        buf.put_slice(&self.chunk[at..at + n]);
        self.at += n;
        Poll::Ready(Ok(()))
    }
}

/// The server's messages, as an `AsyncWrite` for the transport; [`Output::finish`]
/// waits until the thread has written them all.
pub struct Output {
    tx: Option<std::sync::mpsc::Sender<Vec<u8>>>,
}

/// Starts the thread that writes stdout; the handle ends once every byte is out.
pub fn output() -> (Output, std::thread::JoinHandle<()>) {
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let handle = std::thread::Builder::new()
        .name("kernelpro-stdout".into())
        .spawn(move || {
            let mut out = std::io::stdout().lock();
            while let Ok(chunk) = rx.recv() {
                if out.write_all(&chunk).is_err() {
                    return;
                }
                // Whatever else is queued goes out with it, then one flush.
                while let Ok(more) = rx.try_recv() {
                    if out.write_all(&more).is_err() {
                        return;
                    }
                }
                if out.flush().is_err() {
                    return;
                }
            }
        })
        .expect("a thread for stdout");
    (Output { tx: Some(tx) }, handle)
}

impl AsyncWrite for Output {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        // Answers kept serialized take the place of their placeholders (raw_answer.rs).
        let chunk = crate::raw_answer::splice(buf).into_owned();
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(chunk).is_ok());
        Poll::Ready(if sent { Ok(buf.len()) } else { Err(std::io::ErrorKind::BrokenPipe.into()) })
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.tx = None;
        Poll::Ready(Ok(()))
    }
}
