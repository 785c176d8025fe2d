//! Tile stores: where the tiles of a run live between tasks and after it.
//!
//! A [`TileStore`] maps (matrix name, tile index) to a tile. Three stores:
//! - [`MemoryStore`]: in this process, sharded so many worker threads can
//!   put and get at once; tiles are kept decoded, since nothing outside the
//!   process can read them;
//! - [`NpyDirStore`]: a directory, one `.npy` file per tile at
//!   `DIR/M/i_j.npy`;
//! - [`ObjectStoreTiles`]: any URL the `object_store` crate opens
//!   (`file:///abs/path`, `memory:///` and `s3://bucket/prefix` in this
//!   build), one `.npy` object per tile under the URL's path, laid out as
//!   in a directory. It also holds raw objects ([`BlobStore`]: a
//!   distributed run's artifact, manifest and done markers) and opens
//!   below a sub-prefix ([`ObjectStoreTiles::prefixed`]). S3 stores take
//!   their settings from the `AWS_*` environment variables and run their
//!   requests on a small tokio runtime of their own, bounded by
//!   [`StoreLimits`] (docs/stores.md).
//!
//! Tiles outside memory are `.npy` (`<f8`, Fortran order), so numpy reads
//! them as they are. [`StoreSource`] and [`StoreSink`] connect a store to
//! the executor, naming matrices by `Program::matrices[i].name`.
//! [`open_store`] picks a store from a command-line spec.
//!
//! Keys: a tile's key is `M/i_j.npy` — the indices joined by `_`, so a
//! 1-D index is `M/i.npy`. Matrix names must be plain file names (letters,
//! digits, `_`, `-`, `.`, not starting with `.`), and raw keys are checked
//! segment by segment ([`check_key`]), so a key never escapes the store's
//! root.
//!
//! This module holds what every store shares: the traits, [`StoreError`],
//! keys ([`tile_key`], [`check_key`]), store specs ([`open_store`],
//! [`has_url_scheme`], [`local_dir`], [`is_root_dir`]) and the executor's
//! [`StoreSource`] and [`StoreSink`]. Each store has its file: `memory`,
//! `npy_dir` and `object` (with [`StoreLimits`] and [`aws_env_options`]).

mod memory;
mod npy_dir;
mod object;

pub use self::memory::MemoryStore;
pub use self::npy_dir::NpyDirStore;
pub use self::object::{aws_env_options, ObjectStoreTiles, StoreLimits};

use crate::exec::{TileError, TileSink, TileSource};
use crate::kernels::Tile;
use crate::npy::{self, NpyError, ReadLimit};
use lpk_model::program::Program;
use lpk_model::MatrixId;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A matrix name that cannot be part of a key.
    #[error("`{name}` cannot name a matrix in a tile store (use letters, digits, `_`, `-` and `.`, not starting with `.`)")]
    BadName {
        /// The name given.
        name: String,
    },
    /// A tile index with no coordinates.
    #[error("a tile of `{matrix}` needs at least one index")]
    EmptyIndex {
        /// The matrix.
        matrix: String,
    },
    /// A file system error in a directory store.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A stored tile that is not a valid `.npy` tile.
    #[error(transparent)]
    Npy(#[from] NpyError),
    /// An error of the object store.
    #[error("{location}: {source}")]
    ObjectStore {
        /// The object's URL.
        location: String,
        /// The underlying error.
        source: object_store::Error,
    },
    /// An empty store spec.
    #[error("an empty tile store; expected `mem`, a directory, `dir:PATH` or a URL such as file:///abs/path")]
    EmptySpec,
    /// A spec that looks like a URL but does not parse as one.
    #[error("`{spec}` is not a valid store URL: {source}")]
    Url {
        /// The spec.
        spec: String,
        /// The parse error.
        source: url::ParseError,
    },
    /// A URL that `object_store` cannot open: no bucket in an S3 URL, a
    /// path it cannot take.
    #[error("cannot open tile store `{spec}`: {source}")]
    OpenUrl {
        /// The spec.
        spec: String,
        /// The underlying error.
        source: object_store::Error,
    },
    /// A URL of a kind of store this build does not include.
    #[error("cannot open tile store `{spec}`: this build opens file://, memory:// and s3:// URLs (for another S3 server, use s3://BUCKET/PREFIX and set AWS_ENDPOINT_URL)")]
    UnsupportedScheme {
        /// The spec.
        spec: String,
    },
    /// An S3 URL without a bucket.
    #[error("cannot open tile store `{spec}`: the URL names no bucket (write s3://BUCKET or s3://BUCKET/PREFIX)")]
    NoBucketInUrl {
        /// The spec.
        spec: String,
    },
    /// A plain-HTTP endpoint without the permission to use it.
    #[error("cannot open tile store `{spec}`: its endpoint {endpoint} is plain HTTP; set AWS_ALLOW_HTTP=true to use it")]
    PlainHttp {
        /// The spec.
        spec: String,
        /// The endpoint.
        endpoint: String,
    },
    /// An option an S3 store does not know.
    #[error("`{key}` is not an option of the S3 store `{spec}` (see object_store's AmazonS3ConfigKey: e.g. aws_endpoint, aws_region, aws_allow_http)")]
    BadOption {
        /// The spec.
        spec: String,
        /// The option's name, as given.
        key: String,
    },
    /// The threads that drive a network store's requests did not start.
    #[error("cannot start the I/O threads of tile store `{spec}`: {source}")]
    Runtime {
        /// The spec.
        spec: String,
        /// The underlying error.
        source: io::Error,
    },
    /// A raw object key that could escape the store's root or mean
    /// different objects in different stores.
    #[error("`{key}` cannot be a key in a tile store (use `/`-separated names of letters, digits, `_`, `-`, `.`, `,`, `=` and `+`, none empty or starting with `.`, at most 200 bytes each and 512 in all)")]
    BadKey {
        /// The key given.
        key: String,
    },
    /// The S3 bucket of the store does not exist.
    #[error("{location}: the bucket {bucket} does not exist at {endpoint} (create it, or name an existing bucket in the store URL; AWS_ENDPOINT_URL chooses the server)")]
    NoBucket {
        /// The object's URL.
        location: String,
        /// The bucket, as the URL names it.
        bucket: String,
        /// The endpoint asked.
        endpoint: String,
    },
    /// No connection to the S3 endpoint.
    #[error("{location}: cannot reach the S3 endpoint {endpoint} (is the server running? set AWS_ENDPOINT_URL to its address, and AWS_ALLOW_HTTP=true for an http:// endpoint): {source}")]
    Unreachable {
        /// The object's URL.
        location: String,
        /// The endpoint asked.
        endpoint: String,
        /// The underlying error.
        source: object_store::Error,
    },
    /// A request that got no answer in time, retries included.
    #[error("{location}: the S3 server did not answer in time (AWS_TIMEOUT and AWS_CONNECT_TIMEOUT raise the limits, e.g. AWS_TIMEOUT=60s): {source}")]
    TimedOut {
        /// The object's URL.
        location: String,
        /// The underlying error.
        source: object_store::Error,
    },
    /// The S3 server refused the request's credentials.
    #[error("{location}: the S3 server refused the credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and AWS_SESSION_TOKEN for temporary ones): {source}")]
    Denied {
        /// The object's URL.
        location: String,
        /// The underlying error.
        source: object_store::Error,
    },
    /// No credentials were configured, so the S3 client asked the cloud
    /// instance metadata service for some, and that failed (off a cloud
    /// machine it always does).
    #[error("{location}: no S3 credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones); without them the client asked the instance metadata service, which failed: {source}")]
    NoCredentials {
        /// The object's URL.
        location: String,
        /// The underlying error.
        source: object_store::Error,
    },
    /// An object longer than its reader accepts.
    #[error("{location}: {size} bytes, more than the {limit} this object may hold (was it written by lpk?)")]
    TooLarge {
        /// The object's URL.
        location: String,
        /// Its size.
        size: u64,
        /// The most its reader takes.
        limit: u64,
    },
    /// A request that ended without an answer: its task on the store's
    /// runtime panicked or was cancelled.
    #[error("{location}: the request ended without an answer: {reason}")]
    Background {
        /// The object's URL.
        location: String,
        /// What happened to it.
        reason: String,
    },
}

impl From<StoreError> for TileError {
    fn from(e: StoreError) -> Self {
        TileError::Store(Box::new(e))
    }
}

/// A map from (matrix name, tile index) to tiles, shared by all worker
/// threads.
pub trait TileStore: Send + Sync {
    /// The tile, or `None` if it is not in the store.
    fn get(&self, matrix: &str, index: &[i64]) -> Result<Option<Arc<Tile>>, StoreError>;
    /// Stores the tile, replacing any tile at the same key.
    fn put(&self, matrix: &str, index: &[i64], tile: Arc<Tile>) -> Result<(), StoreError>;
    /// Removes the tile; removing a missing tile is not an error.
    fn delete(&self, matrix: &str, index: &[i64]) -> Result<(), StoreError>;
    /// A short description for messages, e.g. `dir /tmp/run`.
    fn describe(&self) -> String;
}

impl std::fmt::Debug for dyn TileStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TileStore({})", self.describe())
    }
}

/// The key of a tile relative to a store's root, `M/i_j.npy`, after
/// checking that the matrix name is a plain file name.
pub fn tile_key(matrix: &str, index: &[i64]) -> Result<String, StoreError> {
    let plain = !matrix.is_empty()
        && !matrix.starts_with('.')
        && matrix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !plain {
        return Err(StoreError::BadName {
            name: matrix.to_string(),
        });
    }
    if index.is_empty() {
        return Err(StoreError::EmptyIndex {
            matrix: matrix.to_string(),
        });
    }
    let idx: Vec<String> = index.iter().map(i64::to_string).collect();
    Ok(format!("{matrix}/{}.npy", idx.join("_")))
}

/// Raw objects next to the tiles: what a distributed run keeps in its
/// store besides tiles (the program artifact, a manifest, per-task done
/// markers under `done/`).
///
/// Keys are relative to the store's root and checked by [`check_key`], so
/// none escapes it; a tile's key (`M/i_j.npy`, [`tile_key`]) is a key too.
/// Only [`ObjectStoreTiles`] has raw objects: a memory store lives and dies
/// with one process, and a directory shared by several machines is the
/// `file://` URL of the same directory.
pub trait BlobStore: TileStore {
    /// Stores `bytes` at `key`, replacing any object there. Readers see
    /// the old object or the new one, never part of one.
    fn put_bytes(&self, key: &str, bytes: Vec<u8>) -> Result<(), StoreError>;
    /// The object at `key`, or `None` if there is none; an object longer
    /// than `limit` bytes is [`StoreError::TooLarge`], refused before its
    /// body is read (a store is written by others: nothing read from it
    /// is trusted to be small).
    fn get_bytes(&self, key: &str, limit: u64) -> Result<Option<Vec<u8>>, StoreError>;
    /// Removes the object at `key`; removing a missing object is not an
    /// error.
    fn delete_key(&self, key: &str) -> Result<(), StoreError>;
    /// The keys of every object under `prefix` (whole `/`-separated
    /// segments: `done` lists `done/x` but not `done2/x`; `""` lists the
    /// whole store), relative to the store's root, sorted.
    fn list(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        Ok(self
            .list_sized(prefix)?
            .into_iter()
            .map(|(k, _)| k)
            .collect())
    }
    /// [`BlobStore::list`] with each object's size in bytes.
    fn list_sized(&self, prefix: &str) -> Result<Vec<(String, u64)>, StoreError>;
}

/// The longest key [`check_key`] accepts, in bytes (S3's own limit is
/// 1024 for the whole key, prefix included).
pub(crate) const MAX_KEY_LEN: usize = 512;

/// The longest segment of a key, in bytes: file systems take names of up
/// to 255 bytes, and the local store appends a suffix to a file while it
/// writes it.
pub(crate) const MAX_SEGMENT_LEN: usize = 200;

/// Checks a raw object key: `/`-separated segments, each non-empty, not
/// starting with `.`, of letters, digits, `_`, `-`, `.`, `,`, `=` and `+`,
/// at most [`MAX_SEGMENT_LEN`] bytes each and [`MAX_KEY_LEN`] in all.
/// Such a key means the same object in every store (no character is
/// escaped differently by S3 and a file system) and never leaves the
/// store's root.
pub(crate) fn check_key(key: &str) -> Result<(), StoreError> {
    let plain_segment = |seg: &str| {
        !seg.is_empty()
            && seg.len() <= MAX_SEGMENT_LEN
            && !seg.starts_with('.')
            && seg.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ',' | '=' | '+')
            })
    };
    if key.len() > MAX_KEY_LEN || !key.split('/').all(plain_segment) {
        return Err(StoreError::BadKey {
            key: key.to_string(),
        });
    }
    Ok(())
}

/// Whether `spec` starts with a URL scheme and `://` (as [`open_store`]
/// tells URLs from paths).
pub fn has_url_scheme(spec: &str) -> bool {
    let Some((scheme, _)) = spec.split_once("://") else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// The local directory a store spec names, if it names one: `dir:PATH`, a
/// plain path, or a `file://` URL.
pub fn local_dir(spec: &str) -> Option<PathBuf> {
    if let Some(path) = spec.strip_prefix("dir:") {
        return Some(PathBuf::from(path));
    }
    if let Some(path) = spec.strip_prefix("file://") {
        return Some(PathBuf::from(path));
    }
    (!spec.is_empty() && spec != "mem" && !has_url_scheme(spec)).then(|| PathBuf::from(spec))
}

/// Whether a store spec names the file system's root (`/`, `file:///`):
/// a store there would scatter a run's directories over `/`.
pub fn is_root_dir(spec: &str) -> bool {
    local_dir(spec).is_some_and(|p| p.has_root() && p.parent().is_none())
}

/// Opens a store from a spec: `mem` is a [`MemoryStore`]; `dir:PATH` or a
/// plain path is an [`NpyDirStore`]; a URL with a scheme (`file:///abs`,
/// `memory:///`, `s3://bucket/prefix`) is an [`ObjectStoreTiles`], opened
/// with [`ObjectStoreTiles::open`].
pub fn open_store(spec: &str) -> Result<Box<dyn TileStore>, StoreError> {
    if spec.is_empty() {
        return Err(StoreError::EmptySpec);
    }
    if spec == "mem" {
        return Ok(Box::new(MemoryStore::new()));
    }
    if let Some(path) = spec.strip_prefix("dir:") {
        if path.is_empty() {
            return Err(StoreError::EmptySpec);
        }
        return Ok(Box::new(NpyDirStore::new(path)));
    }
    if has_url_scheme(spec) {
        return Ok(Box::new(ObjectStoreTiles::open(spec)?));
    }
    Ok(Box::new(NpyDirStore::new(spec)))
}

/// Reads the tile in a file, or `None` if there is none: straight from the
/// file into the tile (one `readv` of its columns, no buffer of the whole
/// object as `object_store`'s `get` gives it). `name` is used in messages.
fn read_local(path: &Path, name: &str) -> Result<Option<Tile>, StoreError> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(StoreError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    Ok(Some(npy::read_open_file(
        &file,
        name,
        &ReadLimit::default(),
    )?))
}

/// The names of a program's matrices, indexed like `Program::matrices`.
fn matrix_names(program: &Program) -> Vec<String> {
    program.matrices.iter().map(|m| m.name.clone()).collect()
}

/// Looks up a matrix name by its index in the program.
fn name_of(names: &[String], matrix: MatrixId) -> Result<&str, TileError> {
    names
        .get(matrix.index())
        .map(String::as_str)
        .ok_or(TileError::UnknownMatrix(matrix))
}

/// A [`TileSource`] reading input tiles from a store by matrix name.
pub struct StoreSource<'a> {
    store: &'a dyn TileStore,
    names: Vec<String>,
}

impl<'a> StoreSource<'a> {
    /// Reads the matrices of `program` from `store`.
    pub fn new(store: &'a dyn TileStore, program: &Program) -> Self {
        StoreSource {
            store,
            names: matrix_names(program),
        }
    }

    /// Reads from `store`, with `names[i]` the name of matrix `i`.
    pub fn with_names(store: &'a dyn TileStore, names: Vec<String>) -> Self {
        StoreSource { store, names }
    }
}

impl TileSource for StoreSource<'_> {
    fn input(&self, matrix: MatrixId, index: &[i64]) -> Result<Arc<Tile>, TileError> {
        let name = name_of(&self.names, matrix)?;
        match self.store.get(name, index)? {
            Some(tile) => Ok(tile),
            None => Err(TileError::NotInStore {
                matrix: name.to_string(),
                index: index.to_vec(),
                store: self.store.describe(),
            }),
        }
    }
}

/// A [`TileSink`] writing output tiles to a store by matrix name.
pub struct StoreSink<'a> {
    store: &'a dyn TileStore,
    names: Vec<String>,
}

impl<'a> StoreSink<'a> {
    /// Writes the matrices of `program` to `store`.
    pub fn new(store: &'a dyn TileStore, program: &Program) -> Self {
        StoreSink {
            store,
            names: matrix_names(program),
        }
    }

    /// Writes to `store`, with `names[i]` the name of matrix `i`.
    pub fn with_names(store: &'a dyn TileStore, names: Vec<String>) -> Self {
        StoreSink { store, names }
    }
}

impl TileSink for StoreSink<'_> {
    fn output(&self, matrix: MatrixId, index: &[i64], tile: Arc<Tile>) -> Result<(), TileError> {
        let name = name_of(&self.names, matrix)?;
        self.store
            .put(name, index, tile)
            .map_err(|source| TileError::Storing {
                matrix: name.to_string(),
                index: index.to_vec(),
                source: Box::new(source),
            })
    }
}
