//! Tile stores: where the tiles of a run live between tasks and after it.
//!
//! A [`TileStore`] maps (matrix name, tile index) to a tile. Three stores:
//! - [`MemoryStore`]: in this process, sharded so many worker threads can
//!   put and get at once; tiles are kept decoded, since nothing outside the
//!   process can read them;
//! - [`NpyDirStore`]: a directory, one `.npy` file per tile at
//!   `DIR/M/i_j.npy`;
//! - [`ObjectStoreTiles`]: any URL the `object_store` crate opens
//!   (`file:///abs/path` and `memory:///` in this build), one `.npy`
//!   object per tile under the URL's path, laid out as in a directory.
//!
//! Tiles outside memory are `.npy` (`<f8`, Fortran order), so numpy reads
//! them as they are. [`StoreSource`] and [`StoreSink`] connect a store to
//! the executor, naming matrices by `Program::matrices[i].name`.
//! [`open_store`] picks a store from a command-line spec.
//!
//! Keys: a tile's key is `M/i_j.npy` — the indices joined by `_`, so a
//! 1-D index is `M/i.npy`. Matrix names must be plain file names (letters,
//! digits, `_`, `-`, `.`, not starting with `.`), so a key never escapes
//! the store's root.

use crate::exec::{TileError, TileSink, TileSource};
use crate::kernels::Tile;
use crate::npy::{self, NpyError, ReadLimit};
use model::program::Program;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use rustc_hash::FxHashMap;
use std::hash::{BuildHasher, BuildHasherDefault};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

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
    /// A URL that `object_store` cannot open (e.g. a scheme this build
    /// does not include).
    #[error(
        "cannot open tile store `{spec}`: {source} (this build opens file:// and memory:// URLs)"
    )]
    OpenUrl {
        /// The spec.
        spec: String,
        /// The underlying error.
        source: object_store::Error,
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

/// Shards of the memory store; a power of two well above the worker count
/// of one machine, so threads rarely wait on the same lock.
const SHARDS: usize = 64;

type Shard = RwLock<FxHashMap<String, Arc<Tile>>>;

/// Tiles in memory, in [`SHARDS`] independently locked hash maps.
pub struct MemoryStore {
    shards: Vec<Shard>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore {
            shards: (0..SHARDS).map(|_| RwLock::default()).collect(),
        }
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of tiles held.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.read().unwrap_or_else(|e| e.into_inner()).len())
            .sum()
    }

    /// Whether the store holds no tile.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn shard(&self, key: &str) -> &Shard {
        let h = BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(key);
        // `shards` has SHARDS entries, so the remainder is a valid index.
        &self.shards[(h as usize) % SHARDS]
    }
}

impl TileStore for MemoryStore {
    fn get(&self, matrix: &str, index: &[i64]) -> Result<Option<Arc<Tile>>, StoreError> {
        let key = tile_key(matrix, index)?;
        let shard = self.shard(&key).read().unwrap_or_else(|e| e.into_inner());
        Ok(shard.get(&key).cloned())
    }

    fn put(&self, matrix: &str, index: &[i64], tile: Arc<Tile>) -> Result<(), StoreError> {
        let key = tile_key(matrix, index)?;
        let mut shard = self.shard(&key).write().unwrap_or_else(|e| e.into_inner());
        shard.insert(key, tile);
        Ok(())
    }

    fn delete(&self, matrix: &str, index: &[i64]) -> Result<(), StoreError> {
        let key = tile_key(matrix, index)?;
        let mut shard = self.shard(&key).write().unwrap_or_else(|e| e.into_inner());
        shard.remove(&key);
        Ok(())
    }

    fn describe(&self) -> String {
        "memory".to_string()
    }
}

/// Tiles as `.npy` files under a root directory, `ROOT/M/i_j.npy`.
/// Directories are created as tiles are put; each file is written to a
/// temporary name and renamed, so readers never see half a tile.
pub struct NpyDirStore {
    root: PathBuf,
}

impl NpyDirStore {
    /// A store rooted at `root` (created on the first put).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        NpyDirStore { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file of a tile.
    pub fn path_of(&self, matrix: &str, index: &[i64]) -> Result<PathBuf, StoreError> {
        Ok(self.root.join(tile_key(matrix, index)?))
    }
}

impl TileStore for NpyDirStore {
    fn get(&self, matrix: &str, index: &[i64]) -> Result<Option<Arc<Tile>>, StoreError> {
        let path = self.path_of(matrix, index)?;
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(StoreError::Io { path, source }),
        };
        let name = path.display().to_string();
        Ok(Some(Arc::new(npy::read_open_file(
            &file,
            &name,
            &ReadLimit::default(),
        )?)))
    }

    fn put(&self, matrix: &str, index: &[i64], tile: Arc<Tile>) -> Result<(), StoreError> {
        let path = self.path_of(matrix, index)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        npy::write_file(&path, &tile)?;
        Ok(())
    }

    fn delete(&self, matrix: &str, index: &[i64]) -> Result<(), StoreError> {
        let path = self.path_of(matrix, index)?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(StoreError::Io { path, source }),
        }
    }

    fn describe(&self) -> String {
        format!("dir {}", self.root.display())
    }
}

/// Tiles as `.npy` objects in an [`ObjectStore`], at `PREFIX/M/i_j.npy`.
///
/// `object_store` is async; each call is driven to completion on the
/// calling thread with `futures::executor::block_on`. That needs no tokio
/// runtime for the local file system (which then does its I/O inline) and
/// the in-memory store. Stores that talk HTTP need a running tokio runtime
/// and are not in this build.
pub struct ObjectStoreTiles {
    store: Box<dyn ObjectStore>,
    prefix: object_store::path::Path,
    url: String,
}

impl ObjectStoreTiles {
    /// Opens the store a URL names, e.g. `file:///abs/path` or
    /// `memory:///`; the URL's path is the prefix of every key.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, std::iter::empty::<(&str, &str)>())
    }

    /// Like [`ObjectStoreTiles::open`], with options for the store's
    /// builder (see `object_store::parse_url_opts`).
    pub fn open_with<I, K, V>(url: &str, options: I) -> Result<Self, StoreError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: Into<String>,
    {
        let parsed = url::Url::parse(url).map_err(|source| StoreError::Url {
            spec: url.to_string(),
            source,
        })?;
        let (store, prefix) = object_store::parse_url_opts(&parsed, options).map_err(|source| {
            StoreError::OpenUrl {
                spec: url.to_string(),
                source,
            }
        })?;
        Ok(ObjectStoreTiles {
            store,
            prefix,
            url: url.to_string(),
        })
    }

    /// Wraps an already built store; `url` is used in messages.
    pub fn from_store(
        store: Box<dyn ObjectStore>,
        prefix: object_store::path::Path,
        url: impl Into<String>,
    ) -> Self {
        ObjectStoreTiles {
            store,
            prefix,
            url: url.into(),
        }
    }

    /// The object path of a tile and its URL (for messages).
    fn location(
        &self,
        matrix: &str,
        index: &[i64],
    ) -> Result<(object_store::path::Path, String), StoreError> {
        let key = tile_key(matrix, index)?;
        let mut loc = self.prefix.clone();
        for part in key.split('/') {
            loc = loc.join(part);
        }
        let sep = if self.url.ends_with('/') { "" } else { "/" };
        Ok((loc, format!("{}{sep}{key}", self.url)))
    }
}

impl TileStore for ObjectStoreTiles {
    fn get(&self, matrix: &str, index: &[i64]) -> Result<Option<Arc<Tile>>, StoreError> {
        let (loc, name) = self.location(matrix, index)?;
        let fetched = futures::executor::block_on(async {
            let result = self.store.get(&loc).await?;
            result.bytes().await
        });
        let bytes = match fetched {
            Ok(b) => b,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(source) => {
                return Err(StoreError::ObjectStore {
                    location: name,
                    source,
                })
            }
        };
        Ok(Some(Arc::new(npy::read_bytes(
            &bytes,
            &name,
            &ReadLimit::default(),
        )?)))
    }

    fn put(&self, matrix: &str, index: &[i64], tile: Arc<Tile>) -> Result<(), StoreError> {
        let (loc, name) = self.location(matrix, index)?;
        let payload = PutPayload::from(npy::to_bytes(&tile));
        futures::executor::block_on(self.store.put(&loc, payload)).map_err(|source| {
            StoreError::ObjectStore {
                location: name,
                source,
            }
        })?;
        Ok(())
    }

    fn delete(&self, matrix: &str, index: &[i64]) -> Result<(), StoreError> {
        let (loc, name) = self.location(matrix, index)?;
        match futures::executor::block_on(self.store.delete(&loc)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(source) => Err(StoreError::ObjectStore {
                location: name,
                source,
            }),
        }
    }

    fn describe(&self) -> String {
        self.url.clone()
    }
}

/// Whether `spec` starts with a URL scheme and `://`.
fn has_url_scheme(spec: &str) -> bool {
    let Some((scheme, _)) = spec.split_once("://") else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Opens a store from a spec: `mem` is a [`MemoryStore`]; `dir:PATH` or a
/// plain path is an [`NpyDirStore`]; a URL with a scheme (`file:///abs`,
/// `memory:///`) is an [`ObjectStoreTiles`].
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

/// The names of a program's matrices, indexed like `Program::matrices`.
fn matrix_names(program: &Program) -> Vec<String> {
    program.matrices.iter().map(|m| m.name.clone()).collect()
}

/// Looks up a matrix name by its index in the program.
fn name_of(names: &[String], matrix: u32) -> Result<&str, TileError> {
    names
        .get(matrix as usize)
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
    fn input(&self, matrix: u32, index: &[i64]) -> Result<Arc<Tile>, TileError> {
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
    fn output(&self, matrix: u32, index: &[i64], tile: Arc<Tile>) -> Result<(), TileError> {
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
