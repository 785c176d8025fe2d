//! How tasks and tiles are named in Redis: short, exact, and checked when
//! read back (Redis may hold what another version, or a person, wrote).
//!
//! - a task is `STMT:V1,V2,...` — the statement's index in the artifact and
//!   its loop variables, outermost first (`3:0,2`; a statement outside any
//!   loop is `3:`);
//! - a tile is `MATRIX:I,J` — the matrix's index and the tile's indices
//!   (`1:2,0`).

use lpk_model::task::{Task, TileRef, Vars};
use lpk_model::{MatrixId, StmtId};
use std::fmt::Write as _;

/// Why a stored task or tile name cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a task or tile id of this version of lpk (expected `INDEX:I,J,...`)")]
pub struct BadId {
    /// What was found (cut to 80 characters).
    pub text: String,
}

fn bad(text: &str) -> BadId {
    BadId {
        text: text.chars().take(80).collect(),
    }
}

fn push_list(out: &mut String, values: &[i64]) {
    for (k, v) in values.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        let _ = write!(out, "{v}");
    }
}

/// The id of a task.
pub fn task_id(task: &Task) -> String {
    let mut s = String::with_capacity(4 + 4 * task.vars.len());
    let _ = write!(s, "{}:", task.stmt);
    push_list(&mut s, &task.vars);
    s
}

/// The id of a tile.
pub fn tile_id(matrix: MatrixId, index: &[i64]) -> String {
    let mut s = String::with_capacity(4 + 4 * index.len());
    let _ = write!(s, "{matrix}:");
    push_list(&mut s, index);
    s
}

/// Splits `N:a,b,...` into `N` and the list (at most 64 values).
fn split(text: &str) -> Result<(u32, Vec<i64>), BadId> {
    let (head, tail) = text.split_once(':').ok_or_else(|| bad(text))?;
    let n: u32 = head.parse().map_err(|_| bad(text))?;
    if tail.is_empty() {
        return Ok((n, Vec::new()));
    }
    let mut values = Vec::new();
    for part in tail.split(',') {
        if values.len() >= 64 {
            return Err(bad(text));
        }
        values.push(part.parse::<i64>().map_err(|_| bad(text))?);
    }
    Ok((n, values))
}

/// Reads a task id back (the caller checks the task against the instance).
pub fn parse_task(text: &str) -> Result<Task, BadId> {
    let (stmt, vars) = split(text)?;
    Ok(Task {
        stmt: StmtId::from_index(stmt as usize).map_err(|_| bad(text))?,
        vars: Vars::from(&vars[..]),
    })
}

/// Reads a tile id back.
pub fn parse_tile(text: &str) -> Result<TileRef, BadId> {
    let (matrix, index) = split(text)?;
    Ok(TileRef {
        matrix: MatrixId::from_index(matrix as usize).map_err(|_| bad(text))?,
        index,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        let t = Task {
            stmt: StmtId::from_index(7).expect("a small index"),
            vars: Vars::from(&[0, -3, 12][..]),
        };
        assert_eq!(task_id(&t), "7:0,-3,12");
        assert_eq!(parse_task(&task_id(&t)), Ok(t));
        let empty = Task {
            stmt: StmtId::from_index(2).expect("a small index"),
            vars: Vars::from(&[][..]),
        };
        assert_eq!(task_id(&empty), "2:");
        assert_eq!(parse_task("2:"), Ok(empty));
        assert_eq!(
            tile_id(MatrixId::from_index(1).expect("a small index"), &[2, 0]),
            "1:2,0"
        );
        let tile = parse_tile("1:2,0").expect("a tile id");
        assert_eq!(
            (tile.matrix, tile.index),
            (MatrixId::from_index(1).expect("a small index"), vec![2, 0])
        );
    }

    #[test]
    fn bad_ids_are_errors() {
        for text in [
            "",
            "x",
            "1",
            "a:1",
            "1:1,,2",
            "1:1.5",
            "-1:0",
            "99999999999:0",
        ] {
            assert!(parse_task(text).is_err(), "{text}");
        }
        let long = format!("1:{}", vec!["0"; 65].join(","));
        assert!(parse_task(&long).is_err());
    }
}
