//! What can go wrong in a distributed run, from the caller's side.

use crate::ids::BadId;

/// Why a distributed operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// A Redis URL that does not parse.
    #[error("`{url}` is not a Redis URL (expected redis://HOST:PORT[/DB]): {source}")]
    BadUrl {
        /// The URL.
        url: String,
        /// Why.
        source: redis::RedisError,
    },
    /// Redis cannot be reached, or a command failed.
    #[error("Redis at {url}: {what}: {source}")]
    Redis {
        /// The URL.
        url: String,
        /// What was being done.
        what: String,
        /// The client's error.
        source: redis::RedisError,
    },
    /// No run with this id.
    #[error("no run `{run}` in Redis at {url} (it never existed there, or this Redis lost it)")]
    NoRun {
        /// The run id.
        run: String,
        /// The URL.
        url: String,
    },
    /// A run id that cannot be one.
    #[error("`{0}` is not a run id (letters, digits, `-` and `_`, at most 64)")]
    BadRunId(String),
    /// A run record that this version cannot read.
    #[error(
        "run `{run}`: its record in Redis is not one this version of lpk reads ({field}: {why})"
    )]
    BadRecord {
        /// The run id.
        run: String,
        /// The field.
        field: &'static str,
        /// What is wrong.
        why: String,
    },
    /// A task or tile id in Redis that cannot be read.
    #[error("run `{run}`: {source}")]
    BadId {
        /// The run id.
        run: String,
        /// Why.
        source: BadId,
    },
    /// The run's artifact does not load.
    #[error("run `{run}`: its program does not load: {source}")]
    Artifact {
        /// The run id.
        run: String,
        /// Why.
        source: Box<lpk_model::artifact::ArtifactError>,
    },
    /// The run's parameters make no instance.
    #[error("run `{run}`: {source}")]
    Bind {
        /// The run id.
        run: String,
        /// Why.
        source: Box<lpk_model::program::BindError>,
    },
    /// A tile store error outside a task.
    #[error("tile store {store}: {source}")]
    Store {
        /// The store's URL.
        store: String,
        /// Why.
        source: Box<lpk_runtime::store::StoreError>,
    },
    /// Preparing the inputs of a submission failed.
    #[error(transparent)]
    Job(Box<lpk_runtime::job::JobError>),
    /// A dependence query or a walk over the tasks failed.
    #[error(transparent)]
    Exec(Box<lpk_runtime::exec::ExecError>),
    /// Writing an output file failed.
    #[error("cannot write {path}: {why}")]
    Output {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
    /// A request that cannot be served (e.g. collecting a run that is not
    /// done).
    #[error("{0}")]
    Refused(String),
    /// A run calls kernels this worker does not have: it leaves the run to
    /// workers that have them and takes none of its tasks.
    #[error(
        "run `{run}` calls {} this worker does not have ({}); it leaves the run to workers that have {}",
        if kernels.len() == 1 { "a kernel" } else { "kernels" },
        kernels.join(", "),
        if kernels.len() == 1 { "it" } else { "them" }
    )]
    LacksKernels {
        /// The run id.
        run: String,
        /// The kernels, each as `` `name` (line L) ``.
        kernels: Vec<String>,
    },
    /// An output tile that a task of the run writes is not in the store:
    /// nothing is assembled from what is not there.
    #[error(
        "run `{run}`: output tile {tile} is not in the store {store}, although {writer} writes it \
         and the run is done; no output was completed (no {marker}). Someone deleted it, or \
         changed the run in Redis; run the program again"
    )]
    MissingOutput {
        /// The run id.
        run: String,
        /// The tile, e.g. `L[2, 1]`.
        tile: String,
        /// The task that writes it.
        writer: String,
        /// The store.
        store: String,
        /// The name of the success marker.
        marker: &'static str,
    },
}

impl From<lpk_runtime::job::JobError> for ClusterError {
    fn from(e: lpk_runtime::job::JobError) -> Self {
        ClusterError::Job(Box::new(e))
    }
}

impl From<lpk_runtime::exec::ExecError> for ClusterError {
    fn from(e: lpk_runtime::exec::ExecError) -> Self {
        ClusterError::Exec(Box::new(e))
    }
}

impl From<lpk_model::query::QueryError> for ClusterError {
    fn from(e: lpk_model::query::QueryError) -> Self {
        ClusterError::Exec(Box::new(e.into()))
    }
}

impl From<lpk_model::task::WalkError> for ClusterError {
    fn from(e: lpk_model::task::WalkError) -> Self {
        ClusterError::Exec(Box::new(e.into()))
    }
}

/// Checks a run id: what `submit` makes, or a user may type.
pub(crate) fn check_run_id(run: &str) -> Result<(), ClusterError> {
    let ok = !run.is_empty()
        && run.len() <= 64
        && run
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(ClusterError::BadRunId(run.chars().take(80).collect()))
    }
}

/// A store error outside a task, naming the store.
pub(crate) fn store_error(
    store: &dyn lpk_runtime::store::TileStore,
    source: lpk_runtime::store::StoreError,
) -> ClusterError {
    ClusterError::Store {
        store: store.describe(),
        source: Box::new(source),
    }
}
