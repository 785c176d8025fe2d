//! Live tile bytes, when the cost model charges first-touched memory
//! (`fresh_memory_bytes_per_s`): a task's results become live until their
//! last reader has run, and a task pays for the bytes by which it raises
//! the peak.

use super::Sim;
use crate::error::SimError;
use lpk_model::task::Task;

impl Sim<'_, '_> {
    /// With `fresh_memory_bytes_per_s`: the seconds task `task` spends
    /// first touching memory, for the result bytes that raise the peak of
    /// live tile bytes; its results become live (each tile once, however
    /// often it is written).
    pub(super) fn grow_memory(&mut self, task: &Task) -> Result<f64, SimError> {
        let Some(rate) = self.cfg.costs.fresh_memory_bytes_per_s else {
            return Ok(0.0);
        };
        let outs = self.engine.writes(task)?;
        let st = &self.costs[task.stmt.index()];
        let bytes: Vec<u64> = st.write_bytes.clone();
        for (i, t) in outs.into_iter().enumerate() {
            if self.live_tiles.contains_key(&t) {
                continue;
            }
            let b = bytes.get(i).copied().unwrap_or(0);
            // A tile lives until its last reader ran; outputs too (the
            // executor hands them to the sink, which writes them to their
            // file in place and keeps none), so one nobody reads dies at
            // once.
            let left = u32::try_from(self.engine.readers(&t)?.len()).unwrap_or(u32::MAX);
            if left > 0 {
                self.live_tiles.insert(t, (left, b));
                self.live_bytes += b;
            }
        }
        let fresh = self.live_bytes.saturating_sub(self.peak_live);
        self.peak_live = self.peak_live.max(self.live_bytes);
        Ok(fresh as f64 / rate)
    }

    /// With `fresh_memory_bytes_per_s`: the tiles `task` read lose a
    /// reader; a tile whose readers all ran is freed.
    pub(super) fn release_reads(&mut self, task: &Task) -> Result<(), SimError> {
        if self.cfg.costs.fresh_memory_bytes_per_s.is_none() {
            return Ok(());
        }
        let reads = self.engine.reads(task)?;
        for (i, t) in reads.iter().enumerate() {
            if reads[..i].contains(t) {
                continue;
            }
            if let Some((left, b)) = self.live_tiles.get_mut(t) {
                *left -= 1;
                if *left == 0 {
                    let b = *b;
                    self.live_tiles.remove(t);
                    self.live_bytes -= b;
                }
            }
        }
        Ok(())
    }
}
