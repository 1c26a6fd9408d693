//! Text sync against a model: random incremental edits applied by the server
//! must give the same text as the same edits applied to a plain `String` with
//! LSP's UTF-16 positions. The server's text is read back through
//! `textDocument/documentSymbol`, which parses the server's current text: kernels
//! planted at random places give names and UTF-16 ranges that move with every
//! edit, and a mismatch anywhere before a kernel shifts or renames it.

mod support;

use serde_json::{Value, json};
use std::time::Duration;
use support::lsp_client::{Client, trusted, uri};

const SEED: u64 = 0x7465_7874_7379_6e63;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// The reference: a String edited with LSP semantics. Lines end at "\n", "\r\n"
/// or "\r"; a character offset counts UTF-16 code units; a position past the
/// end of a line means the end of its content, past the last line the end of
/// the text; an offset inside a surrogate pair means the start of that char; a
/// range whose end is before its start is an insert at its start.
struct Model {
    text: String,
}

impl Model {
    /// (start, content end) byte offsets of each line.
    fn lines(&self) -> Vec<(usize, usize)> {
        let b = self.text.as_bytes();
        let mut lines = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'\n' => {
                    lines.push((start, i));
                    start = i + 1;
                }
                b'\r' => {
                    lines.push((start, i));
                    if b.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                    start = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        lines.push((start, b.len()));
        lines
    }

    fn offset(&self, line: u32, character: u32) -> usize {
        let lines = self.lines();
        let Some(&(start, end)) = lines.get(line as usize) else { return self.text.len() };
        let mut units = 0;
        for (i, ch) in self.text[start..end].char_indices() {
            if units + ch.len_utf16() > character as usize {
                return start + i;
            }
            units += ch.len_utf16();
        }
        end
    }

    fn position(&self, byte: usize) -> (u32, u32) {
        let lines = self.lines();
        let line = lines.iter().rposition(|&(s, _)| s <= byte).unwrap();
        // A core position between "\r" and "\n" is the end of the line's content.
        let byte = byte.min(lines[line].1);
        let col: usize = self.text[lines[line].0..byte].chars().map(char::len_utf16).sum();
        (line as u32, col as u32)
    }

    fn apply(&mut self, start: (u32, u32), end: (u32, u32), new_text: &str) {
        let s = self.offset(start.0, start.1);
        let e = self.offset(end.0, end.1).max(s);
        self.text.replace_range(s..e, new_text);
    }

    /// Byte offset of a core position (tree-sitter: "\n" lines, byte columns).
    fn core_offset(&self, line: u32, col: u32) -> usize {
        let line_start = if line == 0 {
            0
        } else {
            self.text.match_indices('\n').nth(line as usize - 1).map_or(self.text.len(), |(i, _)| i + 1)
        };
        line_start + col as usize
    }

    fn lsp_range(&self, span: kernelpro_model::Span) -> String {
        let (l0, c0) = self.position(self.core_offset(span.start.line, span.start.col));
        let (l1, c1) = self.position(self.core_offset(span.end.line, span.end.col));
        format!("{l0}:{c0}-{l1}:{c1}")
    }

    /// What documentSymbol must answer for this text.
    fn expected_symbols(&self) -> Vec<String> {
        kernelpro_source::parse(&self.text)
            .functions
            .iter()
            .map(|f| format!("{} {} {}", f.name, self.lsp_range(f.span), self.lsp_range(f.name_span)))
            .collect()
    }
}

fn range_text(r: &Value) -> String {
    format!("{}:{}-{}:{}", r["start"]["line"], r["start"]["character"], r["end"]["line"], r["end"]["character"])
}

fn server_symbols(c: &mut Client, u: &str) -> Vec<String> {
    let r = c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": u}}));
    r["result"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|s| {
            format!("{} {} {}", s["name"].as_str().unwrap(), range_text(&s["range"]), range_text(&s["selectionRange"]))
        })
        .collect()
}

/// Pieces of inserted text: kernels to plant, and the characters that make
/// position arithmetic hard.
fn piece(rng: &mut Rng, alphabet: &[&str]) -> String {
    if rng.chance(25) {
        format!("__global__ void k{}(int* p) {{ p[0] = {}; }}\n", rng.below(1000), rng.below(9))
    } else {
        (0..1 + rng.below(4)).map(|_| alphabet[rng.below(alphabet.len())]).collect()
    }
}

/// A random position, mostly inside the text, sometimes past a line's end or
/// the text's end, sometimes inside a surrogate pair.
fn position(rng: &mut Rng, m: &Model) -> (u32, u32) {
    let lines = m.lines();
    match rng.below(20) {
        0 => (lines.len() as u32 + rng.below(3) as u32, rng.below(5) as u32),
        1 => (rng.below(lines.len()) as u32, 200 + rng.below(100) as u32),
        2 => (u32::MAX, u32::MAX),
        3 => m.position(m.text.len()),
        _ => {
            let line = rng.below(lines.len());
            let (s, e) = lines[line];
            let units: usize = m.text[s..e].chars().map(char::len_utf16).sum();
            (line as u32, rng.below(units + 1) as u32)
        }
    }
}

/// One change event, of the kinds editors send.
fn random_change(rng: &mut Rng, m: &Model, alphabet: &[&str]) -> ((u32, u32), (u32, u32), String) {
    match rng.below(10) {
        // insert with an empty range
        0..=3 => {
            let p = position(rng, m);
            (p, p, piece(rng, alphabet))
        }
        // delete whole lines
        4 => {
            let l = rng.below(m.lines().len()) as u32;
            ((l, 0), (l + 1 + rng.below(2) as u32, 0), String::new())
        }
        // append at the very end
        5 => {
            let end = m.position(m.text.len());
            (end, end, piece(rng, alphabet))
        }
        // a backwards range: treated as an insert at its start
        6 if rng.chance(20) => {
            let (a, b) = (position(rng, m), position(rng, m));
            (a.max(b), a.min(b), piece(rng, alphabet))
        }
        // replace or delete a range
        _ => {
            let (a, b) = (position(rng, m), position(rng, m));
            let text = if rng.chance(40) { String::new() } else { piece(rng, alphabet) };
            (a.min(b), a.max(b), text)
        }
    }
}

/// Replays `sequences` random edit sequences and returns how many edits were checked.
fn replay(c: &mut Client, sequences: usize, edits_per_sequence: usize, alphabet: &[&str], seed: u64) -> usize {
    let mut rng = Rng(seed);
    let mut edits = 0;
    for s in 0..sequences {
        let u = format!("file:///sync/s{s}.cu");
        let mut m = Model { text: "// héllo 😀\r\n__global__ void first(int* p) { p[0] = 1; }\n".to_string() };
        c.open(&u, &m.text, 1);
        for v in 0..edits_per_sequence {
            let changes: Vec<Value> = (0..1 + rng.below(3))
                .map(|_| {
                    let (start, end, text) = random_change(&mut rng, &m, alphabet);
                    m.apply(start, end, &text);
                    edits += 1;
                    json!({"range": {"start": {"line": start.0, "character": start.1}, "end": {"line": end.0, "character": end.1}}, "text": text})
                })
                .collect();
            c.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": u, "version": v + 2}, "contentChanges": changes}),
            );
            let got = server_symbols(c, &u);
            assert_eq!(
                got,
                m.expected_symbols(),
                "sequence {s}, version {}: after {changes:?}\nmodel text: {:?}",
                v + 2,
                m.text
            );
        }
        // A kernel planted at the model's end must land at the model's end.
        let end = m.position(m.text.len());
        let tail = "\n__global__ void zz_end() {}";
        m.apply(end, end, tail);
        c.notify("textDocument/didChange", json!({"textDocument": {"uri": u, "version": 10_000}, "contentChanges": [{"range": {"start": {"line": end.0, "character": end.1}, "end": {"line": end.0, "character": end.1}}, "text": tail}]}));
        assert_eq!(server_symbols(c, &u), m.expected_symbols(), "sequence {s} end: {:?}", m.text);
        c.notify("textDocument/didClose", json!({"textDocument": {"uri": u}}));
        c.backlog.clear();
    }
    edits
}

const ALPHABET: &[&str] = &[
    "a", "_", " ", "é", "ü", "😀", "𝄞", "中", "\n", "\r\n", "{", "}", ";", "/*", "*/", "//", "\t", "\u{2028}",
    "\u{85}", "0",
];

#[test]
fn random_edits_match_a_string_model() {
    let mut c = Client::spawn(json!({}));
    let edits = replay(&mut c, 200, 60, ALPHABET, SEED);
    println!("text_sync: {edits} edits replayed and checked against the model");
    assert!(c.alive());
}

/// A lone "\r" ends a line in LSP (and in the server's rope), but not for
/// tree-sitter or nvcc, whose positions count "\n" lines only.
#[test]
fn lone_carriage_returns() {
    let mut c = Client::spawn(json!({}));
    let alphabet: Vec<&str> = ALPHABET.iter().copied().chain(["\r", "\r", "\r"]).collect();
    let edits = replay(&mut c, 30, 40, &alphabet, SEED ^ 0x0d);
    println!("text_sync (lone CR): {edits} edits replayed and checked against the model");
    assert!(c.alive());
}

/// After edits above an error (and on its line, before it), a save compiles the
/// synced text and the diagnostic lands on the shifted line and UTF-16 column.
#[test]
fn diagnostics_follow_edits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shift.cu");
    let text = "// top\n__global__ void k(float* y) {\n  y[0] = undefined_name;\n}\n";
    std::fs::write(&path, text).unwrap();
    let u = uri(&path);
    let mut c = Client::spawn(trusted());
    let mut m = Model { text: text.to_string() };
    c.open(&u, text, 1);
    let first = c.wait_diagnostics(&u, Duration::from_secs(120));
    assert_eq!(
        first["diagnostics"][0]["range"],
        json!({"start": {"line": 2, "character": 9}, "end": {"line": 2, "character": 23}})
    );
    let edits = [
        ((0, 0), (0, 0), "// 😀 one\r\n// two é\n"),
        ((3, 0), (3, 0), "  /* ü 𝄞 */"),
        ((0, 0), (1, 0), ""),
        ((1, 6), (1, 6), "\n  int pad = 0;\r\n"),
        ((5, 2), (5, 2), "/*😀é*/ "),
    ];
    for (i, (s, e, t)) in edits.iter().enumerate() {
        m.apply(*s, *e, t);
        c.notify("textDocument/didChange", json!({"textDocument": {"uri": u, "version": i + 2}, "contentChanges": [{"range": {"start": {"line": s.0, "character": s.1}, "end": {"line": e.0, "character": e.1}}, "text": t}]}));
    }
    std::fs::write(&path, &m.text).unwrap();
    c.notify("textDocument/didSave", json!({"textDocument": {"uri": u}}));
    let d = c.wait_diagnostics(&u, Duration::from_secs(120));
    assert_eq!(d["version"], 6);
    let at = m.text.find("undefined_name").unwrap();
    let (line, col) = m.position(at);
    let expected = json!({"start": {"line": line, "character": col}, "end": {"line": line, "character": col + 14}});
    assert_eq!(d["diagnostics"][0]["range"], expected, "{d}\ntext: {:?}", m.text);
    assert!(d["diagnostics"][0]["message"].as_str().unwrap().contains("undefined_name"));
}

/// An untrusted document says why it gets no compiler messages (one
/// information diagnostic, code `Untrusted`; the log says it once for the
/// session), and trusting the workspace re-analyses the open documents at once,
/// without waiting for a save (or, before, forever for a client that never saves).
#[test]
fn trust_change_reanalyses_open_documents() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Client::spawn(json!({}));
    let uris: Vec<String> = (0..3).map(|i| uri(&dir.path().join(format!("u{i}.cu")))).collect();
    for (i, u) in uris.iter().enumerate() {
        let text = format!("__global__ void k{i}(float* y) {{\n  y[0] = undefined_{i};\n}}\n");
        std::fs::write(dir.path().join(format!("u{i}.cu")), &text).unwrap();
        c.open(u, &text, 1);
        let d = c.wait_publish(u, Duration::from_secs(60));
        let diags = d["diagnostics"].as_array().unwrap();
        assert_eq!(diags.len(), 1, "{d}");
        assert_eq!((diags[0]["code"].as_str(), diags[0]["severity"].as_u64()), (Some("Untrusted"), Some(3)), "{d}");
        assert!(diags[0]["message"].as_str().unwrap().starts_with("workspace not trusted: nothing is compiled"), "{d}");
    }
    let logs = c.transcript.iter().filter(|m| m.contains("window/logMessage") && m.contains("not trusted")).count();
    assert_eq!(logs, 1, "one log message about trust");
    // Trust arrives through the settings: every open document is compiled now, with no save.
    c.notify("workspace/didChangeConfiguration", json!({"settings": {"kernelpro": {"trusted": true}}}));
    for (i, u) in uris.iter().enumerate() {
        let d = c.wait_diagnostics(u, Duration::from_secs(180));
        let messages: Vec<&str> =
            d["diagnostics"].as_array().unwrap().iter().map(|d| d["message"].as_str().unwrap()).collect();
        assert!(messages.iter().any(|m| m.contains(&format!("undefined_{i}"))), "{messages:?}");
        assert!(!messages.iter().any(|m| m.contains("not trusted")), "{messages:?}");
    }
}

/// A lone UTF-16 surrogate (`\ud800`, legal JSON that no Rust string holds)
/// used to end the session: now a request holding one gets an InvalidParams
/// error, a notification is ignored with a log message, and the server goes
/// on. Raw JSON-RPC bytes over the real binary.
#[test]
fn lone_surrogates_are_refused_at_the_protocol_edge() {
    let mut c = Client::spawn(json!({}));
    let u = "file:///sync/surrogate.cu";
    // didOpen with a lone surrogate: ignored, logged.
    c.send_raw(
        br#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///sync/surrogate.cu","languageId":"cuda","version":1,"text":"__global__ void bad(float* y) { y[0] = 1; } // \ud800"}}}"#,
    );
    let log = c
        .wait(Duration::from_secs(20), |m| {
            m["method"] == "window/logMessage"
                && m["params"]["message"].as_str().is_some_and(|t| t.contains("not valid Unicode"))
        })
        .expect("a log message about the ignored didOpen");
    assert!(log["params"]["message"].as_str().unwrap().contains("textDocument/didOpen"), "{log}");
    // A request with one: an error reply with its id.
    c.send_raw(
        br#"{"jsonrpc":"2.0","id":900,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///sync/\udfff.cu"},"position":{"line":0,"character":0}}}"#,
    );
    let reply = c.response(900, Duration::from_secs(20));
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("surrogate"), "{reply}");
    // A didChange with one, on an open document: ignored, the text unchanged.
    c.open(u, "__global__ void good(float* y) { y[0] = 1; }\n", 1);
    c.send_raw(
        br#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///sync/surrogate.cu","version":2},"contentChanges":[{"text":"__global__ void changed(float* y) {} \ud800"}]}}"#,
    );
    // A valid pair passes: the session lives and the text is what was opened.
    let symbols = c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": u}}));
    let names: Vec<&str> = symbols["result"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["good"], "{symbols}");
    c.send_raw(
        br#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///sync/surrogate.cu","version":3},"contentChanges":[{"text":"// \ud83d\ude00\n__global__ void paired(float* y) {}\n"}]}}"#,
    );
    let symbols = c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": u}}));
    assert_eq!(symbols["result"][0]["name"], "paired", "{symbols}");
    assert!(c.alive());
    assert!(c.shutdown().success());
}

/// didClose clears the file's diagnostics (an empty publish), and an analysis
/// that finishes after the close publishes nothing.
#[test]
fn diagnostics_are_cleared_on_close() {
    let mut c = Client::spawn(json!({}));
    let u = "file:///sync/closed.cu";
    c.open(u, "__global__ void k(float* y) { y[0] = 1; }\n", 1);
    let d = c.wait_publish(u, Duration::from_secs(60));
    assert!(!d["diagnostics"].as_array().unwrap().is_empty(), "{d}");
    c.notify("textDocument/didClose", json!({"textDocument": {"uri": u}}));
    let d = c.wait_publish(u, Duration::from_secs(20));
    assert_eq!(d["diagnostics"], json!([]), "{d}");
    // Open, change and close at once: whatever comes last for the file is empty.
    c.open(u, "__global__ void k(float* y) { y[0] = 1; }\n", 2);
    c.change_all(u, "__global__ void k2(float* y) { y[0] = 2; }\n", 3);
    c.notify("textDocument/didClose", json!({"textDocument": {"uri": u}}));
    c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": "file:///sync/none.cu"}}));
    std::thread::sleep(Duration::from_secs(2));
    c.wait(Duration::from_millis(10), |_| false);
    let last = c
        .backlog
        .iter()
        .rev()
        .find(|m| m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == u)
        .expect("a publish after the close");
    assert_eq!(last["params"]["diagnostics"], json!([]), "{last}");
    assert!(c.shutdown().success());
}

/// 3,000 findings and 3,000 unsaved edits: mapping the findings through the
/// edits is linear (the edits are composed once), so a request on another
/// file, sent after the edits, is answered in well under a second (it waited
/// 12.5 s behind the quadratic mapping).
#[test]
fn three_thousand_findings_through_three_thousand_edits() {
    const N: usize = 3000;
    let mut c = Client::spawn(json!({}));
    let (u, other) = ("file:///sync/findings.cu", "file:///sync/other.cu");
    c.open(other, "__global__ void o(float* y) { y[0] = 1; }\n", 1);
    c.wait_publish(other, Duration::from_secs(60));
    // One launch-spec error per line: 3,000 findings without a compiler.
    let text: String = (0..N).map(|i| format!("// kernelpro: grid = ({i}\n")).collect::<String>()
        + "__global__ void k(float* y) { y[0] = 1; }\n";
    c.open(u, &text, 1);
    let d = c.wait_publish(u, Duration::from_secs(120));
    let findings = d["diagnostics"].as_array().unwrap().len();
    assert!(findings >= N, "{findings} findings");
    // Typing on each finding's line (the findings stay where they are, each
    // change is one more edit to map through).
    let started = std::time::Instant::now();
    for i in 0..N {
        let line = (i * 7) % N;
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": u, "version": i + 2}, "contentChanges": [{"range": {"start": {"line": line, "character": 2}, "end": {"line": line, "character": 2}}, "text": " "}]}),
        );
    }
    let sent = started.elapsed();
    let t = std::time::Instant::now();
    c.request("textDocument/hover", json!({"textDocument": {"uri": other}, "position": {"line": 0, "character": 17}}));
    let hover = t.elapsed();
    println!(
        "{findings} findings x {N} edits: edits sent in {} ms, a hover on another file answered {} ms after them",
        sent.as_millis(),
        hover.as_millis()
    );
    assert!(hover < Duration::from_secs(3), "the hover waited {hover:?}");
    assert!(c.shutdown().success());
}

/// A newline in the file's name: the compiler's messages name the file over
/// two lines, and the diagnostic must still land on its own line of the file.
#[test]
fn a_newline_in_the_file_name_does_not_misplace_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two\nlines.cu");
    let text = "// top\n// 2\n__global__ void k(float* y) {\n  y[0] = undefined_name;\n}\n";
    std::fs::write(&path, text).unwrap();
    let u = format!("file://{}", dir.path().join("two%0Alines.cu").display());
    let mut c = Client::spawn(trusted());
    c.open(&u, text, 1);
    let d = c.wait_diagnostics(&u, Duration::from_secs(120));
    let hit = d["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["message"].as_str().unwrap().contains("undefined_name"))
        .unwrap_or_else(|| panic!("{d}"))
        .clone();
    assert_eq!(hit["range"]["start"]["line"], 3, "{hit}");
}
