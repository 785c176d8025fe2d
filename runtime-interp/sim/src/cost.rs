//! The cost model: what one task costs in seconds, and what a tile costs to
//! move through the store.
//!
//! A task of kernel `k` at block `B` costs, in this order of preference:
//! 1. the calibrated time of `k` at `B` (`lpkc calibrate` measured it);
//! 2. the calibrated time of `k` at the nearest calibrated block, scaled by
//!    the ratio of the flop model at the two blocks;
//! 3. the kernel's flop model (from the kernel registry) at `B` divided by
//!    `gflops` (every tile `B x B`, as `lpkc stats --block` counts);
//! 4. zero for a kernel without a flop model, which the report lists as
//!    unmodelled.
//!
//! plus `task_overhead_s` per task. Every tile read is `8 B^2` bytes; a
//! task's results have the shapes of the kernel's result-shape model (the
//! registry's), else `B x B`.
//!
//! The store: a read or write of `b` bytes costs `latency_s + b /
//! bandwidth_bytes_per_s` (a bandwidth of 0 means infinite). With
//! `input_cut` (the embedded executor), every read of an input tile costs
//! that instead, cache or no cache: the executor copies the tile out of
//! the dense input for each task.

use lpk_model::program::{Arg, Instance};
use lpk_runtime::kernels::Registry;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The default compute rate when no costs file is given (GFLOP/s per
/// worker).
pub const DEFAULT_GFLOPS: f64 = 10.0;

/// One calibrated time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelTime {
    /// The block size.
    pub block: u64,
    /// Seconds per call (the median of the timed calls).
    pub seconds: f64,
}

/// The store's cost per request.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoreCost {
    /// Seconds per request.
    pub latency_s: f64,
    /// Bytes per second (0: infinite).
    pub bandwidth_bytes_per_s: f64,
}

impl StoreCost {
    /// No cost at all (the embedded executor's in-memory tiles).
    pub const FREE: StoreCost = StoreCost {
        latency_s: 0.0,
        bandwidth_bytes_per_s: 0.0,
    };

    /// Seconds to move `bytes` in one request.
    pub fn transfer(&self, bytes: u64) -> f64 {
        let bw = if self.bandwidth_bytes_per_s > 0.0 {
            bytes as f64 / self.bandwidth_bytes_per_s
        } else {
            0.0
        };
        self.latency_s + bw
    }
}

/// A cost model, as `lpkc calibrate` writes it (JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// Free text: where it was measured.
    #[serde(default)]
    pub machine: String,
    /// Compute rate for kernels without a calibrated time (GFLOP/s).
    pub gflops: f64,
    /// Seconds added to every task (scheduling, bookkeeping).
    #[serde(default)]
    pub task_overhead_s: f64,
    /// Calibrated kernel times, by kernel name.
    #[serde(default)]
    pub kernels: BTreeMap<String, Vec<KernelTime>>,
    /// The tile store.
    pub store: StoreCost,
    /// Reading an input tile by cutting it out of its dense input matrix,
    /// on every read and never cached (the embedded executor: `lpkc run`
    /// keeps the inputs whole and copies a tile out for each task that
    /// reads it). Absent: input tiles are read through `store` like any
    /// tile (the distributed back end uploads them at submission).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_cut: Option<StoreCost>,
    /// Bytes per second at which a worker's memory grows into fresh pages
    /// (the page faults of memory first touched), paid by a task for the
    /// result bytes that raise the run's peak of live tile bytes (the
    /// embedded executor keeps every tile in one process: below its peak
    /// the allocator reuses warm memory). Absent: memory is free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_memory_bytes_per_s: Option<f64>,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            machine: String::new(),
            gflops: DEFAULT_GFLOPS,
            task_overhead_s: 0.0,
            kernels: BTreeMap::new(),
            store: StoreCost::FREE,
            input_cut: None,
            fresh_memory_bytes_per_s: None,
        }
    }
}

/// Why a cost model is unusable.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CostError {
    /// Not JSON of the expected shape.
    #[error("not a cost model: {0} (write one with `lpkc calibrate -o FILE`)")]
    Parse(String),
    /// A value out of range.
    #[error("bad cost model: {0}")]
    Value(String),
}

/// The longest time one request, call or task overhead may be modelled to
/// take (a million seconds, eleven days): longer ones make a makespan no
/// simulation can represent, up to infinity.
const MAX_SECONDS: f64 = 1e6;
/// The smallest rate (GFLOP/s) a worker may be modelled at: slower ones
/// make times no simulation can represent (large rates only make them
/// small).
const MIN_RATE: f64 = 1e-6;

/// `lo <= x <= hi` (false for NaN).
fn within(x: f64, lo: f64, hi: f64) -> bool {
    x >= lo && x <= hi
}

/// A bandwidth: 0 (unlimited) or at least 1 byte per second (finite).
fn bandwidth(x: f64) -> bool {
    x == 0.0 || (x.is_finite() && x >= 1.0)
}

impl CostModel {
    /// Parses and checks a cost model.
    pub fn from_json(text: &str) -> Result<CostModel, CostError> {
        let m: CostModel =
            serde_json::from_str(text).map_err(|e| CostError::Parse(e.to_string()))?;
        m.check()?;
        Ok(m)
    }

    /// Checks every number: rates above 0, times and latencies finite and
    /// not negative, blocks above 0.
    pub fn check(&self) -> Result<(), CostError> {
        let value = |m: String| Err(CostError::Value(m));
        if !(self.gflops.is_finite() && self.gflops >= MIN_RATE) {
            return value(format!(
                "`gflops` must be at least {MIN_RATE:e}, found {}",
                self.gflops
            ));
        }
        if !within(self.task_overhead_s, 0.0, MAX_SECONDS) {
            return value(format!(
                "`task_overhead_s` must be from 0 to {MAX_SECONDS:e} seconds, found {}",
                self.task_overhead_s
            ));
        }
        let stores =
            std::iter::once(("store", self.store)).chain(self.input_cut.map(|c| ("input_cut", c)));
        for (name, c) in stores {
            if !within(c.latency_s, 0.0, MAX_SECONDS) || !bandwidth(c.bandwidth_bytes_per_s) {
                return value(format!(
                    "`{name}.latency_s` must be from 0 to {MAX_SECONDS:e} seconds and \
                     `{name}.bandwidth_bytes_per_s` 0 (unlimited) or at least 1, found {} and {}",
                    c.latency_s, c.bandwidth_bytes_per_s
                ));
            }
        }
        if let Some(x) = self.fresh_memory_bytes_per_s {
            if !(x.is_finite() && x >= 1.0) {
                return value(format!(
                    "`fresh_memory_bytes_per_s` must be at least 1, found {x}"
                ));
            }
        }
        for (k, times) in &self.kernels {
            for t in times {
                if t.block == 0 || !within(t.seconds, 0.0, MAX_SECONDS) {
                    return value(format!(
                        "kernel `{k}`: block {} seconds {} (block above 0, seconds from 0 to {MAX_SECONDS:e})",
                        t.block, t.seconds
                    ));
                }
            }
        }
        Ok(())
    }

    /// Seconds of one call of `kernel` with `tiles` tile arguments at
    /// `block` (without the overhead); `None` when neither a calibrated
    /// time nor a flop model knows it.
    pub fn kernel_seconds(
        &self,
        kernels: &Registry,
        kernel: &str,
        tiles: usize,
        block: u64,
    ) -> Option<f64> {
        let b = block as usize;
        let flops_at = |blk: u64| kernels.flops(kernel, &vec![(blk as usize, blk as usize); tiles]);
        if let Some(times) = self.kernels.get(kernel).filter(|t| !t.is_empty()) {
            if let Some(t) = times.iter().find(|t| t.block == block) {
                return Some(t.seconds);
            }
            // The nearest calibrated block (by log distance), scaled by the
            // flop model.
            let near = times.iter().min_by(|x, y| {
                let d = |t: &KernelTime| ((t.block as f64).ln() - (block as f64).ln()).abs();
                d(x).total_cmp(&d(y))
            })?;
            return match (flops_at(block), flops_at(near.block)) {
                (Some(f), Some(g)) if g > 0.0 => Some(near.seconds * f / g),
                _ => Some(near.seconds * (b * b) as f64 / (near.block * near.block) as f64),
            };
        }
        flops_at(block).map(|f| f / (self.gflops * 1e9))
    }
}

/// What one task of a statement costs and moves.
#[derive(Clone, Debug, PartialEq)]
pub struct StatementCost {
    /// The kernel's name.
    pub kernel: String,
    /// Compute seconds per task, overhead included.
    pub seconds: f64,
    /// Flops per task (0 without a model).
    pub flops: f64,
    /// Bytes of each read access.
    pub read_bytes: Vec<u64>,
    /// Bytes of each write access.
    pub write_bytes: Vec<u64>,
    /// Whether the kernel had neither a calibrated time nor a flop model.
    pub unmodelled: bool,
}

/// The cost of one task of each statement at `block`.
pub fn statement_costs(
    inst: &Instance<'_>,
    model: &CostModel,
    kernels: &Registry,
    block: u64,
) -> Vec<StatementCost> {
    let p = inst.program;
    let b = block as usize;
    let tile = 8 * (b as u64) * (b as u64);
    p.statements
        .iter()
        .map(|st| {
            let name = p
                .kernels
                .get(st.kernel.index())
                .map(|k| k.name.clone())
                .unwrap_or_default();
            let tiles = st.args.iter().filter(|a| matches!(a, Arg::Tile(_))).count();
            let shapes = vec![(b, b); tiles];
            let secs = model.kernel_seconds(kernels, &name, tiles, block);
            let write_bytes = match kernels.result_shapes(&name, &shapes) {
                Some(out) if out.len() == st.writes.len() => {
                    out.iter().map(|&(r, c)| 8 * (r * c) as u64).collect()
                }
                _ => vec![tile; st.writes.len()],
            };
            StatementCost {
                seconds: secs.unwrap_or(0.0) + model.task_overhead_s,
                flops: kernels.flops(&name, &shapes).unwrap_or(0.0),
                read_bytes: vec![tile; st.reads.len()],
                write_bytes,
                unmodelled: secs.is_none(),
                kernel: name,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flop_model_and_calibrated_times() {
        let mut m = CostModel::default();
        // gemm at 100: 2e6 flops at 10 GFLOP/s.
        let s = m
            .kernel_seconds(&Registry::standard(), "gemm", 2, 100)
            .expect("gemm has a model");
        assert!((s - 2e6 / 1e10).abs() < 1e-15);
        m.kernels.insert(
            "gemm".into(),
            vec![KernelTime {
                block: 100,
                seconds: 1e-3,
            }],
        );
        assert_eq!(
            m.kernel_seconds(&Registry::standard(), "gemm", 2, 100),
            Some(1e-3)
        );
        // Twice the block: eight times the flops.
        let s = m
            .kernel_seconds(&Registry::standard(), "gemm", 2, 200)
            .expect("scaled");
        assert!((s - 8e-3).abs() < 1e-12, "{s}");
        assert_eq!(
            m.kernel_seconds(&Registry::standard(), "mine", 2, 100),
            None
        );
    }

    #[test]
    fn bad_models_are_refused() {
        assert!(matches!(
            CostModel::from_json("{"),
            Err(CostError::Parse(_))
        ));
        let bad = r#"{"gflops": 0, "store": {"latency_s": 0, "bandwidth_bytes_per_s": 0}}"#;
        assert!(matches!(
            CostModel::from_json(bad),
            Err(CostError::Value(_))
        ));
        for bad in [
            r#"{"gflops": 1, "store": {"latency_s": 0, "bandwidth_bytes_per_s": 0}, "input_cut": {"latency_s": -1, "bandwidth_bytes_per_s": 0}}"#,
            r#"{"gflops": 1, "store": {"latency_s": 0, "bandwidth_bytes_per_s": 0}, "fresh_memory_bytes_per_s": 0}"#,
            r#"{"gflops": 1, "store": {"latency_s": 0, "bandwidth_bytes_per_s": 0}, "fresh_memory_bytes_per_s": "x"}"#,
        ] {
            assert!(CostModel::from_json(bad).is_err(), "{bad}");
        }
        // Models written before these fields still load, without them.
        let old = r#"{"gflops": 1, "store": {"latency_s": 0, "bandwidth_bytes_per_s": 0}}"#;
        let m = CostModel::from_json(old).expect("an old model loads");
        assert_eq!((m.input_cut, m.fresh_memory_bytes_per_s), (None, None));
        let bad = r#"{"gflops": 1, "store": {"latency_s": -1, "bandwidth_bytes_per_s": 0}}"#;
        assert!(matches!(
            CostModel::from_json(bad),
            Err(CostError::Value(_))
        ));
        let ok = r#"{"gflops": 1, "store": {"latency_s": 0.01, "bandwidth_bytes_per_s": 1e8},
                     "kernels": {"chol": [{"block": 64, "seconds": 0.001}]}}"#;
        let m = CostModel::from_json(ok).expect("valid");
        assert_eq!(m.store.transfer(100_000_000), 1.01);
    }
}
