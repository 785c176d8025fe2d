//! What a simulation found: the [`Report`] (counts, times, bytes, bounds,
//! the utilisation timeline), each observed kernel's [`KernelStats`], and
//! the report as JSON.

use crate::policy::Policy;
use crate::timeline::Timeline;

/// What a simulation found.
#[derive(Clone, Debug)]
pub struct Report {
    /// The policy.
    pub policy: Policy,
    /// Tasks of the instance.
    pub tasks: u64,
    /// Edges followed.
    pub edges: u64,
    /// Task executions (tasks plus re-runs after failures).
    pub executions: u64,
    /// Workers that died.
    pub failures: u64,
    /// The last task's end (the run is submitted at 0).
    pub makespan_s: f64,
    /// Sum over workers of the time from request to exit (or the end).
    pub worker_seconds: f64,
    /// Sum over workers of the time spent running tasks.
    pub busy_seconds: f64,
    /// The longest path by compute cost (a lower bound of the makespan).
    pub critical_path_s: f64,
    /// Total compute cost (divided by the workers: a lower bound).
    pub work_s: f64,
    /// Bytes read by tasks (from their cache or the store).
    pub read_bytes: u64,
    /// Bytes read from the store.
    pub remote_read_bytes: u64,
    /// Bytes written to the store.
    pub written_bytes: u64,
    /// The most workers alive (starting or up) at once.
    pub peak_workers: usize,
    /// The most tasks running at once.
    pub peak_busy: usize,
    /// The most tasks waiting or ready at once.
    pub max_frontier: usize,
    /// Workers requested.
    pub workers_started: u64,
    /// Kernels without a calibrated time or a flop model (cost 0).
    pub unmodelled: Vec<String>,
    /// Utilisation over time.
    pub timeline: Timeline,
    /// Nodes of the coarsened graph, and the tiles' index shift (`locality`).
    pub partition: Option<(usize, u32)>,
    /// The peak of live tile bytes (results not yet read by all their
    /// readers), with a fresh-memory cost in the model.
    pub peak_live_bytes: Option<u64>,
    /// Executions slowed down as stragglers.
    pub stragglers: u64,
    /// Backup copies started by speculation.
    pub backups: u64,
    /// Of those, copies that finished first.
    pub backups_won: u64,
    /// Copies started because a live execution's lease expired.
    pub lease_reruns: u64,
    /// Of those, copies that finished first.
    pub lease_reruns_won: u64,
    /// Executions cancelled because the other copy finished first.
    pub cancelled: u64,
    /// Per kernel, with speculation or an automatic lease: what was
    /// observed and the bounds in force at the end.
    pub kernels: Vec<KernelStats>,
}

/// One kernel's observations and bounds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelStats {
    /// The kernel.
    pub kernel: String,
    /// Durations of its completed executions and, for a cancelled copy,
    /// its time until cancelled; in the order observed.
    pub samples: Vec<f64>,
    /// The speculation threshold at the end (none before enough samples).
    pub threshold_s: Option<f64>,
    /// The bound was computed from the first this many samples.
    pub threshold_from: usize,
    /// The automatic lease at the end (none: the fallback).
    pub lease_s: Option<f64>,
    /// The bound was computed from the first this many samples.
    pub lease_from: usize,
    /// Backups started for its executions.
    pub backups: u64,
    /// Of those, copies that finished first.
    pub backups_won: u64,
    /// The sample count at which the bounds are next recomputed.
    pub(crate) next_update: usize,
}

impl KernelStats {
    /// No observations of `kernel` yet: its bounds are computed at the
    /// first.
    pub(crate) fn new(kernel: String) -> Self {
        KernelStats {
            kernel,
            next_update: 1,
            ..KernelStats::default()
        }
    }
}

impl Report {
    /// The report before the run: nothing counted yet.
    pub(crate) fn new(
        policy: Policy,
        unmodelled: Vec<String>,
        partition: Option<(usize, u32)>,
        kernels: Vec<KernelStats>,
    ) -> Self {
        Report {
            policy,
            tasks: 0,
            edges: 0,
            executions: 0,
            failures: 0,
            makespan_s: 0.0,
            worker_seconds: 0.0,
            busy_seconds: 0.0,
            critical_path_s: 0.0,
            work_s: 0.0,
            read_bytes: 0,
            remote_read_bytes: 0,
            written_bytes: 0,
            peak_workers: 0,
            peak_busy: 0,
            max_frontier: 0,
            workers_started: 0,
            unmodelled,
            timeline: Timeline::default(),
            partition,
            peak_live_bytes: None,
            stragglers: 0,
            backups: 0,
            backups_won: 0,
            lease_reruns: 0,
            lease_reruns_won: 0,
            cancelled: 0,
            kernels,
        }
    }

    /// The report as JSON (docs/cli.md, "Simulation").
    pub fn to_json(&self) -> serde_json::Value {
        let share = if self.read_bytes > 0 {
            self.remote_read_bytes as f64 / self.read_bytes as f64
        } else {
            0.0
        };
        let util = if self.worker_seconds > 0.0 {
            self.busy_seconds / self.worker_seconds
        } else {
            0.0
        };
        serde_json::json!({
            "policy": self.policy.name(),
            "tasks": self.tasks,
            "edges": self.edges,
            "executions": self.executions,
            "failures": self.failures,
            "makespan_s": self.makespan_s,
            "worker_seconds": self.worker_seconds,
            "busy_seconds": self.busy_seconds,
            "utilisation": util,
            "critical_path_s": self.critical_path_s,
            "work_s": self.work_s,
            "read_bytes": self.read_bytes,
            "remote_read_bytes": self.remote_read_bytes,
            "remote_read_share": share,
            "written_bytes": self.written_bytes,
            "peak_workers": self.peak_workers,
            "peak_busy": self.peak_busy,
            "max_frontier": self.max_frontier,
            "workers_started": self.workers_started,
            "unmodelled_kernels": self.unmodelled,
            "partition_nodes": self.partition.map(|p| p.0),
            "peak_live_bytes": self.peak_live_bytes,
            "stragglers": self.stragglers,
            "backups": self.backups,
            "backups_won": self.backups_won,
            "lease_reruns": self.lease_reruns,
            "lease_reruns_won": self.lease_reruns_won,
            "cancelled": self.cancelled,
            "kernels": self.kernels.iter().map(|k| serde_json::json!({
                "kernel": k.kernel,
                "observed": k.samples.len(),
                "threshold_s": k.threshold_s,
                "threshold_samples": k.threshold_from,
                "lease_s": k.lease_s,
                "lease_samples": k.lease_from,
                "backups": k.backups,
                "backups_won": k.backups_won,
            })).collect::<Vec<_>>(),
        })
    }
}
