//! The interactive explorer behind `lpkc repl`, without any terminal: a
//! [`Session`] holds a compiled program and its current parameter binding
//! and turns one command line into its answer text, and [`Completions`]
//! completes a partial line. The rustyline glue in the binary only reads
//! lines, prints answers and installs the Ctrl-C handler that sets the
//! session's cancel flag, which every long loop here polls.
//!
//! Commands: the `query` commands (`children`, `parents`, `writer`,
//! `readers`, `tasks`) plus `show TASK`, `count [LINE]`, `path TASK TASK`,
//! `critical-path`, `set NAME=INT ...`, `plans`, `help [CMD]` and `quit`.
//! An answer longer than [`PAGE`] lines is cut, with a count of the rest;
//! a trailing `--all` shows everything.

use crate::explore::limit::{LimitError, TaskLimit};
use crate::explore::query::{self, AnswerFormat, Answerer, CommandError, Query};
use crate::explore::stats::{StatsError, StatsOptions};
use lpk_model::program::{BindError, Instance, Program};
use lpk_model::query::Engine;
use lpk_model::task::{CountError, Task, COUNT_BUDGET};
use lpk_model::StmtId;
use std::collections::{HashMap, VecDeque};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Lines of an answer shown without `--all`.
pub(crate) const PAGE: usize = 50;

/// The most tasks `path` visits before giving up.
pub(crate) const PATH_SEARCH_LIMIT: usize = 2_000_000;

/// The flag of `lpkc repl` that raises [`Session::max_tasks`].
pub(crate) const MAX_TASKS_FLAG: &str = "--max-tasks";

/// The REPL's commands with a one-line summary and their help text.
pub(crate) const COMMANDS: [(&str, &str, &str); 13] = [
    ("children", "children TASK", "The tasks that read a tile TASK writes, each with the tiles."),
    ("parents", "parents TASK", "The tasks that wrote a tile TASK reads, each with the tiles."),
    ("writer", "writer TILE", "The task that writes TILE (none for an input or unwritten tile)."),
    ("readers", "readers TILE", "The tasks that read TILE."),
    ("tasks", "tasks [LINE]", "Every task (of the statement on LINE) in sequential order."),
    ("show", "show TASK", "TASK's statement, its source line with the call underlined, and the tiles it reads and writes."),
    ("count", "count [LINE]", "How many tasks there are (per statement, or of the statement on LINE)."),
    ("path", "path TASK TASK", "A shortest dependence path from the first task to the second, if there is one."),
    ("critical-path", "critical-path", "A longest path of the DAG, in tasks, and the flops of the heaviest path."),
    ("set", "set NAME=INT ...", "Rebinds parameters (`set N=64`); a bad value is an error and keeps the old binding. `set` alone shows the binding."),
    ("plans", "plans", "The dependence plans of every access."),
    ("help", "help [CMD]", "Lists the commands, or explains one."),
    ("quit", "quit", "Leaves the REPL (so does Ctrl-D)."),
];

/// Why a command failed. The session goes on after any of them.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ReplError {
    /// Not a command of the REPL.
    #[error("unknown command `{0}`; `help` lists the commands")]
    UnknownCommand(String),
    /// A malformed argument.
    #[error("{0}")]
    Syntax(String),
    /// A query command failed.
    #[error("{0}")]
    Command(#[from] CommandError),
    /// A parameter binding failed (the old binding is kept).
    #[error("{0}")]
    Bind(#[from] BindError),
    /// Statistics failed.
    #[error("{0}")]
    Stats(StatsError),
    /// The tasks could not be counted (too many loop iterations, or an
    /// evaluation error).
    #[error("{0}")]
    Count(#[from] CountError),
    /// The instance or the answer is over the task limit (refused before
    /// any expansion).
    #[error("{0}")]
    Limit(#[from] LimitError),
    /// Ctrl-C.
    #[error("cancelled")]
    Cancelled,
    /// The command needs bound parameters.
    #[error("the parameters are not bound ({0}); bind them with `set`, e.g. `set {1}=4`")]
    Unbound(String, String),
}

impl From<StatsError> for ReplError {
    fn from(e: StatsError) -> Self {
        match e {
            StatsError::Cancelled => ReplError::Cancelled,
            other => ReplError::Stats(other),
        }
    }
}

impl From<lpk_model::query::QueryError> for ReplError {
    fn from(e: lpk_model::query::QueryError) -> Self {
        ReplError::Command(e.into())
    }
}

impl From<lpk_model::task::WalkError> for ReplError {
    fn from(e: lpk_model::task::WalkError) -> Self {
        ReplError::Command(e.into())
    }
}

fn syntax(msg: impl Into<String>) -> ReplError {
    ReplError::Syntax(msg.into())
}

/// What a command line asks of the terminal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Print this text (possibly empty).
    Output(String),
    /// Leave the REPL.
    Quit,
}

/// One REPL session: a program, its source, the current binding and the
/// cancel flag.
pub struct Session {
    program: Program,
    source: String,
    params: Option<Vec<i64>>,
    cancel: Arc<AtomicBool>,
    max_tasks: u64,
}

impl Session {
    /// A session over a compiled program and its source text, binding
    /// `given`. A parameter without a value leaves the session unbound
    /// (commands that need an instance ask for `set`); any other binding
    /// error is returned.
    pub fn new(
        program: Program,
        source: String,
        given: &[(String, i64)],
    ) -> Result<Self, BindError> {
        let params = match program.bind(given) {
            Ok(inst) => Some(inst.params),
            Err(BindError::Missing(_)) => None,
            Err(e) => return Err(e),
        };
        Ok(Session {
            program,
            source,
            params,
            cancel: Arc::new(AtomicBool::new(false)),
            max_tasks: query::DEFAULT_MAX_TASKS,
        })
    }

    /// The most tasks an answer may hold, and the most an instance may
    /// have for the commands that need its whole DAG (`critical-path`,
    /// `path`) or list all its tasks (`tasks --all`); beyond it they are
    /// refused at once, before any expansion. Default
    /// [`query::DEFAULT_MAX_TASKS`].
    pub fn max_tasks(&self) -> u64 {
        self.max_tasks
    }

    /// Sets [`max_tasks`](Self::max_tasks).
    pub fn set_max_tasks(&mut self, max: u64) {
        self.max_tasks = max;
    }

    fn limit(&self) -> TaskLimit<'static> {
        TaskLimit {
            max: self.max_tasks,
            flag: MAX_TASKS_FLAG,
        }
    }

    /// The flag a Ctrl-C handler sets to cancel the running command.
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.cancel)
    }

    /// The program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The current binding, `N=4, M=2` (or what is missing).
    pub fn binding_text(&self) -> String {
        match &self.params {
            Some(values) => self
                .program
                .params
                .iter()
                .zip(values)
                .map(|(d, v)| format!("{}={v}", d.name))
                .collect::<Vec<_>>()
                .join(", "),
            None => "unbound".to_string(),
        }
    }

    /// The greeting of an interactive session.
    pub fn banner(&self) -> String {
        let mut out = format!(
            "{}({}): {} statements, {} kernels. `help` lists the commands, Tab completes, Ctrl-D quits.\n",
            self.program.name,
            self.binding_text(),
            self.program.statements.len(),
            self.program.kernels.len()
        );
        if self.params.is_none() {
            out.push_str(&format!(
                "The parameters are not bound yet: `set {}`.\n",
                self.program
                    .params
                    .iter()
                    .map(|p| format!("{}=INT", p.name))
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        }
        out
    }

    /// The completer of this program's names.
    pub fn completions(&self) -> Completions {
        Completions::new(&self.program)
    }

    fn instance(&self) -> Result<Instance<'_>, ReplError> {
        match &self.params {
            Some(values) => Ok(self.program.bind_values(values.clone())?),
            None => {
                let names = self.program.param_names();
                Err(ReplError::Unbound(
                    format!("no value for {}", names.join(", ")),
                    names.first().copied().unwrap_or("N").to_string(),
                ))
            }
        }
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Runs one command line. Blank lines and `#` comments give no
    /// output; a trailing `--all` lifts the [`PAGE`] limit.
    pub fn execute(&mut self, line: &str) -> Result<Reply, ReplError> {
        self.cancel.store(false, Ordering::Relaxed);
        let mut line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Ok(Reply::Output(String::new()));
        }
        let mut all = false;
        if let Some(rest) = line.strip_suffix("--all") {
            if rest.is_empty() || rest.ends_with(char::is_whitespace) {
                all = true;
                line = rest.trim_end();
            }
        }
        let (cmd, rest) = match line.find(char::is_whitespace) {
            Some(i) => (&line[..i], line[i..].trim()),
            None => (line, ""),
        };
        let text = match cmd {
            "quit" | "exit" => return Ok(Reply::Quit),
            "help" => help(rest)?,
            "plans" => crate::explore::plans_text::plans_text(&self.program),
            "set" => self.set(rest)?,
            "children" | "parents" | "writer" | "readers" => {
                let inst = self.instance()?;
                let q = query::parse_command(&self.program, line)?;
                let mut answerer = Answerer::new(&inst, self.max_tasks, MAX_TASKS_FLAG);
                let mut out = Vec::new();
                answerer.answer(&q, line, AnswerFormat::Text, &mut out)?;
                String::from_utf8_lossy(&out).into_owned()
            }
            // `tasks` pages while it walks, so that a huge instance is
            // never collected into one string.
            "tasks" => return Ok(Reply::Output(self.tasks(line, all)?)),
            "show" => self.show(rest)?,
            "count" => self.count(rest)?,
            "path" => self.path(rest)?,
            "critical-path" => {
                if !rest.is_empty() {
                    return Err(syntax("`critical-path` takes no argument"));
                }
                self.critical_path()?
            }
            other => return Err(ReplError::UnknownCommand(other.to_string())),
        };
        Ok(Reply::Output(if all {
            text
        } else {
            truncate(&text, PAGE)
        }))
    }

    fn set(&mut self, rest: &str) -> Result<String, ReplError> {
        if rest.is_empty() {
            return Ok(format!("{}\n", self.binding_text()));
        }
        let mut given: Vec<(String, i64)> = Vec::new();
        if let Some(values) = &self.params {
            for (d, v) in self.program.params.iter().zip(values) {
                given.push((d.name.clone(), *v));
            }
        }
        for part in rest
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|p| !p.is_empty())
        {
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| syntax(format!("expected NAME=INT, found `{part}`")))?;
            let value: i64 = value
                .trim()
                .parse()
                .map_err(|_| syntax(format!("`{name}` needs an integer value, found `{value}`")))?;
            given.push((name.trim().to_string(), value));
        }
        let inst = self.program.bind(&given)?;
        self.params = Some(inst.params);
        Ok(format!("{}\n", self.binding_text()))
    }

    /// `tasks [LINE]`: counted first, so that a page is instant at any
    /// size and `--all` is refused above the task limit before the walk.
    fn tasks(&self, line: &str, all: bool) -> Result<String, ReplError> {
        let q = query::parse_command(&self.program, line)?;
        let Query::Tasks(on_line) = q else {
            return Err(syntax("`tasks` takes an optional line number"));
        };
        let inst = self.instance()?;
        if all {
            let mut answerer = Answerer::new(&inst, self.max_tasks, MAX_TASKS_FLAG);
            let mut out = Vec::new();
            answerer.answer(&q, line, AnswerFormat::Text, &mut out)?;
            return Ok(String::from_utf8_lossy(&out).into_owned());
        }
        let stmts: Vec<StmtId> = self
            .program
            .statement_ids()
            .filter(|(_, st)| on_line.is_none_or(|l| st.line == l))
            .map(|(s, _)| s)
            .collect();
        let only = match stmts.as_slice() {
            [one] if on_line.is_some() => Some(*one),
            _ => None,
        };
        let counts = inst
            .count_tasks_of(only, COUNT_BUDGET)
            .map_err(|e| self.limit().uncounted(&inst, e))?;
        let total: u64 = stmts
            .iter()
            .map(|&s| counts.per_statement.get(s.index()).copied().unwrap_or(0))
            .fold(0, u64::saturating_add);
        let names = query::Names::new(&self.program);
        let mut out = Vec::new();
        let mut shown = 0u64;
        let mut cancelled = false;
        inst.for_each_task_of(only, &mut |t| {
            if self.cancelled() {
                cancelled = true;
                return ControlFlow::Break(());
            }
            if stmts.contains(&t.stmt) {
                if shown >= PAGE as u64 {
                    return ControlFlow::Break(());
                }
                names.write_task_text(&mut out, t.stmt, &t.vars);
                out.push(b'\n');
                shown += 1;
            }
            ControlFlow::Continue(())
        })?;
        if cancelled {
            return Err(ReplError::Cancelled);
        }
        let mut out = String::from_utf8_lossy(&out).into_owned();
        if shown == 0 {
            out.push_str("(none)\n");
        }
        if total > shown {
            out.push_str(&format!("... and {} more (use --all)\n", total - shown));
        }
        Ok(out)
    }

    fn show(&self, rest: &str) -> Result<String, ReplError> {
        let task = query::parse_task(&self.program, rest)?;
        let inst = self.instance()?;
        let engine = Engine::new(&inst);
        engine.check_task(&task)?;
        let p = &self.program;
        let st = p
            .get_statement(task.stmt)
            .ok_or_else(|| syntax("no such statement"))?;
        let mut out = format!(
            "{}  (statement {} of {}, kernel {}, line {})\n",
            p.task_name(&task),
            task.stmt.index() + 1,
            p.statements.len(),
            p.get_kernel(st.kernel).map_or("?", |k| k.name.as_str()),
            st.line
        );
        out.push_str(&source_excerpt(&self.source, st.line, st.span));
        let domain = crate::explore::dot::domain_text(p, st);
        if !domain.is_empty() {
            out.push_str(&format!("domain: {}\n", domain.join(", ")));
        }
        let reads = engine.reads(&task)?;
        let writes = engine.writes(&task)?;
        let mut answerer = Answerer::new(&inst, self.max_tasks, MAX_TASKS_FLAG);
        for tile in &reads {
            let role = p.get_matrix(tile.matrix).map(|m| m.role);
            let from = if role == Some(lpk_model::program::Role::Input) {
                "an input".to_string()
            } else {
                match answerer.tasks_touching(tile, true)?.first() {
                    Some(w) => format!("written by {}", p.task_name(w)),
                    None if p.is_zero(tile.matrix) => "never written: a zero tile".to_string(),
                    None => "never written".to_string(),
                }
            };
            out.push_str(&format!("reads  {}  ({from})\n", p.tile_name(tile)));
        }
        for tile in writes {
            // A tile read by more tasks than the limit is said so, not
            // collected.
            let n = match answerer.tasks_touching(&tile, false) {
                Ok(readers) => readers.len().to_string(),
                Err(CommandError::Limit(_)) => format!("more than {}", self.max_tasks),
                Err(e) => return Err(e.into()),
            };
            out.push_str(&format!(
                "writes {}  (read by {n} task{})\n",
                p.tile_name(&tile),
                if n == "1" { "" } else { "s" }
            ));
        }
        Ok(out)
    }

    fn count(&self, rest: &str) -> Result<String, ReplError> {
        let line: Option<u32> = if rest.is_empty() {
            None
        } else {
            let l = rest
                .trim_start_matches('@')
                .parse()
                .map_err(|_| syntax(format!("`count` takes a line number, found `{rest}`")))?;
            // Reuse the query language's check and message for the line.
            query::parse_command(&self.program, &format!("tasks {l}"))?;
            Some(l)
        };
        let inst = self.instance()?;
        if self.cancelled() {
            return Err(ReplError::Cancelled);
        }
        // Counting runs only the loops around the innermost ones, within a
        // budget: instant at any size, or refused at once.
        let per_stmt = inst.count_tasks(COUNT_BUDGET)?.per_statement;
        let mut out = String::new();
        let mut total = 0;
        for ((s, st), &n) in self.program.statement_ids().zip(per_stmt.iter()) {
            let on = line.is_none_or(|l| st.line == l);
            if on {
                total += n;
                out.push_str(&format!(
                    "{:<20} {n}\n",
                    crate::explore::dot::statement_name(&self.program, s)
                ));
            }
        }
        out.push_str(&format!("{:<20} {total}\n", "total"));
        Ok(out)
    }

    fn path(&self, rest: &str) -> Result<String, ReplError> {
        let (a, b) = split_two_tasks(rest)
            .ok_or_else(|| syntax("`path` takes two tasks: path TASK TASK"))?;
        let p = &self.program;
        let from = query::parse_task(p, a)?;
        let to = query::parse_task(p, b)?;
        let inst = self.instance()?;
        let mut engine = Engine::new(&inst);
        engine.check_task(&from)?;
        engine.check_task(&to)?;
        // The search may visit much of the DAG: refuse an instance over
        // the limit at once, before any of it is kept.
        self.limit().check(&inst)?;
        // Edges go forward in sequential order, so tasks after `to` cannot
        // lead to it: the search never leaves the tasks between the two.
        let mut pred: HashMap<Task, Option<(Task, String)>> = HashMap::new();
        pred.insert(from.clone(), None);
        let mut queue = VecDeque::from([from.clone()]);
        let mut found = from == to;
        while let Some(t) = queue.pop_front() {
            if found {
                break;
            }
            if self.cancelled() {
                return Err(ReplError::Cancelled);
            }
            if pred.len() > PATH_SEARCH_LIMIT {
                return Err(syntax(format!(
                    "the search visited more than {PATH_SEARCH_LIMIT} tasks without reaching {}; try closer tasks",
                    p.task_name(&to)
                )));
            }
            for (child, tile) in engine.children(&t)? {
                if p.sequential_cmp(&child, &to) == std::cmp::Ordering::Greater
                    || pred.contains_key(&child)
                {
                    continue;
                }
                pred.insert(child.clone(), Some((t.clone(), p.tile_name(&tile))));
                if child == to {
                    found = true;
                    break;
                }
                queue.push_back(child);
            }
        }
        if !found {
            return Ok(format!(
                "no dependence path from {} to {}\n",
                p.task_name(&from),
                p.task_name(&to)
            ));
        }
        let mut steps: Vec<(Task, Option<String>)> = Vec::new();
        let mut cur = Some(to.clone());
        while let Some(t) = cur {
            let link = pred.get(&t).cloned().flatten();
            cur = link.as_ref().map(|(prev, _)| prev.clone());
            steps.push((t, link.map(|(_, tile)| tile)));
        }
        steps.reverse();
        let mut out = format!("path of {} tasks:\n", steps.len());
        for (t, via) in &steps {
            match via {
                Some(tile) => out.push_str(&format!("  -> {}  via {tile}\n", p.task_name(t))),
                None => out.push_str(&format!("     {}\n", p.task_name(t))),
            }
        }
        Ok(out)
    }

    fn critical_path(&self) -> Result<String, ReplError> {
        let inst = self.instance()?;
        // Count before expanding: refused at once above the limit.
        self.limit().check(&inst)?;
        let opts = StatsOptions {
            max_tasks: self.max_tasks,
            cancel: Some(&self.cancel),
            keep_paths: true,
            ..StatsOptions::default()
        };
        let a = crate::explore::stats::analyse(&inst, &opts)?;
        let p = &self.program;
        let mut out = format!(
            "critical path: {} tasks (of {}); heaviest path: {}flops over {} tasks at block {}\n",
            a.stats.critical_path,
            a.stats.tasks,
            crate::explore::stats::si(a.stats.critical_path_flops),
            a.stats.critical_path_flops_tasks,
            a.stats.block
        );
        for t in &a.critical_path {
            out.push_str(&format!("  {}\n", p.task_name(t)));
        }
        Ok(out)
    }
}

/// Splits `TASK TASK` at the start of the second task (the kernel name
/// before its `@`, or the `@` itself).
fn split_two_tasks(text: &str) -> Option<(&str, &str)> {
    let mut depth = 0i32;
    let mut ats = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            '@' if depth == 0 => {
                ats += 1;
                if ats == 2 {
                    let head = &text[..i];
                    let start = head
                        .char_indices()
                        .rev()
                        .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
                        .last()
                        .map_or(i, |(j, _)| j);
                    let (a, b) = text.split_at(start);
                    return (!a.trim().is_empty()).then_some((a.trim(), b.trim()));
                }
            }
            _ => {}
        }
    }
    None
}

/// The source line of a statement with its span underlined:
/// ```text
///   39 |             L[k, k] = chol(S[k, k, k]);
///      |             ^^^^^^^^^^^^^^^^^^^^^^^^^^
/// ```
/// (only the first line of a statement that spans several).
pub(crate) fn source_excerpt(source: &str, line: u32, span: (u32, u32)) -> String {
    let start = (span.0 as usize).min(source.len());
    let end = (span.1 as usize).min(source.len()).max(start);
    let Some(line_start) = source
        .get(..start)
        .map(|s| s.rfind('\n').map_or(0, |i| i + 1))
    else {
        return String::new();
    };
    let line_end = source
        .get(start..)
        .and_then(|s| s.find('\n'))
        .map_or(source.len(), |i| start + i);
    let (Some(text), Some(before), Some(marked)) = (
        source.get(line_start..line_end),
        source.get(line_start..start),
        source.get(start..end.min(line_end)),
    ) else {
        return String::new();
    };
    let gutter = line.to_string().len();
    let pad: String = before
        .chars()
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    format!(
        "{line:>gutter$} | {text}\n{:>gutter$} | {pad}{}\n",
        "",
        "^".repeat(marked.chars().count().max(1))
    )
}

/// Keeps the first `page` lines of `text`, saying how many were cut.
pub fn truncate(text: &str, page: usize) -> String {
    let total = text.lines().count();
    if total <= page {
        return text.to_string();
    }
    let mut out: String = text.lines().take(page).map(|l| format!("{l}\n")).collect();
    out.push_str(&format!("... and {} more (use --all)\n", total - page));
    out
}

fn help(rest: &str) -> Result<String, ReplError> {
    if rest.is_empty() {
        let mut out = String::from(
            "TASK is kernel@LINE(var=INT, ...) (the kernel may be omitted), TILE is M[INT, ...].\n",
        );
        for (_, usage, what) in COMMANDS {
            out.push_str(&format!("  {usage:<18} {what}\n"));
        }
        out.push_str(&format!(
            "Answers longer than {PAGE} lines are cut; add --all to see everything. Ctrl-C cancels a long answer.\n"
        ));
        return Ok(out);
    }
    COMMANDS
        .iter()
        .find(|(name, _, _)| *name == rest)
        .map(|(_, usage, what)| format!("{usage}\n  {what}\n"))
        .ok_or_else(|| ReplError::UnknownCommand(rest.to_string()))
}

/// Tab completion over a program's names: command names first on a line
/// (and after `help`), `@LINE` of statements (after a kernel name too),
/// parameters after `set`, and kernel, matrix and loop variable names
/// elsewhere.
#[derive(Clone, Debug, Default)]
pub struct Completions {
    kernels: Vec<String>,
    matrices: Vec<String>,
    vars: Vec<String>,
    params: Vec<String>,
    /// `(kernel, line)` of every statement.
    lines: Vec<(String, u32)>,
}

impl Completions {
    /// The names of a program.
    pub fn new(p: &Program) -> Self {
        let mut kernels: Vec<String> = p
            .statements
            .iter()
            .filter_map(|s| p.get_kernel(s.kernel).map(|k| k.name.clone()))
            .collect();
        kernels.sort();
        kernels.dedup();
        Completions {
            kernels,
            matrices: p.matrices.iter().map(|m| m.name.clone()).collect(),
            vars: crate::explore::dot::loop_variables(p),
            params: p.params.iter().map(|d| d.name.clone()).collect(),
            lines: p
                .statements
                .iter()
                .map(|s| {
                    (
                        p.get_kernel(s.kernel)
                            .map(|k| k.name.clone())
                            .unwrap_or_default(),
                        s.line,
                    )
                })
                .collect(),
        }
    }

    /// Where the word being completed starts in `line[..pos]`, and the
    /// candidates that replace it, sorted and without duplicates.
    pub fn complete(&self, line: &str, pos: usize) -> (usize, Vec<String>) {
        let head = line.get(..pos).unwrap_or(line);
        let start = head
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_alphanumeric() || *c == '_' || *c == '@' || *c == '-')
            .last()
            .map_or(head.len(), |(i, _)| i);
        let word = head.get(start..).unwrap_or("");
        let before = head.get(..start).unwrap_or("");
        let first = before.split_whitespace().next();
        let mut out: Vec<String> = Vec::new();
        if first.is_none() || first == Some("help") {
            out.extend(COMMANDS.iter().map(|(n, _, _)| n.to_string()));
        } else if let Some((kernel, digits)) = word.split_once('@') {
            for (k, l) in &self.lines {
                if kernel.is_empty() || k == kernel {
                    out.push(format!("{kernel}@{l}"));
                }
            }
            out.retain(|c| c.rsplit('@').next().is_some_and(|l| l.starts_with(digits)));
        } else if first == Some("set") {
            out.extend(self.params.iter().map(|p| format!("{p}=")));
        } else if before.trim_end().ends_with('(') || before.trim_end().ends_with(',') {
            out.extend(self.vars.iter().map(|v| format!("{v}=")));
        } else {
            out.extend(self.kernels.iter().map(|k| format!("{k}@")));
            out.extend(self.matrices.iter().map(|m| format!("{m}[")));
            out.extend(self.vars.iter().cloned());
        }
        out.retain(|c| c.starts_with(word));
        out.sort();
        out.dedup();
        (start, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_counts_the_rest() {
        let text: String = (0..53).map(|i| format!("{i}\n")).collect();
        let t = truncate(&text, 50);
        assert!(t.ends_with("49\n... and 3 more (use --all)\n"), "{t}");
        assert_eq!(truncate("a\nb\n", 50), "a\nb\n");
    }

    #[test]
    fn two_tasks_split_at_the_second_kernel() {
        assert_eq!(
            split_two_tasks("chol@37(k=0) trsm@44(k=0, i=1)"),
            Some(("chol@37(k=0)", "trsm@44(k=0, i=1)"))
        );
        assert_eq!(
            split_two_tasks("@37(k=0)@44(k=0,i=1)"),
            Some(("@37(k=0)", "@44(k=0,i=1)"))
        );
        assert_eq!(split_two_tasks("chol@37(k=0)"), None);
    }

    #[test]
    fn excerpt_underlines_the_span() {
        let src = "a\n  foo(x);\nb\n";
        assert_eq!(
            source_excerpt(src, 2, (4, 11)),
            "2 |   foo(x);\n  |   ^^^^^^^\n"
        );
    }

    fn session(example: &str, params: &[(&str, i64)]) -> Session {
        use crate::diag::SourceMap;
        let path = format!("{}/../examples/{example}.lpk", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("example exists");
        let mut sources = SourceMap::new();
        let checked = crate::pipeline::check_source(&mut sources, &path, &text);
        assert!(!checked.has_errors());
        let hir = crate::pipeline::select_program(&checked.module, None).expect("one program");
        let program = crate::pipeline::try_compile_program(&checked.module, hir, &sources)
            .expect("a checked program lowers");
        let given: Vec<(String, i64)> = params.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        Session::new(program, text, &given).expect("binds")
    }

    fn out(s: &mut Session, line: &str) -> String {
        match s.execute(line) {
            Ok(Reply::Output(t)) => t,
            other => panic!("{line}: {other:?}"),
        }
    }

    fn err(s: &mut Session, line: &str) -> String {
        match s.execute(line) {
            Err(e) => e.to_string(),
            other => panic!("{line}: expected an error, got {other:?}"),
        }
    }

    #[test]
    fn query_commands_answer_like_query() {
        let mut s = session("cholesky", &[("N", 3)]);
        assert_eq!(
            out(&mut s, "children chol@37(k=0)"),
            "trsm@44(k=0, i=1)  via L[0, 0]\ntrsm@44(k=0, i=2)  via L[0, 0]\n"
        );
        assert_eq!(
            out(&mut s, "parents @39(k=1)"),
            "syrk@53(k=0, j=1, i=1)  via S[1, 1, 1]\n"
        );
        assert_eq!(out(&mut s, "writer L[1, 0]"), "trsm@44(k=0, i=1)\n");
        assert_eq!(out(&mut s, "writer A[1, 0]"), "(none)\n");
        // The one task reads L[2, 1] twice (as L[i, k] and L[j, k]).
        assert_eq!(out(&mut s, "readers L[2, 1]"), "syrk@55(k=1, j=2, i=2)\n");
        assert_eq!(out(&mut s, "tasks 37"), "chol@37(k=0)\n");
        assert_eq!(out(&mut s, "tasks").lines().count(), 10);
        assert_eq!(out(&mut s, ""), "");
        assert_eq!(out(&mut s, "# a comment"), "");
    }

    #[test]
    fn show_gives_the_statement_source_and_tiles() {
        let mut s = session("cholesky", &[("N", 3)]);
        assert_eq!(
            out(&mut s, "show trsm@46(k=1, i=2)"),
            "trsm@46(k=1, i=2)  (statement 4 of 6, kernel trsm, line 46)\n\
             46 |                 L[i, k] = trsm(L[k, k], S[k, i, k]);\n   \
             |                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n\
             domain: 0 <= k < N, k + 1 <= i < N, not (k == 0)\n\
             reads  L[1, 1]  (written by chol@39(k=1))\n\
             reads  S[1, 2, 1]  (written by syrk@53(k=0, j=1, i=2))\n\
             writes L[2, 1]  (read by 1 task)\n"
        );
        let mut t = session("tsqr", &[("N", 2)]);
        let shown = out(&mut t, "show qr_factor@41(j=1)");
        assert!(shown.contains("reads  A[1]  (an input)\n"), "{shown}");
        assert!(
            shown.contains("writes R[0, 1]  (read by 1 task)\n"),
            "{shown}"
        );
        let mut z = session("gemm_tree_zero", &[("M", 1), ("N", 1), ("K", 3)]);
        let shown = out(&mut z, "show add@61(level=0, m=0, n=0, k=2)");
        assert!(
            shown.contains(
                "reads  P[0, 0, 0, 2]  (written by gemm@50(m=0, n=0, k=2))\n\
                 reads  P[0, 0, 0, 3]  (never written: a zero tile)\n"
            ),
            "{shown}"
        );
        assert_eq!(
            err(&mut s, "show chol@37(k=1)"),
            "chol@37(k=1) is not a task of this instance"
        );
        assert_eq!(
            err(&mut s, "show chol@38(k=0)"),
            "line 38 has no kernel call (kernel calls start on lines 37, 39, 44, 46, 53, 55)"
        );
    }

    #[test]
    fn count_counts_per_statement() {
        let mut s = session("cholesky", &[("N", 5)]);
        let all = out(&mut s, "count");
        assert!(all.ends_with("total                35\n"), "{all}");
        assert!(all.contains("syrk@55              10\n"), "{all}");
        assert_eq!(
            out(&mut s, "count 44"),
            "trsm@44              4\ntotal                4\n"
        );
        assert_eq!(
            err(&mut s, "count x"),
            "`count` takes a line number, found `x`"
        );
    }

    #[test]
    fn counting_agrees_with_the_enumeration_on_every_example() {
        for (example, names) in [
            ("caqr", &["M", "N"][..]),
            ("cholesky", &["N"][..]),
            ("gemm", &["M", "N", "K"][..]),
            ("gemm_tree", &["M", "N", "K"][..]),
            ("gesv", &["N", "M"][..]),
            ("getrf", &["N"][..]),
            ("lu", &["N"][..]),
            ("posv", &["N", "M"][..]),
            ("trsolve", &["N", "R"][..]),
            ("trtri", &["N"][..]),
            ("tsqr", &["N"][..]),
        ] {
            for n in [1, 2, 3, 5, 8, 13] {
                // caqr needs M >= N: the first parameter is the largest.
                let given: Vec<(&str, i64)> = names
                    .iter()
                    .enumerate()
                    .map(|(i, &name)| (name, if i == 0 { n + 2 } else { n }))
                    .collect();
                let s = session(example, &given);
                let inst = s.instance().expect("binds");
                let mut walked = vec![0u64; s.program.statements.len()];
                inst.for_each_task(&mut |t| {
                    walked[t.stmt.index()] += 1;
                    std::ops::ControlFlow::Continue(())
                })
                .expect("walks");
                let counted = inst.count_tasks(COUNT_BUDGET).expect("counts");
                assert_eq!(counted.per_statement, walked, "{example} {given:?}");
            }
        }
    }

    #[test]
    fn counting_is_instant_at_any_size_or_refused() {
        // N = 1000: 167,167,000 tasks, counted by running the outer loops.
        let mut s = session("cholesky", &[("N", 1000)]);
        assert!(out(&mut s, "count").ends_with("total                167167000\n"));
        let mut s = session("cholesky", &[("N", 99_999_999)]);
        let e = err(&mut s, "count");
        assert!(
            e.starts_with("the instance is too large to count: more than "),
            "{e}"
        );
    }

    #[test]
    fn path_finds_a_shortest_dependence_path() {
        let mut s = session("cholesky", &[("N", 4)]);
        assert_eq!(
            out(&mut s, "path chol@37(k=0) chol@39(k=1)"),
            "path of 4 tasks:\n     chol@37(k=0)\n  -> trsm@44(k=0, i=1)  via L[0, 0]\n  \
             -> syrk@53(k=0, j=1, i=1)  via L[1, 0]\n  -> chol@39(k=1)  via S[1, 1, 1]\n"
        );
        assert_eq!(
            out(&mut s, "path trsm@44(k=0, i=3) chol@39(k=1)"),
            "no dependence path from trsm@44(k=0, i=3) to chol@39(k=1)\n"
        );
        assert_eq!(
            out(&mut s, "path chol@39(k=1) chol@37(k=0)"),
            "no dependence path from chol@39(k=1) to chol@37(k=0)\n"
        );
        assert_eq!(
            out(&mut s, "path @37(k=0) @37(k=0)"),
            "path of 1 tasks:\n     chol@37(k=0)\n"
        );
        assert_eq!(
            err(&mut s, "path chol@37(k=0)"),
            "`path` takes two tasks: path TASK TASK"
        );
    }

    #[test]
    fn critical_path_lists_a_longest_path() {
        let mut s = session("cholesky", &[("N", 3)]);
        let text = out(&mut s, "critical-path");
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("critical path: 7 tasks (of 10); heaviest path: "),
            "{text}"
        );
        assert_eq!(lines.len(), 1 + 7);
        assert_eq!(lines[1], "  chol@37(k=0)");
        assert_eq!(lines[7], "  chol@39(k=2)");
        assert_eq!(
            err(&mut s, "critical-path now"),
            "`critical-path` takes no argument"
        );
    }

    #[test]
    fn set_rebinds_and_keeps_the_old_binding_on_errors() {
        let mut s = session("cholesky", &[("N", 3)]);
        assert_eq!(out(&mut s, "set N=5"), "N=5\n");
        assert!(out(&mut s, "count").ends_with("total                35\n"));
        assert_eq!(
            err(&mut s, "set N=0"),
            "requirement 1 of the program is not met: `N >= 1`"
        );
        assert_eq!(
            err(&mut s, "set N=x"),
            "`N` needs an integer value, found `x`"
        );
        assert_eq!(err(&mut s, "set N"), "expected NAME=INT, found `N`");
        assert!(err(&mut s, "set Q=1").starts_with("`Q` is not a parameter of program `cholesky`"));
        assert_eq!(out(&mut s, "set"), "N=5\n");
        let mut g = session("gemm_tree", &[("M", 1), ("N", 1), ("K", 2)]);
        assert_eq!(out(&mut g, "set K=9, M=2"), "M=2, N=1, K=9\n");
    }

    #[test]
    fn an_unbound_session_asks_for_set() {
        let mut s = session("cholesky", &[]);
        assert!(s.banner().contains("not bound yet: `set N=INT`"));
        assert_eq!(
            err(&mut s, "tasks"),
            "the parameters are not bound (no value for N); bind them with `set`, e.g. `set N=4`"
        );
        assert!(out(&mut s, "plans").contains("chol@37"));
        assert_eq!(out(&mut s, "set N=2"), "N=2\n");
        assert_eq!(out(&mut s, "tasks 37"), "chol@37(k=0)\n");
    }

    #[test]
    fn long_answers_are_truncated_unless_all() {
        let mut s = session("cholesky", &[("N", 6)]);
        let cut = out(&mut s, "tasks");
        assert_eq!(cut.lines().count(), PAGE + 1);
        assert!(cut.ends_with("... and 6 more (use --all)\n"), "{cut}");
        assert_eq!(out(&mut s, "tasks --all").lines().count(), 56);
        let plans = out(&mut s, "plans");
        assert!(plans.contains("more (use --all)"));
        assert!(out(&mut s, "plans --all").lines().count() > PAGE);
    }

    #[test]
    fn help_quit_and_unknown_commands() {
        let mut s = session("tsqr", &[("N", 4)]);
        let h = out(&mut s, "help");
        for (name, _, _) in COMMANDS {
            assert!(h.contains(name), "{name}");
        }
        assert_eq!(
            out(&mut s, "help set"),
            "set NAME=INT ...\n  Rebinds parameters (`set N=64`); a bad value is an error and keeps the old binding. `set` alone shows the binding.\n"
        );
        assert_eq!(
            err(&mut s, "help nope"),
            "unknown command `nope`; `help` lists the commands"
        );
        assert_eq!(
            err(&mut s, "frobnicate 3"),
            "unknown command `frobnicate`; `help` lists the commands"
        );
        assert_eq!(s.execute("quit"), Ok(Reply::Quit));
        assert_eq!(s.execute("exit"), Ok(Reply::Quit));
        // The session goes on after errors.
        assert_eq!(out(&mut s, "tasks 41").lines().count(), 4);
    }

    #[test]
    fn a_set_cancel_flag_stops_long_commands() {
        let mut s = session("cholesky", &[("N", 4)]);
        let flag = s.cancel_flag();
        // `execute` clears the flag when a command starts (a Ctrl-C of an
        // earlier command must not cancel the next), so the flag, as the
        // SIGINT handler would leave it mid-command, is set here and the
        // long loops are called directly.
        flag.store(true, Ordering::Relaxed);
        assert_eq!(s.count(""), Err(ReplError::Cancelled));
        assert_eq!(s.tasks("tasks", false), Err(ReplError::Cancelled));
        assert_eq!(s.critical_path(), Err(ReplError::Cancelled));
        assert_eq!(
            s.path("chol@37(k=0) chol@39(k=3)"),
            Err(ReplError::Cancelled)
        );
        // The next command runs normally.
        assert!(out(&mut s, "count").ends_with("total                20\n"));
    }

    #[test]
    fn completion_of_commands_names_and_lines() {
        let s = session("cholesky", &[("N", 3)]);
        let c = s.completions();
        assert_eq!(c.complete("chi", 3), (0, vec!["children".to_string()]));
        assert_eq!(
            c.complete("c", 1).1,
            vec!["children", "count", "critical-path"]
        );
        assert_eq!(
            c.complete("help p", 6),
            (
                5,
                vec!["parents".to_string(), "path".into(), "plans".into()]
            )
        );
        assert_eq!(c.complete("show ch", 7), (5, vec!["chol@".to_string()]));
        assert_eq!(
            c.complete("show chol@", 10),
            (5, vec!["chol@37".to_string(), "chol@39".into()])
        );
        assert_eq!(
            c.complete("show @4", 7),
            (5, vec!["@44".to_string(), "@46".into()])
        );
        assert_eq!(c.complete("writer L", 8), (7, vec!["L[".to_string()]));
        assert_eq!(
            c.complete("show chol@39(", 13),
            (13, vec!["i=".to_string(), "j=".into(), "k=".into()])
        );
        assert_eq!(
            c.complete("show trsm@46(k=1, i", 19),
            (18, vec!["i=".to_string()])
        );
        assert_eq!(c.complete("set ", 4), (4, vec!["N=".to_string()]));
        assert_eq!(c.complete("children zz", 11), (9, Vec::<String>::new()));
    }
}
