//! DAG statistics of one instance (`lpkc stats`): tasks and edges per
//! kernel, the critical path and the widest level of an unbounded-worker
//! schedule. Computed from the plans in one sequential pass (sequential
//! order is a topological order), with memory proportional to the tasks.

use runtime_interp::model::Instance;
use runtime_interp::query::{Engine, QueryError};
use runtime_interp::task::{Task, WalkError};
use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;

/// Per-kernel counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct KernelStats {
    /// Tasks of this kernel.
    pub tasks: u64,
    /// Edges out of tasks of this kernel.
    pub edges_out: u64,
}

/// Statistics of an instance.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Every task.
    pub tasks: u64,
    /// Every (writer, reader, tile) edge.
    pub edges: u64,
    /// Per kernel, by name.
    pub kernels: BTreeMap<String, KernelStats>,
    /// Tasks on a longest path.
    pub critical_path: u64,
    /// Tasks per level (level = tasks on the longest path ending there).
    pub levels: Vec<u64>,
    /// The most tasks on one level.
    pub widest_level: u64,
}

/// Why statistics could not be computed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// The sequential enumeration failed.
    #[error("{0}")]
    Walk(#[from] WalkError),
    /// A plan query failed.
    #[error("{0}")]
    Query(#[from] QueryError),
    /// Too many tasks to keep.
    #[error("the instance has more than {0} tasks")]
    TooLarge(u64),
}

/// Computes the statistics of an instance with at most `max_tasks` tasks.
pub fn stats(inst: &Instance<'_>, max_tasks: u64) -> Result<Stats, StatsError> {
    let p = inst.program;
    let mut engine = Engine::new(inst);
    let mut level: HashMap<Task, u64> = HashMap::new();
    let mut s = Stats::default();
    let mut failure: Option<StatsError> = None;
    inst.for_each_task(&mut |t| {
        if s.tasks >= max_tasks {
            failure = Some(StatsError::TooLarge(max_tasks));
            return ControlFlow::Break(());
        }
        let parents = match engine.parents(t) {
            Ok(ps) => ps,
            Err(e) => {
                failure = Some(e.into());
                return ControlFlow::Break(());
            }
        };
        let lv = 1 + parents
            .iter()
            .map(|(pt, _)| level.get(pt).copied().unwrap_or(0))
            .max()
            .unwrap_or(0);
        level.insert(t.clone(), lv);
        s.tasks += 1;
        s.edges += parents.len() as u64;
        for (pt, _) in &parents {
            if let Some(k) = kernel_name(inst, pt) {
                s.kernels.entry(k).or_default().edges_out += 1;
            }
        }
        if let Some(k) = kernel_name(inst, t) {
            s.kernels.entry(k).or_default().tasks += 1;
        }
        let idx = (lv - 1) as usize;
        if s.levels.len() <= idx {
            s.levels.resize(idx + 1, 0);
        }
        s.levels[idx] += 1;
        ControlFlow::Continue(())
    })?;
    if let Some(f) = failure {
        return Err(f);
    }
    let _ = p;
    s.critical_path = s.levels.len() as u64;
    s.widest_level = s.levels.iter().copied().max().unwrap_or(0);
    Ok(s)
}

fn kernel_name(inst: &Instance<'_>, t: &Task) -> Option<String> {
    let p = inst.program;
    let st = p.statements.get(t.stmt as usize)?;
    p.kernels.get(st.kernel as usize).map(|k| k.name.clone())
}

/// The statistics as a table.
pub fn stats_text(s: &Stats) -> String {
    let mut out = String::new();
    let width = s.kernels.keys().map(|k| k.len()).max().unwrap_or(6).max(6);
    out.push_str(&format!(
        "{:<width$}  {:>12}  {:>12}\n",
        "kernel", "tasks", "edges out"
    ));
    for (k, ks) in &s.kernels {
        out.push_str(&format!(
            "{k:<width$}  {:>12}  {:>12}\n",
            ks.tasks, ks.edges_out
        ));
    }
    out.push_str(&format!(
        "{:<width$}  {:>12}  {:>12}\n",
        "total", s.tasks, s.edges
    ));
    out.push_str(&format!("critical path: {} tasks\n", s.critical_path));
    out.push_str(&format!(
        "widest level: {} tasks ({} levels)\n",
        s.widest_level,
        s.levels.len()
    ));
    out
}
