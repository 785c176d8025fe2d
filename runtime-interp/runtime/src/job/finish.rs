//! After the last task of a run on files: the `--verify` residual on what
//! will be written, the placed files synced and renamed, the other
//! requests written (assembled when their tiles form a grid, else as tiles
//! with an `index.json`), and the `_SUCCESS` marker, last.

use super::input::Input;
use super::sink::{Kept, Placed};
use super::{JobError, MARKER};
use crate::dense::AssembleError;
use crate::exec::{Progress, Stage};
use crate::kernels::Tile;
use crate::npy::{self, NpyTiles};
use crate::outputs::{self, Form, OutputRequest, Selected, Written};
use crate::pipeline::{self, TilesOf};
use crate::verify::Residual;
use lpk_model::program::Instance;
use lpk_model::MatrixId;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each output kept whole in memory, assembled once, so what `--verify`
/// checks is what is written.
pub(super) type Whole = BTreeMap<MatrixId, Result<Tile, AssembleError>>;

/// The residual of `--verify`: the inputs read whole, the outputs as they
/// will be written (`whole`: assembled from `whole_tiles`; or read back
/// from their `placed` files).
pub(super) fn residual(
    inst: &Instance<'_>,
    inputs: &BTreeMap<MatrixId, Input<'_>>,
    placed: &BTreeMap<MatrixId, Placed>,
    whole: &Whole,
    whole_tiles: &BTreeMap<MatrixId, TilesOf>,
    progress: &Progress,
) -> Result<Residual, JobError> {
    let read = |e| JobError::VerifyRead(Box::new(e));
    progress.set_stage(Stage::VerifyRead);
    let mut dense_inputs = BTreeMap::new();
    for (&m, i) in inputs {
        dense_inputs.insert(m, i.dense().map_err(read)?.into_owned());
    }
    let mut dense_outputs: BTreeMap<MatrixId, Tile> = whole
        .iter()
        .filter_map(|(&m, t)| Some((m, t.as_ref().ok()?.clone())))
        .collect();
    for (&m, p) in placed {
        let t = NpyTiles::open(p.writer.temp_path())
            .and_then(|f| f.read_all())
            .map_err(read)?;
        dense_outputs.insert(m, t);
    }
    progress.set_stage(Stage::VerifyCompute);
    Ok(pipeline::residual(
        inst,
        &dense_inputs,
        &dense_outputs,
        whole_tiles,
    )?)
}

/// Each placed file's path and shape, by matrix.
pub(super) type PlacedFiles = BTreeMap<MatrixId, (PathBuf, (usize, usize))>;

/// Finishes the placed files (sync, rename) and returns each one's path
/// and shape, by matrix.
pub(super) fn finish_placed(kept: &mut Kept) -> Result<PlacedFiles, JobError> {
    let mut shapes = BTreeMap::new();
    for (m, p) in std::mem::take(&mut kept.placed) {
        let path = p.writer.path().to_path_buf();
        shapes.insert(m, (path.clone(), p.writer.shape()));
        p.writer.finish().map_err(|source| JobError::Output {
            path,
            source: Box::new(source),
        })?;
    }
    Ok(shapes)
}

/// What [`write_outputs`] writes from.
pub(super) struct Results<'a> {
    /// The instance that ran.
    pub(super) inst: &'a Instance<'a>,
    /// The block size.
    pub(super) block: usize,
    /// Whether outputs are assembled (real kernels).
    pub(super) assemble: bool,
    /// The placed files, finished: path and shape by matrix.
    pub(super) placed: &'a PlacedFiles,
    /// The tiles kept in memory, by matrix.
    pub(super) collected: &'a BTreeMap<MatrixId, (bool, TilesOf)>,
    /// The outputs kept whole, assembled.
    pub(super) whole: &'a Whole,
}

/// Writes every request of `selected` into `dir` (placed outputs are
/// already there), then the marker; returns what was written.
pub(super) fn write_outputs(
    dir: &Path,
    selected: &[Selected],
    results: &Results<'_>,
) -> Result<Vec<Written>, JobError> {
    let mut written = Vec::new();
    let empty = TilesOf::new();
    for s in selected {
        let request = &s.request;
        let tiles = results.collected.get(&s.matrix).map_or(&empty, |(_, t)| t);
        if let (None, Some((path, (rows, cols)))) = (&request.index, results.placed.get(&s.matrix))
        {
            let (rows, cols) = (*rows, *cols);
            let form = Form::Dense { rows, cols };
            let path = path.clone();
            written.push(Written {
                request: request.clone(),
                path,
                form,
            });
            continue;
        }
        written.push(match dense_of(request, s.matrix, tiles, results) {
            Ok(t) => write_dense(dir, request, &t)?,
            Err(why) => write_tiles(dir, request, tiles, why)?,
        });
    }
    let marker = dir.join(MARKER);
    std::fs::write(&marker, "complete\n").map_err(|source| JobError::Marker {
        path: marker,
        source,
    })?;
    Ok(written)
}

/// The dense matrix of a request that is not placed, or why it has none
/// (`None`: it is not assembled at all).
fn dense_of<'t>(
    request: &OutputRequest,
    m: MatrixId,
    tiles: &'t TilesOf,
    results: &'t Results<'_>,
) -> Result<Cow<'t, Tile>, Option<AssembleError>> {
    if !results.assemble {
        return Err(None);
    }
    if request.index.is_none() {
        return match results.whole.get(&m) {
            Some(Ok(t)) => Ok(Cow::Borrowed(t)),
            Some(Err(e)) => Err(Some(e.clone())),
            None => Err(None),
        };
    }
    match request.tile() {
        Some(idx) => tiles.get(&idx).map(|t| Cow::Borrowed(&**t)).ok_or(None),
        None => {
            let extents = results.inst.extents.get(m.index()).map_or(&[][..], |e| e);
            outputs::assemble(request, extents, tiles, results.block)
                .map(Cow::Owned)
                .map_err(Some)
        }
    }
}

/// Writes one request's dense matrix as `DIR/STEM.npy`.
fn write_dense(dir: &Path, request: &OutputRequest, t: &Tile) -> Result<Written, JobError> {
    let path = dir.join(format!("{}.npy", request.file_stem()));
    npy::write_file(&path, t).map_err(|source| JobError::Output {
        path: path.clone(),
        source: Box::new(source),
    })?;
    let form = Form::Dense {
        rows: t.nrows(),
        cols: t.ncols(),
    };
    Ok(Written {
        request: request.clone(),
        path,
        form,
    })
}

/// Writes one request's tiles with an `index.json`, saying why they form
/// no dense matrix.
fn write_tiles(
    dir: &Path,
    request: &OutputRequest,
    tiles: &TilesOf,
    why: Option<AssembleError>,
) -> Result<Written, JobError> {
    let (path, count) =
        outputs::write_tiles(dir, request, tiles).map_err(|(path, source)| JobError::Output {
            path,
            source: Box::new(source),
        })?;
    Ok(Written {
        request: request.clone(),
        path,
        form: Form::Tiles { count, why },
    })
}
