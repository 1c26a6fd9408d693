//! Parse once. Within a [`parse_once`] scope, every [`crate::parse_tree`] and
//! [`crate::parse`] of a text already parsed in that scope on this thread
//! reuses the first tree (a `Tree` clone shares the parse) and structure: the
//! optimizer's node expansion runs every recipe inside one scope, so the node's
//! file is parsed once however many recipes read it. Outside a scope nothing
//! is kept. [`count_parses`] tallies the real parses a closure makes (every
//! parse goes through [`crate::budget::parse_tree_within`]), for the tests
//! that hold the optimize path to one parse per node.

use crate::SourceFile;
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use tree_sitter::Tree;

/// The most texts one scope keeps (the node's file, its canonical forms, a few candidates).
const KEPT: usize = 8;

struct Entry {
    text: String,
    tree: Tree,
    file: Option<SourceFile>,
}

thread_local! {
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    static KEPT_TREES: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
    static TALLY: RefCell<Option<Vec<u64>>> = const { RefCell::new(None) };
    static MEMO: RefCell<Vec<Memo>> = const { RefCell::new(Vec::new()) };
}

/// One value [`memo`] keeps: what was computed, of which text and name.
struct Memo {
    what: &'static str,
    text: String,
    name: String,
    value: Rc<dyn Any>,
}

/// The most values one scope keeps (a few analyses of the node's file and its canonical form).
const MEMOS: usize = 64;

/// Leaves the scope when dropped (a panic included): the outermost one forgets every tree.
struct Scope;

impl Drop for Scope {
    fn drop(&mut self) {
        let depth = DEPTH.with(|d| {
            d.set(d.get() - 1);
            d.get()
        });
        if depth == 0 {
            KEPT_TREES.with(|k| k.borrow_mut().clear());
            MEMO.with(|m| m.borrow_mut().clear());
        }
    }
}

/// Runs `f` with parses of the same text on this thread shared (scopes nest; the outermost
/// one's end drops what was kept).
pub fn parse_once<R>(f: impl FnOnce() -> R) -> R {
    DEPTH.with(|d| d.set(d.get() + 1));
    let _scope = Scope;
    f()
}

/// Within a [`parse_once`] scope, `what` of (`text`, `name`) computed once: a later call with the
/// same three gets a clone of the first value (every recipe of a node's expansion asks for the same
/// canonical form, specs and kernel model). `what` names the computation: `f` must depend on
/// nothing but `text` and `name`. Outside a scope `f` just runs.
pub fn memo<T: Clone + 'static>(what: &'static str, text: &str, name: &str, f: impl FnOnce() -> T) -> T {
    if !in_scope() {
        return f();
    }
    let kept = MEMO.with(|m| {
        m.borrow()
            .iter()
            .find(|e| e.what == what && e.name == name && e.text == text)
            .and_then(|e| e.value.downcast_ref::<T>().cloned())
    });
    if let Some(v) = kept {
        return v;
    }
    // Not borrowed while `f` runs: it may ask for other values.
    let value = f();
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() == MEMOS {
            m.remove(0);
        }
        m.push(Memo { what, text: text.to_owned(), name: name.to_owned(), value: Rc::new(value.clone()) });
    });
    value
}

fn in_scope() -> bool {
    DEPTH.with(|d| d.get() > 0)
}

pub(crate) fn kept_tree(text: &str) -> Option<Tree> {
    if !in_scope() {
        return None;
    }
    KEPT_TREES.with(|k| k.borrow().iter().find(|e| e.text == text).map(|e| e.tree.clone()))
}

pub(crate) fn kept_file(text: &str) -> Option<SourceFile> {
    if !in_scope() {
        return None;
    }
    KEPT_TREES.with(|k| k.borrow().iter().find(|e| e.text == text).and_then(|e| e.file.clone()))
}

pub(crate) fn keep_tree(text: &str, tree: &Tree) {
    if !in_scope() {
        return;
    }
    KEPT_TREES.with(|k| {
        let mut k = k.borrow_mut();
        if k.iter().any(|e| e.text == text) {
            return;
        }
        if k.len() == KEPT {
            k.remove(0);
        }
        k.push(Entry { text: text.to_string(), tree: tree.clone(), file: None });
    });
}

pub(crate) fn keep_file(text: &str, file: &SourceFile) {
    if !in_scope() {
        return;
    }
    KEPT_TREES.with(|k| {
        if let Some(e) = k.borrow_mut().iter_mut().find(|e| e.text == text) {
            e.file = Some(file.clone());
        }
    });
}

fn hash(text: &str) -> u64 {
    let mut h = DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// Called by every real parse.
pub(crate) fn tally(text: &str) {
    TALLY.with(|t| {
        if let Some(t) = t.borrow_mut().as_mut() {
            t.push(hash(text));
        }
    });
}

/// The real parses a closure made on this thread.
#[derive(Debug, Clone, Default)]
pub struct ParseTally {
    parsed: Vec<u64>,
}

impl ParseTally {
    /// How many times `text` itself was parsed.
    pub fn of(&self, text: &str) -> usize {
        let h = hash(text);
        self.parsed.iter().filter(|p| **p == h).count()
    }

    /// How many parses there were, of any text.
    pub fn total(&self) -> usize {
        self.parsed.len()
    }
}

/// Runs `f` and tallies the real parses it makes on this thread (nested tallies: the inner one
/// sees its own parses only).
pub fn count_parses<R>(f: impl FnOnce() -> R) -> (R, ParseTally) {
    let outer = TALLY.with(|t| t.borrow_mut().replace(Vec::new()));
    let out = f();
    let parsed = TALLY.with(|t| std::mem::replace(&mut *t.borrow_mut(), outer)).unwrap_or_default();
    TALLY.with(|t| {
        if let Some(o) = t.borrow_mut().as_mut() {
            o.extend(&parsed);
        }
    });
    (out, ParseTally { parsed })
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: &str = "__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n";

    #[test]
    fn a_scope_parses_each_text_once_and_forgets_it_at_its_end() {
        let (_, tally) = count_parses(|| {
            parse_once(|| {
                for _ in 0..3 {
                    assert_eq!(crate::parse(K).kernels().count(), 1);
                    assert!(crate::parse_tree(K).is_some());
                }
            })
        });
        assert_eq!(tally.of(K), 1);
        assert_eq!(tally.total(), 1);
        let (_, outside) = count_parses(|| {
            crate::parse(K);
            crate::parse(K);
        });
        assert_eq!(outside.of(K), 2, "outside a scope nothing is kept");
    }

    #[test]
    fn a_scope_computes_each_memo_once() {
        let runs = Cell::new(0);
        let count = || {
            runs.set(runs.get() + 1);
            K.len()
        };
        parse_once(|| {
            for _ in 0..3 {
                assert_eq!(memo("len", K, "k", count), K.len());
            }
            assert_eq!(memo("len", K, "other", count), K.len());
        });
        assert_eq!(runs.get(), 2, "once per (what, text, name)");
        memo("len", K, "k", count);
        assert_eq!(runs.get(), 3, "the scope's end forgets");
    }
}
