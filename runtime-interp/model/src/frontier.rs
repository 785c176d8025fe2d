//! The waiting half of a DAG walk's frontier, shared by everything that
//! walks the DAG the way a runtime schedules it (`dag::walk`, the embedded
//! executor, the simulator): a counter of unfinished parents for each task
//! that has some parents finished and some not, created from the task's
//! in-degree (the parents plans) the first time one of its parents
//! finishes, decremented from the children plans, and dropped when it
//! reaches zero, which makes the task ready. Tasks nobody has reached yet
//! and finished ones take no memory, so a walk holds the frontier, never
//! the DAG.
//!
//! Each entry carries a value of the walker's (the simulator keeps the
//! latest finish time of the task's parents); `()` for none.
//!
//! The ready half is each walker's own heap, whose order is its policy;
//! [`Queued`] is the one heap entry they share, ordered by a key alone.

use crate::task::Task;
use rustc_hash::FxHashMap;
use std::cmp::Ordering;
use std::collections::hash_map::Entry;

/// What a walk got wrong: a plan and the walk disagree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrontierError {
    /// A parent of this task finished, but its in-degree is 0: the children
    /// and parents plans disagree, or the task was reached again after it
    /// was ready.
    ReachedTwice(Task),
    /// A parent of this task finished, but the task has no counter: it was
    /// never registered, or became ready already.
    NoCounter(Task),
}

impl FrontierError {
    /// The task the walk and the plans disagree on, for a walker's message.
    pub fn task(&self) -> &Task {
        match self {
            FrontierError::ReachedTwice(t) | FrontierError::NoCounter(t) => t,
        }
    }
}

/// Tasks waiting for parents, each with the parents it still waits for.
#[derive(Clone, Debug)]
pub struct Waiting<V = ()> {
    counters: FxHashMap<Task, (usize, V)>,
}

impl<V> Default for Waiting<V> {
    fn default() -> Self {
        Waiting {
            counters: FxHashMap::default(),
        }
    }
}

impl<V> Waiting<V> {
    /// No task waiting.
    pub fn new() -> Self {
        Self::default()
    }

    /// A parent of `child` finished. On first sight the child's in-degree
    /// is asked (`in_degree`) and its value starts as `init`; otherwise
    /// `merge` updates its value. Returns the child with its value when
    /// this was its last unfinished parent (a child with one parent is
    /// never stored).
    pub fn parent_done<E>(
        &mut self,
        child: Task,
        in_degree: impl FnOnce(&Task) -> Result<usize, E>,
        init: V,
        merge: impl FnOnce(&mut V),
    ) -> Result<Option<(Task, V)>, ReleaseError<E>> {
        let ready = match self.counters.entry(child) {
            Entry::Occupied(mut e) => {
                let (left, value) = e.get_mut();
                merge(value);
                *left -= 1;
                if *left > 0 {
                    return Ok(None);
                }
                let (child, (_, value)) = e.remove_entry();
                Some((child, value))
            }
            Entry::Vacant(v) => match in_degree(v.key()).map_err(ReleaseError::Plan)? {
                0 => {
                    return Err(ReleaseError::Frontier(FrontierError::ReachedTwice(
                        v.into_key(),
                    )))
                }
                1 => Some((v.into_key(), init)),
                d => {
                    v.insert((d - 1, init));
                    None
                }
            },
        };
        Ok(ready)
    }

    /// Registers `child` with `degree` unfinished parents, unless it waits
    /// already: for walkers that ask the in-degree outside a lock and
    /// count the finished parent with [`Waiting::finish_parent`] after.
    pub fn register(&mut self, child: Task, degree: usize, init: V) -> Result<(), FrontierError> {
        if degree == 0 {
            return Err(FrontierError::ReachedTwice(child));
        }
        self.counters.entry(child).or_insert((degree, init));
        Ok(())
    }

    /// Whether `task` waits.
    pub fn contains(&self, task: &Task) -> bool {
        self.counters.contains_key(task)
    }

    /// A parent of registered `child` finished: the child with its value
    /// when that was its last unfinished parent.
    pub fn finish_parent(&mut self, child: &Task) -> Result<Option<(Task, V)>, FrontierError> {
        let Some((left, _)) = self.counters.get_mut(child) else {
            return Err(FrontierError::NoCounter(child.clone()));
        };
        *left -= 1;
        if *left > 0 {
            return Ok(None);
        }
        Ok(self
            .counters
            .remove_entry(child)
            .map(|(task, (_, value))| (task, value)))
    }

    /// Tasks waiting now.
    pub fn len(&self) -> usize {
        self.counters.len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.counters.is_empty()
    }
}

/// Why [`Waiting::parent_done`] failed: the in-degree query's error, or the
/// walk's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReleaseError<E> {
    /// Asking the parents plan failed.
    Plan(E),
    /// The frontier saw something a correct plan never gives.
    Frontier(FrontierError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::StmtId;
    use crate::task::Vars;

    fn t(i: i64) -> Task {
        Task {
            stmt: StmtId::from_u32(0),
            vars: Vars::from(&[i][..]),
        }
    }

    #[test]
    fn a_task_is_ready_after_its_last_parent_and_only_then() {
        let mut w: Waiting<f64> = Waiting::new();
        let degree = |_: &Task| Ok::<usize, ()>(3);
        let max = |v: &mut f64| *v = v.max(2.0);
        assert_eq!(w.parent_done(t(1), degree, 1.0, max), Ok(None));
        assert_eq!(
            w.parent_done(t(1), degree, 0.0, |v| *v = v.max(0.5)),
            Ok(None)
        );
        assert_eq!(w.parent_done(t(1), degree, 0.0, max), Ok(Some((t(1), 2.0))));
        assert!(w.is_empty());
        // One parent: ready at once, never stored.
        let one = |_: &Task| Ok::<usize, ()>(1);
        assert_eq!(w.parent_done(t(2), one, 7.0, |_| {}), Ok(Some((t(2), 7.0))));
        assert!(w.is_empty());
        let zero = |_: &Task| Ok::<usize, ()>(0);
        assert_eq!(
            w.parent_done(t(3), zero, 0.0, |_| {}),
            Err(ReleaseError::Frontier(FrontierError::ReachedTwice(t(3))))
        );
        assert_eq!(
            w.parent_done(t(4), |_: &Task| Err("no plan"), 0.0, |_| {}),
            Err(ReleaseError::Plan("no plan"))
        );
    }

    #[test]
    fn registered_counters_count_down_and_unknown_ones_are_errors() {
        let mut w: Waiting = Waiting::new();
        w.register(t(1), 2, ()).expect("registers");
        w.register(t(1), 2, ()).expect("once");
        assert_eq!(w.finish_parent(&t(1)), Ok(None));
        assert_eq!(w.finish_parent(&t(1)), Ok(Some((t(1), ()))));
        assert_eq!(w.finish_parent(&t(1)), Err(FrontierError::NoCounter(t(1))));
        assert_eq!(
            w.register(t(2), 0, ()),
            Err(FrontierError::ReachedTwice(t(2)))
        );
    }
}

/// An entry of a `BinaryHeap` ready queue (or event queue), ordered by
/// `key` alone, so `item` needs no order of its own. The heap pops the
/// greatest key: a walker that wants the smallest first keys by
/// `std::cmp::Reverse`.
#[derive(Clone, Debug)]
pub struct Queued<K, T> {
    /// What orders the entry.
    pub key: K,
    /// What was queued.
    pub item: T,
}

impl<K: Ord, T> PartialEq for Queued<K, T> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<K: Ord, T> Eq for Queued<K, T> {}
impl<K: Ord, T> PartialOrd for Queued<K, T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<K: Ord, T> Ord for Queued<K, T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key)
    }
}
