//! [`ObjectStoreTiles`]: tiles and raw objects in any store the
//! `object_store` crate opens from a URL (`file://`, `memory://`, `s3://`),
//! how each call is driven (inline, or on the store's own tokio runtime for
//! S3), its [`StoreLimits`], and S3's errors turned into ones that say
//! what to do.

use super::{check_key, read_local, tile_key, BlobStore, StoreError, TileStore};
use crate::kernels::Tile;
use crate::npy::{self, ReadLimit};
use futures::TryStreamExt;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::client::HttpErrorKind;
use object_store::local::LocalFileSystem;
use object_store::{
    BackoffConfig, ClientConfigKey, ClientOptions, ObjectStore, ObjectStoreExt, ObjectStoreScheme,
    PutPayload, RetryConfig,
};
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// How long a store reached over the network waits, and how often it
/// retries, before a call returns an error. Local stores ignore it.
///
/// The defaults suit a worker that holds a lease: a refused connection
/// fails in under a second (three retries, backing off from 0.1 s), and
/// a server that stops answering fails after one request timeout, since no
/// retry starts later than `retry_timeout` after the first try. The
/// environment variables `AWS_CONNECT_TIMEOUT` and `AWS_TIMEOUT` (e.g.
/// `10s`) override the two timeouts for one store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreLimits {
    /// Time to open a connection (default 5 s).
    pub connect_timeout: Duration,
    /// Time for one whole request, body included (default 30 s).
    pub request_timeout: Duration,
    /// Retries of a request that failed in a way worth retrying: refused
    /// or dropped connections, timeouts, 5xx answers (default 3).
    pub max_retries: usize,
    /// No retry starts later than this after the first try (default 20 s).
    pub retry_timeout: Duration,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits {
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            max_retries: 3,
            retry_timeout: Duration::from_secs(20),
        }
    }
}

/// The longest a retry waits before it starts, whatever `max_retries`.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Threads of the tokio runtime that drives one network store's requests.
/// The requests wait on the network, not on the CPU, so two threads keep
/// any number of callers' requests moving.
const IO_THREADS: usize = 2;

/// The tokio runtime of a network store. Dropping it never blocks (and so
/// never panics inside another async runtime): requests still running are
/// abandoned, which only happens once every caller has returned.
struct IoRuntime(Option<tokio::runtime::Runtime>);

impl Drop for IoRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// What messages about an S3 store say about where it is.
#[derive(Clone, Debug)]
struct S3Place {
    bucket: String,
    /// The endpoint the requests go to, as configured or AWS's default.
    endpoint: String,
}

/// How each call of a store is driven to completion.
#[derive(Clone)]
enum Driver {
    /// On the calling thread with `futures::executor::block_on`: the local
    /// file system (which then does its I/O inline) and the in-memory
    /// store need no runtime.
    Inline,
    /// On the store's own tokio runtime, which HTTP stores need; the
    /// calling thread waits for the result.
    Io(Arc<IoRuntime>),
}

/// Tiles as `.npy` objects in an [`ObjectStore`], at `PREFIX/M/i_j.npy`,
/// and raw objects ([`BlobStore`]) at `PREFIX/KEY`.
///
/// `object_store` is async. `file://` and `memory://` stores run each call
/// on the calling thread; S3 stores run it on a small tokio runtime of
/// their own (two threads, shared with the stores
/// [`ObjectStoreTiles::prefixed`] makes), whatever thread calls, so many
/// worker threads can get and put at once, each waiting only for its own
/// request. Every call is bounded by the [`StoreLimits`].
pub struct ObjectStoreTiles {
    store: Arc<dyn ObjectStore>,
    prefix: object_store::path::Path,
    url: String,
    driver: Driver,
    s3: Option<S3Place>,
    /// The same store when it is a local file system: tiles are then read
    /// and written straight between the file and the tile, without a
    /// whole-object buffer in between (see [`ObjectStoreTiles::put`]).
    local: Option<Arc<LocalFileSystem>>,
}

/// The `AWS_*` variables of this process's environment that configure an
/// S3 store (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_SESSION_TOKEN`, `AWS_DEFAULT_REGION`/`AWS_REGION`,
/// `AWS_ENDPOINT`/`AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, `AWS_TIMEOUT`, ...:
/// every name `object_store`'s `AmazonS3ConfigKey` knows), as
/// `(name, value)` pairs sorted by name. Others are left out.
pub fn aws_env_options() -> Vec<(String, String)> {
    let mut options: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| {
            k.starts_with("AWS_") && AmazonS3ConfigKey::from_str(&k.to_ascii_lowercase()).is_ok()
        })
        .collect();
    options.sort();
    options
}

impl ObjectStoreTiles {
    /// Opens the store a URL names: `file:///abs/path`, `memory:///` or
    /// `s3://bucket/prefix`; the URL's path is the prefix of every key. An
    /// S3 store is configured from the `AWS_*` environment variables
    /// ([`aws_env_options`]) with the default [`StoreLimits`], so a worker
    /// on another machine needs only the URL and the usual variables.
    /// Opening does no I/O: a missing bucket or an unreachable endpoint
    /// shows in the first call.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, aws_env_options(), &StoreLimits::default())
    }

    /// The store of `url` with its root moved down to `URL/SUB`, as a run's
    /// tiles live under `URL/RUN_ID/` ([`ObjectStoreTiles::prefixed`]).
    pub fn open_under(url: &str, sub: &str) -> Result<Self, StoreError> {
        Self::open(url)?.prefixed(sub)
    }

    /// Like [`ObjectStoreTiles::open`], with the S3 options given here
    /// instead of the environment's: the names of `object_store`'s
    /// `AmazonS3ConfigKey`, any case (`aws_endpoint`, `AWS_ALLOW_HTTP`,
    /// `region`, ...), applied after `limits`, so `timeout` and
    /// `connect_timeout` options win. An unknown name is an error. Local
    /// and memory URLs take no options and ignore them.
    pub fn open_with<I, K, V>(
        url: &str,
        options: I,
        limits: &StoreLimits,
    ) -> Result<Self, StoreError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: Into<String>,
    {
        let parsed = url::Url::parse(url).map_err(|source| StoreError::Url {
            spec: url.to_string(),
            source,
        })?;
        let open_error = open_url_error(url);
        // Before `object_store` parses it, which would only say that it
        // does not recognise the URL.
        if matches!(parsed.scheme(), "s3" | "s3a")
            && parsed.host_str().unwrap_or_default().is_empty()
        {
            return Err(StoreError::NoBucketInUrl {
                spec: url.to_string(),
            });
        }
        let (scheme, _) = ObjectStoreScheme::parse(&parsed).map_err(|e| open_error(e.into()))?;
        match scheme {
            ObjectStoreScheme::Local => {
                // What `parse_url` makes of a file:// URL, kept as the
                // concrete type for the direct tile path.
                let (_, prefix) = object_store::parse_url(&parsed).map_err(open_error)?;
                let fs = Arc::new(LocalFileSystem::new());
                Ok(ObjectStoreTiles {
                    store: fs.clone(),
                    prefix,
                    url: url.to_string(),
                    driver: Driver::Inline,
                    s3: None,
                    local: Some(fs),
                })
            }
            ObjectStoreScheme::Memory => {
                let (store, prefix) = object_store::parse_url(&parsed).map_err(open_error)?;
                Ok(Self::from_store(store, prefix, url))
            }
            ObjectStoreScheme::AmazonS3 => {
                let options = options
                    .into_iter()
                    .map(|(key, value)| (key.as_ref().to_string(), value.into()));
                Self::open_s3(url, &parsed, s3_builder(url, options, limits)?)
            }
            _ => Err(StoreError::UnsupportedScheme {
                spec: url.to_string(),
            }),
        }
    }

    /// Opens an S3 store from its builder ([`s3_builder`]): the bucket and
    /// endpoint its messages name, and the tokio runtime its requests run
    /// on.
    fn open_s3(url: &str, parsed: &url::Url, builder: AmazonS3Builder) -> Result<Self, StoreError> {
        // `s3://BUCKET/..` and `s3a://`; the https:// forms of AWS name
        // the bucket in ways only the builder parses, so messages quote
        // the URL instead.
        let bucket = match parsed.scheme() {
            "s3" | "s3a" => format!("`{}`", parsed.host_str().unwrap_or_default()),
            _ => format!("of `{url}`"),
        };
        let endpoint = builder
            .get_config_value(&AmazonS3ConfigKey::Endpoint)
            .unwrap_or_else(|| {
                let region = builder
                    .get_config_value(&AmazonS3ConfigKey::Region)
                    .unwrap_or_else(|| "us-east-1".to_string());
                format!("https://s3.{region}.amazonaws.com")
            });
        let allow_http = builder
            .get_config_value(&AmazonS3ConfigKey::Client(ClientConfigKey::AllowHttp))
            .is_some_and(|v| {
                matches!(
                    v.to_ascii_lowercase().as_str(),
                    "1" | "true" | "on" | "yes" | "y"
                )
            });
        if endpoint.starts_with("http://") && !allow_http {
            // Else every request fails with reqwest's bare "builder error".
            return Err(StoreError::PlainHttp {
                spec: url.to_string(),
                endpoint,
            });
        }
        let open_error = open_url_error(url);
        let store = builder.build().map_err(&open_error)?;
        let (_, path) = ObjectStoreScheme::parse(parsed).map_err(|e| open_error(e.into()))?;
        let prefix = object_store::path::Path::parse(path).map_err(|e| open_error(e.into()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(IO_THREADS)
            .thread_name("lpk-store-io")
            .enable_all()
            .build()
            .map_err(|source| StoreError::Runtime {
                spec: url.to_string(),
                source,
            })?;
        Ok(ObjectStoreTiles {
            store: Arc::new(store),
            prefix,
            url: url.to_string(),
            driver: Driver::Io(Arc::new(IoRuntime(Some(runtime)))),
            s3: Some(S3Place { bucket, endpoint }),
            local: None,
        })
    }

    /// Wraps an already built store that needs no tokio runtime (a local
    /// file system or an in-memory store); `url` is used in messages.
    pub fn from_store(
        store: Box<dyn ObjectStore>,
        prefix: object_store::path::Path,
        url: impl Into<String>,
    ) -> Self {
        ObjectStoreTiles {
            store: Arc::from(store),
            prefix,
            url: url.into(),
            driver: Driver::Inline,
            s3: None,
            local: None,
        }
    }

    /// The same store with its root moved down to `ROOT/SUB`: its keys,
    /// tiles and listings are relative to `ROOT/SUB`. `sub` is checked like
    /// a key ([`check_key`]), so it cannot climb out of the root. The two
    /// share their connections and runtime.
    pub fn prefixed(&self, sub: &str) -> Result<Self, StoreError> {
        check_key(sub)?;
        Ok(ObjectStoreTiles {
            store: Arc::clone(&self.store),
            prefix: self.join(sub),
            url: self.url_of(sub),
            driver: self.driver.clone(),
            s3: self.s3.clone(),
            local: self.local.clone(),
        })
    }

    /// The store's URL, root included.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL of a key, for messages.
    fn url_of(&self, key: &str) -> String {
        let sep = if self.url.ends_with('/') { "" } else { "/" };
        format!("{}{sep}{key}", self.url)
    }

    /// The object path of a checked key.
    fn join(&self, key: &str) -> object_store::path::Path {
        key.split('/')
            .fold(self.prefix.clone(), |loc, part| loc.join(part))
    }

    /// The file behind `key` when the store is a local directory (a
    /// `file://` URL, as `LocalFileSystem` maps keys to paths), else
    /// `None`: what a caller that appends to an object in place (which
    /// object stores cannot do) needs.
    pub fn local_path(&self, key: &str) -> Result<Option<PathBuf>, StoreError> {
        let (loc, name) = self.locate(key)?;
        self.local_file(&loc, &name)
    }

    /// Whether tile (`matrix`, `index`) is in the store, without reading
    /// it (a file's metadata, or an object's `HEAD`).
    pub fn contains(&self, matrix: &str, index: &[i64]) -> Result<bool, StoreError> {
        let (loc, name) = self.locate(&tile_key(matrix, index)?)?;
        if let Some(path) = self.local_file(&loc, &name)? {
            return path
                .try_exists()
                .map_err(|source| StoreError::Io { path, source });
        }
        let store = Arc::clone(&self.store);
        let headed = self.drive(&name, async move { store.head(&loc).await })?;
        Ok(self.unless_absent(&name, headed)?.is_some())
    }

    /// The object path of a key and its URL (for messages), after checking
    /// the key.
    fn locate(&self, key: &str) -> Result<(object_store::path::Path, String), StoreError> {
        check_key(key)?;
        Ok((self.join(key), self.url_of(key)))
    }

    /// Runs one call of the store to completion, on the calling thread or
    /// on the store's runtime (see [`Driver`]).
    fn drive<T, F>(&self, name: &str, call: F) -> Result<Result<T, object_store::Error>, StoreError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, object_store::Error>> + Send + 'static,
    {
        match &self.driver {
            Driver::Inline => Ok(futures::executor::block_on(call)),
            Driver::Io(io) => {
                let Some(rt) = io.0.as_ref() else {
                    return Err(StoreError::Background {
                        location: name.to_string(),
                        reason: "the store's runtime has shut down".to_string(),
                    });
                };
                // Spawned rather than `Runtime::block_on`, which panics on a
                // thread that is already inside an async runtime.
                futures::executor::block_on(rt.spawn(call)).map_err(|e| StoreError::Background {
                    location: name.to_string(),
                    reason: e.to_string(),
                })
            }
        }
    }

    /// The file of an object path when the store is a local file system
    /// (as `LocalFileSystem` maps it), else `None`.
    fn local_file(
        &self,
        loc: &object_store::path::Path,
        name: &str,
    ) -> Result<Option<PathBuf>, StoreError> {
        self.local
            .as_ref()
            .map(|fs| fs.path_to_filesystem(loc))
            .transpose()
            .map_err(|source| self.classify(name, source))
    }

    /// The raw bytes at an object path, or `None` when there is none.
    /// The object at `loc`, refused unread when it is longer than `limit`
    /// bytes (its size is known before its body is read).
    fn fetch(
        &self,
        loc: object_store::path::Path,
        name: &str,
        limit: u64,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let store = Arc::clone(&self.store);
        let fetched = self.drive(name, async move {
            let result = store.get(&loc).await?;
            if result.meta.size > limit {
                return Ok(Err(result.meta.size));
            }
            result.bytes().await.map(Ok)
        })?;
        match self.unless_absent(name, fetched)? {
            None => Ok(None),
            Some(Ok(bytes)) => Ok(Some(Vec::from(bytes))),
            Some(Err(size)) => Err(StoreError::TooLarge {
                location: name.to_string(),
                size,
                limit,
            }),
        }
    }

    /// An object store's answer, with "no such object" as `None`. S3
    /// answers 404 for a missing bucket too: that stays an error (saying
    /// so), never a missing object.
    fn unless_absent<T>(
        &self,
        name: &str,
        got: Result<T, object_store::Error>,
    ) -> Result<Option<T>, StoreError> {
        match got {
            Ok(v) => Ok(Some(v)),
            Err(source @ object_store::Error::NotFound { .. }) => {
                match self.classify(name, source) {
                    StoreError::ObjectStore { .. } => Ok(None),
                    e => Err(e),
                }
            }
            Err(source) => Err(self.classify(name, source)),
        }
    }

    fn store_bytes(
        &self,
        loc: object_store::path::Path,
        name: &str,
        bytes: Vec<u8>,
    ) -> Result<(), StoreError> {
        let store = Arc::clone(&self.store);
        let payload = PutPayload::from(bytes);
        self.drive(
            name,
            async move { store.put(&loc, payload).await.map(|_| ()) },
        )?
        .map_err(|source| self.classify(name, source))
    }

    fn remove(&self, loc: object_store::path::Path, name: &str) -> Result<(), StoreError> {
        let store = Arc::clone(&self.store);
        let deleted = self.drive(name, async move { store.delete(&loc).await })?;
        self.unless_absent(name, deleted).map(|_| ())
    }

    /// Turns an error of the object store into the [`StoreError`] that
    /// says what to do: a missing bucket, an endpoint that cannot be
    /// reached or does not answer in time, refused credentials; anything
    /// else as it came.
    fn classify(&self, location: &str, source: object_store::Error) -> StoreError {
        let location = location.to_string();
        let Some(s3) = &self.s3 else {
            return StoreError::ObjectStore { location, source };
        };
        let mut kind = None;
        let mut texts = String::new();
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&source);
        // Error chains are a handful of links deep; the bound only keeps a
        // cyclic chain from looping.
        for _ in 0..32 {
            let Some(e) = cause else { break };
            if let Some(http) = e.downcast_ref::<object_store::client::HttpError>() {
                kind = Some(http.kind());
            }
            texts.push_str(&e.to_string());
            cause = e.source();
        }
        let bucket = s3.bucket.clone();
        let endpoint = s3.endpoint.clone();
        if texts.contains("NoSuchBucket") {
            return StoreError::NoBucket {
                location,
                bucket,
                endpoint,
            };
        }
        // With no AWS_* credentials, object_store asks the EC2/ECS
        // metadata endpoints; their failure is not the store's.
        if texts.contains("169.254.169.254") || texts.contains("169.254.170.2") {
            return StoreError::NoCredentials { location, source };
        }
        match (kind, &source) {
            (Some(HttpErrorKind::Connect), _) => StoreError::Unreachable {
                location,
                endpoint,
                source,
            },
            (Some(HttpErrorKind::Timeout), _) => StoreError::TimedOut { location, source },
            (
                _,
                object_store::Error::PermissionDenied { .. }
                | object_store::Error::Unauthenticated { .. },
            ) => StoreError::Denied { location, source },
            _ if texts.contains("InvalidAccessKeyId")
                || texts.contains("SignatureDoesNotMatch") =>
            {
                StoreError::Denied { location, source }
            }
            _ => StoreError::ObjectStore { location, source },
        }
    }
}

/// The error of opening the store at `url` that `object_store` refused.
fn open_url_error(url: &str) -> impl Fn(object_store::Error) -> StoreError + '_ {
    move |source| StoreError::OpenUrl {
        spec: url.to_string(),
        source,
    }
}

/// An S3 store's builder for `url`: its client bounded by `limits`, then
/// `options` applied by name (an unknown name is an error).
fn s3_builder(
    url: &str,
    options: impl Iterator<Item = (String, String)>,
    limits: &StoreLimits,
) -> Result<AmazonS3Builder, StoreError> {
    let client = ClientOptions::new()
        .with_connect_timeout(limits.connect_timeout)
        .with_timeout(limits.request_timeout);
    let retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: MAX_BACKOFF,
            base: 2.0,
        },
        max_retries: limits.max_retries,
        retry_timeout: limits.retry_timeout,
    };
    let mut builder = AmazonS3Builder::new()
        .with_url(url)
        .with_client_options(client)
        .with_retry(retry);
    for (key, value) in options {
        let Ok(config) = AmazonS3ConfigKey::from_str(&key.to_ascii_lowercase()) else {
            return Err(StoreError::BadOption {
                spec: url.to_string(),
                key,
            });
        };
        builder = builder.with_config(config, value);
    }
    Ok(builder)
}

/// Writes a tile to a local store's file as `LocalFileSystem::put` writes
/// an object: to a staging file `PATH#N` next to it (which its listings
/// skip), then renamed over `PATH`, so a reader sees the old file or the
/// new one, never part of one; parent directories are made as needed. The
/// tile goes from memory to the file with one `writev` of its columns
/// (`npy::write`), with no `.npy` image of the whole tile in between.
fn write_local(path: &Path, tile: &Tile) -> Result<(), StoreError> {
    let io_err = |path: &Path, source: io::Error| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut n = 1u32;
    let (mut file, staging) = loop {
        let mut staging = path.as_os_str().to_owned();
        staging.push(format!("#{n}"));
        let staging = PathBuf::from(staging);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&staging)
        {
            Ok(f) => break (f, staging),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1_000 => n += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound && n < 1_000 => {
                let dir = path.parent().unwrap_or(Path::new("/"));
                std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
                n += 1;
            }
            Err(e) => return Err(io_err(&staging, e)),
        }
    };
    let written = npy::write(&mut file, tile).and_then(|()| std::fs::rename(&staging, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&staging);
        return Err(io_err(path, e));
    }
    Ok(())
}

impl TileStore for ObjectStoreTiles {
    fn get(&self, matrix: &str, index: &[i64]) -> Result<Option<Arc<Tile>>, StoreError> {
        let (loc, name) = self.locate(&tile_key(matrix, index)?)?;
        if let Some(path) = self.local_file(&loc, &name)? {
            return Ok(read_local(&path, &name)?.map(Arc::new));
        }
        // A tile's header and body: the most a `.npy` of the read limit
        // holds.
        let limit = ReadLimit::default();
        let most = u64::from(limit.max_header_bytes)
            .saturating_add(limit.max_elements.saturating_mul(8))
            .saturating_add(16);
        let Some(bytes) = self.fetch(loc, &name, most)? else {
            return Ok(None);
        };
        Ok(Some(Arc::new(npy::read_bytes(&bytes, &name, &limit)?)))
    }

    fn put(&self, matrix: &str, index: &[i64], tile: Arc<Tile>) -> Result<(), StoreError> {
        let (loc, name) = self.locate(&tile_key(matrix, index)?)?;
        if let Some(path) = self.local_file(&loc, &name)? {
            return write_local(&path, &tile);
        }
        self.store_bytes(loc, &name, npy::to_bytes(&tile))
    }

    fn delete(&self, matrix: &str, index: &[i64]) -> Result<(), StoreError> {
        let (loc, name) = self.locate(&tile_key(matrix, index)?)?;
        self.remove(loc, &name)
    }

    fn describe(&self) -> String {
        self.url.clone()
    }
}

impl BlobStore for ObjectStoreTiles {
    fn put_bytes(&self, key: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        let (loc, name) = self.locate(key)?;
        self.store_bytes(loc, &name, bytes)
    }

    fn get_bytes(&self, key: &str, limit: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let (loc, name) = self.locate(key)?;
        self.fetch(loc, &name, limit)
    }

    fn delete_key(&self, key: &str) -> Result<(), StoreError> {
        let (loc, name) = self.locate(key)?;
        self.remove(loc, &name)
    }

    fn list_sized(&self, prefix: &str) -> Result<Vec<(String, u64)>, StoreError> {
        let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
        let (loc, name) = if prefix.is_empty() {
            (self.prefix.clone(), self.url_of(""))
        } else {
            self.locate(prefix)?
        };
        let store = Arc::clone(&self.store);
        let under = loc.clone();
        let listed = self.drive(&name, async move {
            store
                .list(Some(&under))
                .map_ok(|meta| (meta.location, meta.size))
                .try_collect::<Vec<_>>()
                .await
        })?;
        let locations = listed.map_err(|source| self.classify(&name, source))?;
        let mut keys: Vec<(String, u64)> = locations
            .iter()
            .filter_map(|(l, size)| {
                let parts: Vec<String> = l
                    .prefix_match(&self.prefix)?
                    .map(|p| p.as_ref().to_string())
                    .collect();
                Some((parts.join("/"), *size))
            })
            .collect();
        keys.sort();
        Ok(keys)
    }
}
