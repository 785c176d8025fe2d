//! Where a run on files puts each output tile as soon as it is computed:
//! into its `.npy` file in place (a whole 2-D output whose shape the
//! kernels' rules predict), into memory (the tiles asked for that cannot
//! be placed, and all of them for `--verify`), and into a tile store when
//! one is given. While tasks run, a thread syncs the placed files every
//! [`FLUSH_BYTES`].

use super::{Job, JobError};
use crate::dense::RunError;
use crate::exec::TileSource;
use crate::exec::{self, ExecConfig, Progress, RunReport, TileError, TileSink};
use crate::kernels::{Registry, Tile};
use crate::npy::NpyBlockWriter;
use crate::outputs::{OutputRequest, Selected};
use crate::pipeline::{self, Shape, TilesOf};
use crate::store::StoreSink;
use lpk_model::program::{Instance, Program};
use lpk_model::MatrixId;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An output written in place into its `.npy` file.
pub(super) struct Placed {
    /// The matrix's name.
    pub(super) name: String,
    /// Its file, open.
    pub(super) writer: NpyBlockWriter,
}

/// Which tiles of an output are kept in memory until the end.
pub(super) enum Keep {
    /// Every tile (a whole matrix to assemble, or `--verify`).
    All,
    /// The tiles of these requests (tiles and slices).
    Matching(Vec<OutputRequest>),
}

/// The tiles of an output kept in memory.
pub(super) struct Collected {
    keep: Keep,
    tiles: Mutex<TilesOf>,
}

/// Where each output tile goes, as soon as it is computed.
pub(super) struct OutputSink<'a> {
    block: usize,
    /// Bytes written into placed outputs so far.
    written: AtomicU64,
    placed: BTreeMap<MatrixId, Placed>,
    collected: BTreeMap<MatrixId, Collected>,
    store: Option<StoreSink<'a>>,
}

impl TileSink for OutputSink<'_> {
    fn output(&self, matrix: MatrixId, index: &[i64], tile: Arc<Tile>) -> Result<(), TileError> {
        if let Some(store) = &self.store {
            store.output(matrix, index, tile.clone())?;
        }
        if let Some(p) = self.placed.get(&matrix) {
            let shape = p.writer.shape();
            let (r0, c0) = pipeline::place_tile(self.block, &p.name, index, shape, &tile)?;
            p.writer
                .write_block(r0, c0, &tile)
                .map_err(|e| TileError::Npy(Box::new(e)))?;
            self.written
                .fetch_add((tile.nrows() * tile.ncols() * 8) as u64, Ordering::Relaxed);
        }
        if let Some(c) = self.collected.get(&matrix) {
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

impl<'a> OutputSink<'a> {
    /// The sink of `job`'s outputs: each output matrix asked for whole is
    /// written in place into `DIR/M.npy` when `shapes` (from
    /// [`pipeline::output_shapes`]) know its shape and the job assembles;
    /// the other requests' tiles (and every tile, with `--verify`, of what
    /// is not placed) are kept in memory.
    pub(super) fn new(
        program: &Program,
        job: &Job<'a>,
        selected: &[Selected],
        shapes: &BTreeMap<MatrixId, Option<Shape>>,
    ) -> Result<OutputSink<'a>, JobError> {
        let mut placed = BTreeMap::new();
        let mut collected = BTreeMap::new();
        for (&m, &shape) in shapes {
            let asked: Vec<&OutputRequest> = selected
                .iter()
                .filter(|s| s.matrix == m)
                .map(|s| &s.request)
                .collect();
            let whole = asked.iter().any(|r| r.index.is_none());
            if let (Some(dir), Some((rows, cols)), true, true) =
                (job.output_dir, shape, whole, job.assemble)
            {
                let name = program.matrix(m).name.clone();
                let path = dir.join(format!("{name}.npy"));
                let writer = NpyBlockWriter::create(&path, rows, cols).map_err(|source| {
                    JobError::Output {
                        path,
                        source: Box::new(source),
                    }
                })?;
                placed.insert(m, Placed { name, writer });
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
                let tiles = Mutex::new(BTreeMap::new());
                collected.insert(m, Collected { keep, tiles });
            }
        }
        Ok(OutputSink {
            block: job.block,
            written: AtomicU64::new(0),
            placed,
            collected,
            store: job.tile_store.map(|store| StoreSink::new(store, program)),
        })
    }

    /// Executes `inst` into this sink, syncing the placed files as tasks
    /// run so the sync at the end has little left to do.
    pub(super) fn execute(
        &self,
        inst: &Instance<'_>,
        registry: &Registry,
        source: &dyn TileSource,
        config: &ExecConfig,
        progress: &Progress,
    ) -> Result<RunReport, JobError> {
        let stop = AtomicBool::new(false);
        let report = std::thread::scope(|s| {
            if !self.placed.is_empty() {
                s.spawn(|| flush_while_running(self, &stop));
            }
            let report = exec::execute(inst, registry, source, self, true, config, progress);
            stop.store(true, Ordering::Relaxed);
            report
        });
        Ok(report.map_err(RunError::from)?)
    }

    /// What the run left: the placed files (still to finish) and, per
    /// matrix, whether every tile was kept and the tiles kept.
    pub(super) fn into_kept(self) -> Kept {
        let collected = self
            .collected
            .into_iter()
            .map(|(m, c)| {
                let all = matches!(c.keep, Keep::All);
                (
                    m,
                    (all, c.tiles.into_inner().unwrap_or_else(|e| e.into_inner())),
                )
            })
            .collect();
        Kept {
            placed: self.placed,
            collected,
        }
    }
}

/// The outputs of a run on files once its tasks are done.
pub(super) struct Kept {
    /// Outputs written in place, by matrix.
    pub(super) placed: BTreeMap<MatrixId, Placed>,
    /// Outputs kept in memory, by matrix: whether every tile was kept, and
    /// the tiles.
    pub(super) collected: BTreeMap<MatrixId, (bool, TilesOf)>,
}

impl Kept {
    /// The outputs kept whole (every tile), by matrix.
    pub(super) fn whole_tiles(&self) -> BTreeMap<MatrixId, TilesOf> {
        self.collected
            .iter()
            .filter(|(_, (all, _))| *all)
            .map(|(&m, (_, t))| (m, t.clone()))
            .collect()
    }
}
