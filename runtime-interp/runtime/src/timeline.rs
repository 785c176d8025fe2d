//! A run's timeline: one [`Event`] per task execution (which worker, when,
//! bytes read and written, whether it was a retry), written as Chrome's
//! trace-event JSON (Perfetto and `chrome://tracing` open it) or drawn as
//! an SVG Gantt chart of the workers, with the live workers and the ready
//! tasks over time beneath it.
//!
//! When a task became ready is not recorded: it is the end of its last
//! parent, and the parents come from the plans.

use lpk_model::program::Instance;
use lpk_model::query::Engine;
use lpk_model::task::Task;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// Microseconds since the Unix epoch: the clock of every [`Event`].
pub fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// One execution of one task. The task is a [`Task`] here; a distributed
/// run's workers record the same event with the task's id (`T` a string).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event<T = Task> {
    /// The task.
    pub task: T,
    /// The worker (thread) that ran it.
    pub worker: String,
    /// Start, in microseconds since the Unix epoch.
    pub start_us: u64,
    /// End, in microseconds since the Unix epoch.
    pub end_us: u64,
    /// Bytes of tiles it read.
    pub read_bytes: u64,
    /// Bytes of tiles it wrote.
    pub written_bytes: u64,
    /// Whether the task had run (or started) before, on a worker that lost it.
    pub retry: bool,
}

/// The Chrome trace-event JSON of a timeline: one complete event (`"ph":
/// "X"`) per execution, on one thread per worker, times relative to the
/// first start.
pub fn chrome_json(inst: &Instance<'_>, events: &[Event]) -> serde_json::Value {
    let program = inst.program;
    let t0 = events.iter().map(|e| e.start_us).min().unwrap_or(0);
    let workers = worker_order(events);
    let mut out = Vec::with_capacity(events.len() + workers.len() + 1);
    out.push(serde_json::json!({
        "name": "process_name", "ph": "M", "pid": 1,
        "args": {"name": format!("{} ({} tasks)", program.name, events.len())},
    }));
    for (name, &tid) in &workers {
        out.push(serde_json::json!({
            "name": "thread_name", "ph": "M", "pid": 1, "tid": tid,
            "args": {"name": name},
        }));
    }
    for e in events {
        let kernel = kernel_of(inst, &e.task);
        out.push(serde_json::json!({
            "name": program.task_name(&e.task).to_string(),
            "cat": kernel,
            "ph": "X",
            "pid": 1,
            "tid": workers.get(&e.worker).copied().unwrap_or(0),
            "ts": e.start_us.saturating_sub(t0),
            "dur": e.end_us.saturating_sub(e.start_us).max(1),
            "args": {
                "read_bytes": e.read_bytes,
                "written_bytes": e.written_bytes,
                "retry": e.retry,
            },
        }));
    }
    serde_json::json!({ "traceEvents": out, "displayTimeUnit": "ms" })
}

fn kernel_of(inst: &Instance<'_>, task: &Task) -> String {
    let p = inst.program;
    p.get_statement(task.stmt)
        .and_then(|s| p.get_kernel(s.kernel))
        .map(|k| k.name.clone())
        .unwrap_or_default()
}

/// Workers numbered in the order of their first event.
fn worker_order(events: &[Event]) -> BTreeMap<String, usize> {
    let mut first: HashMap<&str, u64> = HashMap::new();
    for e in events {
        let f = first.entry(&e.worker).or_insert(e.start_us);
        *f = (*f).min(e.start_us);
    }
    let mut names: Vec<(&str, u64)> = first.into_iter().collect();
    names.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(b.0)));
    names
        .into_iter()
        .enumerate()
        .map(|(k, (n, _))| (n.to_string(), k + 1))
        .collect()
}

/// The number of ready tasks over time: `(time, count)` steps. A task is
/// ready from the end of its last parent (or the first start, for a root)
/// until it first starts. Computed for at most `limit` tasks (the parents
/// of each are asked of the plans); `None` beyond.
pub(crate) fn ready_curve(
    inst: &Instance<'_>,
    events: &[Event],
    limit: usize,
) -> Option<Vec<(u64, i64)>> {
    let mut first_start: HashMap<&Task, u64> = HashMap::new();
    let mut first_end: HashMap<&Task, u64> = HashMap::new();
    for e in events {
        let s = first_start.entry(&e.task).or_insert(e.start_us);
        *s = (*s).min(e.start_us);
        let f = first_end.entry(&e.task).or_insert(e.end_us);
        *f = (*f).min(e.end_us);
    }
    if first_start.len() > limit {
        return None;
    }
    let t0 = events.iter().map(|e| e.start_us).min().unwrap_or(0);
    let mut engine = Engine::new(inst);
    let mut deltas: Vec<(u64, i64)> = Vec::with_capacity(2 * first_start.len());
    for (&task, &start) in &first_start {
        let parents = engine.parents(task).ok()?;
        let ready = parents
            .iter()
            .filter_map(|(p, _)| first_end.get(p).copied())
            .max()
            .unwrap_or(t0)
            .min(start);
        deltas.push((ready, 1));
        deltas.push((start, -1));
    }
    deltas.sort();
    let mut n = 0;
    Some(
        deltas
            .into_iter()
            .map(|(t, d)| {
                n += d;
                (t, n)
            })
            .collect(),
    )
}

const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// An SVG Gantt chart: one lane per worker, one bar per execution
/// (coloured by kernel, retries outlined in red), then the live workers
/// and the ready tasks over time.
pub fn svg(inst: &Instance<'_>, events: &[Event]) -> String {
    let (w, left, top) = (1000.0f64, 140.0f64, 30.0f64);
    let workers = worker_order(events);
    let lane = if workers.is_empty() {
        20.0
    } else {
        (480.0 / workers.len() as f64).clamp(2.0, 20.0)
    };
    let gantt_h = lane * workers.len().max(1) as f64;
    let chart_h = 90.0;
    let height = top + gantt_h + 2.0 * (chart_h + 40.0) + 40.0;
    let t0 = events.iter().map(|e| e.start_us).min().unwrap_or(0);
    let t1 = events
        .iter()
        .map(|e| e.end_us)
        .max()
        .unwrap_or(t0 + 1)
        .max(t0 + 1);
    let span = (t1 - t0) as f64;
    let x = |t: u64| left + (t.saturating_sub(t0) as f64) / span * (w - left - 20.0);
    let mut kernels: BTreeMap<String, usize> = BTreeMap::new();
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="18" font-size="13">{} — {} task executions on {} workers in {:.3} s</text>"#,
        escape(&inst.program.name),
        events.len(),
        workers.len(),
        span / 1e6
    );
    for (name, &k) in &workers {
        let y = top + (k - 1) as f64 * lane;
        if lane >= 8.0 {
            let _ = writeln!(
                s,
                r#"<text x="4" y="{:.1}">{}</text>"#,
                y + lane * 0.75,
                escape(name)
            );
        }
    }
    for e in events {
        let kernel = kernel_of(inst, &e.task);
        let n = kernels.len();
        let colour = PALETTE[*kernels.entry(kernel).or_insert(n) % PALETTE.len()];
        let k = workers.get(&e.worker).copied().unwrap_or(1);
        let y = top + (k - 1) as f64 * lane;
        let (x0, x1) = (x(e.start_us), x(e.end_us));
        let stroke = if e.retry {
            r#" stroke="red" stroke-width="1""#
        } else {
            ""
        };
        let _ = writeln!(
            s,
            r#"<rect x="{x0:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="{colour}"{stroke}><title>{}</title></rect>"#,
            y + 0.5,
            (x1 - x0).max(0.5),
            (lane - 1.0).max(1.0),
            escape(&inst.program.task_name(&e.task).to_string())
        );
    }
    legend(&mut s, &kernels, left, top + gantt_h + 16.0);
    let live = live_workers(events);
    let mut y0 = top + gantt_h + 40.0;
    step_chart(&mut s, "live workers", &live, y0, chart_h, left, w, &x);
    y0 += chart_h + 40.0;
    match ready_curve(inst, events, 2_000_000) {
        Some(ready) => step_chart(&mut s, "ready tasks", &ready, y0, chart_h, left, w, &x),
        None => {
            let _ = writeln!(
                s,
                r#"<text x="{left}" y="{:.1}">ready tasks: too many tasks to draw</text>"#,
                y0 + 20.0
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

/// The legend: one swatch per kernel in its colour, on one line at `ly`.
fn legend(s: &mut String, kernels: &BTreeMap<String, usize>, left: f64, ly: f64) {
    let mut lx = left;
    for (name, &k) in kernels {
        let _ = writeln!(
            s,
            r#"<rect x="{lx:.1}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{ly:.1}">{}</text>"#,
            ly - 9.0,
            PALETTE[k % PALETTE.len()],
            lx + 14.0,
            escape(name)
        );
        lx += 20.0 + 7.0 * name.len() as f64;
    }
}

/// The live workers over time, a worker being live from its first start
/// to its last end: (time, count) at each change.
fn live_workers(events: &[Event]) -> Vec<(u64, i64)> {
    let mut live: Vec<(u64, i64)> = Vec::new();
    let mut bounds: HashMap<&str, (u64, u64)> = HashMap::new();
    for e in events {
        let b = bounds.entry(&e.worker).or_insert((e.start_us, e.end_us));
        b.0 = b.0.min(e.start_us);
        b.1 = b.1.max(e.end_us);
    }
    for (_, (a, b)) in bounds {
        live.push((a, 1));
        live.push((b, -1));
    }
    live.sort();
    let mut n = 0;
    live.into_iter()
        .map(|(t, d)| {
            n += d;
            (t, n)
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn step_chart(
    s: &mut String,
    title: &str,
    steps: &[(u64, i64)],
    y0: f64,
    h: f64,
    left: f64,
    w: f64,
    x: &dyn Fn(u64) -> f64,
) {
    let max = steps.iter().map(|p| p.1).max().unwrap_or(0).max(1) as f64;
    let y = |v: i64| y0 + h - v as f64 / max * h;
    let _ = writeln!(s, r#"<text x="4" y="{:.1}">{title}</text>"#, y0 + 12.0);
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{max:.0}</text>"#,
        left - 4.0,
        y0 + 10.0
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="end">0</text>"#,
        left - 4.0,
        y0 + h
    );
    let _ = writeln!(
        s,
        r##"<rect x="{left}" y="{y0:.1}" width="{:.1}" height="{h}" fill="none" stroke="#ccc"/>"##,
        w - left - 20.0
    );
    let mut d = String::new();
    let mut prev = 0i64;
    for (k, &(t, v)) in steps.iter().enumerate() {
        let px = x(t);
        if k == 0 {
            let _ = write!(d, "M{px:.2},{:.2}", y(0));
        }
        let _ = write!(d, " L{px:.2},{:.2} L{px:.2},{:.2}", y(prev), y(v));
        prev = v;
    }
    if !d.is_empty() {
        let _ = writeln!(
            s,
            r##"<path d="{d}" fill="none" stroke="#333" stroke-width="1"/>"##
        );
    }
}
