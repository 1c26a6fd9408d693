//! One running job per (document, kind), tagged with the version it started
//! from. Starting a job cancels the one it replaces; a finished job's result
//! is used only while its ticket is still the current one.

use std::collections::HashMap;
use std::hash::Hash;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKind {
    /// Compile, SASS and findings after an open, a save or a settings change.
    Analyze,
    Profile,
    /// A search for one kernel (several kernels may be optimized at once).
    Optimize,
}

/// What a job carries: the token to watch and what it needs to publish.
#[derive(Debug, Clone)]
pub struct JobTicket {
    pub token: CancellationToken,
    /// The document version the job started from.
    pub version: i32,
    generation: u64,
}

/// The registry. `D` names a document (a URI in the server, a path in the CLI);
/// `S` a sub-key (a kernel name for Optimize, `()` otherwise).
#[derive(Debug)]
pub struct Jobs<D, S = String> {
    running: HashMap<(D, JobKind, S), JobTicket>,
    next: u64,
}

impl JobTicket {
    /// A number no other job of this registry has (for progress tokens).
    pub fn id(&self) -> u64 {
        self.generation
    }
}

impl<D, S> Default for Jobs<D, S> {
    fn default() -> Self {
        Jobs { running: HashMap::new(), next: 0 }
    }
}

impl<D: Eq + Hash + Clone, S: Eq + Hash + Clone> Jobs<D, S> {
    /// Starts a job, cancelling the one of the same key.
    pub fn start(&mut self, doc: &D, kind: JobKind, sub: S, version: i32) -> JobTicket {
        self.next += 1;
        let ticket = JobTicket { token: CancellationToken::new(), version, generation: self.next };
        if let Some(old) = self.running.insert((doc.clone(), kind, sub), ticket.clone()) {
            old.token.cancel();
        }
        ticket
    }

    /// Whether `ticket`'s result may still be used (no newer job replaced it, not cancelled).
    pub fn is_current(&self, doc: &D, kind: JobKind, sub: &S, ticket: &JobTicket) -> bool {
        !ticket.token.is_cancelled()
            && self.running.get(&(doc.clone(), kind, sub.clone())).is_some_and(|t| t.generation == ticket.generation)
    }

    /// Whether no newer job replaced `ticket` and its document is still open,
    /// cancelled or not (a search cancelled by the user still offers its best).
    pub fn is_latest(&self, doc: &D, kind: JobKind, sub: &S, ticket: &JobTicket) -> bool {
        self.running.get(&(doc.clone(), kind, sub.clone())).is_some_and(|t| t.generation == ticket.generation)
    }

    /// The job ended (its result used or dropped); a newer job of the key stays.
    pub fn finish(&mut self, doc: &D, kind: JobKind, sub: &S, ticket: &JobTicket) {
        let key = (doc.clone(), kind, sub.clone());
        if self.running.get(&key).is_some_and(|t| t.generation == ticket.generation) {
            self.running.remove(&key);
        }
    }

    /// Cancels every job of a document (it was closed) or of one kind of it.
    pub fn cancel(&mut self, doc: &D, kind: Option<JobKind>) -> usize {
        let mut n = 0;
        self.running.retain(|(d, k, _), t| {
            let hit = d == doc && kind.is_none_or(|want| want == *k);
            if hit {
                t.token.cancel();
                n += 1;
            }
            !hit
        });
        n
    }

    /// Jobs running now, for a status line.
    pub fn running(&self) -> impl Iterator<Item = (&D, JobKind, &S, i32)> {
        self.running.iter().map(|((d, k, s), t)| (d, *k, s, t.version))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_job_cancels_and_outdates_the_older() {
        let mut jobs: Jobs<&str, ()> = Jobs::default();
        let first = jobs.start(&"a.cu", JobKind::Analyze, (), 1);
        let second = jobs.start(&"a.cu", JobKind::Analyze, (), 2);
        assert!(first.token.is_cancelled());
        assert!(!jobs.is_current(&"a.cu", JobKind::Analyze, &(), &first));
        assert!(jobs.is_current(&"a.cu", JobKind::Analyze, &(), &second));
        // The old job finishing late does not remove the new one.
        jobs.finish(&"a.cu", JobKind::Analyze, &(), &first);
        assert!(jobs.is_current(&"a.cu", JobKind::Analyze, &(), &second));
        assert_eq!(jobs.running().count(), 1);
    }

    #[test]
    fn a_cancelled_job_is_still_the_latest_until_replaced_or_its_document_closes() {
        let mut jobs: Jobs<&str, &str> = Jobs::default();
        let search = jobs.start(&"a.cu", JobKind::Optimize, "k", 1);
        search.token.cancel(); // the user pressed Cancel: its best so far is still offered
        assert!(!jobs.is_current(&"a.cu", JobKind::Optimize, &"k", &search));
        assert!(jobs.is_latest(&"a.cu", JobKind::Optimize, &"k", &search));
        let newer = jobs.start(&"a.cu", JobKind::Optimize, "k", 2);
        assert!(!jobs.is_latest(&"a.cu", JobKind::Optimize, &"k", &search));
        jobs.cancel(&"a.cu", None); // didClose
        assert!(!jobs.is_latest(&"a.cu", JobKind::Optimize, &"k", &newer));
    }

    #[test]
    fn kinds_and_kernels_run_side_by_side() {
        let mut jobs: Jobs<&str, &str> = Jobs::default();
        let analyze = jobs.start(&"a.cu", JobKind::Analyze, "", 3);
        let opt_k1 = jobs.start(&"a.cu", JobKind::Optimize, "k1", 3);
        let opt_k2 = jobs.start(&"a.cu", JobKind::Optimize, "k2", 3);
        let _ = jobs.start(&"a.cu", JobKind::Analyze, "", 4);
        assert!(analyze.token.is_cancelled());
        assert!(!opt_k1.token.is_cancelled() && !opt_k2.token.is_cancelled());
        assert!(jobs.is_current(&"a.cu", JobKind::Optimize, &"k1", &opt_k1));
        // Closing the document cancels all of them.
        assert_eq!(jobs.cancel(&"a.cu", None), 3);
        assert!(opt_k1.token.is_cancelled() && opt_k2.token.is_cancelled());
        assert!(!jobs.is_current(&"a.cu", JobKind::Optimize, &"k1", &opt_k1));
    }

    #[test]
    fn a_cancelled_job_is_not_current() {
        let mut jobs: Jobs<&str, ()> = Jobs::default();
        let t = jobs.start(&"a.cu", JobKind::Profile, (), 1);
        t.token.cancel();
        assert!(!jobs.is_current(&"a.cu", JobKind::Profile, &(), &t));
    }
}
