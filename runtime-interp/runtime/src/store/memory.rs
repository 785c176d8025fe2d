//! [`MemoryStore`]: tiles in this process, decoded, in sharded hash maps so
//! that many worker threads put and get at once.

use super::{tile_key, StoreError, TileStore};
use crate::kernels::Tile;
use rustc_hash::FxHashMap;
use std::hash::{BuildHasher, BuildHasherDefault};
use std::sync::{Arc, RwLock};

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
