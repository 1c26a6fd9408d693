//! A small content-addressed memory cache: a save that changes nothing costs a
//! hash and a lookup. Keys hash everything that decides the result.

use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

pub type Key = [u8; 32];

pub fn key_of(parts: &[&[u8]]) -> Key {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().into()
}

/// The values, and their keys oldest first (the next to be evicted).
type Entries<V> = (HashMap<Key, Arc<V>>, VecDeque<Key>);

pub struct MemoCache<V> {
    inner: Mutex<Entries<V>>,
    capacity: usize,
}

impl<V> MemoCache<V> {
    pub fn new(capacity: usize) -> Self {
        MemoCache { inner: Mutex::new((HashMap::new(), VecDeque::new())), capacity }
    }
    pub fn get(&self, key: &Key) -> Option<Arc<V>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).0.get(key).cloned()
    }
    pub fn insert(&self, key: Key, value: Arc<V>) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if g.0.insert(key, value).is_none() {
            g.1.push_back(key);
        }
        while g.1.len() > self.capacity {
            if let Some(old) = g.1.pop_front() {
                g.0.remove(&old);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_oldest_and_separates_parts() {
        let c = MemoCache::new(2);
        let (a, b, d) = (key_of(&[b"a"]), key_of(&[b"b"]), key_of(&[b"d"]));
        assert_ne!(key_of(&[b"ab", b"c"]), key_of(&[b"a", b"bc"]));
        c.insert(a, Arc::new(1));
        c.insert(b, Arc::new(2));
        c.insert(d, Arc::new(3));
        assert!(c.get(&a).is_none());
        assert_eq!(*c.get(&d).unwrap(), 3);
    }
}
