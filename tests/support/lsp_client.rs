//! A test client that speaks LSP to the real `kernelpro` binary over stdio.
//! Every message the server sends is recorded; tests wait on what they expect.

#![allow(dead_code)] // each test binary uses a different part of this helper

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

pub struct Client {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<Value>,
    next_id: i64,
    /// Messages received but not yet consumed by a wait.
    pub backlog: Vec<Value>,
    /// Every message received, as text.
    pub transcript: Vec<String>,
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_kernelpro")
}

impl Client {
    pub fn spawn(init_options: Value) -> Client {
        Self::spawn_with(Command::new(bin()), init_options)
    }

    pub fn spawn_with(cmd: Command, init_options: Value) -> Client {
        Self::spawn_in(cmd, init_options, &std::env::temp_dir())
    }

    /// A server whose client says it is `name` (`clientInfo`: "Neovim", "Visual Studio Code").
    pub fn spawn_as(name: &str, init_options: Value) -> Client {
        Self::start(Command::new(bin()), init_options, &std::env::temp_dir(), Some(name))
    }

    /// A server whose client names `root` as its workspace folder.
    pub fn spawn_in(cmd: Command, init_options: Value, root: &Path) -> Client {
        Self::start(cmd, init_options, root, None)
    }

    fn start(mut cmd: Command, init_options: Value, root: &Path, name: Option<&str>) -> Client {
        let mut child = cmd
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn kernelpro lsp");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(msg) = read_message(&mut reader) {
                if tx.send(msg).is_err() {
                    break;
                }
            }
        });
        let mut c = Client { child, stdin, rx, next_id: 1, backlog: Vec::new(), transcript: Vec::new() };
        let mut params = json!({"processId": null, "rootUri": null, "capabilities": {"window": {"workDoneProgress": true}}, "initializationOptions": init_options, "workspaceFolders": [{"uri": format!("file://{}", root.display()), "name": "tmp"}]});
        if let Some(name) = name {
            params["clientInfo"] = json!({"name": name});
        }
        c.request("initialize", params);
        c.notify("initialized", json!({}));
        c
    }

    pub fn send_raw(&mut self, body: &[u8]) {
        write!(self.stdin, "Content-Length: {}\r\n\r\n", body.len()).unwrap();
        self.stdin.write_all(body).unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
        self.send_raw(body.as_bytes());
    }

    /// Sends a request and waits for its response (result or error).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(id, Duration::from_secs(120))
    }

    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        self.send_raw(body.as_bytes());
        id
    }

    pub fn response(&mut self, id: i64, timeout: Duration) -> Value {
        self.wait(timeout, |m| m.get("id") == Some(&json!(id)) && m.get("method").is_none())
            .unwrap_or_else(|| panic!("no response to request {id}"))
    }

    /// Waits for a message matching `pred`, keeping the others in the backlog.
    pub fn wait(&mut self, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        if let Some(i) = self.backlog.iter().position(&pred) {
            return Some(self.backlog.remove(i));
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(msg) => {
                    self.transcript.push(msg.to_string());
                    // Answer server-to-client requests so the server never waits on us.
                    if msg.get("id").is_some() && msg.get("method").is_some() {
                        let result =
                            if msg["method"] == "workspace/configuration" { json!([null]) } else { Value::Null };
                        let body = json!({"jsonrpc": "2.0", "id": msg["id"], "result": result}).to_string();
                        self.send_raw(body.as_bytes());
                    }
                    if pred(&msg) {
                        return Some(msg);
                    }
                    self.backlog.push(msg);
                }
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// The first diagnostics published for `uri` from now on.
    pub fn wait_publish(&mut self, uri: &str, timeout: Duration) -> Value {
        let u = uri.to_string();
        self.wait(timeout, move |m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == u.as_str()
        })
        .unwrap_or_else(|| panic!("no diagnostics for {uri}"))["params"]
            .clone()
    }

    /// The settled diagnostics of `uri`: the last publish before the server's
    /// analysis progress for it ends (compiler messages come first, SASS and
    /// static findings in a second publish). Untrusted servers show no
    /// progress: use `wait_publish` there.
    pub fn wait_diagnostics(&mut self, uri: &str, timeout: Duration) -> Value {
        let prefix = format!("kernelpro-analysis:{uri}#");
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let p = prefix.clone();
            self.wait(left, move |m| {
                m["method"] == "$/progress"
                    && m["params"]["value"]["kind"] == "end"
                    && m["params"]["token"].as_str().is_some_and(|t| t.starts_with(&p))
            })
            .unwrap_or_else(|| panic!("the analysis of {uri} did not settle"));
            let is_publish = |m: &Value| m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri;
            if let Some(last) = self.backlog.iter().rposition(is_publish) {
                let found = self.backlog[last]["params"].clone();
                self.backlog.retain(|m| !is_publish(m));
                return found;
            }
        }
    }

    pub fn open(&mut self, uri: &str, text: &str, version: i32) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "cuda", "version": version, "text": text}}),
        );
    }

    pub fn save(&mut self, uri: &str, text: &str) {
        self.notify("textDocument/didSave", json!({"textDocument": {"uri": uri}, "text": text}));
    }

    pub fn change_all(&mut self, uri: &str, text: &str, version: i32) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
        );
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// The exit status, once the server ends by itself within `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub fn shutdown(mut self) -> std::process::ExitStatus {
        let id = self.send_request("shutdown", Value::Null);
        self.response(id, Duration::from_secs(10));
        self.notify("exit", Value::Null);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "server did not exit after `exit`");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One framed message from the server; `None` at the end of the stream.
pub fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut len = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length: ") {
            len = v.parse::<usize>().ok();
        }
    }
    let mut body = vec![0; len?];
    reader.read_exact(&mut body).ok()?;
    Some(serde_json::from_slice(&body).expect("the server writes JSON"))
}

/// A file URI for a path.
pub fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// The directory of the repository's test fixtures.
pub fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Trusted settings with the project's own nvcc discovery.
pub fn trusted() -> Value {
    json!({"trusted": true})
}
