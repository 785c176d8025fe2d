//! The dependency query language of `lpkc query` and `lpkc repl`
//! (spec/cli.md): parsing `children TASK`, `parents TASK`, `writer TILE`,
//! `readers TILE` and `tasks [LINE]`, answering them through the plan
//! engine, and rendering answers as text or one line of JSON.

use model::program::Program;
use model::query::{Engine, QueryError};
use model::task::{Task, Tile};
use std::ops::ControlFlow;

/// A parsed query command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Query {
    /// `children TASK`
    Children(Task),
    /// `parents TASK`
    Parents(Task),
    /// `writer TILE`
    Writer(Tile),
    /// `readers TILE`
    Readers(Tile),
    /// `tasks [LINE]`
    Tasks(Option<u32>),
}

/// An answer: tasks, each with the tile that links it (for children and
/// parents).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The tasks, in sequential order.
    pub tasks: Vec<(Task, Vec<Tile>)>,
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
    Walk(#[from] model::task::WalkError),
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

fn statements_on_line(program: &Program, line: u32) -> Result<Vec<u32>, CommandError> {
    let stmts: Vec<u32> = program
        .statements
        .iter()
        .enumerate()
        .filter(|(_, s)| s.line == line)
        .map(|(i, _)| i as u32)
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
    let mut stmts = statements_on_line(program, line)?;
    if let Some(c) = col {
        stmts.retain(|&s| program.statements[s as usize].column == c);
        if stmts.is_empty() {
            return Err(syntax(format!(
                "no kernel call starts at line {line}, column {c}"
            )));
        }
    }
    if !kernel.is_empty() {
        stmts.retain(|&s| {
            program
                .kernels
                .get(program.statements[s as usize].kernel as usize)
                .is_some_and(|k| k.name == kernel)
        });
        if stmts.is_empty() {
            return Err(syntax(format!(
                "the kernel call on line {line} is not `{kernel}`"
            )));
        }
    }
    let stmt = match stmts.as_slice() {
        [one] => *one,
        _ => {
            let cols: Vec<String> = stmts
                .iter()
                .map(|&s| format!("@{line}:{}", program.statements[s as usize].column))
                .collect();
            return Err(syntax(format!(
                "line {line} has several kernel calls; name one by column: {}",
                cols.join(", ")
            )));
        }
    };
    let st = &program.statements[stmt as usize];
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
    Ok(Task {
        stmt,
        vars: vals
            .into_iter()
            .map(|v| v.unwrap_or(0))
            .collect::<Vec<i64>>()
            .into(),
    })
}

/// Parses `M[INT, ...]`.
pub fn parse_tile(program: &Program, text: &str) -> Result<Tile, CommandError> {
    let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let open = text
        .find('[')
        .ok_or_else(|| syntax(format!("expected a tile like `M[0, 1]`, found `{text}`")))?;
    let name = &text[..open];
    let inner = text[open + 1..]
        .strip_suffix(']')
        .ok_or_else(|| syntax(format!("missing `]` in `{text}`")))?;
    let matrix = program
        .matrices
        .iter()
        .position(|m| m.name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = program.matrices.iter().map(|m| m.name.as_str()).collect();
            syntax(format!(
                "no matrix `{name}` (matrices: {})",
                names.join(", ")
            ))
        })?;
    let index: Result<Vec<i64>, _> = inner.split(',').map(|s| s.parse::<i64>()).collect();
    let index =
        index.map_err(|_| syntax(format!("tile indices must be integers, found `{inner}`")))?;
    let rank = program.matrices[matrix].extents.len();
    if index.len() != rank {
        return Err(syntax(format!(
            "`{name}` has {rank} dimension(s), but {} indices are given",
            index.len()
        )));
    }
    Ok(Tile {
        matrix: matrix as u32,
        index,
    })
}

/// Answers a query.
pub fn answer(engine: &mut Engine<'_, '_>, q: &Query) -> Result<Answer, CommandError> {
    let group = |pairs: Vec<(Task, Tile)>| {
        let mut out: Vec<(Task, Vec<Tile>)> = Vec::new();
        for (t, tile) in pairs {
            match out.last_mut() {
                Some((last, tiles)) if *last == t => tiles.push(tile),
                _ => out.push((t, vec![tile])),
            }
        }
        out
    };
    let tasks = match q {
        Query::Children(t) => group(engine.children(t)?),
        Query::Parents(t) => group(engine.parents(t)?),
        Query::Writer(tile) => engine
            .writer(tile)?
            .into_iter()
            .map(|t| (t, Vec::new()))
            .collect(),
        Query::Readers(tile) => engine
            .readers(tile)?
            .into_iter()
            .map(|t| (t, Vec::new()))
            .collect(),
        Query::Tasks(line) => {
            let inst = engine.instance();
            let mut out = Vec::new();
            inst.for_each_task(&mut |t| {
                let on_line = line.is_none_or(|l| {
                    inst.program
                        .statements
                        .get(t.stmt as usize)
                        .is_some_and(|s| s.line == l)
                });
                if on_line {
                    out.push((t.clone(), Vec::new()));
                }
                ControlFlow::Continue(())
            })?;
            out
        }
    };
    Ok(Answer { tasks })
}

/// The JSON of one task: `{"kernel", "line", "vars": {...}}`.
pub fn task_json(program: &Program, t: &Task) -> serde_json::Value {
    let st = program.statements.get(t.stmt as usize);
    let kernel = st
        .and_then(|s| program.kernels.get(s.kernel as usize))
        .map(|k| k.name.clone())
        .unwrap_or_default();
    let mut vars = serde_json::Map::new();
    if let Some(s) = st {
        for (n, v) in s.vars.iter().zip(t.vars.iter()) {
            vars.insert(n.clone(), serde_json::Value::from(*v));
        }
    }
    serde_json::json!({
        "kernel": kernel,
        "line": st.map(|s| s.line).unwrap_or(0),
        "column": st.map(|s| s.column).unwrap_or(0),
        "vars": vars,
    })
}

/// The JSON answer line of spec/cli.md.
pub fn answer_json(program: &Program, cmd: &str, answer: &Answer) -> serde_json::Value {
    let tasks: Vec<serde_json::Value> = answer
        .tasks
        .iter()
        .map(|(t, tiles)| {
            let mut v = task_json(program, t);
            if !tiles.is_empty() {
                v["tiles"] = tiles.iter().map(|tl| program.tile_name(tl)).collect();
            }
            v
        })
        .collect();
    serde_json::json!({ "cmd": cmd, "tasks": tasks })
}

/// The text answer: one task per line (with the linking tiles).
pub fn answer_text(program: &Program, answer: &Answer) -> String {
    let mut out = String::new();
    for (t, tiles) in &answer.tasks {
        out.push_str(&program.task_name(t).to_string());
        if !tiles.is_empty() {
            let names: Vec<String> = tiles.iter().map(|tl| program.tile_name(tl)).collect();
            out.push_str("  via ");
            out.push_str(&names.join(", "));
        }
        out.push('\n');
    }
    if answer.tasks.is_empty() {
        out.push_str("(none)\n");
    }
    out
}
