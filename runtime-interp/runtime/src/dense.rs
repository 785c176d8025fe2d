//! Dense matrices in and out of a run: generated inputs (`random:RxC`,
//! `spd:N`, `identity:N`), inferring parameters from input shapes, serving
//! input tiles cut from a dense matrix, assembling output tiles back into a
//! dense matrix, and the residual checks of `lpkc run --verify`.
//!
//! Tiling: with block size `B`, a matrix of `n` rows has `ceil(n / B)` tile
//! rows; every tile is `B` rows high except the last, which holds the rest
//! (the same for columns). A matrix declared with one dimension (`A[N]`)
//! is cut into row blocks that span all columns.

use crate::exec::{TileError, TileSink, TileSource};
use crate::kernels::Tile;
use lpk_model::expr::Node;
use lpk_model::program::{Instance, Program, Role};
use lpk_model::MatrixId;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// How an input matrix is given on the command line.
#[derive(Clone, Debug, PartialEq)]
pub enum InputSpec {
    /// A `.npy` file.
    File(std::path::PathBuf),
    /// Uniform random entries in [-1, 1).
    Random {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
    /// A random symmetric positive definite matrix (diagonally dominant).
    Spd(usize),
    /// The identity.
    Identity(usize),
}

/// The largest generated matrix, so a typo cannot allocate terabytes.
pub const MAX_GENERATED_ELEMENTS: usize = crate::npy::MAX_ELEMENTS;

/// Why an `--input` spec does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InputSpecError {
    /// A dimension that is not a non-negative integer.
    #[error("`{spec}`: {what} must be a positive integer, found `{found}`")]
    NotAnInteger {
        /// The whole spec.
        spec: String,
        /// Which dimension (`ROWS`, `COLS`, `N`).
        what: &'static str,
        /// The text found.
        found: String,
    },
    /// A dimension of 0.
    #[error("`{spec}`: {what} must be at least 1")]
    Zero {
        /// The whole spec.
        spec: String,
        /// Which dimension.
        what: &'static str,
    },
    /// `random:` without `ROWSxCOLS`.
    #[error("`{spec}`: expected random:ROWSxCOLS, e.g. random:1000x500")]
    RandomSyntax {
        /// The whole spec.
        spec: String,
    },
    /// An empty spec.
    #[error("an empty input; expected a .npy file, random:RxC, spd:N or identity:N")]
    Empty,
    /// A generated matrix above [`MAX_GENERATED_ELEMENTS`].
    #[error("`{spec}`: {rows} x {cols} is more than {MAX_GENERATED_ELEMENTS} elements")]
    TooLarge {
        /// The whole spec.
        spec: String,
        /// Rows asked for.
        rows: usize,
        /// Columns asked for.
        cols: usize,
    },
}

/// Where an inferred parameter value comes from: one dimension of an input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtentSource {
    /// The input matrix's name.
    pub matrix: String,
    /// Elements along the dimension.
    pub len: usize,
    /// 0 for rows, 1 for columns.
    pub dim: usize,
}

impl ExtentSource {
    fn text(&self, block: usize) -> String {
        format!(
            "{} has {} {} (block {block})",
            self.matrix,
            self.len,
            if self.dim == 0 { "rows" } else { "columns" },
        )
    }
}

/// Why the input matrices do not fit the program: found when the
/// parameters are bound, before any task runs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// Two inputs imply different values of one parameter.
    #[error("cannot infer `{param}`: {} gives {param} = {}, but {} gives {}", first.text(*block), tiles_of(first.len, *block), second.text(*block), tiles_of(second.len, *block))]
    InferConflict {
        /// The parameter.
        param: String,
        /// The first dimension that gave a value (its tile count).
        first: ExtentSource,
        /// The dimension that disagrees.
        second: ExtentSource,
        /// The block size.
        block: usize,
    },
    /// An input matrix without data.
    #[error("input matrix `{matrix}` needs data: --input {matrix}=FILE.npy (or random:RxC, spd:N, identity:N)")]
    Missing {
        /// The matrix.
        matrix: String,
    },
    /// An input with more than two dimensions.
    #[error("input matrix `{matrix}` has {dims} dimensions; only 1-D (row blocks) and 2-D inputs can be given as dense matrices")]
    Dimensions {
        /// The matrix.
        matrix: String,
        /// Its number of dimensions.
        dims: usize,
    },
    /// An input whose tile grid is not the one the instance expects.
    #[error("input `{matrix}` is {rows} x {cols}, which with block {block} is {}, but the program expects {matrix}[{}] for {}", grid_text(want.len() == 1, tiles_of(*rows, *block), tiles_of(*cols, *block)), join(want), bound_text(params))]
    Grid {
        /// The matrix.
        matrix: String,
        /// Rows of the data.
        rows: usize,
        /// Columns of the data.
        cols: usize,
        /// The block size.
        block: usize,
        /// The extents (in tiles) the instance expects; one extent for a
        /// 1-D matrix of row blocks.
        want: Vec<i64>,
        /// The bound parameters, in declaration order.
        params: Vec<(String, i64)>,
    },
    /// Two input dimensions a kernel ties have different sizes.
    #[error(transparent)]
    Disagree(Box<crate::shapes::Disagreement>),
}

fn grid_text(one_d: bool, rows: usize, cols: usize) -> String {
    if one_d {
        format!("{rows} row blocks")
    } else {
        format!("{rows} x {cols} tiles")
    }
}

fn join(v: &[i64]) -> String {
    v.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
}

fn bound_text(params: &[(String, i64)]) -> String {
    if params.is_empty() {
        "its extents".to_string()
    } else {
        params
            .iter()
            .map(|(n, v)| format!("{n} = {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Why output tiles cannot be assembled into one dense matrix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AssembleError {
    /// Tiles that span more than two dimensions.
    #[error("its tiles span {dims} dimensions")]
    Dimensions {
        /// The number of dimensions.
        dims: usize,
    },
    /// A tile index beyond the grid.
    #[error("tile {index:?} is outside the grid")]
    OutsideGrid {
        /// The tile index.
        index: Vec<i64>,
    },
    /// Two tiles of one tile row (or column) with different heights
    /// (widths).
    #[error("tiles of tile {what} {k} have {first} and {second} {what}s")]
    Inconsistent {
        /// "row" or "column".
        what: &'static str,
        /// The tile row or column.
        k: usize,
        /// The size seen first.
        first: usize,
        /// The size that differs.
        second: usize,
    },
    /// A result above [`MAX_GENERATED_ELEMENTS`].
    #[error("{rows} x {cols} is too large to assemble")]
    TooLarge {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
}

/// Why [`run`] failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The inputs do not fit the program.
    #[error(transparent)]
    Shape(#[from] ShapeError),
    /// The parameters violate the program's contract.
    #[error(transparent)]
    Bind(#[from] lpk_model::program::BindError),
    /// The run itself failed.
    #[error(transparent)]
    Exec(#[from] crate::exec::ExecError),
}

impl InputSpec {
    /// Parses `random:RxC`, `spd:N`, `identity:N`, or a file path.
    pub fn parse(s: &str) -> Result<InputSpec, InputSpecError> {
        let dim = |t: &str, what: &'static str| -> Result<usize, InputSpecError> {
            let v: usize = t.trim().parse().map_err(|_| InputSpecError::NotAnInteger {
                spec: s.to_string(),
                what,
                found: t.to_string(),
            })?;
            if v == 0 {
                return Err(InputSpecError::Zero {
                    spec: s.to_string(),
                    what,
                });
            }
            Ok(v)
        };
        let spec = if let Some(rest) = s.strip_prefix("random:") {
            let (r, c) =
                rest.split_once(['x', 'X'])
                    .ok_or_else(|| InputSpecError::RandomSyntax {
                        spec: s.to_string(),
                    })?;
            InputSpec::Random {
                rows: dim(r, "ROWS")?,
                cols: dim(c, "COLS")?,
            }
        } else if let Some(rest) = s.strip_prefix("spd:") {
            InputSpec::Spd(dim(rest, "N")?)
        } else if let Some(rest) = s.strip_prefix("identity:") {
            InputSpec::Identity(dim(rest, "N")?)
        } else if s.is_empty() {
            return Err(InputSpecError::Empty);
        } else {
            InputSpec::File(s.into())
        };
        let (r, c) = match spec {
            InputSpec::Random { rows, cols } => (rows, cols),
            InputSpec::Spd(n) | InputSpec::Identity(n) => (n, n),
            InputSpec::File(_) => (0, 0),
        };
        if r.saturating_mul(c) > MAX_GENERATED_ELEMENTS {
            return Err(InputSpecError::TooLarge {
                spec: s.to_string(),
                rows: r,
                cols: c,
            });
        }
        Ok(spec)
    }

    /// Generates the matrix (`File` is not generated: `None`). `seed` makes
    /// random matrices reproducible; each input gets its own stream.
    pub fn generate(&self, seed: u64) -> Option<Tile> {
        let mut rng = lpk_model::rng::SplitMix64::new(seed ^ 0x9e37_79b9_7f4a_7c15);
        Some(match *self {
            InputSpec::File(_) => return None,
            InputSpec::Random { rows, cols } => Tile::from_fn(rows, cols, |_, _| rng.uniform()),
            InputSpec::Identity(n) => Tile::from_fn(n, n, |i, j| if i == j { 1.0 } else { 0.0 }),
            InputSpec::Spd(n) => {
                // Symmetric with entries in [-1, 1) and a diagonal of n + 1:
                // strictly diagonally dominant, hence positive definite.
                let mut m = Tile::zeros(n, n);
                for j in 0..n {
                    for i in j..n {
                        let v = if i == j {
                            n as f64 + 1.0 + rng.uniform()
                        } else {
                            rng.uniform()
                        };
                        m[(i, j)] = v;
                        m[(j, i)] = v;
                    }
                }
                m
            }
        })
    }
}

/// The number of tiles of `n` elements with block `b`.
pub(crate) fn tiles_of(n: usize, b: usize) -> usize {
    n.div_ceil(b.max(1))
}

/// Infers unbound parameters from the input shapes (rows, columns): a
/// parameter that is, on its own, the extent of an input matrix's
/// dimension becomes the tile count of that dimension. Returns `(name,
/// value)` pairs for parameters not in `given`; conflicting inferences
/// are an error.
pub(crate) fn infer_params_from_shapes(
    program: &Program,
    given: &[(String, i64)],
    inputs: &BTreeMap<MatrixId, (usize, usize)>,
    block: usize,
) -> Result<Vec<(String, i64)>, ShapeError> {
    let mut inferred: Vec<(String, i64, ExtentSource)> = Vec::new();
    for (&m, &(rows, cols)) in inputs {
        let Some(decl) = program.get_matrix(m) else {
            continue;
        };
        let dims = [rows, cols];
        for (d, &e) in decl.extents.iter().enumerate().take(2) {
            let Some(&Node::Param(p)) = program.exprs.get(e) else {
                continue;
            };
            let Some(param) = program.params.get(p as usize) else {
                continue;
            };
            if given.iter().any(|(n, _)| *n == param.name) {
                continue;
            }
            let value = tiles_of(dims[d], block) as i64;
            let why = ExtentSource {
                matrix: decl.name.clone(),
                len: dims[d],
                dim: d,
            };
            match inferred.iter().find(|(n, _, _)| *n == param.name) {
                Some((_, v, first)) if *v != value => {
                    return Err(ShapeError::InferConflict {
                        param: param.name.clone(),
                        first: first.clone(),
                        second: why,
                        block,
                    })
                }
                Some(_) => {}
                None => inferred.push((param.name.clone(), value, why)),
            }
        }
    }
    Ok(inferred.into_iter().map(|(n, v, _)| (n, v)).collect())
}

/// The shape (rows, columns) of each dense input.
pub(crate) fn shapes_of(inputs: &BTreeMap<MatrixId, Tile>) -> BTreeMap<MatrixId, (usize, usize)> {
    inputs
        .iter()
        .map(|(&m, t)| (m, (t.nrows(), t.ncols())))
        .collect()
}

/// Checks that every input matrix has the tile grid the instance expects
/// (1-D matrices: row blocks), from the shapes alone, so a file's header
/// is enough.
pub(crate) fn check_grids(
    inst: &Instance<'_>,
    inputs: &BTreeMap<MatrixId, (usize, usize)>,
    block: usize,
) -> Result<(), ShapeError> {
    let program = inst.program;
    for (m, decl) in program.matrix_ids() {
        if decl.role != Role::Input {
            continue;
        }
        let Some(&(rows, cols)) = inputs.get(&m) else {
            return Err(ShapeError::Missing {
                matrix: decl.name.clone(),
            });
        };
        let ext = inst.extents.get(m.index()).cloned().unwrap_or_default();
        let have = [tiles_of(rows, block), tiles_of(cols, block)];
        let ok = match ext.len() {
            1 => have[0] as i64 == ext[0],
            2 => have[0] as i64 == ext[0] && have[1] as i64 == ext[1],
            dims => {
                return Err(ShapeError::Dimensions {
                    matrix: decl.name.clone(),
                    dims,
                })
            }
        };
        if !ok {
            return Err(ShapeError::Grid {
                matrix: decl.name.clone(),
                rows,
                cols,
                block,
                want: ext,
                params: named_params(inst),
            });
        }
    }
    Ok(())
}

/// Input tiles cut from dense matrices.
pub(crate) struct DenseSource<'a> {
    /// Dense data per input matrix index.
    pub inputs: &'a BTreeMap<MatrixId, Tile>,
    /// Extent count per matrix (1-D matrices are row blocks).
    pub dims: Vec<usize>,
    /// Block size.
    pub block: usize,
}

impl TileSource for DenseSource<'_> {
    fn input(&self, matrix: MatrixId, index: &[i64]) -> Result<Arc<Tile>, TileError> {
        let one_d = self.dims.get(matrix.index()) == Some(&1);
        cut_tile(self.inputs, matrix, index, self.block, one_d)
    }

    fn block(&self) -> Option<usize> {
        Some(self.block)
    }
}

/// The parameters of `inst` with their values, in declaration order.
pub(crate) fn named_params(inst: &Instance<'_>) -> Vec<(String, i64)> {
    let names = inst.program.params.iter().map(|p| p.name.clone());
    names.zip(inst.params.iter().copied()).collect()
}

/// A whole input matrix that input tiles are cut from.
pub(crate) trait Cut {
    /// Its rows and columns.
    fn size(&self) -> (usize, usize);
    /// The `nr × nc` block at row `r0`, column `c0`.
    fn cut(&self, r0: usize, c0: usize, nr: usize, nc: usize) -> Result<Tile, TileError>;
}

impl Cut for Tile {
    fn size(&self) -> (usize, usize) {
        (self.nrows(), self.ncols())
    }

    fn cut(&self, r0: usize, c0: usize, nr: usize, nc: usize) -> Result<Tile, TileError> {
        Ok(self.as_ref().submatrix(r0, c0, nr, nc).to_owned())
    }
}

/// Tile `index` of input `matrix` (a row block if `one_d`), with block
/// `block`, cut from the matrix's data in `inputs`.
pub(crate) fn cut_tile<D: Cut>(
    inputs: &BTreeMap<MatrixId, D>,
    matrix: MatrixId,
    index: &[i64],
    block: usize,
    one_d: bool,
) -> Result<Arc<Tile>, TileError> {
    let data = inputs.get(&matrix).ok_or(TileError::NoData { matrix })?;
    let (rows, cols) = data.size();
    let (r0, nr, c0, nc) = tile_rect(block, index, rows, cols, one_d)?;
    Ok(Arc::new(data.cut(r0, c0, nr, nc)?))
}

/// Where tile `index` of a `rows × cols` input lies, with block `block`:
/// `(first row, rows, first column, columns)`, edge tiles clipped. A 1-D
/// matrix (`one_d`) is a column of row blocks, each with every column.
pub fn tile_rect(
    block: usize,
    index: &[i64],
    rows: usize,
    cols: usize,
    one_d: bool,
) -> Result<(usize, usize, usize, usize), TileError> {
    let span = |i: i64, n: usize| -> Result<(usize, usize), TileError> {
        let start = usize::try_from(i)
            .ok()
            .and_then(|i| i.checked_mul(block))
            .filter(|&s| s < n)
            .ok_or(TileError::OutsideData { index: i, len: n })?;
        Ok((start, block.min(n - start)))
    };
    let (r0, nr) = span(*index.first().unwrap_or(&0), rows)?;
    let (c0, nc) = if one_d {
        (0, cols)
    } else {
        span(*index.get(1).unwrap_or(&0), cols)?
    };
    Ok((r0, nr, c0, nc))
}

/// Output tiles by (matrix, index).
pub(crate) type TileMap = BTreeMap<(MatrixId, Vec<i64>), Arc<Tile>>;

/// Collects output tiles in memory.
#[derive(Default)]
pub struct CollectSink {
    tiles: Mutex<TileMap>,
}

impl TileSink for CollectSink {
    fn output(&self, matrix: MatrixId, index: &[i64], tile: Arc<Tile>) -> Result<(), TileError> {
        let mut t = self.tiles.lock().unwrap_or_else(|e| e.into_inner());
        if t.insert((matrix, index.to_vec()), tile).is_some() {
            return Err(TileError::WrittenTwice {
                matrix,
                index: index.to_vec(),
            });
        }
        Ok(())
    }
}

impl CollectSink {
    /// Every collected tile.
    pub fn into_tiles(self) -> TileMap {
        self.tiles.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

/// Where the tiles of a matrix go in its dense form: the height of every
/// tile row and the width of every tile column ([`tile_layout`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileLayout {
    /// The height of each tile row.
    pub heights: Vec<usize>,
    /// The width of each tile column.
    pub widths: Vec<usize>,
}

impl TileLayout {
    /// The dense matrix's rows.
    pub fn rows(&self) -> usize {
        self.heights.iter().sum()
    }

    /// The dense matrix's columns.
    pub fn cols(&self) -> usize {
        self.widths.iter().sum()
    }

    /// The top-left element of tile (i, j).
    pub fn at(&self, i: usize, j: usize) -> (usize, usize) {
        (
            self.heights.iter().take(i).sum(),
            self.widths.iter().take(j).sum(),
        )
    }
}

/// The layout of `tiles` on a grid of `tr` × `tc` tiles, as [`assemble`]
/// places them: a tile row is as high as its tiles, a row with no tile at
/// all as high as the other rows when they all agree, else `block`, so
/// that a tree's outputs, whose tiles are all smaller than the block, keep
/// that size where no task wrote; columns alike. A tile index is (row,
/// column), a missing column 0. A tile outside the grid, tiles of one row
/// (column) of different heights (widths) and a result above
/// [`MAX_GENERATED_ELEMENTS`] are errors.
pub fn tile_layout<'a>(
    tr: usize,
    tc: usize,
    tiles: impl Iterator<Item = (&'a [i64], &'a Tile)>,
    block: usize,
) -> Result<TileLayout, AssembleError> {
    let mut heights: Vec<Option<usize>> = vec![None; tr];
    let mut widths: Vec<Option<usize>> = vec![None; tc];
    for (idx, t) in tiles {
        let i = *idx.first().unwrap_or(&0) as usize;
        let j = *idx.get(1).unwrap_or(&0) as usize;
        for (slot, v, what, k) in [
            (heights.get_mut(i), t.nrows(), "row", i),
            (widths.get_mut(j), t.ncols(), "column", j),
        ] {
            let Some(slot) = slot else {
                return Err(AssembleError::OutsideGrid {
                    index: idx.to_vec(),
                });
            };
            match slot {
                Some(h) if *h != v => {
                    return Err(AssembleError::Inconsistent {
                        what,
                        k,
                        first: *h,
                        second: v,
                    })
                }
                _ => *slot = Some(v),
            }
        }
    }
    let fill = |sizes: &[Option<usize>]| -> usize {
        let mut known = sizes.iter().flatten();
        match known.next() {
            Some(&first) if known.all(|&s| s == first) => first,
            _ => block,
        }
    };
    let (fill_h, fill_w) = (fill(&heights), fill(&widths));
    let layout = TileLayout {
        heights: heights.into_iter().map(|h| h.unwrap_or(fill_h)).collect(),
        widths: widths.into_iter().map(|w| w.unwrap_or(fill_w)).collect(),
    };
    let (rows, cols) = (layout.rows(), layout.cols());
    if rows.saturating_mul(cols) > MAX_GENERATED_ELEMENTS {
        return Err(AssembleError::TooLarge { rows, cols });
    }
    Ok(layout)
}

/// Assembles the tiles of a 2-D matrix (or 1-D row blocks) into one dense
/// matrix, on their [`tile_layout`]; unwritten tiles are zero.
pub fn assemble(
    extents: &[i64],
    tiles: &BTreeMap<Vec<i64>, Arc<Tile>>,
    block: usize,
) -> Result<Tile, AssembleError> {
    let (tr, tc) = match *extents {
        [r] => (r.max(0) as usize, 1),
        [r, c] => (r.max(0) as usize, c.max(0) as usize),
        _ => {
            return Err(AssembleError::Dimensions {
                dims: extents.len(),
            })
        }
    };
    let layout = tile_layout(
        tr,
        tc,
        tiles.iter().map(|(idx, t)| (idx.as_slice(), &**t)),
        block,
    )?;
    let mut out = Tile::zeros(layout.rows(), layout.cols());
    let starts = |sizes: &[usize]| -> Vec<usize> {
        sizes
            .iter()
            .scan(0, |s, h| {
                let at = *s;
                *s += h;
                Some(at)
            })
            .collect()
    };
    let (row_at, col_at) = (starts(&layout.heights), starts(&layout.widths));
    for (idx, t) in tiles {
        let i = *idx.first().unwrap_or(&0) as usize;
        let j = *idx.get(1).unwrap_or(&0) as usize;
        out.as_mut()
            .submatrix_mut(row_at[i], col_at[j], t.nrows(), t.ncols())
            .copy_from(t.as_ref());
    }
    Ok(out)
}
