//! The scheduling policies a simulation chooses from, by name. How each
//! orders and places ready tasks is the engine's (`engine::schedule`).

/// A scheduling policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// One queue in the order tasks became ready (numpywren).
    Fifo,
    /// The ready task with the largest upper bound on its bottom level
    /// first. The bound is `CP - tl(t)` (the critical path minus the task's
    /// top level, both by compute cost): exact for every task on a critical
    /// path, and computable in the forward walk itself, with no reverse pass
    /// and no memory per task. Ordering by it is ordering by the smallest
    /// top level; ties go to the larger task cost, then to ready order.
    CriticalPath,
    /// Earliest finish time, placed when a task becomes ready.
    Heft,
    /// Owner computes by a METIS partition of the coarsened graph.
    Locality,
}

impl Policy {
    /// The name on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Fifo => "fifo",
            Policy::CriticalPath => "critical-path",
            Policy::Heft => "heft",
            Policy::Locality => "locality",
        }
    }

    /// Every policy.
    pub const ALL: [Policy; 4] = [
        Policy::Fifo,
        Policy::CriticalPath,
        Policy::Heft,
        Policy::Locality,
    ];
}
