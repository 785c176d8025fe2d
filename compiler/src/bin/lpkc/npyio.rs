//! `.npy` files for `lpkc run`.
use runtime_interp::kernels::Tile;
use std::path::Path;

/// Reads a 2-D f64 matrix.
pub fn read(path: &Path) -> Result<Tile, String> {
    Err(format!("{}: .npy input is not wired yet", path.display()))
}

/// Writes a matrix.
pub fn write(path: &Path, _t: &Tile) -> Result<(), String> {
    Err(format!("{}: .npy output is not wired yet", path.display()))
}
