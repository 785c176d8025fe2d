//! [`NpyDirStore`]: tiles as `.npy` files in a directory, one file per
//! tile at `DIR/M/i_j.npy`.

use super::{read_local, tile_key, StoreError, TileStore};
use crate::kernels::Tile;
use crate::npy;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
        Ok(read_local(&path, &path.display().to_string())?.map(Arc::new))
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
