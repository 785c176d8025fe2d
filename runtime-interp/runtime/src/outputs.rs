//! Which outputs of a run are written, and in what form: the requests of
//! `lpkc run --output` (a whole matrix `R`, one tile `R[3, 0]`, a slice
//! `R[3, :]`), their check against the program and the instance, the grid
//! a request's tiles form, and the files of a request: one `.npy` when
//! its tiles form a grid (or it is one tile), else each tile as a `.npy`
//! plus an `index.json` that lists them.
//!
//! The grid of a request keeps the positions of its free (`:`) dimensions:
//! `R[3, :]` of a 2-D matrix is one tile row, `R[:, 0]` one tile column, a
//! whole 1-D matrix its tiles stacked in rows. Fixed dimensions are
//! dropped, leading ones first, while more than two dimensions remain, so
//! `S[0, :, :]` of a 3-D matrix is a 2-D grid; a request with three or
//! more free dimensions forms no grid. Neither do tiles whose sizes do not
//! tile a rectangle (two tiles of one tile row with different heights).

use crate::dense::{self, AssembleError};
use crate::kernels::Tile;
use crate::npy::{self, NpyError};
use lpk_model::program::{Instance, Program, Role};
use lpk_model::{IdOverflow, MatrixId};
use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One request of `--output`: a whole output matrix, one of its tiles, or
/// a slice of its tiles along some indices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputRequest {
    /// The matrix's name.
    pub matrix: String,
    /// `None` for the whole matrix; else one entry per dimension: `Some(i)`
    /// fixes the index, `None` (written `:`) takes every index.
    pub index: Option<Vec<Option<i64>>>,
}

/// Why an `--output` request does not parse or does not fit the program.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OutputError {
    /// A matrix index beyond the range of ids (an internal error).
    #[error(transparent)]
    Id(#[from] IdOverflow),
    /// Text that is not `M`, `M[i, j]` or `M[i, :]`.
    #[error("expected a matrix (`R`), a tile (`R[3, 0]`) or a slice (`R[3, :]`) of an output, found `{text}`")]
    Syntax {
        /// The text given.
        text: String,
    },
    /// A name that is not an output matrix of the program.
    #[error("--output `{request}`: `{matrix}` is not an output of program `{program}` (its outputs: {outputs})")]
    NotAnOutput {
        /// The request.
        request: String,
        /// The name given.
        matrix: String,
        /// The program.
        program: String,
        /// Its outputs, comma-separated.
        outputs: String,
    },
    /// A number of indices that is not the matrix's number of dimensions.
    #[error("--output `{request}`: `{matrix}` has {dims} {}, but {given} {} given", if *dims == 1 { "dimension" } else { "dimensions" }, if *given == 1 { "index is" } else { "indices are" })]
    Dimensions {
        /// The request.
        request: String,
        /// The matrix.
        matrix: String,
        /// Its dimensions.
        dims: usize,
        /// Indices given.
        given: usize,
    },
    /// An index outside the matrix's extent in this instance.
    #[error("--output `{request}`: index {index} of dimension {dim} is outside 0..{extent} (for {params})")]
    OutOfRange {
        /// The request.
        request: String,
        /// The 1-based dimension.
        dim: usize,
        /// The index given.
        index: i64,
        /// The extent of that dimension.
        extent: i64,
        /// The bound parameters, `N = 8, M = 2`.
        params: String,
    },
    /// A tile that no task writes.
    #[error("--output `{request}`: no task writes this tile (for {params}), so there is nothing to write")]
    Unwritten {
        /// The request.
        request: String,
        /// The bound parameters.
        params: String,
    },
}

impl OutputRequest {
    /// Parses `M`, `M[3, 0]` or `M[3, :]` (spaces anywhere).
    pub fn parse(text: &str) -> Result<OutputRequest, OutputError> {
        let syntax = || OutputError::Syntax {
            text: text.to_string(),
        };
        let t = text.trim();
        let (name, index) = match t.split_once('[') {
            None => (t, None),
            Some((name, rest)) => {
                let inner = rest.trim_end().strip_suffix(']').ok_or_else(syntax)?;
                let index = inner
                    .split(',')
                    .map(|part| match part.trim() {
                        ":" => Ok(None),
                        n => n
                            .parse::<i64>()
                            .ok()
                            .filter(|&i| i >= 0)
                            .map(Some)
                            .ok_or_else(syntax),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                (name.trim(), Some(index))
            }
        };
        let plain = name
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !plain {
            return Err(syntax());
        }
        Ok(OutputRequest {
            matrix: name.to_string(),
            index,
        })
    }

    /// The whole matrix `matrix`.
    pub fn whole(matrix: &str) -> OutputRequest {
        OutputRequest {
            matrix: matrix.to_string(),
            index: None,
        }
    }

    /// The one tile it names, if it names one (every index fixed).
    pub fn tile(&self) -> Option<Vec<i64>> {
        self.index.as_ref()?.iter().copied().collect()
    }

    /// Whether a tile of the matrix is part of the request.
    pub fn matches(&self, index: &[i64]) -> bool {
        self.index.as_ref().is_none_or(|want| {
            want.len() == index.len()
                && want
                    .iter()
                    .zip(index)
                    .all(|(w, i)| w.is_none_or(|w| w == *i))
        })
    }

    /// The name of its file (with `.npy`) or directory: `R`, `R[3,0]`,
    /// `R[3,_]` (`:` is written `_`, which every file system takes).
    pub fn file_stem(&self) -> String {
        match &self.index {
            None => self.matrix.clone(),
            Some(index) => {
                let parts: Vec<String> = index
                    .iter()
                    .map(|i| i.map_or("_".to_string(), |i| i.to_string()))
                    .collect();
                format!("{}[{}]", self.matrix, parts.join(","))
            }
        }
    }
}

impl fmt::Display for OutputRequest {
    /// `R`, `R[3, 0]`, `R[3, :]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.matrix)?;
        if let Some(index) = &self.index {
            let parts: Vec<String> = index
                .iter()
                .map(|i| i.map_or(":".to_string(), |i| i.to_string()))
                .collect();
            write!(f, "[{}]", parts.join(", "))?;
        }
        Ok(())
    }
}

/// A request checked against the program: the matrix it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selected {
    /// The request.
    pub request: OutputRequest,
    /// The output matrix.
    pub matrix: MatrixId,
}

/// Checks requests against the program: each names an output, with as
/// many indices as it has dimensions. `None` selects every output matrix
/// whole, in declaration order.
pub fn select(
    program: &Program,
    requests: Option<&[OutputRequest]>,
) -> Result<Vec<Selected>, OutputError> {
    let outputs = program
        .matrices
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Output);
    let Some(requests) = requests else {
        return outputs
            .map(|(m, d)| {
                Ok(Selected {
                    request: OutputRequest::whole(&d.name),
                    matrix: MatrixId::from_index(m)?,
                })
            })
            .collect();
    };
    requests
        .iter()
        .map(|r| {
            let Some((m, decl)) = outputs.clone().find(|(_, d)| d.name == r.matrix) else {
                return Err(OutputError::NotAnOutput {
                    request: r.to_string(),
                    matrix: r.matrix.clone(),
                    program: program.name.clone(),
                    outputs: outputs
                        .clone()
                        .map(|(_, d)| d.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            };
            if let Some(index) = &r.index {
                if index.len() != decl.extents.len() {
                    return Err(OutputError::Dimensions {
                        request: r.to_string(),
                        matrix: r.matrix.clone(),
                        dims: decl.extents.len(),
                        given: index.len(),
                    });
                }
            }
            Ok(Selected {
                request: r.clone(),
                matrix: MatrixId::from_index(m)?,
            })
        })
        .collect()
}

/// Checks selected requests against the instance: every fixed index is
/// inside its extent, and a requested tile has a writer.
pub fn check(inst: &Instance<'_>, selected: &[Selected]) -> Result<(), OutputError> {
    let params = || {
        let values: Vec<String> = crate::dense::named_params(inst)
            .iter()
            .map(|(name, v)| format!("{name} = {v}"))
            .collect();
        values.join(", ")
    };
    let mut engine = lpk_model::query::Engine::new(inst);
    for s in selected {
        let Some(index) = &s.request.index else {
            continue;
        };
        let ext = inst.extents.get(s.matrix.index()).map_or(&[][..], |e| e);
        for (d, (i, &e)) in index.iter().zip(ext).enumerate() {
            if let Some(i) = *i {
                if i >= e {
                    return Err(OutputError::OutOfRange {
                        request: s.request.to_string(),
                        dim: d + 1,
                        index: i,
                        extent: e,
                        params: params(),
                    });
                }
            }
        }
        if let Some(tile) = s.request.tile() {
            let tile = lpk_model::task::TileRef {
                matrix: s.matrix,
                index: tile,
            };
            // A failed query leaves the check to the run: the tile is then
            // reported missing when it is written.
            if engine.writer(&tile).is_ok_and(|w| w.is_empty()) {
                return Err(OutputError::Unwritten {
                    request: s.request.to_string(),
                    params: params(),
                });
            }
        }
    }
    Ok(())
}

/// The grid a request's tiles form: the dimensions kept (fixed ones
/// dropped, leading first, while more than two remain), or `None` when
/// more than two free dimensions remain.
fn grid_dims(dims: usize, fixed: &[Option<i64>]) -> Option<Vec<usize>> {
    let mut kept: Vec<usize> = (0..dims).collect();
    while kept.len() > 2 {
        let at = kept
            .iter()
            .position(|&d| fixed.get(d).is_some_and(Option::is_some))?;
        kept.remove(at);
    }
    Some(kept)
}

/// Assembles the tiles of a request into one dense matrix, if they form a
/// grid. `extents` are the matrix's extents in the instance; `tiles` hold
/// the request's tiles by their full index.
pub fn assemble(
    request: &OutputRequest,
    extents: &[i64],
    tiles: &BTreeMap<Vec<i64>, Arc<Tile>>,
    block: usize,
) -> Result<Tile, AssembleError> {
    let free = vec![None; extents.len()];
    let fixed = request.index.as_ref().unwrap_or(&free);
    let kept = grid_dims(extents.len(), fixed).ok_or(AssembleError::Dimensions {
        dims: fixed.iter().filter(|i| i.is_none()).count(),
    })?;
    let grid: Vec<i64> = kept
        .iter()
        .map(|&d| match fixed.get(d) {
            Some(Some(_)) => 1,
            _ => extents.get(d).copied().unwrap_or(0),
        })
        .collect();
    let placed: BTreeMap<Vec<i64>, Arc<Tile>> = tiles
        .iter()
        .filter(|(idx, _)| request.matches(idx))
        .map(|(idx, t)| {
            let at = kept
                .iter()
                .map(|&d| match fixed.get(d) {
                    Some(Some(_)) => 0,
                    _ => idx.get(d).copied().unwrap_or(0),
                })
                .collect();
            (at, t.clone())
        })
        .collect();
    dense::assemble(&grid, &placed, block)
}

/// How a request was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Form {
    /// One `.npy` file: the request's tiles assembled, or its one tile.
    Dense {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
    /// Each tile as a `.npy` file in a directory, with `index.json`.
    Tiles {
        /// Tiles written.
        count: usize,
        /// Why they were not assembled (`None`: kernels that compute
        /// nothing, whose tiles are never assembled).
        why: Option<AssembleError>,
    },
}

/// A request written into the output directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// The request.
    pub request: OutputRequest,
    /// The `.npy` file, or the `index.json` of the tiles.
    pub path: PathBuf,
    /// What the file holds.
    pub form: Form,
}

fn io_error(path: &Path, source: io::Error) -> (PathBuf, NpyError) {
    (
        path.to_path_buf(),
        NpyError::Io {
            name: path.display().to_string(),
            source,
        },
    )
}

/// Writes the tiles of a request as `DIR/STEM/i_j.npy` and
/// `DIR/STEM/index.json`, which lists for each tile its index, file and
/// shape. Returns the index's path and the number of tiles; on failure the
/// file that could not be written.
pub fn write_tiles(
    dir: &Path,
    request: &OutputRequest,
    tiles: &BTreeMap<Vec<i64>, Arc<Tile>>,
) -> Result<(PathBuf, usize), (PathBuf, NpyError)> {
    let sub = dir.join(request.file_stem());
    std::fs::create_dir_all(&sub).map_err(|e| io_error(&sub, e))?;
    let mut entries = Vec::new();
    for (idx, t) in tiles.iter().filter(|(idx, _)| request.matches(idx)) {
        let name = format!(
            "{}.npy",
            idx.iter().map(i64::to_string).collect::<Vec<_>>().join("_")
        );
        let path = sub.join(&name);
        npy::write_file(&path, t).map_err(|e| (path.clone(), e))?;
        let index: Vec<String> = idx.iter().map(i64::to_string).collect();
        entries.push(format!(
            "    {{\"index\": [{}], \"file\": \"{name}\", \"shape\": [{}, {}]}}",
            index.join(", "),
            t.nrows(),
            t.ncols()
        ));
    }
    // Names are identifiers and indices integers: nothing to escape.
    let json = format!(
        "{{\"output\": \"{}\", \"matrix\": \"{}\", \"tiles\": [\n{}\n]}}\n",
        request,
        request.matrix,
        entries.join(",\n")
    );
    let path = sub.join("index.json");
    std::fs::write(&path, json).map_err(|e| io_error(&path, e))?;
    Ok((path, entries.len()))
}
