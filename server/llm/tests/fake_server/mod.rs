//! A scripted LLM endpoint on 127.0.0.1: answers each request with the next
//! scripted response, in the real wire formats, and records what it got.

use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Debug, Clone)]
pub struct Scripted {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
    pub delay: Duration,
    /// Put the request's header block into the body (a server that echoes secrets).
    pub echo_headers: bool,
}

impl Scripted {
    pub fn json(body: Value) -> Scripted {
        Scripted {
            status: 200,
            headers: Vec::new(),
            body: body.to_string(),
            delay: Duration::ZERO,
            echo_headers: false,
        }
    }
    pub fn status(status: u16, body: &str) -> Scripted {
        Scripted { status, body: body.to_owned(), ..Scripted::json(Value::Null) }
    }
    pub fn raw(body: &str) -> Scripted {
        Scripted::status(200, body)
    }
    pub fn header(mut self, name: &'static str, value: &str) -> Scripted {
        self.headers.push((name, value.to_owned()));
        self
    }
    pub fn delayed(mut self, delay: Duration) -> Scripted {
        self.delay = delay;
        self
    }
    pub fn echoing(mut self) -> Scripted {
        self.echo_headers = true;
        self
    }
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    /// Lower-cased names.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

pub struct FakeServer {
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl FakeServer {
    pub fn start(script: Vec<Scripted>) -> FakeServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                // Registering the socket needs the runtime's reactor.
                serve(tokio::net::TcpListener::from_std(listener).unwrap(), script, recorded).await
            });
        });
        FakeServer { url, requests }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(listener: tokio::net::TcpListener, script: Vec<Scripted>, recorded: Arc<Mutex<Vec<Recorded>>>) {
    let script = Arc::new(script);
    let next = Arc::new(AtomicUsize::new(0));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let (script, next, recorded) = (script.clone(), next.clone(), recorded.clone());
        tokio::spawn(async move {
            let _ = answer(stream, &script, &next, &recorded).await;
        });
    }
}

async fn answer(
    mut stream: tokio::net::TcpStream,
    script: &[Scripted],
    next: &AtomicUsize,
    recorded: &Mutex<Vec<Recorded>>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.lines();
    let path = lines.next().unwrap_or("").split_whitespace().nth(1).unwrap_or("").to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize =
        headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    while buf.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
    recorded.lock().unwrap().push(Recorded { path, headers, body });

    let reply = script
        .get(next.fetch_add(1, Ordering::SeqCst))
        .cloned()
        .unwrap_or_else(|| Scripted::status(500, "script exhausted"));
    tokio::time::sleep(reply.delay).await;
    let body = if reply.echo_headers { format!("{} {head}", reply.body) } else { reply.body };
    let mut response = format!(
        "HTTP/1.1 {} Scripted\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        body.len()
    );
    for (name, value) in &reply.headers {
        response.push_str(&format!("{name}: {value}\r\n"));
    }
    response.push_str("\r\n");
    response.push_str(&body);
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

// Replies in the two wire formats.

pub fn openai_text(text: &str, finish_reason: &str) -> Scripted {
    Scripted::json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}
    }))
}

pub fn openai_tool_call(id: &str, name: &str, arguments: Value) -> Scripted {
    Scripted::json(json!({
        "id": "chatcmpl-2", "object": "chat.completion", "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}
        ]}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    }))
}

pub fn anthropic_text(text: &str, stop_reason: &str) -> Scripted {
    Scripted::json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "fake",
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": 100, "output_tokens": 50}
    }))
}

pub fn anthropic_tool_use(id: &str, name: &str, input: Value) -> Scripted {
    Scripted::json(json!({
        "id": "msg_2", "type": "message", "role": "assistant", "model": "fake",
        "content": [{"type": "text", "text": "Let me look that up."}, {"type": "tool_use", "id": id, "name": name, "input": input}],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 100, "output_tokens": 20}
    }))
}
