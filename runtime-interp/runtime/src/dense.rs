//! Dense matrices in and out of a run: generated inputs (`random:RxC`,
//! `spd:N`, `identity:N`), inferring parameters from input shapes, serving
//! input tiles cut from a dense matrix, assembling output tiles back into a
//! dense matrix, and the residual checks of `lpkc run --verify`.
//!
//! Tiling: with block size `B`, a matrix of `n` rows has `ceil(n / B)` tile
//! rows; every tile is `B` rows high except the last, which holds the rest
//! (the same for columns). A matrix declared with one dimension (`A[N]`)
//! is cut into row blocks that span all columns.

use crate::exec::{TileSink, TileSource};
use crate::kernels::Tile;
use model::expr::Node;
use model::program::{Instance, Program, Role};
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

/// The largest generated matrix side, so a typo cannot allocate terabytes.
pub const MAX_GENERATED_ELEMENTS: usize = 1 << 31;

impl InputSpec {
    /// Parses `random:RxC`, `spd:N`, `identity:N`, or a file path.
    pub fn parse(s: &str) -> Result<InputSpec, String> {
        let dim = |t: &str, what: &str| -> Result<usize, String> {
            let v: usize = t
                .trim()
                .parse()
                .map_err(|_| format!("`{s}`: {what} must be a positive integer, found `{t}`"))?;
            if v == 0 {
                return Err(format!("`{s}`: {what} must be at least 1"));
            }
            Ok(v)
        };
        let spec = if let Some(rest) = s.strip_prefix("random:") {
            let (r, c) = rest
                .split_once(['x', 'X'])
                .ok_or_else(|| format!("`{s}`: expected random:ROWSxCOLS, e.g. random:1000x500"))?;
            InputSpec::Random {
                rows: dim(r, "ROWS")?,
                cols: dim(c, "COLS")?,
            }
        } else if let Some(rest) = s.strip_prefix("spd:") {
            InputSpec::Spd(dim(rest, "N")?)
        } else if let Some(rest) = s.strip_prefix("identity:") {
            InputSpec::Identity(dim(rest, "N")?)
        } else if s.is_empty() {
            return Err(
                "an empty input; expected a .npy file, random:RxC, spd:N or identity:N".into(),
            );
        } else {
            InputSpec::File(s.into())
        };
        let (r, c) = match spec {
            InputSpec::Random { rows, cols } => (rows, cols),
            InputSpec::Spd(n) | InputSpec::Identity(n) => (n, n),
            InputSpec::File(_) => (0, 0),
        };
        if r.saturating_mul(c) > MAX_GENERATED_ELEMENTS {
            return Err(format!(
                "`{s}`: {r} x {c} is more than {MAX_GENERATED_ELEMENTS} elements"
            ));
        }
        Ok(spec)
    }

    /// Generates the matrix (`File` is not generated: `None`). `seed` makes
    /// random matrices reproducible; each input gets its own stream.
    pub fn generate(&self, seed: u64) -> Option<Tile> {
        let mut rng = SplitMix(seed ^ 0x9e37_79b9_7f4a_7c15);
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

/// A small, fast, reproducible generator (SplitMix64).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    fn uniform(&mut self) -> f64 {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
}

/// The number of tiles of `n` elements with block `b`.
pub fn tiles_of(n: usize, b: usize) -> usize {
    n.div_ceil(b.max(1))
}

/// Infers unbound parameters from input shapes: a parameter that is, on its
/// own, the extent of an input matrix's dimension becomes the tile count of
/// that dimension. Returns `(name, value)` pairs for parameters not in
/// `given`; conflicting inferences are an error.
pub fn infer_params(
    program: &Program,
    given: &[(String, i64)],
    inputs: &BTreeMap<u32, Tile>,
    block: usize,
) -> Result<Vec<(String, i64)>, String> {
    let mut inferred: Vec<(String, i64, String)> = Vec::new();
    for (&m, data) in inputs {
        let Some(decl) = program.matrices.get(m as usize) else {
            continue;
        };
        let dims = [data.nrows(), data.ncols()];
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
            let why = format!(
                "{} has {} {} (block {block})",
                decl.name,
                dims[d],
                if d == 0 { "rows" } else { "columns" }
            );
            match inferred.iter().find(|(n, _, _)| *n == param.name) {
                Some((_, v, first)) if *v != value => {
                    return Err(format!(
                        "cannot infer `{}`: {first} gives {} = {v}, but {why} gives {value}",
                        param.name, param.name
                    ))
                }
                Some(_) => {}
                None => inferred.push((param.name.clone(), value, why)),
            }
        }
    }
    Ok(inferred.into_iter().map(|(n, v, _)| (n, v)).collect())
}

/// Checks that every input matrix's data has the tile grid the instance
/// expects (1-D matrices: row blocks).
pub fn check_shapes(
    inst: &Instance<'_>,
    inputs: &BTreeMap<u32, Tile>,
    block: usize,
) -> Result<(), String> {
    let program = inst.program;
    for (m, decl) in program.matrices.iter().enumerate() {
        if decl.role != Role::Input {
            continue;
        }
        let Some(data) = inputs.get(&(m as u32)) else {
            return Err(format!(
                "input matrix `{}` needs data: --input {}=FILE.npy (or random:RxC, spd:N, identity:N)",
                decl.name, decl.name
            ));
        };
        let ext = inst.extents.get(m).cloned().unwrap_or_default();
        let have = [tiles_of(data.nrows(), block), tiles_of(data.ncols(), block)];
        let want: Vec<String> = ext.iter().map(|e| e.to_string()).collect();
        let ok = match ext.len() {
            1 => have[0] as i64 == ext[0],
            2 => have[0] as i64 == ext[0] && have[1] as i64 == ext[1],
            n => {
                return Err(format!(
                    "input matrix `{}` has {n} dimensions; only 1-D (row blocks) and 2-D inputs can be given as dense matrices",
                    decl.name
                ))
            }
        };
        if !ok {
            let have_text = if ext.len() == 1 {
                format!("{} row blocks", have[0])
            } else {
                format!("{} x {} tiles", have[0], have[1])
            };
            let bound: Vec<String> = program
                .params
                .iter()
                .zip(&inst.params)
                .map(|(p, v)| format!("{} = {v}", p.name))
                .collect();
            return Err(format!(
                "input `{}` is {} x {}, which with block {block} is {have_text}, but the program expects {}[{}] for {}",
                decl.name,
                data.nrows(),
                data.ncols(),
                decl.name,
                want.join(", "),
                if bound.is_empty() {
                    "its extents".to_string()
                } else {
                    bound.join(", ")
                }
            ));
        }
    }
    Ok(())
}

/// Input tiles cut from dense matrices.
pub struct DenseSource<'a> {
    /// Dense data per input matrix index.
    pub inputs: &'a BTreeMap<u32, Tile>,
    /// Extent count per matrix (1-D matrices are row blocks).
    pub dims: Vec<usize>,
    /// Block size.
    pub block: usize,
}

impl TileSource for DenseSource<'_> {
    fn input(&self, matrix: u32, index: &[i64]) -> Result<Arc<Tile>, String> {
        let data = self
            .inputs
            .get(&matrix)
            .ok_or_else(|| "no data for this matrix".to_string())?;
        let b = self.block;
        let span = |i: i64, n: usize| -> Result<(usize, usize), String> {
            let start = usize::try_from(i)
                .ok()
                .and_then(|i| i.checked_mul(b))
                .filter(|&s| s < n)
                .ok_or_else(|| format!("tile index {i} is outside the data ({n} elements)"))?;
            Ok((start, b.min(n - start)))
        };
        let (r0, nr) = span(*index.first().unwrap_or(&0), data.nrows())?;
        let (c0, nc) = if self.dims.get(matrix as usize) == Some(&1) {
            (0, data.ncols())
        } else {
            span(*index.get(1).unwrap_or(&0), data.ncols())?
        };
        Ok(Arc::new(data.as_ref().submatrix(r0, c0, nr, nc).to_owned()))
    }
}

/// Output tiles by (matrix, index).
pub type TileMap = BTreeMap<(u32, Vec<i64>), Arc<Tile>>;

/// Collects output tiles in memory.
#[derive(Default)]
pub struct CollectSink {
    tiles: Mutex<TileMap>,
}

impl TileSink for CollectSink {
    fn output(&self, matrix: u32, index: &[i64], tile: Arc<Tile>) -> Result<(), String> {
        let mut t = self.tiles.lock().unwrap_or_else(|e| e.into_inner());
        if t.insert((matrix, index.to_vec()), tile).is_some() {
            return Err("tile written twice".into());
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

/// Assembles the tiles of a 2-D matrix (or 1-D row blocks) into one dense
/// matrix. Tile rows and columns take their sizes from the tiles written
/// in them; unwritten tiles are zero; a row or column of the tile grid with
/// no tile at all takes `block`. Inconsistent shapes are an error.
pub fn assemble(
    extents: &[i64],
    tiles: &BTreeMap<Vec<i64>, Arc<Tile>>,
    block: usize,
) -> Result<Tile, String> {
    let (tr, tc) = match *extents {
        [r] => (r.max(0) as usize, 1),
        [r, c] => (r.max(0) as usize, c.max(0) as usize),
        _ => return Err("only 1-D and 2-D matrices can be assembled".into()),
    };
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
                return Err(format!("tile {idx:?} is outside the grid"));
            };
            match slot {
                Some(h) if *h != v => {
                    return Err(format!(
                        "cannot assemble: tiles of tile {what} {k} have {h} and {v} {what}s"
                    ))
                }
                _ => *slot = Some(v),
            }
        }
    }
    let heights: Vec<usize> = heights.into_iter().map(|h| h.unwrap_or(block)).collect();
    let widths: Vec<usize> = widths.into_iter().map(|w| w.unwrap_or(block)).collect();
    let rows: usize = heights.iter().sum();
    let cols: usize = widths.iter().sum();
    if rows.saturating_mul(cols) > MAX_GENERATED_ELEMENTS {
        return Err(format!("{rows} x {cols} is too large to assemble"));
    }
    let mut out = Tile::zeros(rows, cols);
    let row_at: Vec<usize> = heights
        .iter()
        .scan(0, |s, h| {
            let at = *s;
            *s += h;
            Some(at)
        })
        .collect();
    let col_at: Vec<usize> = widths
        .iter()
        .scan(0, |s, w| {
            let at = *s;
            *s += w;
            Some(at)
        })
        .collect();
    for (idx, t) in tiles {
        let i = *idx.first().unwrap_or(&0) as usize;
        let j = *idx.get(1).unwrap_or(&0) as usize;
        out.as_mut()
            .submatrix_mut(row_at[i], col_at[j], t.nrows(), t.ncols())
            .copy_from(t.as_ref());
    }
    Ok(out)
}

/// Output tiles of one run, per matrix and tile index.
pub type OutputTiles = BTreeMap<u32, BTreeMap<Vec<i64>, Arc<Tile>>>;

/// A finished run on dense inputs.
pub struct DenseRun<'p> {
    /// The instance that ran (parameters bound, extents evaluated).
    pub instance: Instance<'p>,
    /// The parameters inferred from the input shapes.
    pub inferred: Vec<(String, i64)>,
    /// What the executor measured.
    pub report: crate::exec::RunReport,
    /// Every output tile.
    pub outputs: OutputTiles,
}

/// Binds the program's parameters (`given`, then inferred from the input
/// shapes), checks the shapes, and executes the instance on tiles cut from
/// `inputs`, collecting the output tiles in memory.
pub fn run<'p>(
    program: &'p Program,
    given: &[(String, i64)],
    inputs: &BTreeMap<u32, Tile>,
    block: usize,
    registry: &crate::kernels::Registry,
    config: &crate::exec::ExecConfig,
    progress: &crate::exec::Progress,
) -> Result<DenseRun<'p>, String> {
    let mut params = given.to_vec();
    let inferred = infer_params(program, &params, inputs, block)?;
    params.extend(inferred.iter().cloned());
    let inst = program.bind(&params).map_err(|e| e.to_string())?;
    check_shapes(&inst, inputs, block)?;
    let dims: Vec<usize> = program.matrices.iter().map(|m| m.extents.len()).collect();
    let source = DenseSource {
        inputs,
        dims,
        block,
    };
    let sink = CollectSink::default();
    let report = crate::exec::execute(
        &inst,
        registry,
        &source,
        &sink,
        Some(model::flops::flops),
        config,
        progress,
    )
    .map_err(|e| e.to_string())?;
    let mut outputs = OutputTiles::new();
    for ((m, idx), t) in sink.into_tiles() {
        outputs.entry(m).or_default().insert(idx, t);
    }
    Ok(DenseRun {
        instance: inst,
        inferred,
        report,
        outputs,
    })
}
