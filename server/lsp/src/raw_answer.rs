//! Answers serialized once, written as they are.
//!
//! tower-lsp-server 0.23 turns every result into a `serde_json::Value` (one
//! `BTreeMap` with `String` keys per JSON object), writes that tree out and
//! frees it, all on the task that runs the transport. For documentSymbol on
//! 20,000 kernels (a 4.4 MB answer, 140,000 objects) that took 0.4–0.6 s of the
//! transport's thread per request in a release build (perf: `Value`'s
//! `Serialize`, `BTreeMap` inserts and drops, `malloc_consolidate`), for an
//! answer that does not change until the text does.
//!
//! So a handler may answer with bytes it keeps ([`register`]): it returns a
//! small placeholder result naming a token, the transport serializes that, and
//! [`splice`], on the way to stdout (`stdio::Output`), replaces the framed
//! placeholder by the kept bytes. The request still goes through the transport
//! like any other (its id, concurrency and `$/cancelRequest`: a cancelled
//! request's placeholder is never written). Only a token this process
//! registered, at the very start of a response's result and followed by the
//! exact placeholder it was registered with, is replaced, once.

use serde::Serialize;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The text a placeholder's string starts with (a NUL: no identifier, path or
/// message of the server holds one). JSON spells it `\u0000`.
const MARK: &str = "\u{0}kernelpro-raw:";
/// How the serializer writes [`MARK`] in a JSON string.
const MARK_JSON: &[u8] = b"\\u0000kernelpro-raw:";
/// How tower-lsp-server's codec starts every successful response.
const RESULT: &[u8] = b"{\"jsonrpc\":\"2.0\",\"result\":";
/// Placeholders whose answers were not written (cancelled requests) are
/// forgotten past this many.
const KEPT: usize = 256;

struct Entry {
    token: u64,
    /// The placeholder result exactly as the transport writes it.
    placeholder: Vec<u8>,
    raw: Arc<[u8]>,
}

fn pending() -> &'static Mutex<VecDeque<Entry>> {
    static PENDING: OnceLock<Mutex<VecDeque<Entry>>> = OnceLock::new();
    PENDING.get_or_init(Default::default)
}

/// A token no earlier call returned, not guessable from outside.
fn token() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let seed = *SEED.get_or_init(|| RandomState::new().hash_one(std::process::id()));
    seed.wrapping_add(COUNT.fetch_add(1, Ordering::Relaxed).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// Keeps `raw` (a JSON value, serialized) to be written as the result of the
/// request whose handler returns the value `placeholder` makes from the given
/// name: the value must serialize to a few bytes, the name within the first
/// 128 (e.g. a list of one symbol of that name).
pub fn register<T: Serialize>(raw: Arc<[u8]>, placeholder: impl FnOnce(String) -> T) -> T {
    let token = token();
    let value = placeholder(format!("{MARK}{token}"));
    // As the transport writes it: through a `Value` (whose objects may order their keys).
    let bytes = serde_json::to_value(&value).and_then(|v| serde_json::to_vec(&v)).expect("a placeholder serializes");
    let mut pending = pending().lock().unwrap_or_else(|e| e.into_inner());
    if pending.len() >= KEPT {
        pending.pop_front();
    }
    pending.push_back(Entry { token, placeholder: bytes, raw });
    value
}

/// `out` with each registered placeholder response replaced by its kept
/// answer. `out` is what the transport writes: whole frames
/// (`Content-Length: N\r\n\r\n` and N bytes), as its codec makes them;
/// anything else is passed on as it is.
pub fn splice(out: &[u8]) -> Cow<'_, [u8]> {
    const HEADER: &[u8] = b"Content-Length: ";
    let mut spliced: Option<Vec<u8>> = None;
    let mut done = 0; // `out[..done]` is in `spliced` (once there is one)
    let mut at = 0;
    while let Some(rest) = out.get(at..).filter(|r| r.starts_with(HEADER)) {
        let digits = rest[HEADER.len()..].iter().take_while(|b| b.is_ascii_digit()).count();
        let Some(len) =
            std::str::from_utf8(&rest[HEADER.len()..HEADER.len() + digits]).ok().and_then(|d| d.parse::<usize>().ok())
        else {
            break;
        };
        let body_at = HEADER.len() + digits + 4;
        if !rest[HEADER.len() + digits..].starts_with(b"\r\n\r\n") || rest.len() < body_at + len {
            break;
        }
        let body = &rest[body_at..body_at + len];
        if let Some(new_body) = replaced(body) {
            let spliced = spliced.get_or_insert_with(|| Vec::with_capacity(out.len() + new_body.len()));
            spliced.extend_from_slice(&out[done..at]);
            spliced.extend_from_slice(format!("Content-Length: {}\r\n\r\n", new_body.len()).as_bytes());
            spliced.extend_from_slice(&new_body);
            done = at + body_at + len;
        }
        at += body_at + len;
    }
    match spliced {
        None => Cow::Borrowed(out),
        Some(mut spliced) => {
            spliced.extend_from_slice(&out[done..]);
            Cow::Owned(spliced)
        }
    }
}

/// The body with its kept answer, if `body` is a registered placeholder's response.
fn replaced(body: &[u8]) -> Option<Vec<u8>> {
    let result = body.strip_prefix(RESULT)?;
    // The placeholder's name, within its first bytes.
    let head = &result[..result.len().min(128)];
    let mark = head.windows(MARK_JSON.len()).position(|w| w == MARK_JSON)?;
    let digits = &result[mark + MARK_JSON.len()..];
    let n = digits.iter().take_while(|b| b.is_ascii_digit()).count();
    let token: u64 = std::str::from_utf8(&digits[..n]).ok()?.parse().ok()?;
    let entry = {
        let mut pending = pending().lock().unwrap_or_else(|e| e.into_inner());
        let i = pending.iter().position(|e| e.token == token && result.starts_with(&e.placeholder))?;
        pending.remove(i)?
    };
    let tail = &result[entry.placeholder.len()..];
    let mut new = Vec::with_capacity(RESULT.len() + entry.raw.len() + tail.len());
    new.extend_from_slice(RESULT);
    new.extend_from_slice(&entry.raw);
    new.extend_from_slice(tail);
    Some(new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tower_lsp_server::jsonrpc::{Id, Response};

    /// A frame as tower-lsp-server's codec writes it.
    fn frame(message: &impl Serialize) -> Vec<u8> {
        let body = serde_json::to_string(message).unwrap();
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    fn frames(out: &[u8]) -> Vec<serde_json::Value> {
        let mut got = Vec::new();
        let mut rest = out;
        while !rest.is_empty() {
            let text = std::str::from_utf8(rest).unwrap();
            let (head, body) = text.split_once("\r\n\r\n").unwrap();
            let len: usize = head.strip_prefix("Content-Length: ").unwrap().parse().unwrap();
            got.push(serde_json::from_str(&body[..len]).unwrap());
            rest = &rest[head.len() + 4 + len..];
        }
        got
    }

    #[test]
    fn a_placeholder_is_replaced_once_among_other_frames() {
        let raw: Arc<[u8]> =
            serde_json::to_vec(&json!([{"name": "k", "kind": 24}, {"name": "é\"", "kind": 12}])).unwrap().into();
        let placeholder = register(raw.clone(), |name| vec![json!({"name": name, "kind": 12})]);
        let other = frame(&json!({"jsonrpc": "2.0", "method": "window/logMessage", "params": {"message": "x"}}));
        let answer = frame(&Response::from_ok(Id::String("a\"id".into()), json!(placeholder)));
        let out = [other.clone(), answer.clone(), other.clone()].concat();
        let got = frames(&splice(&out));
        assert_eq!(got.len(), 3);
        assert_eq!(
            got[1],
            json!({"jsonrpc": "2.0", "result": [{"name": "k", "kind": 24}, {"name": "é\"", "kind": 12}], "id": "a\"id"})
        );
        assert_eq!(got[0], got[2]);
        // Written once: the same frame again is passed on as it is.
        assert!(matches!(splice(&answer), Cow::Borrowed(_)));
    }

    #[test]
    fn only_registered_tokens_at_the_start_of_a_result_are_replaced() {
        let raw: Arc<[u8]> = b"[1]".as_slice().into();
        let placeholder = register(raw, |name| vec![json!({"name": name})]);
        let name = placeholder[0]["name"].as_str().unwrap().to_owned();
        // The same text elsewhere (a message, a parameter, an error) stays.
        for message in [
            json!({"jsonrpc": "2.0", "method": "window/logMessage", "params": [{"name": name}]}),
            json!({"jsonrpc": "2.0", "result": {"contents": [{"name": name}]}, "id": 1}),
            json!({"jsonrpc": "2.0", "result": [{"name": format!("{MARK}1")}], "id": 1}),
            json!({"jsonrpc": "2.0", "result": [{"name": name, "kind": 1}], "id": 1}),
        ] {
            let out = frame(&message);
            assert!(matches!(splice(&out), Cow::Borrowed(_)), "{message}");
        }
        // Not frames: passed on.
        for out in [b"Content-Length: x\r\n\r\n{}".as_slice(), b"Content-Length: 99\r\n\r\n{}", b"garbage"] {
            assert!(matches!(splice(out), Cow::Borrowed(_)));
        }
        let got = frames(&splice(&frame(&Response::from_ok(Id::Number(7), json!(placeholder)))));
        assert_eq!(got, vec![json!({"jsonrpc": "2.0", "result": [1], "id": 7})]);
    }
}
