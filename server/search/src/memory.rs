//! Search memory: every tried rewrite with its outcome, deduplicated by a hash
//! of the normalized source, and given to proposers so they do not repeat themselves.

use crate::evaluate::{Outcome, OutcomeKind};
use crate::point::Point;
use crate::tree::NodeId;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Longest failure text kept in an entry; proposers need the gist, not the whole log.
const DETAIL_CHARS: usize = 240;

/// One tried candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryEntry {
    /// [`source_hash`] of the candidate.
    pub hash: u64,
    /// The node it became (the tree keeps the full outcome).
    pub node: NodeId,
    pub recipe: String,
    pub answers: Option<String>,
    pub outcome: OutcomeKind,
    /// First line of the failure text, shortened; empty for verified candidates.
    pub detail: String,
    pub speedup: Option<f64>,
    /// The parameter point of its form, when its rewrite offered several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<Point>,
}

/// Append-only list of tried candidates plus a free-form notes channel
/// (e.g. file paths and API patterns a proposer discovered).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SearchMemory {
    entries: Vec<MemoryEntry>,
    pub notes: Vec<String>,
    #[serde(skip)]
    by_hash: HashMap<u64, usize>,
}

impl SearchMemory {
    pub fn entries(&self) -> &[MemoryEntry] {
        &self.entries
    }

    /// The last `n` entries, oldest first: what goes into a prompt.
    pub fn recent(&self, n: usize) -> &[MemoryEntry] {
        &self.entries[self.entries.len().saturating_sub(n)..]
    }

    /// The entry of an already tried source, if any.
    pub fn lookup(&self, source: &str) -> Option<&MemoryEntry> {
        self.by_hash.get(&source_hash(source)).map(|&i| &self.entries[i])
    }

    pub(crate) fn record(
        &mut self,
        source: &str,
        node: NodeId,
        recipe: &str,
        answers: Option<&str>,
        outcome: &Outcome,
        speedup: Option<f64>,
    ) -> &mut MemoryEntry {
        let hash = source_hash(source);
        let detail = outcome.failure().and_then(|m| m.lines().next()).unwrap_or("");
        self.by_hash.entry(hash).or_insert(self.entries.len());
        self.entries.push(MemoryEntry {
            hash,
            node,
            recipe: recipe.to_owned(),
            answers: answers.map(str::to_owned),
            outcome: outcome.kind(),
            detail: detail.chars().take(DETAIL_CHARS).collect(),
            speedup,
            point: None,
        });
        self.entries.last_mut().expect("just pushed")
    }
}

/// FNV-1a over [`normalize`]d source: stable across runs and platforms.
pub fn source_hash(source: &str) -> u64 {
    normalize(source).bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// A candidate's name in the debug log (the search's and the evaluator's
/// lines about one source share it): 8 hex digits of its [`source_hash`].
pub fn candidate_id(source: &str) -> String {
    format!("{:08x}", source_hash(source) >> 32)
}

/// Drops comments and whitespace, keeping one space only where it separates two
/// identifier characters (`unsigned int`), so layout-only edits hash the same.
/// String and character literals are kept verbatim.
pub fn normalize(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    let mut pending_space = false;
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                let mut comment = String::from("/");
                while let Some(c) = chars.next_if(|&c| c != '\n') {
                    comment.push(c);
                }
                // Launch-spec comments are part of the program: a tuning step only reorders them.
                if let Some(spec) = comment.trim_start_matches('/').trim_start().strip_prefix("kernelpro:") {
                    out.push_str("\n//kernelpro:");
                    out.push_str(&spec.split_whitespace().collect::<Vec<_>>().join(" "));
                    out.push('\n');
                }
                pending_space = true;
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                for c in chars.by_ref() {
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
                pending_space = true;
            }
            c if c.is_whitespace() => pending_space = true,
            '"' | '\'' => {
                push_token(&mut out, c, &mut pending_space, is_word);
                let mut escaped = false;
                for d in chars.by_ref() {
                    out.push(d);
                    if d == c && !escaped {
                        break;
                    }
                    escaped = d == '\\' && !escaped;
                }
            }
            c => push_token(&mut out, c, &mut pending_space, is_word),
        }
    }
    out
}

fn push_token(out: &mut String, c: char, pending_space: &mut bool, is_word: impl Fn(char) -> bool) {
    if *pending_space && out.chars().next_back().is_some_and(&is_word) && is_word(c) {
        out.push(' ');
    }
    *pending_space = false;
    out.push(c);
}

#[cfg(test)]
mod spec_comment_tests {
    use super::normalize;

    #[test]
    fn launch_spec_comments_count_other_comments_do_not() {
        let a = "// kernelpro: tune B in [128, 256]\n__global__ void k() {} // note\n";
        let b = "// kernelpro: tune B in [256, 128]\n__global__ void k() {}\n";
        let c = "//   kernelpro:  tune B  in [128, 256]\n__global__ void k() {}\n";
        assert_ne!(normalize(a), normalize(b));
        assert_eq!(normalize(a), normalize(c));
    }
}
