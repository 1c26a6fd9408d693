//! The pool requests' heavy work runs in (a parse of a large file), bounded
//! to one place per core.

use std::sync::Arc;

/// The pool requests' heavy work runs in: one place per core (at least two),
/// so 16 slow requests never make 16 threads; a request cancelled while it
/// waits for a place (`$/cancelRequest` drops its future) never starts.
fn pool() -> &'static Arc<tokio::sync::Semaphore> {
    static POOL: std::sync::OnceLock<Arc<tokio::sync::Semaphore>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Arc::new(tokio::sync::Semaphore::new(cores.max(2)))
    })
}

/// Whether a place is free now: work nobody waits for (documentSymbol's
/// prefetch) starts only then, so it never queues before a request.
pub fn has_room() -> bool {
    pool().available_permits() > 0
}

/// Runs CPU-heavy work (a parse of a large file) off the runtime's workers,
/// in the bounded pool above; a panic in it reaches the caller's guard like
/// any other.
pub async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let place = pool().clone().acquire_owned().await.expect("the pool is never closed");
    let work = move || {
        let _place = place;
        work()
    };
    match tokio::task::spawn_blocking(work).await {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("{e}"),
    }
}
