//! The run pipeline's driver over dense matrices in memory (what `lpkc
//! bench` times, and what tests compare the other drivers with): tiles
//! cut from the matrices, every output tile collected in memory.

use crate::dense::{CollectSink, DenseSource, RunError};
use crate::exec::{ExecConfig, Progress, RunReport};
use crate::kernels::{Registry, Tile};
use crate::pipeline;
use lpk_model::program::{Instance, Program};
use lpk_model::MatrixId;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Output tiles of one run, per matrix and tile index.
pub(crate) type OutputTiles = BTreeMap<MatrixId, BTreeMap<Vec<i64>, Arc<Tile>>>;

/// A finished run on dense inputs.
pub struct DenseRun<'p> {
    /// The instance that ran (parameters bound, extents evaluated).
    pub instance: Instance<'p>,
    /// The parameters inferred from the input shapes.
    pub inferred: Vec<(String, i64)>,
    /// What the executor measured.
    pub report: RunReport,
    /// Every output tile.
    pub outputs: OutputTiles,
}

/// The run pipeline on dense matrices in memory (what `lpkc bench` times):
/// prepares ([`crate::pipeline::bind`]), executes on tiles cut from
/// `inputs`, and collects every output tile in memory.
pub fn run<'p>(
    program: &'p Program,
    given: &[(String, i64)],
    inputs: &BTreeMap<MatrixId, Tile>,
    block: usize,
    registry: &Registry,
    config: &ExecConfig,
    progress: &Progress,
) -> Result<DenseRun<'p>, RunError> {
    let bound = pipeline::bind(
        program,
        registry,
        given,
        &crate::dense::shapes_of(inputs),
        block,
    )?;
    let (inst, inferred) = (bound.instance, bound.inferred);
    let dims: Vec<usize> = program.matrices.iter().map(|m| m.extents.len()).collect();
    let source = DenseSource {
        inputs,
        dims,
        block,
    };
    let sink = CollectSink::default();
    let report = crate::exec::execute(&inst, registry, &source, &sink, true, config, progress)?;
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
