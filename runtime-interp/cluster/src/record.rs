//! The run record: what a worker needs to run any task of a run, kept in
//! the run's `meta` hash so that workers need only the Redis URL.

use crate::conn::Redis;
use crate::error::{check_run_id, ClusterError};
use crate::protocol::{Keys, PROTOCOL};
use lpk_model::program::{Instance, Program};
use std::collections::HashMap;

/// The state of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    /// Tasks are still to run.
    Running,
    /// Every task completed.
    Done,
    /// A task failed; the run stopped.
    Failed,
}

impl RunState {
    /// `running`, `done` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Done => "done",
            RunState::Failed => "failed",
        }
    }
}

/// Which kernels a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernels {
    /// The standard kernels (`docs/kernels.md`).
    Standard,
    /// Kernels that do nothing, to measure the scheduler and the queue:
    /// no tile is read or written.
    Noop,
}

impl Kernels {
    /// `standard` or `noop`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kernels::Standard => "standard",
            Kernels::Noop => "noop",
        }
    }
}

/// A run as recorded in Redis.
#[derive(Clone, Debug)]
pub struct RunRecord {
    /// The run id.
    pub id: String,
    /// The program's artifact (CBOR).
    pub artifact: Vec<u8>,
    /// The program's name.
    pub program: String,
    /// Every parameter's value, in declaration order.
    pub params: Vec<i64>,
    /// The block size.
    pub block: usize,
    /// The tile store's URL (the run's tiles live under `URL/RUN/`).
    pub store: String,
    /// The kernels.
    pub kernels: Kernels,
    /// Tasks in the instance.
    pub total: u64,
    /// Tasks completed.
    pub done: u64,
    /// The state.
    pub state: RunState,
    /// A lease may expire this many times on one task before the run
    /// fails naming it.
    pub max_expiries: u32,
    /// When it was submitted (ms since the Unix epoch).
    pub created_ms: u64,
    /// When it finished, if it did.
    pub finished_ms: Option<u64>,
    /// The failed task's id and the error, if it failed.
    pub error: Option<(String, String)>,
    /// Keep intermediate tiles (`--keep-intermediates`).
    pub keep: bool,
    /// Bytes of tile data in the store now (inputs uploaded, tiles written,
    /// dead tiles deleted).
    pub stored_bytes: i64,
    /// The most bytes of tile data the store held at once.
    pub peak_bytes: i64,
    /// The run's limits (`submit --max-tasks`, `--max-store-bytes`).
    pub limits: RunLimits,
    /// The shape (rows, columns) of every input matrix, by name, as
    /// submitted: a worker checks the shape rules of the kernels only it
    /// knows against them when it loads the run. Empty in a record
    /// without them (a resumed run): not checked then.
    pub input_shapes: InputShapes,
}

/// Input matrices' shapes (rows, columns), by matrix name.
pub type InputShapes = Vec<(String, (usize, usize))>;

/// Per-run limits a shared deployment sets at submission: refused at
/// `submit` when the plans' counts (or the inputs alone) exceed them,
/// and enforced while the run goes on (a worker refuses a run whose
/// record says more tasks; a completion that brings the store past its
/// bytes fails the run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunLimits {
    /// The most tasks.
    pub max_tasks: Option<u64>,
    /// The most bytes of tile data in the run's store at once.
    pub max_store_bytes: Option<u64>,
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl RunRecord {
    /// The fields written at submission (`state`, `done` included).
    pub fn fields(&self) -> Vec<(&'static str, Vec<u8>)> {
        let params: Vec<String> = self.params.iter().map(i64::to_string).collect();
        vec![
            ("id", self.id.clone().into_bytes()),
            ("protocol", PROTOCOL.to_string().into_bytes()),
            ("artifact", self.artifact.clone()),
            ("program", self.program.clone().into_bytes()),
            ("params", params.join(",").into_bytes()),
            ("block", self.block.to_string().into_bytes()),
            ("store", self.store.clone().into_bytes()),
            ("kernels", self.kernels.as_str().as_bytes().to_vec()),
            ("total", self.total.to_string().into_bytes()),
            ("done", self.done.to_string().into_bytes()),
            ("state", self.state.as_str().as_bytes().to_vec()),
            ("max_expiries", self.max_expiries.to_string().into_bytes()),
            // 0: no limit (the completion script reads this field).
            (
                "max_tasks",
                self.limits.max_tasks.unwrap_or(0).to_string().into_bytes(),
            ),
            (
                "max_store_bytes",
                self.limits
                    .max_store_bytes
                    .unwrap_or(0)
                    .to_string()
                    .into_bytes(),
            ),
            ("created_ms", self.created_ms.to_string().into_bytes()),
            (
                "keep",
                if self.keep {
                    b"1".to_vec()
                } else {
                    b"0".to_vec()
                },
            ),
            ("stored_bytes", self.stored_bytes.to_string().into_bytes()),
            ("peak_bytes", self.peak_bytes.to_string().into_bytes()),
            ("shapes", shapes_text(&self.input_shapes).into_bytes()),
        ]
    }

    /// Writes the record into the run's `meta` hash.
    pub fn write(&self, redis: &mut Redis) -> Result<(), ClusterError> {
        let mut hset = redis::cmd("HSET");
        hset.arg(Keys::new(&self.id).meta());
        for (field, value) in self.fields() {
            hset.arg(field).arg(value);
        }
        redis.query(&hset, "writing the run record")
    }

    /// Reads run `run`'s record.
    pub fn read(redis: &mut Redis, run: &str) -> Result<RunRecord, ClusterError> {
        check_run_id(run)?;
        let keys = Keys::new(run);
        let map: HashMap<String, Vec<u8>> = redis.query(
            redis::cmd("HGETALL").arg(keys.meta()),
            "reading the run record",
        )?;
        if map.is_empty() {
            return Err(ClusterError::NoRun {
                run: run.to_string(),
                url: redis.url().to_string(),
            });
        }
        Self::from_map(run, &map)
    }

    /// Reads a record from the hash's fields.
    pub fn from_map(run: &str, map: &HashMap<String, Vec<u8>>) -> Result<RunRecord, ClusterError> {
        let f = Fields { run, map };
        f.check_protocol()?;
        f.check_id()?;
        let params = f.params()?;
        let state = f.state()?;
        let kernels = f.kernels()?;
        let block = usize::try_from(f.number("block")?).unwrap_or(0);
        if block == 0 {
            return Err(f.bad("block", "must be at least 1".into()));
        }
        let error = match (map.get("error_task"), map.get("error")) {
            (Some(t), Some(e)) => Some((
                String::from_utf8_lossy(t).into_owned(),
                String::from_utf8_lossy(e).into_owned(),
            )),
            _ => None,
        };
        Ok(RunRecord {
            id: run.to_string(),
            artifact: map
                .get("artifact")
                .cloned()
                .ok_or_else(|| f.bad("artifact", "missing".into()))?,
            program: f.text("program")?,
            params,
            block,
            store: f.text("store")?,
            kernels,
            total: f.number("total")?,
            done: f.number("done")?,
            state,
            max_expiries: u32::try_from(f.number("max_expiries")?).unwrap_or(u32::MAX),
            created_ms: f.number("created_ms")?,
            finished_ms: map
                .get("finished_ms")
                .and_then(|b| std::str::from_utf8(b).ok()?.parse().ok()),
            error,
            keep: f.text("keep")? == "1",
            stored_bytes: f.signed("stored_bytes"),
            peak_bytes: f.signed("peak_bytes"),
            limits: RunLimits {
                max_tasks: u64::try_from(f.signed("max_tasks")).ok().filter(|&n| n > 0),
                max_store_bytes: u64::try_from(f.signed("max_store_bytes"))
                    .ok()
                    .filter(|&n| n > 0),
            },
            input_shapes: f.shapes()?,
        })
    }

    /// The run's program, loaded and validated from its artifact.
    pub fn load_program(&self) -> Result<lpk_model::program::Program, ClusterError> {
        lpk_model::artifact::decode(&self.artifact)
            .map(|l| l.artifact.program)
            .map_err(|source| ClusterError::Artifact {
                run: self.id.clone(),
                source: Box::new(source),
            })
    }

    /// The run's program ([`Self::load_program`]) bound to the run's
    /// parameters.
    pub(crate) fn bind<'p>(&self, program: &'p Program) -> Result<Instance<'p>, ClusterError> {
        program
            .bind_values(self.params.clone())
            .map_err(|source| ClusterError::Bind {
                run: self.id.clone(),
                source: Box::new(source),
            })
    }

    /// How many tasks the run's instance has, counted by its plans: the
    /// record's own counts are in Redis, which nothing trusts.
    pub(crate) fn count_tasks(&self, inst: &Instance<'_>) -> Result<u64, ClusterError> {
        let counts = inst
            .count_tasks(lpk_model::task::COUNT_BUDGET)
            .map_err(|e| {
                ClusterError::Refused(format!("run {}: cannot count its tasks: {e}", self.id))
            })?;
        Ok(counts.total())
    }
}

/// A run record's hash fields, read one by one, each error naming the run
/// and the field.
struct Fields<'a> {
    run: &'a str,
    map: &'a HashMap<String, Vec<u8>>,
}

/// `A=100x100,B=100x7`: input shapes as the record keeps them.
fn shapes_text(shapes: &[(String, (usize, usize))]) -> String {
    let parts: Vec<String> = shapes
        .iter()
        .map(|(m, (r, c))| format!("{m}={r}x{c}"))
        .collect();
    parts.join(",")
}

impl Fields<'_> {
    /// The `shapes` field (none if absent).
    fn shapes(&self) -> Result<InputShapes, ClusterError> {
        let Some(raw) = self.map.get("shapes") else {
            return Ok(Vec::new());
        };
        let text = String::from_utf8_lossy(raw);
        let mut out = Vec::new();
        for part in text.split(',').filter(|p| !p.is_empty()) {
            let parsed = part.split_once('=').and_then(|(m, dims)| {
                let (r, c) = dims.split_once('x')?;
                Some((m.to_string(), (r.parse().ok()?, c.parse().ok()?)))
            });
            match parsed {
                Some(p) => out.push(p),
                None => {
                    let shown: String = part.chars().take(80).collect();
                    return Err(self.bad("shapes", format!("`{shown}` is not MATRIX=ROWSxCOLUMNS")));
                }
            }
        }
        Ok(out)
    }
    /// The error of a field that is wrong, and why.
    fn bad(&self, field: &'static str, why: String) -> ClusterError {
        ClusterError::BadRecord {
            run: self.run.to_string(),
            field,
            why,
        }
    }

    /// A field's text (it must be there, in UTF-8).
    fn text(&self, field: &'static str) -> Result<String, ClusterError> {
        let bytes = self
            .map
            .get(field)
            .ok_or_else(|| self.bad(field, "missing".into()))?;
        String::from_utf8(bytes.clone()).map_err(|_| self.bad(field, "not UTF-8".into()))
    }

    /// A field that is a count.
    fn number(&self, field: &'static str) -> Result<u64, ClusterError> {
        let t = self.text(field)?;
        t.parse::<u64>().map_err(|_| {
            self.bad(
                field,
                format!(
                    "`{}` is not a count",
                    t.chars().take(40).collect::<String>()
                ),
            )
        })
    }

    /// A signed field, 0 when it is missing or not a number.
    fn signed(&self, field: &'static str) -> i64 {
        self.map
            .get(field)
            .and_then(|b| std::str::from_utf8(b).ok()?.parse().ok())
            .unwrap_or(0)
    }

    /// Refuses a record of another protocol version.
    fn check_protocol(&self) -> Result<(), ClusterError> {
        let protocol = self.number("protocol")?;
        if protocol != u64::from(PROTOCOL) {
            return Err(self.bad(
                "protocol",
                format!("version {protocol}; this lpk speaks version {PROTOCOL}"),
            ));
        }
        Ok(())
    }

    /// Refuses a record that names another run: under another run's key it
    /// would make a worker act on that run (its tiles, its place in
    /// `lpk:runs`).
    fn check_id(&self) -> Result<(), ClusterError> {
        let id = self.text("id")?;
        if id != self.run {
            return Err(self.bad(
                "id",
                format!(
                    "names run `{}`, not the run it is stored under",
                    id.chars().take(80).collect::<String>()
                ),
            ));
        }
        Ok(())
    }

    /// The parameters, a comma-separated list of integers (empty for none).
    fn params(&self) -> Result<Vec<i64>, ClusterError> {
        let params_text = self.text("params")?;
        if params_text.is_empty() {
            return Ok(Vec::new());
        }
        params_text
            .split(',')
            .map(|v| v.parse::<i64>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| self.bad("params", "not a list of integers".into()))
    }

    /// The run's state.
    fn state(&self) -> Result<RunState, ClusterError> {
        match self.text("state")?.as_str() {
            "running" => Ok(RunState::Running),
            "done" => Ok(RunState::Done),
            "failed" => Ok(RunState::Failed),
            other => Err(self.bad("state", format!("unknown state `{other}`"))),
        }
    }

    /// The run's kernel set.
    fn kernels(&self) -> Result<Kernels, ClusterError> {
        match self.text("kernels")?.as_str() {
            "standard" => Ok(Kernels::Standard),
            "noop" => Ok(Kernels::Noop),
            other => Err(self.bad("kernels", format!("unknown kernel set `{other}`"))),
        }
    }
}
