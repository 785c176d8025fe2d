//! A run's inputs: each matrix generated in memory or opened as a `.npy`
//! file (header only), and the source that cuts input tiles from them as
//! tasks ask, with positioned reads for files.

use crate::dense;
use crate::dense::InputSpec;
use crate::exec::{TileError, TileSource};
use crate::kernels::Tile;
use crate::npy::{NpyError, NpyTiles};
use faer::MatRef;
use lpk_model::program::Program;
use lpk_model::MatrixId;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

/// An input matrix of a run.
#[derive(Debug)]
pub enum Input<'a> {
    /// A matrix in memory (generated, or given by a caller).
    Dense(Tile),
    /// A caller's row-major buffer (a NumPy array's), borrowed for the run.
    Borrowed {
        /// The elements, row by row.
        data: &'a [f64],
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
    /// A `.npy` file, read tile by tile.
    File(NpyTiles),
}

impl Input<'_> {
    /// Opens a file spec (header only) or generates the matrix; `seed`
    /// makes random matrices reproducible.
    pub fn open(spec: &InputSpec, seed: u64) -> Result<Input<'static>, NpyError> {
        match spec {
            InputSpec::File(path) => Ok(Input::File(NpyTiles::open(path)?)),
            other => Ok(Input::Dense(
                other.generate(seed).unwrap_or_else(|| Tile::zeros(0, 0)),
            )),
        }
    }

    /// The shape (rows, columns).
    pub fn shape(&self) -> (usize, usize) {
        match self {
            Input::Dense(t) => (t.nrows(), t.ncols()),
            Input::Borrowed { rows, cols, .. } => (*rows, *cols),
            Input::File(f) => f.shape(),
        }
    }

    /// The whole matrix (read from the file if it is one).
    pub fn dense(&self) -> Result<Cow<'_, Tile>, NpyError> {
        match self {
            Input::Dense(t) => Ok(Cow::Borrowed(t)),
            Input::Borrowed { data, rows, cols } => Ok(Cow::Owned(
                MatRef::from_row_major_slice(data, *rows, *cols).to_owned(),
            )),
            Input::File(f) => Ok(Cow::Owned(f.read_all()?)),
        }
    }
}

impl dense::Cut for Input<'_> {
    fn size(&self) -> (usize, usize) {
        self.shape()
    }

    fn cut(&self, r0: usize, c0: usize, nr: usize, nc: usize) -> Result<Tile, TileError> {
        match self {
            Input::Dense(t) => dense::Cut::cut(t, r0, c0, nr, nc),
            Input::Borrowed { data, rows, cols } => {
                Ok(MatRef::from_row_major_slice(data, *rows, *cols)
                    .submatrix(r0, c0, nr, nc)
                    .to_owned())
            }
            Input::File(f) => f
                .read_block(r0, c0, nr, nc)
                .map_err(|e| TileError::Npy(Box::new(e))),
        }
    }
}

/// Input tiles cut, as tasks ask for them, from [`Input`]s: with block
/// `B`, tile `(i, j)` holds rows `i·B..` and columns `j·B..` (1-D matrices:
/// row blocks spanning all columns).
pub struct InputSource<'a, 'd> {
    inputs: &'a BTreeMap<MatrixId, Input<'d>>,
    one_d: Vec<bool>,
    block: usize,
}

impl<'a, 'd> InputSource<'a, 'd> {
    /// A source over `inputs` (by matrix index) of `program`.
    pub fn new(program: &Program, inputs: &'a BTreeMap<MatrixId, Input<'d>>, block: usize) -> Self {
        InputSource {
            inputs,
            one_d: program
                .matrices
                .iter()
                .map(|m| m.extents.len() == 1)
                .collect(),
            block,
        }
    }
}

impl TileSource for InputSource<'_, '_> {
    fn input(&self, matrix: MatrixId, index: &[i64]) -> Result<Arc<Tile>, TileError> {
        let one_d = self.one_d.get(matrix.index()) == Some(&true);
        dense::cut_tile(self.inputs, matrix, index, self.block, one_d)
    }

    fn block(&self) -> Option<usize> {
        Some(self.block)
    }
}
