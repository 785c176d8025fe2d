//! Cancelling a long analysis from another thread: an editor that has a
//! newer version of a document does not want the lint of the old one.
//!
//! A [`Cancel`] token is installed for the duration of a call on the
//! calling thread ([`Cancel::run`]); the analyses look at it where they
//! loop (each step of the constraint search, each instance of lint's
//! exhaustive check) and, once it is set, stop the way they stop at their
//! budgets: a question not decided is "may be feasible", so nothing is
//! proved that was not, and the exhaustive check reports where it stopped.
//! A cancelled result is therefore never wrong, only weaker; its caller,
//! who cancelled it, throws it away. The token is per thread, so an
//! analysis running elsewhere is not touched.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

thread_local! {
    static CURRENT: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// A cancellation flag shared between the thread that runs an analysis and
/// the one that may cancel it.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A token not cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Asks the analysis running under this token to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Runs `f` on this thread under this token (the previous token, if
    /// any, is restored after).
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        let previous = CURRENT.with(|c| c.replace(Some(Arc::clone(&self.0))));
        struct Restore(Option<Arc<AtomicBool>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                CURRENT.with(|c| *c.borrow_mut() = previous);
            }
        }
        let _restore = Restore(previous);
        f()
    }
}

/// Whether the analysis on this thread was cancelled.
pub(crate) fn cancelled() -> bool {
    CURRENT.with(|c| {
        c.borrow()
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_seen_only_on_its_thread_and_only_while_it_runs() {
        let token = Cancel::new();
        token.cancel();
        assert!(!cancelled());
        token.run(|| {
            assert!(cancelled());
            std::thread::spawn(|| assert!(!cancelled()))
                .join()
                .expect("the other thread");
        });
        assert!(!cancelled());
    }
}
