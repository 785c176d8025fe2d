//! DAG statistics of one instance (`lpkc stats`, and the REPL's
//! `critical-path`): tasks, edges, flops and bytes per kernel, the critical
//! path in tasks and in flops, and the parallelism profile of an
//! unbounded-worker schedule. Computed from the plans in one sequential pass
//! (sequential order is a topological order), with memory proportional to
//! the tasks.
//!
//! Flops and bytes come from `lpk_model::flops` with every tile taken
//! as `block × block`: every matrix dimension is assumed to be (extent ×
//! block) elements, and a 1-D matrix `A[N]` (N row blocks of full width) is
//! assumed to have block-wide rows, so its tiles are `block × block` too.
//! Kernels without a flop model (user kernels outside `docs/kernels.md`)
//! count no flops and are listed in [`Stats::unmodelled`].

use lpk_model::program::{Arg, Instance, Program};
use lpk_model::query::{Engine, QueryError};
use lpk_model::task::{CountError, Task, TileRef, WalkError, COUNT_BUDGET};
use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};

/// The block size `stats` assumes when `--block` is not given.
pub const DEFAULT_BLOCK: u64 = 256;

/// Per-kernel counts.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct KernelStats {
    /// Tasks of this kernel.
    pub tasks: u64,
    /// Edges out of tasks of this kernel.
    pub edges_out: u64,
    /// Flops of all its tasks at the block size (`None`: no flop model).
    pub flops: Option<f64>,
    /// Bytes read and written by all its tasks (`None`: no model).
    pub bytes: Option<f64>,
}

/// Statistics of an instance.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Stats {
    /// Every task.
    pub tasks: u64,
    /// Every (writer, reader, tile) edge.
    pub edges: u64,
    /// Per kernel, by name.
    pub kernels: BTreeMap<String, KernelStats>,
    /// Tasks on a longest path.
    pub critical_path: u64,
    /// Tasks per level (level = tasks on the longest path ending there):
    /// the parallelism profile, i.e. the tasks that run at each step of a
    /// schedule with unboundedly many workers and unit-time tasks.
    pub levels: Vec<u64>,
    /// The most tasks on one level.
    pub widest_level: u64,
    /// The block size (elements per tile side) of the flop and byte counts.
    pub block: u64,
    /// Flops of every task with a flop model.
    pub flops: f64,
    /// Bytes read and written by every task with a byte model.
    pub bytes: f64,
    /// The most flops on one path (the flop-weighted critical path).
    pub critical_path_flops: f64,
    /// Tasks on that flop-heaviest path.
    pub critical_path_flops_tasks: u64,
    /// Kernels called without a flop model (their flops count as 0).
    pub unmodelled: Vec<String>,
}

/// Why statistics could not be computed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// The sequential enumeration failed.
    #[error("{0}")]
    Walk(#[from] WalkError),
    /// The tasks could not be counted.
    #[error("{0}")]
    Count(#[from] CountError),
    /// A plan query failed.
    #[error("{0}")]
    Query(#[from] QueryError),
    /// Too many tasks to keep.
    #[error("the instance has more than {0} tasks")]
    TooLarge(u64),
    /// The computation was cancelled (Ctrl-C in the REPL).
    #[error("cancelled")]
    Cancelled,
    /// The block size is zero or too large to model.
    #[error("the block size must be between 1 and 1048576, found {0}")]
    BadBlock(u64),
    /// The chart could not be drawn.
    #[error("cannot draw the chart: {0}")]
    Chart(String),
}

/// How to compute statistics.
#[derive(Clone, Copy, Debug)]
pub struct StatsOptions<'c> {
    /// Refuse instances with more tasks than this.
    pub max_tasks: u64,
    /// Tile side in elements, for flops and bytes.
    pub block: u64,
    /// Stop with [`StatsError::Cancelled`] once this is set.
    pub cancel: Option<&'c AtomicBool>,
    /// Keep predecessors so that [`Analysis::critical_path`] can list the
    /// tasks of a longest path (costs memory per task).
    pub keep_paths: bool,
}

impl Default for StatsOptions<'_> {
    fn default() -> Self {
        StatsOptions {
            max_tasks: 20_000_000,
            block: DEFAULT_BLOCK,
            cancel: None,
            keep_paths: false,
        }
    }
}

/// Statistics plus, when asked for, the tasks of the critical paths.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    /// The statistics.
    pub stats: Stats,
    /// A longest path in tasks, first task first (empty unless
    /// `keep_paths`).
    pub critical_path: Vec<Task>,
    /// A path with the most flops, first task first (empty unless
    /// `keep_paths`).
    pub critical_path_flops: Vec<Task>,
}

/// Per-task bookkeeping of the pass (small: the pass keeps one per task).
struct Node {
    level: u64,
    flops: f64,
    flop_tasks: u64,
}

/// The predecessors on a longest and on a flop-heaviest path, kept only
/// with `keep_paths`.
#[derive(Default)]
struct Preds {
    level: Option<Task>,
    flops: Option<Task>,
}

/// Computes the statistics of an instance with at most `max_tasks` tasks,
/// at the default block size.
pub fn stats(inst: &Instance<'_>, max_tasks: u64) -> Result<Stats, StatsError> {
    let opts = StatsOptions {
        max_tasks,
        ..StatsOptions::default()
    };
    analyse(inst, &opts).map(|a| a.stats)
}

/// The flops and bytes of one task of each statement with every tile
/// `block × block` (`None` where the kernel has no model).
pub fn statement_costs(inst: &Instance<'_>, block: u64) -> Vec<(Option<f64>, Option<f64>)> {
    let p = inst.program;
    let b = block as usize;
    p.statements
        .iter()
        .map(|st| {
            let Some(k) = p.get_kernel(st.kernel) else {
                return (None, None);
            };
            let tiles = st.args.iter().filter(|a| matches!(a, Arg::Tile(_))).count();
            let shapes = vec![(b, b); tiles];
            (
                lpk_model::flops::flops(&k.name, &shapes),
                lpk_model::flops::bytes(&k.name, &shapes),
            )
        })
        .collect()
}

/// Computes the statistics (and, with `keep_paths`, the critical paths).
pub fn analyse(inst: &Instance<'_>, opts: &StatsOptions<'_>) -> Result<Analysis, StatsError> {
    if opts.block == 0 || opts.block > 1 << 20 {
        return Err(StatsError::BadBlock(opts.block));
    }
    let mut pass = Pass {
        program: inst.program,
        costs: statement_costs(inst, opts.block),
        keep_paths: opts.keep_paths,
        nodes: HashMap::new(),
        preds: HashMap::new(),
        s: Stats {
            block: opts.block,
            ..Stats::default()
        },
        end_level: None,
        end_flops: None,
    };
    let mut engine = Engine::new(inst);
    let mut failure: Option<StatsError> = None;
    inst.for_each_task(&mut |t| {
        if opts.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            failure = Some(StatsError::Cancelled);
            return ControlFlow::Break(());
        }
        if pass.s.tasks >= opts.max_tasks {
            failure = Some(StatsError::TooLarge(opts.max_tasks));
            return ControlFlow::Break(());
        }
        let parents = match engine.parents(t) {
            Ok(ps) => ps,
            Err(e) => {
                failure = Some(e.into());
                return ControlFlow::Break(());
            }
        };
        pass.task(t, &parents);
        ControlFlow::Continue(())
    })?;
    if let Some(f) = failure {
        return Err(f);
    }
    Ok(pass.finish())
}

/// The state of the sequential pass of [`analyse`].
struct Pass<'p> {
    program: &'p Program,
    /// The flops and bytes of one task of each statement.
    costs: Vec<(Option<f64>, Option<f64>)>,
    keep_paths: bool,
    nodes: HashMap<Task, Node>,
    preds: HashMap<Task, Preds>,
    s: Stats,
    /// The last task of a longest path.
    end_level: Option<(u64, Task)>,
    /// The last task of a flop-heaviest path.
    end_flops: Option<(f64, Task)>,
}

impl Pass<'_> {
    /// Counts task `t`, whose writers (seen before it) are `parents`.
    fn task(&mut self, t: &Task, parents: &[(Task, TileRef)]) {
        let (task_flops, task_bytes) = self.costs.get(t.stmt.index()).copied().unwrap_or_default();
        let (node, pred) = self.node(task_flops.unwrap_or(0.0), parents);
        self.s.tasks += 1;
        self.s.edges += parents.len() as u64;
        self.count_kernels(t, parents, task_flops, task_bytes);
        self.s.flops += task_flops.unwrap_or(0.0);
        self.s.bytes += task_bytes.unwrap_or(0.0);
        self.record_level(t, &node);
        if self.keep_paths {
            self.preds.insert(t.clone(), pred);
        }
        self.nodes.insert(t.clone(), node);
    }

    /// The node of a task with `flops` of its own after `parents`, and its
    /// predecessors on a longest and on a flop-heaviest path.
    fn node(&self, flops: f64, parents: &[(Task, TileRef)]) -> (Node, Preds) {
        let mut node = Node {
            level: 1,
            flops,
            flop_tasks: 1,
        };
        let mut pred = Preds::default();
        let mut best_level = 0;
        let mut best_flops: Option<(f64, u64)> = None;
        for (pt, _) in parents {
            let Some(pn) = self.nodes.get(pt) else {
                continue;
            };
            if pn.level > best_level {
                best_level = pn.level;
                if self.keep_paths {
                    pred.level = Some(pt.clone());
                }
            }
            if best_flops.is_none_or(|(f, _)| pn.flops > f) {
                best_flops = Some((pn.flops, pn.flop_tasks));
                if self.keep_paths {
                    pred.flops = Some(pt.clone());
                }
            }
        }
        node.level += best_level;
        if let Some((f, n)) = best_flops {
            node.flops += f;
            node.flop_tasks += n;
        }
        (node, pred)
    }

    /// Adds task `t`'s edges in, tasks, flops and bytes to its kernels'
    /// counts.
    fn count_kernels(
        &mut self,
        t: &Task,
        parents: &[(Task, TileRef)],
        task_flops: Option<f64>,
        task_bytes: Option<f64>,
    ) {
        let s = &mut self.s;
        for (pt, _) in parents {
            if let Some(k) = kernel_of(self.program, pt) {
                s.kernels.entry(k).or_default().edges_out += 1;
            }
        }
        if let Some(k) = kernel_of(self.program, t) {
            let ks = s.kernels.entry(k.clone()).or_default();
            ks.tasks += 1;
            match task_flops {
                Some(f) => *ks.flops.get_or_insert(0.0) += f,
                None => {
                    if !s.unmodelled.contains(&k) {
                        s.unmodelled.push(k);
                    }
                }
            }
            if let Some(b) = task_bytes {
                *ks.bytes.get_or_insert(0.0) += b;
            }
        }
    }

    /// Counts `node` (of task `t`) on its level, and keeps `t` if it ends a
    /// longer or flop-heavier path than any before.
    fn record_level(&mut self, t: &Task, node: &Node) {
        let s = &mut self.s;
        let idx = (node.level - 1) as usize;
        if s.levels.len() <= idx {
            s.levels.resize(idx + 1, 0);
        }
        if let Some(l) = s.levels.get_mut(idx) {
            *l += 1;
        }
        if self.end_level.as_ref().is_none_or(|(l, _)| node.level > *l) {
            self.end_level = Some((node.level, t.clone()));
        }
        if self.end_flops.as_ref().is_none_or(|(f, _)| node.flops > *f) {
            self.end_flops = Some((node.flops, t.clone()));
            s.critical_path_flops_tasks = node.flop_tasks;
        }
    }

    /// The statistics of every task seen, with the critical paths if kept.
    fn finish(self) -> Analysis {
        let mut s = self.s;
        s.critical_path = s.levels.len() as u64;
        s.widest_level = s.levels.iter().copied().max().unwrap_or(0);
        s.critical_path_flops = self.end_flops.as_ref().map_or(0.0, |(f, _)| *f);
        s.unmodelled.sort();
        let mut analysis = Analysis {
            stats: s,
            ..Analysis::default()
        };
        if self.keep_paths {
            let end_level = self.end_level.map(|(_, t)| t);
            let end_flops = self.end_flops.map(|(_, t)| t);
            analysis.critical_path = follow(&self.preds, end_level, false);
            analysis.critical_path_flops = follow(&self.preds, end_flops, true);
        }
        analysis
    }
}

/// The name of task `t`'s kernel.
fn kernel_of(p: &Program, t: &Task) -> Option<String> {
    let st = p.get_statement(t.stmt)?;
    p.get_kernel(st.kernel).map(|k| k.name.clone())
}

/// The path ending at `end`, first task first, by the longest (or, with
/// `by_flops`, the flop-heaviest) predecessors in `preds`.
fn follow(preds: &HashMap<Task, Preds>, end: Option<Task>, by_flops: bool) -> Vec<Task> {
    let mut path = Vec::new();
    let mut cur = end;
    while let Some(t) = cur {
        cur = preds.get(&t).and_then(|n| {
            if by_flops {
                n.flops.clone()
            } else {
                n.level.clone()
            }
        });
        path.push(t);
    }
    path.reverse();
    path
}

/// What can be known of an instance without its DAG: tasks, flops and
/// bytes per kernel, from [`Instance::count_tasks`] at flat memory. `lpkc
/// stats` prints this when the instance has more tasks than it may expand.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Counts {
    /// Every task.
    pub tasks: u64,
    /// Per kernel, by name (`edges_out` is not known without the DAG: 0).
    pub kernels: BTreeMap<String, KernelStats>,
    /// The block size of the flop and byte counts.
    pub block: u64,
    /// Flops of every task with a flop model.
    pub flops: f64,
    /// Bytes read and written by every task with a byte model.
    pub bytes: f64,
    /// Kernels called without a flop model.
    pub unmodelled: Vec<String>,
}

/// Counts the tasks of `inst` per kernel, with their flops and bytes at
/// `block`, without enumerating them ([`Instance::count_tasks`]).
pub fn counts(inst: &Instance<'_>, block: u64) -> Result<Counts, StatsError> {
    if block == 0 || block > 1 << 20 {
        return Err(StatsError::BadBlock(block));
    }
    let p = inst.program;
    let per_statement = inst.count_tasks(COUNT_BUDGET)?.per_statement;
    let costs = statement_costs(inst, block);
    let mut c = Counts {
        block,
        ..Counts::default()
    };
    for (stmt, &n) in per_statement.iter().enumerate() {
        let Some(kernel) = p
            .statements
            .get(stmt)
            .and_then(|st| p.get_kernel(st.kernel))
        else {
            continue;
        };
        if n == 0 {
            continue;
        }
        let (flops, bytes) = costs.get(stmt).copied().unwrap_or_default();
        let ks = c.kernels.entry(kernel.name.clone()).or_default();
        ks.tasks += n;
        c.tasks = c.tasks.saturating_add(n);
        match flops {
            Some(f) => {
                *ks.flops.get_or_insert(0.0) += f * n as f64;
                c.flops += f * n as f64;
            }
            None => {
                if !c.unmodelled.contains(&kernel.name) {
                    c.unmodelled.push(kernel.name.clone());
                }
            }
        }
        if let Some(b) = bytes {
            *ks.bytes.get_or_insert(0.0) += b * n as f64;
            c.bytes += b * n as f64;
        }
    }
    c.unmodelled.sort();
    Ok(c)
}

/// The text of [`Counts`] for an instance whose DAG was not expanded, with
/// the reason (`why`, e.g. the task limit and the flag that raises it).
pub fn counts_text(c: &Counts, why: &str) -> String {
    let mut out = String::new();
    let total = KernelStats {
        tasks: c.tasks,
        edges_out: 0,
        flops: Some(c.flops),
        bytes: Some(c.bytes),
    };
    kernel_table(&mut out, &c.kernels, &total, false, c.block, &c.unmodelled);
    out.push_str(&format!(
        "edges, critical path and parallelism profile not computed: {why}\n"
    ));
    out
}

/// The kernel table [`stats_text`] and [`counts_text`] open with: a row per
/// kernel and the `total` row, with an `edges out` column when the DAG was
/// expanded (`with_edges`; counts of unexpanded instances get a wider tasks
/// column instead), then the block size and the kernels without a flop
/// model.
fn kernel_table(
    out: &mut String,
    kernels: &BTreeMap<String, KernelStats>,
    total: &KernelStats,
    with_edges: bool,
    block: u64,
    unmodelled: &[String],
) {
    let width = kernels.keys().map(|k| k.len()).max().unwrap_or(6).max(6);
    let tasks_width = if with_edges { 12 } else { 14 };
    let opt = |x: Option<f64>| x.map_or_else(|| "-".to_string(), si);
    let mut row = |name: &str, tasks: String, edges: String, flops: String, bytes: String| {
        out.push_str(&format!("{name:<width$}  {tasks:>tasks_width$}"));
        if with_edges {
            out.push_str(&format!("  {edges:>12}"));
        }
        out.push_str(&format!("  {flops:>12}  {bytes:>12}\n"));
    };
    let [tasks, edges, flops, bytes] = ["tasks", "edges out", "flops", "bytes"].map(String::from);
    row("kernel", tasks, edges, flops, bytes);
    let rows = kernels.iter().map(|(k, ks)| (k.as_str(), ks));
    for (name, ks) in rows.chain([("total", total)]) {
        row(
            name,
            ks.tasks.to_string(),
            ks.edges_out.to_string(),
            opt(ks.flops),
            opt(ks.bytes),
        );
    }
    out.push_str(&format!(
        "flops and bytes at block {block}: every tile taken as {block} x {block} (1-D matrices too)\n"
    ));
    if !unmodelled.is_empty() {
        out.push_str(&format!(
            "no flop model (counted as 0): {}\n",
            unmodelled.join(", ")
        ));
    }
}

/// The JSON of expanded statistics: the fields of [`Stats`] and
/// `"expanded": true`.
pub fn stats_json(s: &Stats) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    if let Some(obj) = v.as_object_mut() {
        obj.insert("expanded".into(), serde_json::Value::Bool(true));
    }
    v
}

/// The JSON of [`Counts`]: the fields of [`stats_json`], with `null` for
/// what needs the DAG (`edges`, `kernels.*.edges_out`, `critical_path`,
/// `levels`, `widest_level`, `critical_path_flops`,
/// `critical_path_flops_tasks`) and `"expanded": false`.
pub fn counts_json(c: &Counts) -> serde_json::Value {
    let kernels: serde_json::Map<String, serde_json::Value> = c
        .kernels
        .iter()
        .map(|(k, ks)| {
            (
                k.clone(),
                serde_json::json!({
                    "tasks": ks.tasks,
                    "edges_out": null,
                    "flops": ks.flops,
                    "bytes": ks.bytes,
                }),
            )
        })
        .collect();
    serde_json::json!({
        "tasks": c.tasks,
        "edges": null,
        "kernels": kernels,
        "critical_path": null,
        "levels": null,
        "widest_level": null,
        "block": c.block,
        "flops": c.flops,
        "bytes": c.bytes,
        "critical_path_flops": null,
        "critical_path_flops_tasks": null,
        "unmodelled": c.unmodelled,
        "expanded": false,
    })
}

/// Formats a count of flops or bytes with an SI prefix (`1.23 G`).
pub fn si(x: f64) -> String {
    const PREFIXES: [(f64, &str); 5] =
        [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    for (scale, prefix) in PREFIXES {
        if x.abs() >= scale {
            return format!("{:.2} {prefix}", x / scale);
        }
    }
    format!("{x:.0} ")
}

/// At most this many rows in the text parallelism profile; more levels
/// are bucketed.
pub(crate) const PROFILE_ROWS: usize = 24;

/// One row of the bucketed profile: steps `first..=last` (1-based), the
/// tasks on them and the most on one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfileRow {
    /// First step (1-based).
    pub first: usize,
    /// Last step (inclusive).
    pub last: usize,
    /// Tasks on these steps.
    pub tasks: u64,
    /// The most tasks on one of these steps.
    pub max: u64,
}

/// The parallelism profile in at most `rows` rows: one per step when they
/// fit, otherwise consecutive steps bucketed evenly.
pub fn profile_rows(levels: &[u64], rows: usize) -> Vec<ProfileRow> {
    let per = levels.len().div_ceil(rows.max(1)).max(1);
    levels
        .chunks(per)
        .enumerate()
        .map(|(i, chunk)| ProfileRow {
            first: i * per + 1,
            last: i * per + chunk.len(),
            tasks: chunk.iter().sum(),
            max: chunk.iter().copied().max().unwrap_or(0),
        })
        .collect()
}

/// The statistics as text: the kernel table, totals, critical paths and
/// the parallelism profile.
pub fn stats_text(s: &Stats) -> String {
    let mut out = String::new();
    let total = KernelStats {
        tasks: s.tasks,
        edges_out: s.edges,
        flops: Some(s.flops),
        bytes: Some(s.bytes),
    };
    kernel_table(&mut out, &s.kernels, &total, true, s.block, &s.unmodelled);
    out.push_str(&format!("critical path: {} tasks\n", s.critical_path));
    out.push_str(&format!(
        "critical path in flops: {}flops over {} tasks\n",
        si(s.critical_path_flops),
        s.critical_path_flops_tasks
    ));
    out.push_str(&format!(
        "widest level: {} tasks ({} levels)\n",
        s.widest_level,
        s.levels.len()
    ));
    if !s.levels.is_empty() {
        out.push_str("\nparallelism profile (tasks ready per step, unbounded workers):\n");
        let rows = profile_rows(&s.levels, PROFILE_ROWS);
        let bucketed = rows.iter().any(|r| r.first != r.last);
        let bar_scale = s.widest_level.max(1) as f64;
        if bucketed {
            out.push_str(&format!(
                "{:>13}  {:>10}  {:>10}\n",
                "steps", "tasks", "max/step"
            ));
        } else {
            out.push_str(&format!("{:>13}  {:>10}\n", "step", "tasks"));
        }
        for r in rows {
            let bar = "#".repeat(((r.max as f64 / bar_scale) * 40.0).ceil() as usize);
            if bucketed {
                out.push_str(&format!(
                    "{:>13}  {:>10}  {:>10}  {bar}\n",
                    format!("{}-{}", r.first, r.last),
                    r.tasks,
                    r.max
                ));
            } else {
                out.push_str(&format!("{:>13}  {:>10}  {bar}\n", r.first, r.tasks));
            }
        }
    }
    out
}

/// The parallelism profile as an SVG bar chart (tasks per step).
pub fn profile_svg(s: &Stats, title: &str) -> Result<String, StatsError> {
    use plotters::prelude::*;
    let chart_err = |e: &dyn std::fmt::Display| StatsError::Chart(e.to_string());
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| chart_err(&e))?;
        let steps = s.levels.len().max(1) as u32;
        let top = s.widest_level.max(1);
        let top = top + top.div_ceil(10);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0u32..steps, 0u64..top)
            .map_err(|e| chart_err(&e))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("step (level)")
            .y_desc("tasks ready")
            .x_label_formatter(&|x| (x + 1).to_string())
            .draw()
            .map_err(|e| chart_err(&e))?;
        let fill = RGBColor(0x4c, 0x78, 0xa8).filled();
        chart
            .draw_series(s.levels.iter().enumerate().map(|(i, &n)| {
                let x = i as u32;
                let mut bar = Rectangle::new([(x, 0), (x + 1, n)], fill);
                bar.set_margin(0, 0, 1, 1);
                bar
            }))
            .map_err(|e| chart_err(&e))?;
        root.present().map_err(|e| chart_err(&e))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod count_tests {
    use super::*;
    use crate::explore::example_program;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn counts_agree_with_the_expanded_statistics() {
        for (example, params) in [
            ("cholesky", vec![("N", 7)]),
            ("caqr", vec![("M", 6), ("N", 4)]),
            ("gemm_tree", vec![("M", 2), ("N", 3), ("K", 5)]),
            ("tsqr", vec![("N", 9)]),
        ] {
            let p = example_program(example);
            let given: Vec<(String, i64)> =
                params.iter().map(|(n, v)| (n.to_string(), *v)).collect();
            let inst = p.bind(&given).expect("binds");
            let full = stats(&inst, 1_000_000).expect("expands");
            let c = counts(&inst, DEFAULT_BLOCK).expect("counts");
            assert_eq!(c.tasks, full.tasks, "{example}");
            assert!(close(c.flops, full.flops), "{example}");
            assert!(close(c.bytes, full.bytes), "{example}");
            assert_eq!(c.unmodelled, full.unmodelled);
            assert_eq!(
                c.kernels.keys().collect::<Vec<_>>(),
                full.kernels.keys().collect::<Vec<_>>()
            );
            for (k, ks) in &c.kernels {
                let f = &full.kernels[k];
                assert_eq!(ks.tasks, f.tasks, "{example} {k}");
                assert!(close(ks.flops.unwrap_or(0.0), f.flops.unwrap_or(0.0)));
                assert!(close(ks.bytes.unwrap_or(0.0), f.bytes.unwrap_or(0.0)));
            }
        }
    }

    #[test]
    fn counts_of_a_huge_instance_are_instant_and_exact() {
        let p = example_program("cholesky");
        let inst = p.bind(&[("N".to_string(), 1000)]).expect("binds");
        let c = counts(&inst, 256).expect("counts");
        // N(N+1)(N+2)/6 tasks: N chol, N(N-1)/2 trsm, (N-1)N(N+1)/6 syrk.
        assert_eq!(c.tasks, 1000 * 1001 * 1002 / 6);
        assert_eq!(c.kernels["chol"].tasks, 1000);
        assert_eq!(c.kernels["trsm"].tasks, 1000 * 999 / 2);
        assert_eq!(c.kernels["syrk"].tasks, 999 * 1000 * 1001 / 6);
        let text = counts_text(&c, "167167000 tasks > --max-tasks 20000000");
        assert!(text.contains("total"), "{text}");
        assert!(text.ends_with(
            "edges, critical path and parallelism profile not computed: 167167000 tasks > --max-tasks 20000000\n"
        ));
    }
}
