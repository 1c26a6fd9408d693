//! One limit on the external work running at once: tool runs (nvcc, nvdisasm,
//! ncu) and GPU jobs, as many as the machine has cores. Twenty open files used
//! to start eighty children on two cores, and the newest save waited behind
//! all of them. Waiters are served newest first, and one whose work was
//! superseded (its cancellation token fired) leaves the queue without running.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, OnceLock};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

pub struct JobLimit {
    state: Mutex<State>,
    size: usize,
}

struct State {
    free: usize,
    next: u64,
    /// Waiters by arrival; the last one is served first.
    waiting: BTreeMap<u64, oneshot::Sender<()>>,
}

/// A running job's place; the next waiter gets it when dropped.
pub struct Slot<'a> {
    limit: &'a JobLimit,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.limit.release(&mut self.limit.lock());
    }
}

/// The process-wide limit: one job per core (`std::thread::available_parallelism`).
pub fn limit() -> &'static JobLimit {
    static LIMIT: OnceLock<JobLimit> = OnceLock::new();
    LIMIT.get_or_init(|| JobLimit::new(std::thread::available_parallelism().map_or(2, |n| n.get())))
}

/// A place for one job under [`limit`], or `None` if `cancel` fires first.
pub async fn slot(cancel: &CancellationToken) -> Option<Slot<'static>> {
    limit().acquire(cancel).await
}

impl JobLimit {
    pub fn new(size: usize) -> JobLimit {
        let size = size.max(1);
        JobLimit { state: Mutex::new(State { free: size, next: 0, waiting: BTreeMap::new() }), size }
    }

    pub fn size(&self) -> usize {
        self.size
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hands a freed place to the newest waiter still waiting, else keeps it.
    fn release(&self, state: &mut State) {
        while let Some((_, waiter)) = state.waiting.pop_last() {
            if waiter.send(()).is_ok() {
                return;
            }
        }
        state.free += 1;
    }

    pub async fn acquire(&self, cancel: &CancellationToken) -> Option<Slot<'_>> {
        let (seq, rx) = {
            let mut state = self.lock();
            if state.free > 0 {
                state.free -= 1;
                return Some(Slot { limit: self });
            }
            let seq = state.next;
            state.next += 1;
            let (tx, rx) = oneshot::channel();
            state.waiting.insert(seq, tx);
            (seq, rx)
        };
        let mut wait = Waiting { limit: self, seq, rx: Some(rx) };
        let granted = tokio::select! {
            got = wait.rx.as_mut().expect("set above") => got.is_ok(),
            _ = cancel.cancelled() => false,
        };
        if granted {
            wait.rx = None;
            return Some(Slot { limit: self });
        }
        None // `wait` leaves the queue, or passes on a place granted meanwhile
    }
}

/// A place in the queue; leaving it (cancelled, or the caller's future dropped)
/// passes on a place that was granted but not taken.
struct Waiting<'a> {
    limit: &'a JobLimit,
    seq: u64,
    rx: Option<oneshot::Receiver<()>>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let Some(mut rx) = self.rx.take() else { return };
        let mut state = self.limit.lock();
        // Still queued: just leave. Otherwise the place was sent (under this lock): pass it on.
        if state.waiting.remove(&self.seq).is_none() && rx.try_recv().is_ok() {
            self.limit.release(&mut state);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn newest_waiter_first_and_cancelled_ones_skipped() {
        let limit = Arc::new(JobLimit::new(1));
        let first = limit.acquire(&CancellationToken::new()).await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tokens = Vec::new();
        let mut tasks = Vec::new();
        for i in 0..4 {
            let (limit, order, token) = (limit.clone(), order.clone(), CancellationToken::new());
            tokens.push(token.clone());
            tasks.push(tokio::spawn(async move {
                if let Some(_slot) = limit.acquire(&token).await {
                    order.lock().unwrap().push(i);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }));
            tokio::time::sleep(Duration::from_millis(10)).await; // arrive in order
        }
        tokens[2].cancel(); // superseded while waiting
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(first);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [3, 1, 0]);
        assert_eq!(limit.lock().free, 1, "every place came back");
    }

    #[tokio::test]
    async fn a_dropped_waiter_does_not_lose_a_place() {
        let limit = JobLimit::new(1);
        let first = limit.acquire(&CancellationToken::new()).await.unwrap();
        let never = CancellationToken::new();
        {
            let wait = limit.acquire(&never);
            tokio::pin!(wait);
            assert!(tokio::time::timeout(Duration::from_millis(10), &mut wait).await.is_err());
            drop(first); // the place goes to the waiter, whose future is then dropped
        }
        assert!(tokio::time::timeout(Duration::from_secs(1), limit.acquire(&never)).await.unwrap().is_some());
    }
}
