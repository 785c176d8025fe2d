//! The dependency query language of `lpkc query` and `lpkc repl`
//! (docs/cli.md): parsing `children TASK`, `parents TASK`, `writer TILE`,
//! `readers TILE` and `tasks [LINE]`, answering them through the plan
//! engine, and writing answers as text or one line of JSON.
//!
//! Answers are bounded: `tasks` counts first and refuses above the task
//! limit before it walks anything, and the other commands stop collecting
//! as soon as the answer is known to exceed the limit, so neither memory
//! nor time grows with the instance. An [`Answerer`] writes answers
//! straight into a byte buffer from names it prepared once per statement:
//! no allocation per task, no JSON tree.

use crate::explore::limit::{instance_name, LimitError, Size, TaskLimit};
use lpk_model::program::{Instance, Program, Statement};
use lpk_model::query::{Engine, QueryError};
use lpk_model::task::{Task, TileRef, COUNT_BUDGET};
use lpk_model::{MatrixId, StmtId};
use std::ops::ControlFlow;

/// The most tasks one answer may hold unless told otherwise (`lpkc query
/// --max-tasks`).
pub const DEFAULT_MAX_TASKS: u64 = 1_000_000;

/// A parsed query command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Query {
    /// `children TASK`
    Children(Task),
    /// `parents TASK`
    Parents(Task),
    /// `writer TILE`
    Writer(TileRef),
    /// `readers TILE`
    Readers(TileRef),
    /// `tasks [LINE]`
    Tasks(Option<u32>),
}

/// A query that could not be parsed or answered.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CommandError {
    /// Not a command.
    #[error("unknown command `{0}`; commands: children TASK, parents TASK, writer TILE, readers TILE, tasks [LINE]")]
    UnknownCommand(String),
    /// A malformed argument.
    #[error("{0}")]
    Syntax(String),
    /// The program has no such task or tile, or a query failed.
    #[error("{0}")]
    Query(#[from] QueryError),
    /// An evaluation error while enumerating tasks.
    #[error("{0}")]
    Walk(#[from] lpk_model::task::WalkError),
    /// The answer has more tasks than allowed (refused before any was
    /// written).
    #[error("{0}")]
    Limit(#[from] LimitError),
}

fn syntax(msg: impl Into<String>) -> CommandError {
    CommandError::Syntax(msg.into())
}

/// Parses one command line.
pub fn parse_command(program: &Program, line: &str) -> Result<Query, CommandError> {
    let line = line.trim();
    let (cmd, rest) = match line.find(char::is_whitespace) {
        Some(i) => (&line[..i], line[i..].trim()),
        None => (line, ""),
    };
    match cmd {
        "children" => Ok(Query::Children(parse_task(program, rest)?)),
        "parents" => Ok(Query::Parents(parse_task(program, rest)?)),
        "writer" => Ok(Query::Writer(parse_tile(program, rest)?)),
        "readers" => Ok(Query::Readers(parse_tile(program, rest)?)),
        "tasks" => {
            if rest.is_empty() {
                Ok(Query::Tasks(None))
            } else {
                let line: u32 = rest
                    .parse()
                    .map_err(|_| syntax(format!("`tasks` takes a line number, found `{rest}`")))?;
                statements_on_line(program, line)?;
                Ok(Query::Tasks(Some(line)))
            }
        }
        "" => Err(syntax("empty command")),
        other => Err(CommandError::UnknownCommand(other.to_string())),
    }
}

fn statements_on_line(program: &Program, line: u32) -> Result<Vec<StmtId>, CommandError> {
    let stmts: Vec<StmtId> = program
        .statement_ids()
        .filter(|(_, s)| s.line == line)
        .map(|(i, _)| i)
        .collect();
    if stmts.is_empty() {
        let lines: Vec<String> = program
            .statements
            .iter()
            .map(|s| s.line.to_string())
            .collect();
        return Err(syntax(format!(
            "line {line} has no kernel call (kernel calls start on lines {})",
            lines.join(", ")
        )));
    }
    Ok(stmts)
}

/// Parses `kernel@LINE[:COL](var=INT, ...)`; the kernel and the
/// parentheses may be omitted.
pub fn parse_task(program: &Program, text: &str) -> Result<Task, CommandError> {
    let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let parts = split_task(&text)?;
    let stmt = task_statement(program, &parts)?;
    let vars = task_vars(program.statement(stmt), parts.args)?;
    Ok(Task {
        stmt,
        vars: vars.into(),
    })
}

/// The parts of a task's text `kernel@LINE[:COL](ARGS)`.
struct TaskParts<'t> {
    /// The kernel's name, empty if omitted.
    kernel: &'t str,
    line: u32,
    col: Option<u32>,
    /// The text between the parentheses, if any.
    args: Option<&'t str>,
}

/// Splits a task's text (without whitespace) into its parts.
fn split_task(text: &str) -> Result<TaskParts<'_>, CommandError> {
    let at = text.find('@').ok_or_else(|| {
        syntax(format!(
            "expected a task like `kernel@LINE(i=0)`, found `{text}`"
        ))
    })?;
    let kernel = &text[..at];
    let rest = &text[at + 1..];
    let (head, args) = match rest.find('(') {
        Some(i) => {
            let args = rest[i + 1..]
                .strip_suffix(')')
                .ok_or_else(|| syntax(format!("missing `)` in `{text}`")))?;
            (&rest[..i], Some(args))
        }
        None => (rest, None),
    };
    let (line_s, col_s) = match head.split_once(':') {
        Some((l, c)) => (l, Some(c)),
        None => (head, None),
    };
    let line: u32 = line_s.parse().map_err(|_| {
        syntax(format!(
            "expected a line number after `@`, found `{line_s}`"
        ))
    })?;
    let col: Option<u32> = match col_s {
        Some(c) => Some(
            c.parse()
                .map_err(|_| syntax(format!("expected a column number, found `{c}`")))?,
        ),
        None => None,
    };
    Ok(TaskParts {
        kernel,
        line,
        col,
        args,
    })
}

/// The one statement named by a task's line, column and kernel name.
fn task_statement(program: &Program, parts: &TaskParts<'_>) -> Result<StmtId, CommandError> {
    let TaskParts {
        kernel, line, col, ..
    } = *parts;
    let mut stmts = statements_on_line(program, line)?;
    if let Some(c) = col {
        stmts.retain(|&s| program.statement(s).column == c);
        if stmts.is_empty() {
            return Err(syntax(format!(
                "no kernel call starts at line {line}, column {c}"
            )));
        }
    }
    if !kernel.is_empty() {
        stmts.retain(|&s| {
            program
                .get_kernel(program.statement(s).kernel)
                .is_some_and(|k| k.name == kernel)
        });
        if stmts.is_empty() {
            return Err(syntax(format!(
                "the kernel call on line {line} is not `{kernel}`"
            )));
        }
    }
    match stmts.as_slice() {
        [one] => Ok(*one),
        _ => {
            let cols: Vec<String> = stmts
                .iter()
                .map(|&s| format!("@{line}:{}", program.statement(s).column))
                .collect();
            Err(syntax(format!(
                "line {line} has several kernel calls; name one by column: {}",
                cols.join(", ")
            )))
        }
    }
}

/// The values of `st`'s loop variables given by `args` (`var=INT, ...`),
/// each exactly once.
fn task_vars(st: &Statement, args: Option<&str>) -> Result<Vec<i64>, CommandError> {
    let mut vals: Vec<Option<i64>> = vec![None; st.vars.len()];
    if let Some(args) = args {
        for part in args.split(',').filter(|p| !p.is_empty()) {
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| syntax(format!("expected `var=INT`, found `{part}`")))?;
            let pos = st.vars.iter().position(|v| v == name).ok_or_else(|| {
                syntax(format!(
                    "`{name}` is not a loop variable of this statement (its variables: {})",
                    if st.vars.is_empty() {
                        "none".to_string()
                    } else {
                        st.vars.join(", ")
                    }
                ))
            })?;
            let v: i64 = value
                .parse()
                .map_err(|_| syntax(format!("`{name}` needs an integer, found `{value}`")))?;
            if vals[pos].replace(v).is_some() {
                return Err(syntax(format!("`{name}` is given twice")));
            }
        }
    }
    let missing: Vec<&str> = st
        .vars
        .iter()
        .zip(&vals)
        .filter(|(_, v)| v.is_none())
        .map(|(n, _)| n.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(syntax(format!(
            "missing loop variable(s): {}",
            missing.join(", ")
        )));
    }
    Ok(vals.into_iter().map(|v| v.unwrap_or(0)).collect())
}

/// Parses `M[INT, ...]`.
pub fn parse_tile(program: &Program, text: &str) -> Result<TileRef, CommandError> {
    let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let open = text
        .find('[')
        .ok_or_else(|| syntax(format!("expected a tile like `M[0, 1]`, found `{text}`")))?;
    let name = &text[..open];
    let inner = text[open + 1..]
        .strip_suffix(']')
        .ok_or_else(|| syntax(format!("missing `]` in `{text}`")))?;
    let matrix = program.matrix_named(name).ok_or_else(|| {
        let names: Vec<&str> = program.matrices.iter().map(|m| m.name.as_str()).collect();
        syntax(format!(
            "no matrix `{name}` (matrices: {})",
            names.join(", ")
        ))
    })?;
    let index: Result<Vec<i64>, _> = inner.split(',').map(|s| s.parse::<i64>()).collect();
    let index =
        index.map_err(|_| syntax(format!("tile indices must be integers, found `{inner}`")))?;
    let rank = program.matrix(matrix).extents.len();
    if index.len() != rank {
        return Err(syntax(format!(
            "`{name}` has {rank} dimension(s), but {} indices are given",
            index.len()
        )));
    }
    Ok(TileRef { matrix, index })
}

/// How answers are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerFormat {
    /// One task a line (`kernel@LINE(i=0)  via M[0, 1]`), `(none)` for an
    /// empty answer.
    Text,
    /// One line of JSON: `{"cmd": str, "tasks": [T, ...]}` (docs/cli.md).
    Json,
}

/// The pieces of one statement's task names, prepared once.
#[derive(Clone, Debug, Default)]
struct StatementNames {
    /// `kernel@LINE(` or `kernel@LINE:COL(`.
    text_head: String,
    /// `k=`, `, i=`, ...
    text_vars: Vec<String>,
    /// `{"kernel":"trsm","line":44,"column":17,"vars":{`.
    json_head: String,
    /// `"k":`, `,"i":`, ...
    json_vars: Vec<String>,
}

/// Every statement's and matrix's names, escaped for text and JSON once,
/// so that writing a task costs no allocation.
#[derive(Clone, Debug, Default)]
pub struct Names {
    statements: Vec<StatementNames>,
    /// Per matrix: the name, and the name escaped inside a JSON string.
    matrices: Vec<(String, String)>,
}

/// A JSON string literal with serde_json's escaping.
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// Appends the decimal digits of `v`.
fn push_int(out: &mut Vec<u8>, v: i64) {
    let mut digits = [0u8; 20];
    let mut n = v.unsigned_abs();
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends `head`, each variable's `name` (with what goes before its value)
/// followed by its value, and `close`.
fn write_vars(out: &mut Vec<u8>, head: &str, names: &[String], vars: &[i64], close: u8) {
    out.extend_from_slice(head.as_bytes());
    for (name, &v) in names.iter().zip(vars) {
        out.extend_from_slice(name.as_bytes());
        push_int(out, v);
    }
    out.push(close);
}

/// Each variable's name as `name` writes it, after `sep` from the second
/// on.
fn var_names(vars: &[String], sep: &str, name: impl Fn(&str) -> String) -> Vec<String> {
    vars.iter()
        .enumerate()
        .map(|(i, v)| format!("{}{}", if i > 0 { sep } else { "" }, name(v)))
        .collect()
}

impl Names {
    /// The names of a program's statements and matrices.
    pub fn new(program: &Program) -> Names {
        let statements = program
            .statements
            .iter()
            .map(|st| {
                let kernel = program
                    .get_kernel(st.kernel)
                    .map(|k| k.name.as_str())
                    .unwrap_or("?");
                let shared = program
                    .statements
                    .iter()
                    .filter(|o| o.line == st.line)
                    .count()
                    > 1;
                let text_head = if shared {
                    format!("{kernel}@{}:{}(", st.line, st.column)
                } else {
                    format!("{kernel}@{}(", st.line)
                };
                let kernel_json = program
                    .get_kernel(st.kernel)
                    .map_or_else(|| json_string(""), |k| json_string(&k.name));
                StatementNames {
                    text_head,
                    text_vars: var_names(&st.vars, ", ", |v| format!("{v}=")),
                    json_head: format!(
                        "{{\"kernel\":{kernel_json},\"line\":{},\"column\":{},\"vars\":{{",
                        st.line, st.column
                    ),
                    json_vars: var_names(&st.vars, ",", |v| format!("{}:", json_string(v))),
                }
            })
            .collect();
        let matrices = program
            .matrices
            .iter()
            .map(|m| {
                let quoted = json_string(&m.name);
                let inner = quoted
                    .get(1..quoted.len().saturating_sub(1))
                    .unwrap_or("")
                    .to_string();
                (m.name.clone(), inner)
            })
            .collect();
        Names {
            statements,
            matrices,
        }
    }

    /// Appends `kernel@LINE(i=0, j=1)` (as [`Program::task_name`] writes it).
    pub fn write_task_text(&self, out: &mut Vec<u8>, stmt: StmtId, vars: &[i64]) {
        match self.statements.get(stmt.index()) {
            Some(s) => write_vars(out, &s.text_head, &s.text_vars, vars, b')'),
            None => out.extend_from_slice(b"?@?"),
        }
    }

    /// Appends the JSON object of a task without its closing brace:
    /// `{"kernel":..,"line":..,"column":..,"vars":{..}`.
    fn write_task_json_open(&self, out: &mut Vec<u8>, stmt: StmtId, vars: &[i64]) {
        match self.statements.get(stmt.index()) {
            Some(s) => write_vars(out, &s.json_head, &s.json_vars, vars, b'}'),
            None => out.extend_from_slice(b"{\"kernel\":\"\",\"line\":0,\"column\":0,\"vars\":{}"),
        }
    }

    /// Appends `M[1, 2]`, the matrix name escaped for JSON when `json`.
    fn write_tile(&self, out: &mut Vec<u8>, matrix: MatrixId, index: &[i64], json: bool) {
        let name = self
            .matrices
            .get(matrix.index())
            .map_or("?", |(text, escaped)| if json { escaped } else { text });
        out.extend_from_slice(name.as_bytes());
        out.push(b'[');
        for (i, &v) in index.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b", ");
            }
            push_int(out, v);
        }
        out.push(b']');
    }
}

/// One (task, tile) edge of a children or parents answer; the tile's
/// indices live in [`Answerer::tiles`].
#[derive(Clone, Debug)]
struct Edge {
    task: Task,
    matrix: MatrixId,
    start: usize,
    len: usize,
}

/// Where an answer goes: the command line it answers, in which format,
/// into which buffer.
struct Reply<'a> {
    cmd: &'a str,
    format: AnswerFormat,
    out: &'a mut Vec<u8>,
}

/// Answers queries on one instance into byte buffers, within a limit on
/// the tasks of one answer. Its buffers are reused from one query to the
/// next.
pub struct Answerer<'i, 'p> {
    engine: Engine<'i, 'p>,
    names: Names,
    limit_max: u64,
    limit_flag: String,
    edges: Vec<Edge>,
    tiles: Vec<i64>,
    found: Vec<Task>,
}

/// Sorts edges in sequential order of their tasks, then by tile, and
/// drops repeated (task, tile) pairs.
fn sort_edges(p: &Program, edges: &mut Vec<Edge>, tiles: &[i64]) {
    let tile = |e: &Edge| tiles.get(e.start..e.start + e.len).unwrap_or(&[]);
    edges.sort_by(|a, b| {
        p.sequential_cmp(&a.task, &b.task)
            .then_with(|| a.matrix.cmp(&b.matrix))
            .then_with(|| tile(a).cmp(tile(b)))
    });
    edges.dedup_by(|b, a| a.task == b.task && a.matrix == b.matrix && tile(a) == tile(b));
}

/// Distinct tasks of sorted edges.
fn distinct_tasks(edges: &[Edge]) -> u64 {
    let mut n = 0;
    for (i, e) in edges.iter().enumerate() {
        if i == 0 || edges[i - 1].task != e.task {
            n += 1;
        }
    }
    n
}

impl<'i, 'p> Answerer<'i, 'p> {
    /// An answerer over `inst` allowing at most `max_tasks` tasks per
    /// answer; `flag` names how to raise it (e.g. `--max-tasks`).
    pub fn new(inst: &'i Instance<'p>, max_tasks: u64, flag: &str) -> Self {
        Answerer {
            engine: Engine::new(inst),
            names: Names::new(inst.program),
            limit_max: max_tasks,
            limit_flag: flag.to_string(),
            edges: Vec::new(),
            tiles: Vec::new(),
            found: Vec::new(),
        }
    }

    /// The plan engine.
    pub fn engine(&mut self) -> &mut Engine<'i, 'p> {
        &mut self.engine
    }

    /// The prepared names.
    pub fn names(&self) -> &Names {
        &self.names
    }

    fn limit(&self) -> TaskLimit<'_> {
        TaskLimit {
            max: self.limit_max,
            flag: &self.limit_flag,
        }
    }

    fn over(&self, what: &str) -> CommandError {
        CommandError::Limit(LimitError::TooMany {
            what: what.to_string(),
            size: Size::Over(self.limit_max),
            max: self.limit_max,
            flag: self.limit_flag.clone(),
            advice: None,
        })
    }

    /// Answers `q` (the command line `cmd`) into `out`, appending the text
    /// lines or the one JSON line. On an error `out` is left as it was.
    /// Returns the number of tasks in the answer.
    pub fn answer(
        &mut self,
        q: &Query,
        cmd: &str,
        format: AnswerFormat,
        out: &mut Vec<u8>,
    ) -> Result<u64, CommandError> {
        let mark = out.len();
        let result = self.answer_inner(q, Reply { cmd, format, out });
        if result.is_err() {
            out.truncate(mark);
        }
        result
    }

    fn answer_inner(&mut self, q: &Query, reply: Reply<'_>) -> Result<u64, CommandError> {
        let Reply { cmd, format, out } = reply;
        let json = format == AnswerFormat::Json;
        if let Query::Tasks(line) = q {
            return self.tasks(*line, Reply { cmd, format, out });
        }
        let with_tiles = matches!(q, Query::Children(_) | Query::Parents(_));
        match q {
            Query::Children(t) => self.edges_of(t, true)?,
            Query::Parents(t) => self.edges_of(t, false)?,
            Query::Writer(tile) => self.touching(tile, true)?,
            Query::Readers(tile) => self.touching(tile, false)?,
            Query::Tasks(_) => {}
        }
        if json {
            out.extend_from_slice(b"{\"cmd\":");
            let _ = serde_json::to_writer(&mut *out, cmd);
            out.extend_from_slice(b",\"tasks\":[");
        }
        let mut n = 0u64;
        if with_tiles {
            let mut i = 0;
            while let Some(first) = self.edges.get(i) {
                let mut j = i;
                while self.edges.get(j).is_some_and(|e| e.task == first.task) {
                    j += 1;
                }
                let group = self.edges.get(i..j).unwrap_or(&[]);
                self.write_task(out, &first.task, group, n, json);
                n += 1;
                i = j;
            }
        } else {
            for (k, t) in self.found.iter().enumerate() {
                self.write_task(out, t, &[], k as u64, json);
            }
            n = self.found.len() as u64;
        }
        if json {
            out.extend_from_slice(b"]}\n");
        } else if n == 0 {
            out.extend_from_slice(b"(none)\n");
        }
        Ok(n)
    }

    /// Writes one task of an answer (the `k`-th), with its linking tiles.
    fn write_task(&self, out: &mut Vec<u8>, t: &Task, tiles: &[Edge], k: u64, json: bool) {
        if json {
            if k > 0 {
                out.push(b',');
            }
            self.names.write_task_json_open(out, t.stmt, &t.vars);
            if !tiles.is_empty() {
                out.extend_from_slice(b",\"tiles\":[");
                self.write_tiles(out, tiles, json);
                out.push(b']');
            }
            out.push(b'}');
        } else {
            self.names.write_task_text(out, t.stmt, &t.vars);
            if !tiles.is_empty() {
                out.extend_from_slice(b"  via ");
                self.write_tiles(out, tiles, json);
            }
            out.push(b'\n');
        }
    }

    /// Writes the tiles of `edges`: JSON strings separated by `,`, or text
    /// separated by `, `.
    fn write_tiles(&self, out: &mut Vec<u8>, edges: &[Edge], json: bool) {
        let (sep, quote): (&[u8], &[u8]) = if json { (b",", b"\"") } else { (b", ", b"") };
        for (i, e) in edges.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(sep);
            }
            let tile = self.tiles.get(e.start..e.start + e.len).unwrap_or(&[]);
            out.extend_from_slice(quote);
            self.names.write_tile(out, e.matrix, tile, json);
            out.extend_from_slice(quote);
        }
    }

    /// Collects the (child or parent, tile) edges of `task` into
    /// `self.edges`, sorted; refuses an answer of more tasks than the
    /// limit as soon as that is certain.
    fn edges_of(&mut self, task: &Task, children: bool) -> Result<(), CommandError> {
        self.engine.check_task(task)?;
        let p = self.engine.instance().program;
        let max = self.limit_max;
        self.edges.clear();
        self.tiles.clear();
        let (edges, tiles) = (&mut self.edges, &mut self.tiles);
        // Sorting and deduplicating once past the limit, then every half
        // limit, keeps at most about 1.5 times the limit in memory.
        let mut check_at = max.saturating_add(1);
        let mut over = false;
        let mut push = |stmt: StmtId, vars: &[i64], matrix: MatrixId, tile: &[i64]| {
            edges.push(Edge {
                task: Task {
                    stmt,
                    vars: vars.into(),
                },
                matrix,
                start: tiles.len(),
                len: tile.len(),
            });
            tiles.extend_from_slice(tile);
            if edges.len() as u64 >= check_at {
                sort_edges(p, edges, tiles);
                if distinct_tasks(edges) > max {
                    over = true;
                    return false;
                }
                check_at = (edges.len() as u64).saturating_add(max / 2 + 1);
            }
            true
        };
        if children {
            self.engine.try_for_each_child(task, &mut push)?;
        } else {
            self.engine.for_each_parent(task, &mut push)?;
        }
        if over {
            return Err(self.over("the answer"));
        }
        sort_edges(p, &mut self.edges, &self.tiles);
        if distinct_tasks(&self.edges) > max {
            return Err(self.over("the answer"));
        }
        Ok(())
    }

    /// Collects the tasks that write (`write`) or read `tile` into
    /// `self.found`, in sequential order without repeats, within the limit.
    fn touching(&mut self, tile: &TileRef, write: bool) -> Result<(), CommandError> {
        let p = self.engine.instance().program;
        let max = self.limit_max;
        let found = &mut self.found;
        found.clear();
        let mut check_at = max.saturating_add(1);
        let mut over = false;
        let dedup = |found: &mut Vec<Task>| {
            found.sort_by(|a, b| p.sequential_cmp(a, b));
            found.dedup();
        };
        self.engine
            .for_each_touching(tile, write, &mut |stmt, vars| {
                found.push(Task {
                    stmt,
                    vars: vars.into(),
                });
                if found.len() as u64 >= check_at {
                    dedup(found);
                    if found.len() as u64 > max {
                        over = true;
                        return false;
                    }
                    check_at = (found.len() as u64).saturating_add(max / 2 + 1);
                }
                true
            })?;
        dedup(&mut self.found);
        if over || self.found.len() as u64 > max {
            return Err(self.over("the answer"));
        }
        Ok(())
    }

    /// The tasks that write (`write`) or read `tile`, in sequential order,
    /// refused above the limit (for the REPL's `show`).
    pub fn tasks_touching(&mut self, tile: &TileRef, write: bool) -> Result<&[Task], CommandError> {
        self.touching(tile, write)?;
        Ok(&self.found)
    }

    /// `tasks [LINE]`: counts first (refusing above the limit before the
    /// walk), then writes the tasks as the walk meets them.
    fn tasks(&mut self, line: Option<u32>, reply: Reply<'_>) -> Result<u64, CommandError> {
        let Reply { cmd, format, out } = reply;
        let inst = self.engine.instance();
        let p = inst.program;
        let stmts: Option<Vec<StmtId>> = match line {
            Some(l) => Some(statements_on_line(p, l)?),
            None => None,
        };
        // One statement: count and walk only the loops around it.
        let only = match stmts.as_deref() {
            Some([one]) => Some(*one),
            _ => None,
        };
        let limit = self.limit();
        let counts = inst
            .count_tasks_of(only, COUNT_BUDGET)
            .map_err(|e| limit.uncounted(inst, e))?;
        let count = match &stmts {
            None => counts.total(),
            Some(list) => list
                .iter()
                .map(|&s| counts.per_statement.get(s.index()).copied().unwrap_or(0))
                .fold(0u64, u64::saturating_add),
        };
        if count > limit.max {
            let what = match line {
                None => format!("the instance {}", instance_name(inst)),
                Some(l) => format!("line {l} of the instance {}", instance_name(inst)),
            };
            return Err(CommandError::Limit(LimitError::TooMany {
                what,
                size: Size::Exact(count),
                max: limit.max,
                flag: limit.flag.to_string(),
                advice: None,
            }));
        }
        let json = format == AnswerFormat::Json;
        if json {
            out.extend_from_slice(b"{\"cmd\":");
            let _ = serde_json::to_writer(&mut *out, cmd);
            out.extend_from_slice(b",\"tasks\":[");
        }
        let names = &self.names;
        let mut n = 0u64;
        let mut visit = |t: &Task| {
            let on = stmts.as_ref().is_none_or(|list| list.contains(&t.stmt));
            if on {
                // The walk runs the loops the count ran; never write more
                // than was counted.
                if n >= count {
                    return ControlFlow::Break(());
                }
                if json {
                    if n > 0 {
                        out.push(b',');
                    }
                    names.write_task_json_open(out, t.stmt, &t.vars);
                    out.push(b'}');
                } else {
                    names.write_task_text(out, t.stmt, &t.vars);
                    out.push(b'\n');
                }
                n += 1;
            }
            ControlFlow::Continue(())
        };
        inst.for_each_task_of(only, &mut visit)?;
        if json {
            out.extend_from_slice(b"]}\n");
        } else if n == 0 {
            out.extend_from_slice(b"(none)\n");
        }
        Ok(n)
    }
}

/// The JSON of one task (defined in the model, shared with the runtimes).
pub use lpk_model::task::task_json;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::example_program;

    /// The answer line as the JSON tree of docs/cli.md would print it.
    fn reference(p: &Program, cmd: &str, pairs: &[(Task, Vec<TileRef>)]) -> String {
        let tasks: Vec<serde_json::Value> = pairs
            .iter()
            .map(|(t, tiles)| {
                let mut v = task_json(p, t);
                if !tiles.is_empty() {
                    v["tiles"] = tiles.iter().map(|tl| p.tile_name(tl)).collect();
                }
                v
            })
            .collect();
        format!("{}\n", serde_json::json!({ "cmd": cmd, "tasks": tasks }))
    }

    fn grouped(pairs: Vec<(Task, TileRef)>) -> Vec<(Task, Vec<TileRef>)> {
        let mut out: Vec<(Task, Vec<TileRef>)> = Vec::new();
        for (t, tile) in pairs {
            match out.last_mut() {
                Some((last, tiles)) if *last == t => tiles.push(tile),
                _ => out.push((t, vec![tile])),
            }
        }
        out
    }

    #[test]
    fn written_answers_are_the_json_of_the_engine_answers() {
        for (example, params) in [
            ("cholesky", vec![("N", 5)]),
            ("caqr", vec![("M", 5), ("N", 3)]),
            ("tsqr", vec![("N", 9)]),
            ("trsolve", vec![("N", 3), ("R", 2)]),
        ] {
            let p = example_program(example);
            let given: Vec<(String, i64)> =
                params.iter().map(|(n, v)| (n.to_string(), *v)).collect();
            let inst = p.bind(&given).expect("binds");
            let mut answerer = Answerer::new(&inst, DEFAULT_MAX_TASKS, "--max-tasks");
            let mut engine = Engine::new(&inst);
            for t in inst.tasks().expect("walks") {
                for children in [true, false] {
                    let name = p.task_name(&t).to_string();
                    let cmd = format!("{} {name}", if children { "children" } else { "parents" });
                    let q = parse_command(&p, &cmd).expect("parses");
                    let mut out = Vec::new();
                    answerer
                        .answer(&q, &cmd, AnswerFormat::Json, &mut out)
                        .expect("answers");
                    let pairs = if children {
                        engine.children(&t)
                    } else {
                        engine.parents(&t)
                    }
                    .expect("engine answers");
                    assert_eq!(
                        String::from_utf8(out).expect("UTF-8"),
                        reference(&p, &cmd, &grouped(pairs)),
                        "{example} {cmd}"
                    );
                }
            }
        }
    }

    #[test]
    fn an_answer_over_the_limit_is_refused_and_leaves_the_buffer_alone() {
        let p = example_program("cholesky");
        let inst = p.bind(&[("N".to_string(), 50)]).expect("binds");
        let mut answerer = Answerer::new(&inst, 10, "--max-tasks");
        let mut out = b"kept\n".to_vec();
        for cmd in [
            "children chol@37(k=0)",
            "readers L[0, 0]",
            "tasks",
            "tasks 44",
        ] {
            let q = parse_command(&p, cmd).expect("parses");
            let e = answerer
                .answer(&q, cmd, AnswerFormat::Text, &mut out)
                .expect_err("over the limit");
            assert!(
                e.to_string().contains("more than --max-tasks 10"),
                "{cmd}: {e}"
            );
            assert_eq!(out, b"kept\n");
        }
        let q = parse_command(&p, "tasks 37").expect("parses");
        answerer
            .answer(&q, "tasks 37", AnswerFormat::Text, &mut out)
            .expect("one task");
        assert_eq!(out, b"kept\nchol@37(k=0)\n");
    }
}
