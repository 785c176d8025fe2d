//! A run's tiles: its store (under the run's id) and the workers' cache.

use crate::error::ClusterError;
use lpk_model::MatrixId;
use lpk_runtime::kernels::Tile;
use lpk_runtime::store::{has_url_scheme, ObjectStoreTiles};
use lru::LruCache;
use std::sync::{Arc, Mutex};

/// The store of run `run`: `URL/RUN/` (tiles at `URL/RUN/M/i_j.npy`).
/// Workers on other machines open the same URL, so it must be one they
/// reach: an object store URL (`file:///shared/dir`, `s3://bucket/prefix`)
/// or a shared directory's absolute path.
pub(crate) fn open_run_store(url: &str, run: &str) -> Result<ObjectStoreTiles, ClusterError> {
    // A directory is opened as a file:// URL: object_store writes each
    // tile to a temporary file and renames it (atomic, no fsync per tile).
    let spec = if has_url_scheme(url) {
        format!("{}/{run}", url.trim_end_matches('/'))
    } else {
        let dir = std::path::Path::new(url).join(run);
        url::Url::from_file_path(&dir)
            .map(String::from)
            .map_err(|()| ClusterError::Refused(format!("--store `{url}`: not an absolute path")))?
    };
    ObjectStoreTiles::open(&spec).map_err(|source| ClusterError::Store {
        store: spec.clone(),
        source: Box::new(source),
    })
}

/// Checks a store URL given to `submit`: one that separate worker
/// processes can reach (not the in-process `mem`).
pub fn check_store_url(url: &str) -> Result<(), ClusterError> {
    if url.is_empty() || url == "mem" || url.starts_with("memory:") {
        return Err(ClusterError::Refused(format!(
            "--store `{url}`: workers are separate processes and need a store they all reach: \
             a shared directory (an absolute path or file:///abs/path) or an object store URL (s3://bucket/prefix)"
        )));
    }
    if lpk_runtime::store::is_root_dir(url) {
        return Err(ClusterError::Refused(format!(
            "--store `{url}`: the file system's root is not a tile store (each run would put \
             a directory in /); name a directory for the tiles, e.g. /srv/lpk-tiles"
        )));
    }
    if !has_url_scheme(url) && !std::path::Path::new(url).is_absolute() {
        return Err(ClusterError::Refused(format!(
            "--store `{url}`: give an absolute path (workers may run in other directories), or a URL"
        )));
    }
    Ok(())
}

/// A tile's digest: BLAKE3 over its rows, its columns (each a
/// little-endian `u64`) and its values column by column (little-endian
/// `f64` bits), as 32 hex digits (128 bits). The writer of an output tile
/// records it in Redis; `collect` computes it again from what the store
/// holds, so a tile changed, truncated or replaced in the store after its
/// writer is refused instead of assembled. A cryptographic hash: whoever
/// can write the store but not Redis cannot make a tile that passes.
pub fn digest(tile: &Tile) -> String {
    let mut h = blake3::Hasher::new();
    h.update(&(tile.nrows() as u64).to_le_bytes());
    h.update(&(tile.ncols() as u64).to_le_bytes());
    // Each column's elements as little-endian bytes, gathered into long
    // updates: BLAKE3 hashes a long input many chunks at a time, a
    // column's 4 KiB a few. The bytes fed do not depend on the updates'
    // lengths, so neither does the digest.
    const UPDATE: usize = 256 << 10;
    let mut buf: Vec<u8> = Vec::with_capacity(UPDATE + tile.nrows() * 8);
    for j in 0..tile.ncols() {
        let col: &[f64] = tile.col_as_slice(j);
        if cfg!(target_endian = "little") {
            buf.extend_from_slice(bytemuck::cast_slice(col));
        } else {
            for v in col {
                buf.extend_from_slice(&v.to_bits().to_le_bytes());
            }
        }
        if buf.len() >= UPDATE {
            h.update(&buf);
            buf.clear();
        }
    }
    h.update(&buf);
    h.finalize().to_hex()[..32].to_string()
}

/// The key of a cached tile: run, matrix, index.
type Key = (Arc<str>, MatrixId, Vec<i64>);

/// Tiles a worker keeps because its tasks may read them again: bounded by
/// bytes, least recently used first out.
pub struct TileCache {
    inner: Mutex<Inner>,
    capacity: u64,
}

struct Inner {
    map: LruCache<Key, Arc<Tile>>,
    bytes: u64,
}

fn bytes_of(t: &Tile) -> u64 {
    (t.nrows() * t.ncols() * 8) as u64
}

impl TileCache {
    /// A cache of at most `capacity` bytes of tiles.
    pub fn new(capacity: u64) -> TileCache {
        TileCache {
            inner: Mutex::new(Inner {
                map: LruCache::unbounded(),
                bytes: 0,
            }),
            capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tile, if cached.
    pub fn get(&self, run: &Arc<str>, matrix: MatrixId, index: &[i64]) -> Option<Arc<Tile>> {
        let key = (run.clone(), matrix, index.to_vec());
        self.lock().map.get(&key).cloned()
    }

    /// Keeps a tile (a tile larger than the whole cache is not kept).
    pub fn put(&self, run: &Arc<str>, matrix: MatrixId, index: &[i64], tile: Arc<Tile>) {
        let size = bytes_of(&tile);
        if size > self.capacity {
            return;
        }
        let mut inner = self.lock();
        if let Some(old) = inner.map.put((run.clone(), matrix, index.to_vec()), tile) {
            inner.bytes -= bytes_of(&old);
        }
        inner.bytes += size;
        while inner.bytes > self.capacity {
            match inner.map.pop_lru() {
                Some((_, t)) => inner.bytes -= bytes_of(&t),
                None => break,
            }
        }
    }

    /// Forgets one tile.
    pub fn remove(&self, run: &Arc<str>, matrix: MatrixId, index: &[i64]) {
        let mut inner = self.lock();
        if let Some(t) = inner.map.pop(&(run.clone(), matrix, index.to_vec())) {
            inner.bytes -= bytes_of(&t);
        }
    }

    /// Forgets every tile of a run (it finished or failed).
    pub fn forget_run(&self, run: &str) {
        let mut inner = self.lock();
        let keys: Vec<Key> = inner
            .map
            .iter()
            .filter(|(k, _)| &*k.0 == run)
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            if let Some(t) = inner.map.pop(&k) {
                inner.bytes -= bytes_of(&t);
            }
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_hashes_the_shape_then_each_column_little_endian() {
        // The bytes the digest is defined over, built element by element,
        // as a worker of another machine would feed them.
        let tile = Tile::from_fn(5, 3, |i, j| (i as f64 - 2.5) * 1e-3 + j as f64);
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&5u64.to_le_bytes());
        bytes.extend_from_slice(&3u64.to_le_bytes());
        for j in 0..3 {
            for i in 0..5 {
                bytes.extend_from_slice(&tile[(i, j)].to_bits().to_le_bytes());
            }
        }
        let want = blake3::hash(&bytes).to_hex()[..32].to_string();
        assert_eq!(digest(&tile), want);
        assert_ne!(digest(&Tile::zeros(3, 5)), digest(&Tile::zeros(5, 3)));
    }

    #[test]
    fn cache_stays_within_its_bytes() {
        let run: Arc<str> = Arc::from("r");
        let cache = TileCache::new(3 * 8 * 4);
        let m = lpk_model::MatrixId::from_index(0).expect("a small index");
        for i in 0..10 {
            cache.put(&run, m, &[i], Arc::new(Tile::zeros(2, 2)));
        }
        assert_eq!(cache.bytes(), 3 * 32);
        assert!(cache.get(&run, m, &[9]).is_some());
        assert!(cache.get(&run, m, &[0]).is_none());
        cache.put(&run, m, &[99], Arc::new(Tile::zeros(10, 10)));
        assert!(cache.get(&run, m, &[99]).is_none(), "larger than the cache");
        cache.forget_run("r");
        assert_eq!(cache.bytes(), 0);
    }

    #[test]
    fn stores_must_be_shared() {
        assert!(check_store_url("mem").is_err());
        assert!(check_store_url("relative/dir").is_err());
        assert!(check_store_url("/abs/dir").is_ok());
        assert!(check_store_url("file:///abs/dir").is_ok());
        assert!(check_store_url("s3://bucket/p").is_ok());
    }
}
