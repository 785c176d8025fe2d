//! Zero tiles: what a task reads from a tile of a zero matrix
//! (`matrix T[..] = 0;`) that no task writes. Such a tile is made on
//! demand for the task that reads it, filled with zeros, and never stored.
//! Which reads are zero tiles ([`is_zero_tile`]) and the tiles themselves
//! ([`zero_tiles`]) are decided here, for the embedded executor
//! ([`crate::exec`]) and for any other executor (the distributed worker),
//! so that they agree on the shapes.
//!
//! The shape: a matrix's intermediate tiles have no declared size (only
//! their count), so a zero tile takes the sizes the kernel's shape rule
//! ([`crate::kernels::Kernel::shape_rule`]) ties to the task's other tiles, followed
//! transitively: the padded right child of `add(P[l, k], P[l, k + s])`
//! has the shape of the left child, edge tiles included, and a zero `c` of
//! `gemm_acc(c, a, b)` is `a`'s rows by `b`'s columns. A size that no tie
//! gives (a kernel without a rule, `copy` of a zero tile, the rows of
//! `qr_pair`'s second argument) is the block size of the run, what an
//! interior tile of a grid measures; a run that knows no block size fails
//! with [`ZeroTileError::NoSize`] naming the tile.
//!
//! The module uses no other module of the executor, which uses it.

use crate::kernels::rules::Dim;
use crate::kernels::{Kernel, Tile};
use lpk_model::program::{Arg, Instance};
use lpk_model::query::{Engine, QueryError};
use lpk_model::task::{Task, TileRef};
use lpk_model::StmtId;
use std::sync::Arc;

/// Why a zero tile could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZeroTileError {
    /// A size that neither a tied kernel argument nor the block gives.
    #[error(
        "task {task} reads the zero tile {tile}, whose {} no other argument of kernel \
         `{kernel}` gives, and the run has no block size for it",
        dim.plural()
    )]
    NoSize {
        /// The task.
        task: String,
        /// The tile.
        tile: String,
        /// The kernel.
        kernel: String,
        /// The size missing.
        dim: Dim,
    },
    /// A task of a statement the program does not have.
    #[error("no statement {0}")]
    NoStatement(StmtId),
}

/// Whether `tile`, read by some task, is a zero tile: a tile of a zero
/// matrix that no task writes. A tile of a zero matrix that a task does
/// write is read like any other (a read of it before its writer ran is a
/// violation that lint reports).
pub fn is_zero_tile(engine: &mut Engine<'_, '_>, tile: &TileRef) -> Result<bool, QueryError> {
    Ok(engine.instance().program.is_zero(tile.matrix) && engine.writer(tile)?.is_empty())
}

/// The tiles `task` reads with its zero tiles made: `tiles[i]` is the tile
/// of read `i` (in the order of [`Engine::reads`]), `None` for a zero tile
/// (see [`is_zero_tile`]), which becomes a tile of zeros shaped as the
/// module says, with `block` the run's block size (if it has one).
pub fn zero_tiles(
    inst: &Instance<'_>,
    kernels: &[Arc<dyn Kernel>],
    task: &Task,
    tiles: Vec<Option<Arc<Tile>>>,
    block: Option<usize>,
) -> Result<Vec<Arc<Tile>>, ZeroTileError> {
    if tiles.iter().all(Option::is_some) {
        return Ok(tiles.into_iter().flatten().collect());
    }
    let program = inst.program;
    let st = program
        .get_statement(task.stmt)
        .ok_or(ZeroTileError::NoStatement(task.stmt))?;
    let kernel = program
        .get_kernel(st.kernel)
        .map_or("", |k| k.name.as_str());
    // The read behind each tile argument, in the order the rule counts
    // them (scalars skipped).
    let tile_args: Vec<usize> = st
        .args
        .iter()
        .filter_map(|a| match a {
            Arg::Tile(i) => Some(*i as usize),
            Arg::Scalar(_) => None,
        })
        .collect();
    let mut sizes: Vec<[Option<usize>; 2]> = tile_args
        .iter()
        .map(|&r| match tiles.get(r) {
            Some(Some(t)) => [Some(t.nrows()), Some(t.ncols())],
            _ => [None, None],
        })
        .collect();
    let rule = kernels.get(st.kernel.index()).and_then(|k| k.shape_rule());
    if let Some(rule) = rule {
        // Each pass settles at least one more size or stops.
        loop {
            let mut changed = false;
            for (x, y) in rule.ties {
                let get = |s: &Vec<[Option<usize>; 2]>, a: usize, d: Dim| {
                    s.get(a).and_then(|v| v[d.index()])
                };
                let (sx, sy) = (get(&sizes, x.arg, x.dim), get(&sizes, y.arg, y.dim));
                let (to, value) = match (sx, sy) {
                    (Some(v), None) => (y, v),
                    (None, Some(v)) => (x, v),
                    _ => continue,
                };
                if let Some(slot) = sizes.get_mut(to.arg) {
                    slot[to.dim.index()] = Some(value);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }
    let mut out = Vec::with_capacity(tiles.len());
    for (r, tile) in tiles.into_iter().enumerate() {
        if let Some(t) = tile {
            out.push(t);
            continue;
        }
        let size = |dim: Dim| -> Result<usize, ZeroTileError> {
            tile_args
                .iter()
                .position(|&x| x == r)
                .and_then(|a| sizes.get(a))
                .and_then(|s| s[dim.index()])
                .or(block)
                .ok_or_else(|| ZeroTileError::NoSize {
                    task: program.task_name(task).to_string(),
                    tile: read_name(inst, task, r),
                    kernel: kernel.to_string(),
                    dim,
                })
        };
        out.push(Arc::new(Tile::zeros(size(Dim::Rows)?, size(Dim::Cols)?)));
    }
    Ok(out)
}

/// The name of read `r` of `task`, for messages.
fn read_name(inst: &Instance<'_>, task: &Task, r: usize) -> String {
    let p = inst.program;
    p.get_statement(task.stmt)
        .and_then(|st| st.reads.get(r))
        .and_then(|acc| p.tile_of(&inst.params, task, acc).ok())
        .map_or_else(|| format!("read {}", r + 1), |t| p.tile_name(&t))
}
