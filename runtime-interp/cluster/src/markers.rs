//! Done markers: what a worker records in a run's store after a task's
//! outputs and before its completion, so that `lpkc resume` can rebuild
//! the run from the store alone.
//!
//! - In an object store (S3), a marker is one object per task,
//!   `done/STMT=V1,V2`, holding a line of JSON (task, worker, time).
//! - In a local directory store (`file://`), a worker process appends the
//!   same lines to a log of its own, `done/WORKER-PID-NONCE.log`, one
//!   `write` per task (`O_APPEND`): a file created per task costs a new
//!   inode each, which on some file systems is the dearest part of a
//!   small task. A crash can only leave a last line without its newline,
//!   which is ignored (that task runs again and writes the same bits).
//!
//! Both are read by [`read_done`]; both say the same thing, so a store
//! may hold both (say, a run resumed on another machine).

use crate::ids::{parse_task, task_id};
use lpk_model::task::{Task, Vars};
use lpk_model::StmtId;
use lpk_runtime::store::{BlobStore, ObjectStoreTiles, StoreError};
use std::collections::HashSet;
use std::fs::File;
use std::io::Write;
use std::sync::Mutex;

/// The key of a task's done marker object: `done/STMT=V1,V2`.
pub fn marker_key(task: &Task) -> String {
    let vars: Vec<String> = task.vars.iter().map(i64::to_string).collect();
    format!("done/{}={}", task.stmt, vars.join(","))
}

/// Reads a task back from a marker object's key (`done/STMT=V1,V2`).
pub fn parse_marker(key: &str) -> Option<Task> {
    let rest = key.rsplit('/').next()?;
    let (stmt, vars) = rest.split_once('=')?;
    let stmt = StmtId::from_index(stmt.parse().ok()?).ok()?;
    let vars: Vec<i64> = if vars.is_empty() {
        Vec::new()
    } else {
        vars.split(',')
            .map(|v| v.parse().ok())
            .collect::<Option<_>>()?
    };
    Some(Task {
        stmt,
        vars: Vars::from(&vars[..]),
    })
}

/// The line a marker holds: `{"task":"STMT:V1,V2","worker":"W","ms":T}`
/// (the task as Redis names it).
pub fn marker_line(task: &Task, worker: &str, ms: u64) -> String {
    let line = serde_json::json!({"task": task_id(task), "worker": worker, "ms": ms});
    format!("{line}\n")
}

/// The done markers of one worker process in one run.
pub(crate) struct DoneLog {
    /// `done/NAME.log`, unique to this process.
    key: String,
    /// The open log (a local store only), and whether a write failed part
    /// way (the next line then starts on a line of its own).
    file: Mutex<Option<(File, bool)>>,
}

impl DoneLog {
    /// The log of the worker called `worker` (this process) in a run.
    pub fn new(worker: &str) -> DoneLog {
        let safe: String = worker
            .chars()
            .take(64)
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        // Unique among workers that share a store: the name says which
        // machine (by default), the process id and its start which
        // process. The same in every run this process loads again (after a
        // resume), so it keeps one log per run.
        static NONCE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        let nonce = NONCE.get_or_init(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        DoneLog {
            key: format!("done/{safe}-{}-{nonce:x}.log", std::process::id()),
            file: Mutex::new(None),
        }
    }

    /// Records `task` as done in `store`: a line of this process's log in
    /// a local directory, else an object of its own.
    pub fn record(
        &self,
        store: &ObjectStoreTiles,
        task: &Task,
        line: &str,
    ) -> Result<(), StoreError> {
        let Some(path) = store.local_path(&self.key)? else {
            return store.put_bytes(&marker_key(task), line.as_bytes().to_vec());
        };
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        let mut open = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if open.is_none() {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(io)?;
            }
            let f = File::options()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(io)?;
            // A log this process wrote before (the run was loaded again)
            // may end in a line cut short: start on a line of our own.
            let used = f.metadata().map_err(io)?.len() > 0;
            *open = Some((f, used));
        }
        let Some((file, torn)) = open.as_mut() else {
            return Ok(());
        };
        // One write of the whole line (after a newline if the last write
        // broke off, so that its piece stays a line of its own).
        let text = if *torn {
            format!("\n{line}")
        } else {
            line.to_string()
        };
        *torn = true;
        file.write_all(text.as_bytes()).map_err(io)?;
        *torn = false;
        Ok(())
    }
}

/// The tasks a run's store holds done markers for, and what was under
/// `done/` that is not one (for a message).
#[derive(Debug, Default)]
pub(crate) struct DoneFound {
    /// The tasks found done.
    pub done: HashSet<Task>,
    /// Objects and log lines that name no task of the run (at most a few,
    /// for a message), and how many there were.
    pub skipped: Vec<String>,
    /// How many were skipped.
    pub skipped_count: usize,
}

/// The largest log read, in bytes per task of the run (a line is about 80
/// bytes; a task runs more than once only when a lease expires).
const LOG_BYTES_PER_TASK: u64 = 1024;

/// Reads every done marker of a run's store: marker objects and the lines
/// of the workers' logs. `is_task` says whether a task belongs to the run;
/// `tasks` (the run's task count) bounds the size of a log read.
pub(crate) fn read_done(
    store: &ObjectStoreTiles,
    tasks: u64,
    is_task: &mut dyn FnMut(&Task) -> bool,
) -> Result<DoneFound, StoreError> {
    let mut found = DoneFound::default();
    let skip = |found: &mut DoneFound, what: String| {
        found.skipped_count += 1;
        if found.skipped.len() < 3 {
            found.skipped.push(what);
        }
    };
    let limit = tasks.saturating_mul(LOG_BYTES_PER_TASK).max(1 << 20);
    for (key, size) in store.list_sized("done")? {
        if !key.ends_with(".log") {
            // Anything else under done/ (a write a crash left half-way, a
            // file someone put there) is reported, not taken for a task.
            match parse_marker(&key).filter(|t| is_task(t)) {
                Some(t) => {
                    found.done.insert(t);
                }
                None => skip(&mut found, key),
            }
            continue;
        }
        if size > limit {
            skip(
                &mut found,
                format!("{key} ({size} bytes, more than a log of this run can hold)"),
            );
            continue;
        }
        let Some(bytes) = store.get_bytes(&key, limit)? else {
            continue;
        };
        let (whole, torn) = match bytes.iter().rposition(|&b| b == b'\n') {
            Some(end) => (&bytes[..=end], end + 1 < bytes.len()),
            None => (&bytes[..0], !bytes.is_empty()),
        };
        if torn {
            // The last write of a process that died: its task runs again.
            skip(&mut found, format!("{key}: its last line, cut short"));
        }
        for (n, line) in whole.split(|&b| b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let task = serde_json::from_slice::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v["task"].as_str().and_then(|t| parse_task(t).ok()))
                .filter(|t| is_task(t));
            match task {
                Some(t) => {
                    found.done.insert(t);
                }
                None => skip(&mut found, format!("{key}: line {}", n + 1)),
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(stmt: u32, vars: &[i64]) -> Task {
        Task {
            stmt: StmtId::from_index(stmt as usize).expect("a small index"),
            vars: Vars::from(vars),
        }
    }

    #[test]
    fn markers_round_trip() {
        for vars in [vec![], vec![0], vec![3, -1, 12]] {
            let t = task(4, &vars);
            assert_eq!(parse_marker(&marker_key(&t)), Some(t.clone()));
            let line = marker_line(&t, "w\"0", 12);
            let v: serde_json::Value = serde_json::from_str(&line).expect("JSON");
            assert_eq!(parse_task(v["task"].as_str().expect("task")).ok(), Some(t));
        }
        for bad in ["done/x=1", "done/1", "done/1=a", "done/1=1,,2"] {
            assert_eq!(parse_marker(bad), None, "{bad}");
        }
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!(
            "lpk-markers-{name}-{}-{:x}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&p).expect("scratch");
        p
    }

    /// Logs in a directory store: lines of two processes, one cut short,
    /// one of garbage, one of a task not in the run, and marker objects
    /// beside them; every marker found, nothing else taken.
    #[test]
    fn logs_and_objects_are_read_back_and_broken_lines_are_skipped() {
        let dir = scratch("logs");
        let url = url::Url::from_file_path(&dir).expect("url").to_string();
        let store = ObjectStoreTiles::open(&url).expect("store");
        let (a, b) = (DoneLog::new("host-1"), DoneLog::new("w/2 x"));
        assert_ne!(a.key, b.key);
        // A run loaded again by the same process appends to the same log.
        let again = DoneLog::new("host-1");
        assert_eq!(again.key, a.key);
        again
            .record(&store, &task(1, &[6]), &marker_line(&task(1, &[6]), "a", 2))
            .expect("record");
        for k in 0..5 {
            a.record(&store, &task(1, &[k]), &marker_line(&task(1, &[k]), "a", 1))
                .expect("record");
        }
        b.record(
            &store,
            &task(2, &[7, 8]),
            &marker_line(&task(2, &[7, 8]), "b", 1),
        )
        .expect("record");
        // A marker object as an object store holds it.
        store
            .put_bytes(&marker_key(&task(3, &[])), b"{}".to_vec())
            .expect("put");
        // One log per process, with one line per task.
        let logs: Vec<String> = store
            .list("done")
            .expect("list")
            .into_iter()
            .filter(|k| k.ends_with(".log"))
            .collect();
        assert_eq!(logs.len(), 2, "{logs:?}");
        let mut is_task = |t: &Task| t.stmt.index() <= 3;
        let found = read_done(&store, 100, &mut is_task).expect("read");
        assert_eq!(found.done.len(), 8, "{found:?}");
        assert_eq!(found.skipped_count, 0, "{found:?}");
        // Damage a's log: garbage, a task of another run, a line cut short.
        let path = store.local_path(&a.key).expect("path").expect("local");
        let mut text = std::fs::read_to_string(&path).expect("log");
        text.push_str("not json\n");
        text.push_str(&marker_line(&task(9, &[1]), "a", 1));
        text.push_str("{\"task\":\"1:5\"");
        std::fs::write(&path, text).expect("write");
        let found = read_done(&store, 100, &mut is_task).expect("read");
        assert_eq!(found.done.len(), 8, "{found:?}");
        assert!(!found.done.contains(&task(1, &[5])));
        assert_eq!(found.skipped_count, 3, "{found:?}");
        assert!(
            found.skipped.iter().any(|s| s.contains("cut short")),
            "{found:?}"
        );
        // A log too big for the run is refused, not read.
        let found = read_done(&store, 0, &mut is_task).expect("read");
        assert!(found.done.contains(&task(3, &[])));
        std::fs::write(&path, vec![b'x'; (1 << 20) + 1]).expect("write");
        let found = read_done(&store, 1, &mut is_task).expect("read");
        assert!(
            found.skipped.iter().any(|s| s.contains("more than a log")),
            "{found:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
