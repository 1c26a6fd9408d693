//! The last profile of each kernel, kept on disk per file, so a new profile
//! can say what changed. Entries carry a checksum: a corrupted or truncated
//! file is detected, dropped and rebuilt, never trusted.

use crate::profiling::{KernelReport, ProfileReport};
use kernelpro_toolchain::cache::key_of;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelBaseline {
    pub kernel: String,
    pub duration_ns: Option<f64>,
    pub class: Option<String>,
    /// Tool names of the findings it had.
    pub tools: Vec<String>,
}

impl From<&KernelReport> for KernelBaseline {
    fn from(k: &KernelReport) -> Self {
        KernelBaseline {
            kernel: k.kernel.clone(),
            duration_ns: k.triage.as_ref().and_then(|t| t.duration_ns),
            class: k.triage.as_ref().map(|t| t.class.as_str().to_string()),
            tools: k.findings.iter().filter_map(|f| f.code.clone()).collect(),
        }
    }
}

/// What changed for one kernel since its last profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub kernel: String,
    /// Slower by more than the threshold.
    pub slower: bool,
    pub text: String,
}

#[derive(Serialize, Deserialize)]
struct Stored {
    checksum: String,
    body: String,
}

pub struct BaselineStore {
    dir: PathBuf,
}

impl BaselineStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        BaselineStore { dir: dir.into() }
    }

    pub fn in_cache_dir() -> Self {
        Self::new(kernelpro_config::cache_dir().join("baselines"))
    }

    /// Compares a new profile with the last one of the same file, then keeps
    /// the new one as the baseline. The CLI and the editor share the entry.
    pub fn record(&self, source: &Path, report: &ProfileReport, slower_threshold_pct: f64) -> Vec<Change> {
        let source = std::fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf());
        let old = self.load(&source);
        let new: Vec<KernelBaseline> = report.kernels.iter().map(KernelBaseline::from).collect();
        let changes = new
            .iter()
            .filter_map(|n| {
                let (slower, text) = compare(old.iter().find(|o| o.kernel == n.kernel)?, n, slower_threshold_pct)?;
                Some(Change { kernel: n.kernel.clone(), slower, text })
            })
            .collect();
        let _ = self.save(&source, &new);
        changes
    }

    fn file_for(&self, source: &Path) -> PathBuf {
        let key = key_of(&[source.as_os_str().as_encoded_bytes()]);
        self.dir.join(format!("{}.json", hex(&key[..12])))
    }

    /// The stored baselines of a source file; empty when none or when the entry is damaged.
    pub fn load(&self, source: &Path) -> Vec<KernelBaseline> {
        let Ok(raw) = std::fs::read_to_string(self.file_for(source)) else { return Vec::new() };
        let Ok(stored) = serde_json::from_str::<Stored>(&raw) else { return Vec::new() };
        if stored.checksum != hex(&key_of(&[stored.body.as_bytes()])) {
            return Vec::new();
        }
        serde_json::from_str(&stored.body).unwrap_or_default()
    }

    /// Writes atomically (temp file + rename), so a crash never leaves half an entry.
    pub fn save(&self, source: &Path, baselines: &[KernelBaseline]) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let body = serde_json::to_string(baselines).expect("baselines serialize");
        let stored = Stored { checksum: hex(&key_of(&[body.as_bytes()])), body };
        let target = self.file_for(source);
        let tmp = target.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(&stored).expect("serialize"))?;
        std::fs::rename(tmp, target)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What changed for one kernel, in words, when it is worth saying.
pub fn compare(old: &KernelBaseline, new: &KernelBaseline, slower_threshold_pct: f64) -> Option<(bool, String)> {
    let (Some(a), Some(b)) = (old.duration_ns, new.duration_ns) else { return None };
    let change = (b - a) / a * 100.0;
    let mut text =
        format!("{}: {:.3} ms → {:.3} ms ({change:+.1}%) since the last profile", new.kernel, a / 1e6, b / 1e6);
    if old.class != new.class {
        text.push_str(&format!(
            "; now {} (was {})",
            new.class.as_deref().unwrap_or("?"),
            old.class.as_deref().unwrap_or("?")
        ));
    }
    let gone: Vec<&String> = old.tools.iter().filter(|t| !new.tools.contains(t)).collect();
    let added: Vec<&String> = new.tools.iter().filter(|t| !old.tools.contains(t)).collect();
    if !gone.is_empty() {
        text.push_str(&format!("; fixed: {}", gone.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")));
    }
    if !added.is_empty() {
        text.push_str(&format!("; new: {}", added.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")));
    }
    Some((change > slower_threshold_pct, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(ns: f64, tools: &[&str]) -> KernelBaseline {
        KernelBaseline {
            kernel: "k".into(),
            duration_ns: Some(ns),
            class: Some("memory-bound".into()),
            tools: tools.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn round_trip_and_corruption_is_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let store = BaselineStore::new(dir.path());
        let src = Path::new("/x/k.cu");
        store.save(src, &[b(1e6, &["Uncoalesced"])]).unwrap();
        assert_eq!(store.load(src), vec![b(1e6, &["Uncoalesced"])]);
        let file = store.file_for(src);
        let mut raw = std::fs::read_to_string(&file).unwrap();
        raw = raw.replace("1000000", "9000000");
        std::fs::write(&file, &raw).unwrap();
        assert!(store.load(src).is_empty(), "a tampered entry is not trusted");
        std::fs::write(&file, &raw[..raw.len() / 2]).unwrap();
        assert!(store.load(src).is_empty(), "a truncated entry is not trusted");
        store.save(src, &[b(2e6, &[])]).unwrap();
        assert_eq!(store.load(src).len(), 1);
    }

    #[test]
    fn compare_says_what_changed() {
        let (slower, text) = compare(&b(1e6, &["Uncoalesced"]), &b(1.2e6, &["WarpStall"]), 5.0).unwrap();
        assert!(slower);
        assert_eq!(text, "k: 1.000 ms → 1.200 ms (+20.0%) since the last profile; fixed: Uncoalesced; new: WarpStall");
        assert!(!compare(&b(1e6, &[]), &b(1.02e6, &[]), 5.0).unwrap().0);
    }
}
