//! A whole run on files, as `lpkc run` does it: the driver of the run
//! pipeline ([`crate::pipeline`]) over files. Inputs from their specs
//! ([`input`]), the checks at bind time, the run into the output sink
//! ([`sink`]), then `--verify`, the outputs and the `_SUCCESS` marker
//! ([`finish`]), with a timing breakdown.
//!
//! Nothing waits for a whole matrix. A `.npy` input is opened and its
//! header checked; each task then reads the input tiles it needs with
//! positioned reads ([`NpyTiles`]), so the first task starts at once and
//! reading overlaps computing.
//!
//! What is written is what [`Job::outputs`] asks for ([`crate::outputs`]):
//! by default every output matrix whole. A whole 2-D output whose shape
//! can be predicted ([`crate::shapes::predict_output`]) is written
//! straight into `DIR/M.npy` as its tiles are computed, at their offsets
//! ([`NpyBlockWriter`]: header first, one sync and a rename at the end);
//! tiles go to a tile store, when one is given, as they are computed too.
//! The tiles of every other request (1-D and 3-D outputs, sizes a rule
//! does not copy from an input, single tiles and slices) are collected in
//! memory, only those asked for, and written at the end: assembled into
//! one `.npy` when they form a grid, else as tiles with an `index.json`.
//! Nothing is assembled, and nothing is said about assembly, for outputs
//! that are not written (a run without an output directory, or outputs
//! not asked for); `--verify` collects what it needs apart.
//!
//! Every tile is computed by exactly one task from the same inputs and
//! lands at a fixed offset, so output files are byte-identical for any
//! number of workers.

mod finish;
mod input;
mod sink;

pub use input::{Input, InputSource};

use crate::dense::{InputSpec, RunError, ShapeError};
use crate::exec::{ExecConfig, Progress, RunReport, Stage};
use crate::kernels::Registry;
use crate::npy::NpyError;
use crate::outputs::{self, OutputError, OutputRequest, Selected, Written};
use crate::pipeline::{self, PrepareError};
use crate::store::TileStore;
use crate::verify::{Residual, VerifyError};
use lpk_model::program::{Instance, Program};
use lpk_model::MatrixId;
use sink::OutputSink;
use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The marker written into the output directory after a successful run.
pub const MARKER: &str = "_SUCCESS";

/// What a run on files is asked to do.
pub struct Job<'a> {
    /// Parameters given (`-p`); the others are inferred from the inputs.
    pub params: &'a [(String, i64)],
    /// The data of every input matrix, by matrix index.
    pub inputs: &'a BTreeMap<MatrixId, InputSpec>,
    /// Seed of generated inputs; the `k`th input (in matrix order) gets
    /// `seed + k`.
    pub seed: u64,
    /// The block size.
    pub block: usize,
    /// Where outputs go as `M.npy` (and the marker), if anywhere.
    pub output_dir: Option<&'a Path>,
    /// What to write into `output_dir`: `None` for every output matrix
    /// whole; else the matrices, tiles and slices asked for.
    pub outputs: Option<&'a [OutputRequest]>,
    /// Where every output tile goes, if anywhere.
    pub tile_store: Option<&'a dyn TileStore>,
    /// Whether 2-D outputs are assembled into dense matrices (not with
    /// kernels that compute nothing).
    pub assemble: bool,
    /// Whether to compute the residual of `--verify`.
    pub verify: bool,
}

/// Where the time of a run on files went.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timings {
    /// Opening inputs (headers; generating matrices), binding, the checks
    /// and creating output files: everything before the first task.
    pub prepare: Duration,
    /// The executor's wall time, from the first task to the last.
    pub compute: Duration,
    /// Reading input tiles inside tasks, summed over workers (part of
    /// `compute`).
    pub read_in_tasks: Duration,
    /// Writing output tiles inside tasks, summed over workers (part of
    /// `compute`).
    pub write_in_tasks: Duration,
    /// Computing the residual (reading whole inputs and outputs back).
    pub verify: Duration,
    /// After the last task: syncing and renaming output files, outputs
    /// written at the end, the marker.
    pub finish: Duration,
    /// The whole run.
    pub total: Duration,
}

impl fmt::Display for Timings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = |d: Duration| d.as_secs_f64();
        write!(
            f,
            "prepare {:.3} s, compute {:.3} s (inside tasks: reading {:.3} s, writing {:.3} s), verify {:.3} s, finish {:.3} s, total {:.3} s",
            s(self.prepare),
            s(self.compute),
            s(self.read_in_tasks),
            s(self.write_in_tasks),
            s(self.verify),
            s(self.finish),
            s(self.total)
        )
    }
}

/// A finished run on files.
pub struct JobReport<'p> {
    /// The instance that ran.
    pub instance: Instance<'p>,
    /// The parameters inferred from the input shapes.
    pub inferred: Vec<(String, i64)>,
    /// What the executor measured.
    pub report: RunReport,
    /// The residual, with `verify`.
    pub residual: Option<Residual>,
    /// What was written into the output directory, request by request.
    pub written: Vec<Written>,
    /// Where the time went.
    pub timings: Timings,
}

/// Why a run on files failed.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The output directory cannot be created.
    #[error("cannot create {}: {source}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A stale marker cannot be removed.
    #[error("cannot remove {}: {source}", path.display())]
    RemoveMarker {
        /// The marker.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// An input file cannot be read.
    #[error("input `{matrix}`: {source}")]
    Input {
        /// The input matrix.
        matrix: String,
        /// Why.
        source: Box<NpyError>,
    },
    /// The parameters (given, then inferred from the input shapes) make
    /// no instance of the program: a `require` that does not hold, an
    /// extent that cannot be evaluated or is negative.
    #[error("{error}")]
    Bind {
        /// Why the binding failed.
        error: lpk_model::program::BindError,
        /// The parameters bound: those given, then those inferred.
        params: Vec<(String, i64)>,
    },
    /// An `--output` request that does not fit the program or instance.
    #[error(transparent)]
    Select(#[from] OutputError),
    /// The checks or the run failed.
    #[error(transparent)]
    Run(Box<RunError>),
    /// The residual cannot be computed.
    #[error(transparent)]
    Verify(#[from] VerifyError),
    /// Reading a matrix back for `--verify` failed.
    #[error("--verify: {0}")]
    VerifyRead(Box<NpyError>),
    /// An output file cannot be written.
    #[error("cannot write {}: {source}", path.display())]
    Output {
        /// The file.
        path: PathBuf,
        /// Why.
        source: Box<NpyError>,
    },
    /// The marker cannot be written.
    #[error("cannot write {}: {source}", path.display())]
    Marker {
        /// The marker.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

impl From<RunError> for JobError {
    fn from(e: RunError) -> Self {
        JobError::Run(Box::new(e))
    }
}

impl From<ShapeError> for JobError {
    fn from(e: ShapeError) -> Self {
        JobError::Run(Box::new(RunError::Shape(e)))
    }
}

impl From<PrepareError> for JobError {
    fn from(e: PrepareError) -> Self {
        match e {
            PrepareError::Shape(e) => e.into(),
            PrepareError::Bind { error, params } => JobError::Bind { error, params },
        }
    }
}

/// The inputs of a run opened and checked, and its instance bound.
pub struct Prepared<'p> {
    /// Every input, by matrix index.
    pub inputs: BTreeMap<MatrixId, Input<'static>>,
    /// The inputs' shapes (rows, columns).
    pub shapes: BTreeMap<MatrixId, (usize, usize)>,
    /// The parameters inferred from the input shapes.
    pub inferred: Vec<(String, i64)>,
    /// The instance.
    pub instance: Instance<'p>,
}

/// Opens the inputs (`.npy` headers; generated matrices, the `k`th input
/// in matrix order with seed `seed + k`), then the pipeline's prepare
/// stage ([`pipeline::bind`]): everything a run does before its first
/// task, for `lpkc run` and for a distributed submission alike.
pub fn prepare<'p>(
    program: &'p Program,
    registry: &Registry,
    given: &[(String, i64)],
    specs: &BTreeMap<MatrixId, InputSpec>,
    seed: u64,
    block: usize,
) -> Result<Prepared<'p>, JobError> {
    let mut inputs: BTreeMap<MatrixId, Input<'static>> = BTreeMap::new();
    for (k, (&m, spec)) in specs.iter().enumerate() {
        let input =
            Input::open(spec, seed.wrapping_add(k as u64)).map_err(|source| JobError::Input {
                matrix: program
                    .get_matrix(m)
                    .map(|d| d.name.clone())
                    .unwrap_or_default(),
                source: Box::new(source),
            })?;
        inputs.insert(m, input);
    }
    let shapes: BTreeMap<MatrixId, (usize, usize)> =
        inputs.iter().map(|(&m, i)| (m, i.shape())).collect();
    let bound = pipeline::bind(program, registry, given, &shapes, block)?;
    Ok(Prepared {
        inputs,
        shapes,
        inferred: bound.inferred,
        instance: bound.instance,
    })
}

/// The requests of `job` checked against `program` before anything is
/// read or created; without an output directory nothing is written, so
/// nothing is selected.
fn select(program: &Program, job: &Job<'_>) -> Result<Vec<Selected>, JobError> {
    let selected = outputs::select(program, job.outputs)?;
    Ok(if job.output_dir.is_some() {
        selected
    } else {
        Vec::new()
    })
}

/// Creates the output directory and removes a stale marker: a directory
/// is claimed complete only by the marker, written last, so it goes
/// before anything can fail.
fn claim_output_dir(dir: &Path) -> Result<(), JobError> {
    std::fs::create_dir_all(dir).map_err(|source| JobError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })?;
    let marker = dir.join(MARKER);
    if marker.exists() {
        std::fs::remove_file(&marker).map_err(|source| JobError::RemoveMarker {
            path: marker,
            source,
        })?;
    }
    Ok(())
}

/// Runs `program` as `job` says: see the module documentation.
pub fn run_job<'p>(
    program: &'p Program,
    job: &Job<'_>,
    registry: &Registry,
    config: &ExecConfig,
    progress: &Progress,
) -> Result<JobReport<'p>, JobError> {
    let started = Instant::now();
    let selected = select(program, job)?;
    if let Some(dir) = job.output_dir {
        claim_output_dir(dir)?;
    }
    // Prepare.
    let prepared = prepare(
        program, registry, job.params, job.inputs, job.seed, job.block,
    )?;
    let inst = &prepared.instance;
    outputs::check(inst, &selected)?;
    let shapes = pipeline::output_shapes(inst, registry, &prepared.shapes, job.block);
    let sink = OutputSink::new(program, job, &selected, &shapes)?;
    let source = InputSource::new(program, &prepared.inputs, job.block);
    let prepare = started.elapsed();
    // Execute.
    let report = sink.execute(inst, registry, &source, config, progress)?;
    // Finish.
    let mut kept = sink.into_kept();
    let whole_tiles = kept.whole_tiles();
    let whole: finish::Whole = if job.assemble {
        pipeline::assemble_whole(inst, &whole_tiles, job.block)
    } else {
        BTreeMap::new()
    };
    let (residual, verify) = if job.verify {
        let started = Instant::now();
        let residual = finish::residual(
            inst,
            &prepared.inputs,
            &kept.placed,
            &whole,
            &whole_tiles,
            progress,
        )?;
        (Some(residual), started.elapsed())
    } else {
        (None, Duration::ZERO)
    };
    let finish_started = Instant::now();
    progress.set_stage(Stage::Finish);
    let placed = finish::finish_placed(&mut kept)?;
    let written = match job.output_dir {
        Some(dir) => {
            let results = finish::Results {
                inst,
                block: job.block,
                assemble: job.assemble,
                placed: &placed,
                collected: &kept.collected,
                whole: &whole,
            };
            finish::write_outputs(dir, &selected, &results)?
        }
        None => Vec::new(),
    };
    let timings = Timings {
        prepare,
        compute: report.wall,
        read_in_tasks: report.input_time,
        write_in_tasks: report.output_time,
        verify,
        finish: finish_started.elapsed(),
        total: started.elapsed(),
    };
    Ok(JobReport {
        instance: prepared.instance,
        inferred: prepared.inferred,
        report,
        residual,
        written,
        timings,
    })
}
