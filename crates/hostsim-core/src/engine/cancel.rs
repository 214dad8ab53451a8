//! Stopping a run from outside: a caller on another thread (the Python
//! binding, on SIGINT) sets a flag the running thread's event loops look at
//! every [`EVERY`] events; the run then ends with [`Error::Interrupted`].
//! Without a flag installed ([`with_flag`]) nothing can stop a run.
//!
//! [`Error::Interrupted`]: crate::error::Error::Interrupted

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Events between two looks at the flag: a few hundred microseconds of wall time.
pub const EVERY: u64 = 1 << 12;

thread_local! {
    static FLAG: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread with `flag` as its stop flag.
pub fn with_flag<R>(flag: Arc<AtomicBool>, f: impl FnOnce() -> R) -> R {
    let old = FLAG.with(|c| c.replace(Some(flag)));
    let r = f();
    FLAG.with(|c| *c.borrow_mut() = old);
    r
}

/// Whether this thread's run was asked to stop.
#[inline]
pub fn requested() -> bool {
    FLAG.with(|c| c.borrow().as_ref().is_some_and(|f| f.load(Ordering::Relaxed)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_is_seen_only_inside_and_only_once_set() {
        let flag = Arc::new(AtomicBool::new(false));
        assert!(!requested());
        with_flag(flag.clone(), || {
            assert!(!requested());
            flag.store(true, Ordering::Relaxed);
            assert!(requested());
        });
        assert!(!requested());
    }
}
