//! A whole run on files, as `lpkc run` does it: inputs from their specs,
//! the checks at bind time, the run, the outputs, `--verify`, the
//! `_SUCCESS` marker, and a timing breakdown.
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

use crate::dense::{self, AssembleError, InputSpec, RunError, ShapeError};
use crate::exec::{self, ExecConfig, Progress, RunReport, Stage, TileError, TileSink, TileSource};
use crate::kernels::{Registry, Tile};
use crate::npy::{self, NpyBlockWriter, NpyError, NpyTiles};
use crate::outputs::{self, Form, OutputError, OutputRequest, Selected, Written};
use crate::store::{StoreSink, TileStore};
use crate::verify::{self, Residual, VerifyError};
use model::program::{Instance, Program, Role};
use model::MatrixId;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The marker written into the output directory after a successful run.
pub const MARKER: &str = "_SUCCESS";

/// An input matrix of a run.
#[derive(Debug)]
pub enum Input {
    /// A matrix in memory (generated, or given by a caller).
    Dense(Tile),
    /// A `.npy` file, read tile by tile.
    File(NpyTiles),
}

impl Input {
    /// Opens a file spec (header only) or generates the matrix; `seed`
    /// makes random matrices reproducible.
    pub fn open(spec: &InputSpec, seed: u64) -> Result<Input, NpyError> {
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
            Input::File(f) => f.shape(),
        }
    }

    /// The whole matrix (read from the file if it is one).
    pub fn dense(&self) -> Result<Cow<'_, Tile>, NpyError> {
        match self {
            Input::Dense(t) => Ok(Cow::Borrowed(t)),
            Input::File(f) => Ok(Cow::Owned(f.read_all()?)),
        }
    }

    fn block(&self, r0: usize, c0: usize, nr: usize, nc: usize) -> Result<Tile, TileError> {
        match self {
            Input::Dense(t) => Ok(t.as_ref().submatrix(r0, c0, nr, nc).to_owned()),
            Input::File(f) => f
                .read_block(r0, c0, nr, nc)
                .map_err(|e| TileError::Npy(Box::new(e))),
        }
    }
}

/// Input tiles cut, as tasks ask for them, from [`Input`]s: with block
/// `B`, tile `(i, j)` holds rows `i·B..` and columns `j·B..` (1-D matrices:
/// row blocks spanning all columns).
pub struct InputSource<'a> {
    inputs: &'a BTreeMap<u32, Input>,
    one_d: Vec<bool>,
    block: usize,
}

impl<'a> InputSource<'a> {
    /// A source over `inputs` (by matrix index) of `program`.
    pub fn new(program: &Program, inputs: &'a BTreeMap<u32, Input>, block: usize) -> Self {
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

impl TileSource for InputSource<'_> {
    fn input(&self, matrix: MatrixId, index: &[i64]) -> Result<Arc<Tile>, TileError> {
        let data = self
            .inputs
            .get(&matrix.0)
            .ok_or(TileError::NoData { matrix })?;
        let (rows, cols) = data.shape();
        let one_d = self.one_d.get(matrix.index()) == Some(&true);
        let (r0, nr, c0, nc) = dense::tile_rect(self.block, index, rows, cols, one_d)?;
        Ok(Arc::new(data.block(r0, c0, nr, nc)?))
    }

    fn block(&self) -> Option<usize> {
        Some(self.block)
    }
}

/// The tiles of one matrix by index.
type TilesOf = BTreeMap<Vec<i64>, Arc<Tile>>;

/// An output written in place into its `.npy` file.
struct Placed {
    name: String,
    writer: NpyBlockWriter,
}

/// Which tiles of an output are kept in memory until the end.
enum Keep {
    /// Every tile (a whole matrix to assemble, or `--verify`).
    All,
    /// The tiles of these requests (tiles and slices).
    Matching(Vec<OutputRequest>),
}

/// The tiles of an output kept in memory.
struct Collected {
    keep: Keep,
    tiles: Mutex<TilesOf>,
}

/// Where each output tile goes, as soon as it is computed.
struct OutputSink<'a> {
    block: usize,
    /// Bytes written into placed outputs so far.
    written: AtomicU64,
    placed: BTreeMap<u32, Placed>,
    collected: BTreeMap<u32, Collected>,
    store: Option<StoreSink<'a>>,
}

impl TileSink for OutputSink<'_> {
    fn output(&self, matrix: MatrixId, index: &[i64], tile: Arc<Tile>) -> Result<(), TileError> {
        if let Some(store) = &self.store {
            store.output(matrix, index, tile.clone())?;
        }
        if let Some(p) = self.placed.get(&matrix.0) {
            let (rows, cols) = p.writer.shape();
            let b = self.block;
            let place = |i: Option<&i64>, n: usize| -> Option<(usize, usize)> {
                let start = usize::try_from(*i?).ok()?.checked_mul(b)?;
                (start < n).then(|| (start, b.min(n - start)))
            };
            let (r, c) = (place(index.first(), rows), place(index.get(1), cols));
            let have = (tile.nrows(), tile.ncols());
            match (r, c) {
                (Some((r0, h)), Some((c0, w))) if (h, w) == have => {
                    p.writer
                        .write_block(r0, c0, &tile)
                        .map_err(|e| TileError::Npy(Box::new(e)))?;
                    self.written
                        .fetch_add((h * w * 8) as u64, Ordering::Relaxed);
                }
                _ => {
                    return Err(TileError::UnexpectedShape {
                        matrix: p.name.clone(),
                        index: index.to_vec(),
                        have,
                        want: (r.map_or(0, |r| r.1), c.map_or(0, |c| c.1)),
                    })
                }
            }
        }
        if let Some(c) = self.collected.get(&matrix.0) {
            let keep = match &c.keep {
                Keep::All => true,
                Keep::Matching(requests) => requests.iter().any(|r| r.matches(index)),
            };
            if !keep {
                return Ok(());
            }
            let mut c = c.tiles.lock().unwrap_or_else(|e| e.into_inner());
            if c.insert(index.to_vec(), tile).is_some() {
                return Err(TileError::WrittenTwice {
                    matrix,
                    index: index.to_vec(),
                });
            }
        }
        Ok(())
    }
}

/// Bytes written into output files between two syncs while tasks run.
const FLUSH_BYTES: u64 = 64 << 20;

fn flush_while_running(sink: &OutputSink<'_>, stop: &AtomicBool) {
    let mut synced = 0;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
        let written = sink.written.load(Ordering::Relaxed);
        if written - synced >= FLUSH_BYTES {
            for p in sink.placed.values() {
                // An error here shows again in the final sync, which
                // reports it.
                let _ = p.writer.sync_data();
            }
            synced = written;
        }
    }
}

/// What a run on files is asked to do.
pub struct Job<'a> {
    /// Parameters given (`-p`); the others are inferred from the inputs.
    pub params: &'a [(String, i64)],
    /// The data of every input matrix, by matrix index.
    pub inputs: &'a BTreeMap<u32, InputSpec>,
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
        error: model::program::BindError,
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

/// The inputs of a run opened and checked, and its instance bound.
pub struct Prepared<'p> {
    /// Every input, by matrix index.
    pub inputs: BTreeMap<u32, Input>,
    /// The inputs' shapes (rows, columns).
    pub shapes: BTreeMap<u32, (usize, usize)>,
    /// The parameters: those given, then those inferred.
    pub params: Vec<(String, i64)>,
    /// The parameters inferred from the input shapes.
    pub inferred: Vec<(String, i64)>,
    /// The instance.
    pub instance: Instance<'p>,
}

/// Opens the inputs (`.npy` headers; generated matrices, the `k`th input
/// in matrix order with seed `seed + k`), infers the parameters not given
/// from their shapes, binds the instance and checks the inputs' grids and
/// shapes against it: everything a run does before its first task, for
/// `lpkc run` and for a distributed submission alike.
pub fn prepare<'p>(
    program: &'p Program,
    registry: &Registry,
    given: &[(String, i64)],
    specs: &BTreeMap<u32, InputSpec>,
    seed: u64,
    block: usize,
) -> Result<Prepared<'p>, JobError> {
    let name_of = |m: u32| {
        program
            .matrices
            .get(m as usize)
            .map(|d| d.name.clone())
            .unwrap_or_default()
    };
    let mut inputs: BTreeMap<u32, Input> = BTreeMap::new();
    for (k, (&m, spec)) in specs.iter().enumerate() {
        let input =
            Input::open(spec, seed.wrapping_add(k as u64)).map_err(|source| JobError::Input {
                matrix: name_of(m),
                source: Box::new(source),
            })?;
        inputs.insert(m, input);
    }
    let shapes: BTreeMap<u32, (usize, usize)> =
        inputs.iter().map(|(&m, i)| (m, i.shape())).collect();
    let mut params = given.to_vec();
    let inferred = dense::infer_params_from_shapes(program, &params, &shapes, block)?;
    params.extend(inferred.iter().cloned());
    let instance = program.bind(&params).map_err(|error| JobError::Bind {
        error,
        params: params.clone(),
    })?;
    dense::check_grids(&instance, &shapes, block)?;
    crate::shapes::check(&instance, registry, &shapes, block).map_err(ShapeError::Disagree)?;
    Ok(Prepared {
        inputs,
        shapes,
        params,
        inferred,
        instance,
    })
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
    let block = job.block;
    // Requests are checked before anything is read or created; without
    // an output directory nothing is written, so nothing is selected.
    let selected = outputs::select(program, job.outputs)?;
    let selected: Vec<Selected> = if job.output_dir.is_some() {
        selected
    } else {
        Vec::new()
    };
    // An output directory is claimed complete only by the marker, written
    // last; remove a stale one before anything can fail.
    if let Some(dir) = job.output_dir {
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
    }
    let name_of = |m: u32| {
        program
            .matrices
            .get(m as usize)
            .map(|d| d.name.clone())
            .unwrap_or_default()
    };
    let Prepared {
        inputs,
        shapes,
        params: _,
        inferred,
        instance: inst,
    } = prepare(program, registry, job.params, job.inputs, job.seed, block)?;
    outputs::check(&inst, &selected)?;

    // Outputs: a whole matrix in place where its shape is known; else the
    // tiles asked for (all of them for a whole matrix or --verify)
    // collected.
    let mut placed = BTreeMap::new();
    let mut collected = BTreeMap::new();
    for (m, decl) in program.matrices.iter().enumerate() {
        let m = m as u32;
        if decl.role != Role::Output {
            continue;
        }
        let asked: Vec<&OutputRequest> = selected
            .iter()
            .filter(|s| s.matrix.0 == m)
            .map(|s| &s.request)
            .collect();
        let whole = asked.iter().any(|r| r.index.is_none());
        let shape = match job.output_dir {
            Some(_) if whole && job.assemble && decl.extents.len() == 2 => {
                crate::shapes::predict_output(&inst, registry, &shapes, block, MatrixId(m))
            }
            _ => None,
        };
        if let (Some(dir), Some((rows, cols))) = (job.output_dir, shape) {
            let path = dir.join(format!("{}.npy", decl.name));
            let writer =
                NpyBlockWriter::create(&path, rows, cols).map_err(|source| JobError::Output {
                    path,
                    source: Box::new(source),
                })?;
            placed.insert(
                m,
                Placed {
                    name: decl.name.clone(),
                    writer,
                },
            );
        }
        let parts: Vec<OutputRequest> = asked
            .iter()
            .filter(|r| r.index.is_some())
            .map(|r| (*r).clone())
            .collect();
        let keep = if (whole || job.verify) && !placed.contains_key(&m) {
            Some(Keep::All)
        } else if !parts.is_empty() {
            Some(Keep::Matching(parts))
        } else {
            None
        };
        if let Some(keep) = keep {
            collected.insert(
                m,
                Collected {
                    keep,
                    tiles: Mutex::new(BTreeMap::new()),
                },
            );
        }
    }
    let sink = OutputSink {
        block,
        written: AtomicU64::new(0),
        placed,
        collected,
        store: job.tile_store.map(|store| StoreSink::new(store, program)),
    };
    let source = InputSource::new(program, &inputs, block);
    let prepare = started.elapsed();

    // While tasks run, a thread hands what was written to the disk every
    // FLUSH_BYTES, so the sync at the end has little left to do.
    let stop = AtomicBool::new(false);
    let report = std::thread::scope(|s| {
        if !sink.placed.is_empty() {
            s.spawn(|| flush_while_running(&sink, &stop));
        }
        let report = exec::execute(&inst, registry, &source, &sink, true, config, progress);
        stop.store(true, Ordering::Relaxed);
        report
    })
    .map_err(RunError::from)?;

    let OutputSink {
        placed, collected, ..
    } = sink;
    let collected: BTreeMap<u32, (bool, TilesOf)> = collected
        .into_iter()
        .map(|(m, c)| {
            let all = matches!(c.keep, Keep::All);
            (
                m,
                (all, c.tiles.into_inner().unwrap_or_else(|e| e.into_inner())),
            )
        })
        .collect();
    let extents_of = |m: u32| inst.extents.get(m as usize).cloned().unwrap_or_default();
    // Each whole output kept in memory, assembled once: what --verify
    // checks is what is written.
    let mut whole: BTreeMap<u32, Result<Tile, AssembleError>> = BTreeMap::new();
    if job.assemble {
        for (&m, (all, tiles)) in &collected {
            if *all {
                let request = OutputRequest::whole(&name_of(m));
                whole.insert(m, outputs::assemble(&request, &extents_of(m), tiles, block));
            }
        }
    }

    let residual = if job.verify {
        let verify_started = Instant::now();
        progress.set_stage(Stage::VerifyRead);
        let mut dense_inputs = BTreeMap::new();
        for (&m, i) in &inputs {
            let t = i
                .dense()
                .map_err(|e| JobError::VerifyRead(Box::new(e)))?
                .into_owned();
            dense_inputs.insert(m, t);
        }
        let mut dense_outputs: BTreeMap<u32, Tile> = whole
            .iter()
            .filter_map(|(&m, t)| Some((m, t.as_ref().ok()?.clone())))
            .collect();
        for (&m, p) in &placed {
            let t = NpyTiles::open(p.writer.temp_path())
                .and_then(|f| f.read_all())
                .map_err(|e| JobError::VerifyRead(Box::new(e)))?;
            dense_outputs.insert(m, t);
        }
        let all_tiles: BTreeMap<u32, TilesOf> = collected
            .iter()
            .filter(|(_, (all, _))| *all)
            .map(|(&m, (_, t))| (m, t.clone()))
            .collect();
        progress.set_stage(Stage::VerifyCompute);
        let qr_r = verify::final_qr_r(&inst, &all_tiles);
        let r = verify::verify(program, &dense_inputs, &dense_outputs, qr_r.as_deref())?;
        Some((r, verify_started.elapsed()))
    } else {
        None
    };

    let finish_started = Instant::now();
    progress.set_stage(Stage::Finish);
    let mut placed_shapes = BTreeMap::new();
    for (m, p) in placed {
        let path = p.writer.path().to_path_buf();
        placed_shapes.insert(m, (path.clone(), p.writer.shape()));
        p.writer.finish().map_err(|source| JobError::Output {
            path,
            source: Box::new(source),
        })?;
    }
    let mut written = Vec::new();
    if let Some(dir) = job.output_dir {
        let empty = TilesOf::new();
        for s in &selected {
            let request = &s.request;
            let tiles = collected.get(&s.matrix.0).map_or(&empty, |(_, t)| t);
            let dense = match (&request.index, placed_shapes.get(&s.matrix.0)) {
                (None, Some((path, (rows, cols)))) => {
                    written.push(Written {
                        request: request.clone(),
                        path: path.clone(),
                        form: Form::Dense {
                            rows: *rows,
                            cols: *cols,
                        },
                    });
                    continue;
                }
                _ if !job.assemble => Err(None),
                (None, _) => match whole.get(&s.matrix.0) {
                    Some(Ok(t)) => Ok(Cow::Borrowed(t)),
                    Some(Err(e)) => Err(Some(e.clone())),
                    None => Err(None),
                },
                (Some(_), _) => match request.tile() {
                    Some(idx) => tiles.get(&idx).map(|t| Cow::Borrowed(&**t)).ok_or(None),
                    None => outputs::assemble(request, &extents_of(s.matrix.0), tiles, block)
                        .map(Cow::Owned)
                        .map_err(Some),
                },
            };
            match dense {
                Ok(t) => {
                    let path = dir.join(format!("{}.npy", request.file_stem()));
                    npy::write_file(&path, &t).map_err(|source| JobError::Output {
                        path: path.clone(),
                        source: Box::new(source),
                    })?;
                    written.push(Written {
                        request: request.clone(),
                        path,
                        form: Form::Dense {
                            rows: t.nrows(),
                            cols: t.ncols(),
                        },
                    });
                }
                Err(why) => {
                    let (path, count) =
                        outputs::write_tiles(dir, request, tiles).map_err(|(path, source)| {
                            JobError::Output {
                                path,
                                source: Box::new(source),
                            }
                        })?;
                    written.push(Written {
                        request: request.clone(),
                        path,
                        form: Form::Tiles { count, why },
                    });
                }
            }
        }
        let marker = dir.join(MARKER);
        std::fs::write(&marker, "complete\n").map_err(|source| JobError::Marker {
            path: marker,
            source,
        })?;
    }
    let finish = finish_started.elapsed();
    let (residual, verify_time) = match residual {
        Some((r, t)) => (Some(r), t),
        None => (None, Duration::ZERO),
    };
    let timings = Timings {
        prepare,
        compute: report.wall,
        read_in_tasks: report.input_time,
        write_in_tasks: report.output_time,
        verify: verify_time,
        finish,
        total: started.elapsed(),
    };
    Ok(JobReport {
        instance: inst,
        inferred,
        report,
        residual,
        written,
        timings,
    })
}
