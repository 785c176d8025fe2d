//! The stages every run goes through, whichever driver starts it: `lpkc
//! run` on files ([`crate::job`]), `lpkc bench` on dense matrices
//! ([`crate::in_memory::run`]), Python's `lpk.run` on NumPy arrays and a
//! distributed submission.
//!
//! 1. **Prepare** — [`input_matrix`] and [`missing_inputs`]: the names
//!    given with the inputs' data against the program's input matrices;
//!    [`bind`]: the parameters not given are inferred from
//!    the inputs' shapes, the instance is bound (its `require`s checked),
//!    each input's tile grid is checked against the instance and every
//!    statement's arguments against its kernel's shape rule (from the
//!    [`Registry`]), all before any task; [`output_shapes`]: the dense
//!    shape of each 2-D output that can be known before the run, so a
//!    driver can place it (a file written in place, a NumPy buffer).
//! 2. **Execute** — [`crate::exec::execute`] over a driver's
//!    [`crate::exec::TileSource`] and [`crate::exec::TileSink`].
//! 3. **Finish** — [`assemble_whole`]: the outputs collected as tiles,
//!    assembled; [`residual`]: the `--verify` check on dense inputs and
//!    outputs. Writing the results (files and the `_SUCCESS` marker, NumPy
//!    arrays, a store) is the driver's; what it writes is what these
//!    stages gave it.
//!
//! Only the data sources and sinks differ between drivers; the rules a
//! run obeys are here once.

use crate::dense::{self, AssembleError, ShapeError};
use crate::exec::TileError;
use crate::kernels::{Registry, Tile};
use crate::outputs::{self, OutputRequest};
use crate::verify::{self, Residual, VerifyError};
use lpk_model::program::{BindError, Instance, Program, Role};
use lpk_model::MatrixId;
use std::collections::BTreeMap;
use std::sync::Arc;

/// An input's or output's shape: (rows, columns).
pub type Shape = (usize, usize);

/// Output tiles of one matrix, by tile index.
pub type TilesOf = BTreeMap<Vec<i64>, Arc<Tile>>;

/// A run's instance, bound and checked: what [`bind`] gives.
pub struct Bound<'p> {
    /// The instance (its parameters: those given, then those inferred).
    pub instance: Instance<'p>,
    /// The parameters inferred from the input shapes.
    pub inferred: Vec<(String, i64)>,
}

/// Why [`bind`] refused a run.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The inputs do not fit the program: a grid, a dimension, a kernel's
    /// shape rule, or a parameter inferred two ways.
    #[error(transparent)]
    Shape(#[from] ShapeError),
    /// The parameters make no instance: a `require` that does not hold, an
    /// extent that cannot be evaluated or is negative.
    #[error("{error}")]
    Bind {
        /// Why the binding failed.
        error: BindError,
        /// The parameters bound: those given, then those inferred.
        params: Vec<(String, i64)>,
    },
}

/// Prepare: infers the parameters not in `given` from the inputs'
/// `shapes`, binds the instance, and checks every input's grid and every
/// statement's argument shapes (from `registry`'s shape rules) against it.
pub fn bind<'p>(
    program: &'p Program,
    registry: &Registry,
    given: &[(String, i64)],
    shapes: &BTreeMap<MatrixId, Shape>,
    block: usize,
) -> Result<Bound<'p>, PrepareError> {
    let inferred = dense::infer_params_from_shapes(program, given, shapes, block)?;
    let mut params = given.to_vec();
    params.extend(inferred.iter().cloned());
    let instance = program.bind(&params).map_err(|error| PrepareError::Bind {
        error,
        params: params.clone(),
    })?;
    dense::check_grids(&instance, shapes, block)?;
    crate::shapes::check(&instance, registry, shapes, block).map_err(ShapeError::Disagree)?;
    Ok(Bound { instance, inferred })
}

impl From<PrepareError> for crate::dense::RunError {
    fn from(e: PrepareError) -> Self {
        match e {
            PrepareError::Shape(e) => Self::Shape(e),
            PrepareError::Bind { error, .. } => Self::Bind(error),
        }
    }
}

/// Why a name given with an input's data names no input matrix of the
/// program.
#[derive(Debug, thiserror::Error)]
pub enum InputNameError {
    /// No matrix of the program has the name.
    #[error("`{name}` is not a matrix of program `{program}` (its inputs: {})", inputs.join(", "))]
    NotAMatrix {
        /// The name given.
        name: String,
        /// The program's name.
        program: String,
        /// The program's input matrices, in matrix order.
        inputs: Vec<String>,
    },
    /// The matrix is not an input, so it takes no data.
    #[error("`{name}` is not an input of program `{program}`; only input matrices take data")]
    NotAnInput {
        /// The name given.
        name: String,
        /// The program's name.
        program: String,
    },
}

/// Prepare: the input matrix `name` of `program`, which a driver's data
/// for that name fills.
pub fn input_matrix(program: &Program, name: &str) -> Result<MatrixId, InputNameError> {
    let Some((m, decl)) = program.matrix_ids().find(|(_, d)| d.name == name) else {
        return Err(InputNameError::NotAMatrix {
            name: name.to_string(),
            program: program.name.clone(),
            inputs: program
                .matrices
                .iter()
                .filter(|d| d.role == Role::Input)
                .map(|d| d.name.clone())
                .collect(),
        });
    };
    if decl.role != Role::Input {
        return Err(InputNameError::NotAnInput {
            name: name.to_string(),
            program: program.name.clone(),
        });
    }
    Ok(m)
}

/// Prepare: the input matrices of `program` that `given` holds no data
/// for, in matrix order.
pub fn missing_inputs<'p, V>(program: &'p Program, given: &BTreeMap<MatrixId, V>) -> Vec<&'p str> {
    program
        .matrix_ids()
        .filter(|(i, d)| d.role == Role::Input && !given.contains_key(i))
        .map(|(_, d)| d.name.as_str())
        .collect()
}

/// Prepare: for each output matrix, its dense shape when it is 2-D and its
/// kernels' shape rules give it before the run (`None`: known only from
/// its tiles, at the end).
pub fn output_shapes(
    inst: &Instance<'_>,
    registry: &Registry,
    shapes: &BTreeMap<MatrixId, Shape>,
    block: usize,
) -> BTreeMap<MatrixId, Option<Shape>> {
    inst.program
        .matrix_ids()
        .filter(|(_, decl)| decl.role == Role::Output)
        .map(|(id, decl)| {
            let shape = if decl.extents.len() == 2 {
                crate::shapes::predict_output(inst, registry, shapes, block, id)
            } else {
                None
            };
            (id, shape)
        })
        .collect()
}

/// Execute: where tile `index` of output `matrix`, `shape`-shaped, lies
/// with block `block` — its first row and column — when the tile has
/// that place's shape; else [`TileError::UnexpectedShape`] with the shape
/// the place wants (zeros where `index` is outside the grid).
pub fn place_tile(
    block: usize,
    matrix: &str,
    index: &[i64],
    shape: Shape,
    tile: &Tile,
) -> Result<(usize, usize), TileError> {
    let place = |i: Option<&i64>, n: usize| -> Option<(usize, usize)> {
        let start = usize::try_from(*i?).ok()?.checked_mul(block)?;
        (start < n).then(|| (start, block.min(n - start)))
    };
    let (r, c) = (place(index.first(), shape.0), place(index.get(1), shape.1));
    let have = (tile.nrows(), tile.ncols());
    match (r, c) {
        (Some((r0, h)), Some((c0, w))) if (h, w) == have => Ok((r0, c0)),
        _ => Err(TileError::UnexpectedShape {
            matrix: matrix.to_string(),
            index: index.to_vec(),
            have,
            want: (r.map_or(0, |r| r.1), c.map_or(0, |c| c.1)),
        }),
    }
}

/// Finish: each output collected as tiles, assembled into one dense
/// matrix (or why its tiles form none).
pub fn assemble_whole(
    inst: &Instance<'_>,
    collected: &BTreeMap<MatrixId, TilesOf>,
    block: usize,
) -> BTreeMap<MatrixId, Result<Tile, AssembleError>> {
    collected
        .iter()
        .map(|(&m, tiles)| {
            let name = inst
                .program
                .get_matrix(m)
                .map(|d| d.name.clone())
                .unwrap_or_default();
            let extents = inst.extents.get(m.index()).cloned().unwrap_or_default();
            let request = OutputRequest::whole(&name);
            (m, outputs::assemble(&request, &extents, tiles, block))
        })
        .collect()
}

/// Finish: the report of a run as `lpkc run --format json` and `lpk.run`
/// give it: the instance and the executor's figures. A driver adds its
/// own fields (timings, outputs written), then [`residual_json`].
pub fn report_json(
    inst: &Instance<'_>,
    block: usize,
    report: &crate::exec::RunReport,
) -> serde_json::Value {
    let program = inst.program;
    let secs = report.wall.as_secs_f64();
    serde_json::json!({
        "program": program.name,
        "params": program.params.iter().zip(&inst.params)
            .map(|(p, v)| (p.name.clone(), serde_json::json!(v)))
            .collect::<serde_json::Map<_, _>>(),
        "block": block,
        "workers": report.workers,
        "tasks": report.tasks,
        "edges": report.edges,
        "wall_seconds": secs,
        "kernel_seconds": report.kernel_time.as_secs_f64(),
        "flops": report.flops,
        "gflops_per_second": report.flops / secs.max(1e-12) / 1e9,
        "peak_tile_bytes": report.peak_tile_bytes,
    })
}

/// Finish: the `residual` field of a run's report.
pub fn residual_json(r: &Residual) -> serde_json::Value {
    serde_json::json!({
        "relation": r.relation, "formula": r.formula,
        "value": r.value, "bound": r.bound, "ok": r.ok(),
    })
}

/// Finish: the residual of the run's relation (`--verify`) on its dense
/// inputs and outputs; `tiles` are the outputs kept as tiles, from which a
/// QR's final `R` is found.
pub fn residual(
    inst: &Instance<'_>,
    inputs: &BTreeMap<MatrixId, Tile>,
    outputs: &BTreeMap<MatrixId, Tile>,
    tiles: &BTreeMap<MatrixId, TilesOf>,
) -> Result<Residual, VerifyError> {
    let qr_r = verify::final_qr_r(inst, tiles);
    verify::verify(inst.program, inputs, outputs, qr_r.as_deref())
}
