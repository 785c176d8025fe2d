//! A run's manifest, `manifest.json` beside its tiles in the store: what
//! `submit` knew about the run, so that `lpkc resume` can rebuild it in a
//! Redis that lost it. This module owns both directions, so the two cannot
//! drift apart; the reader trusts nothing (the store may be written by
//! someone else) and bounds what it accepts.

use crate::error::ClusterError;
use crate::record::{now_ms, Kernels, RunLimits};

/// The largest manifest read, in bytes (one is a few hundred).
pub(crate) const MAX_BYTES: usize = 1 << 20;

/// The most parameters a manifest names.
const MAX_PARAMS: usize = 1024;

/// What `submit` wrote about a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    /// The run id.
    pub run: String,
    /// The program's name.
    pub program: String,
    /// Every parameter by name.
    pub params: Vec<(String, i64)>,
    /// The block size.
    pub block: usize,
    /// The kernels (only the standard ones can be resumed).
    pub kernels: Kernels,
    /// The task count at submission.
    pub tasks: u64,
    /// Lease expiries before a task fails the run.
    pub max_expiries: u32,
    /// The run's limits.
    pub limits: RunLimits,
    /// `--keep-intermediates`.
    pub keep_intermediates: bool,
    /// When it was submitted (ms since the Unix epoch).
    pub created_ms: u64,
}

impl Manifest {
    /// The JSON text written to the store.
    pub fn to_json(&self) -> String {
        let manifest = serde_json::json!({
            "run": self.run,
            "program": self.program,
            "params": self.params.iter()
                .map(|(p, v)| (p.clone(), serde_json::json!(v)))
                .collect::<serde_json::Map<_, _>>(),
            "block": self.block,
            "kernels": self.kernels.as_str(),
            "tasks": self.tasks,
            "max_expiries": self.max_expiries,
            "max_tasks": self.limits.max_tasks,
            "max_store_bytes": self.limits.max_store_bytes,
            "keep_intermediates": self.keep_intermediates,
            "created_ms": self.created_ms,
        });
        format!("{manifest:#}\n")
    }

    /// Reads the manifest of run `run` from its bytes; refuses one that is
    /// not JSON, lacks a field, names another run, or is larger than
    /// [`MAX_BYTES`].
    pub fn parse(run: &str, bytes: &[u8]) -> Result<Manifest, ClusterError> {
        let bad = |field: &'static str, why: &str| ClusterError::BadRecord {
            run: run.to_string(),
            field,
            why: format!("{why} in manifest.json"),
        };
        if bytes.len() > MAX_BYTES {
            return Err(bad("manifest", "more than 1 MiB"));
        }
        let v: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|_| bad("manifest", "not JSON"))?;
        if v["run"].as_str() != Some(run) {
            return Err(bad("run", "another run's id, or none,"));
        }
        let block = v["block"]
            .as_u64()
            .filter(|&b| b > 0)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| bad("block", "missing or wrong"))?;
        let kernels = match v["kernels"].as_str() {
            Some("standard") => Kernels::Standard,
            _ => return Err(bad("kernels", "not `standard`")),
        };
        let object = v["params"]
            .as_object()
            .ok_or_else(|| bad("params", "missing or wrong"))?;
        if object.len() > MAX_PARAMS {
            return Err(bad("params", "too many"));
        }
        let params = object
            .iter()
            .map(|(k, v)| {
                v.as_i64()
                    .map(|v| (k.clone(), v))
                    .ok_or_else(|| bad("params", "not integers"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Manifest {
            run: run.to_string(),
            program: v["program"]
                .as_str()
                .unwrap_or_default()
                .chars()
                .take(256)
                .collect(),
            params,
            block,
            kernels,
            tasks: v["tasks"].as_u64().unwrap_or(0),
            max_expiries: v["max_expiries"]
                .as_u64()
                .unwrap_or(3)
                .min(u64::from(u32::MAX)) as u32,
            limits: RunLimits {
                max_tasks: v["max_tasks"].as_u64(),
                max_store_bytes: v["max_store_bytes"].as_u64(),
            },
            keep_intermediates: v["keep_intermediates"].as_bool().unwrap_or(false),
            created_ms: v["created_ms"].as_u64().unwrap_or_else(now_ms),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_reads_back_as_written_and_names_its_run() {
        let m = Manifest {
            run: "r-1".into(),
            program: "cholesky".into(),
            params: vec![("N".into(), 4)],
            block: 32,
            kernels: Kernels::Standard,
            tasks: 20,
            max_expiries: 3,
            limits: RunLimits {
                max_tasks: Some(30),
                max_store_bytes: None,
            },
            keep_intermediates: false,
            created_ms: 5,
        };
        let text = m.to_json();
        assert_eq!(Manifest::parse("r-1", text.as_bytes()).expect("reads"), m);
        let e = Manifest::parse("r-2", text.as_bytes()).expect_err("another run");
        assert!(e.to_string().contains("another run's id"), "{e}");
        let e = Manifest::parse("r-1", b"{").expect_err("not JSON");
        assert!(e.to_string().contains("not JSON"), "{e}");
    }
}
