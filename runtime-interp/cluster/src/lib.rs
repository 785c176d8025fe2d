//! lpk's distributed back end: a run's ready tasks in a Redis stream with
//! leases, its DAG state advanced by one atomic, idempotent script per
//! completed task, its tiles in any tile store (`file://`, S3), and
//! stateless workers that need only the Redis URL.
//!
//! The in-degree of every task and the children of every completed task
//! come from the compiled plans (`lpk_model::query`), so no worker ever
//! materialises the DAG or asks a solver.
//!
//! - [`protocol`]: the keys of a run and the server-side scripts;
//! - [`record`]: the run record workers read;
//! - [`submit`]: uploads inputs, records the run, seeds the roots;
//! - [`worker`]: the worker loop (leases, renewals, take-overs, faults);
//! - [`markers`]: the done markers a worker leaves in a run's store;
//! - [`resume`]: a run rebuilt in Redis from its store's done markers;
//! - [`status`]: what a run is doing, and why it waits;
//! - [`collect`]: the outputs as `.npy`, as `lpkc run` writes them;
//! - [`tiles`]: a run's tile store and the workers' tile cache;
//! - [`trace`]: the timeline of every task execution;
//! - [`faults`]: `--inject-faults`, the testing aid;
//! - [`ids`]: task and tile ids in Redis;
//! - [`workers`]: the live workers and the kernels each has.
#![warn(missing_docs)]

pub mod collect;
pub mod conn;
mod error;
pub mod faults;
pub mod ids;
pub mod manifest;
pub mod markers;
pub mod protocol;
pub mod record;
mod reply;
pub mod resume;
pub mod status;
pub mod submit;
pub mod tiles;
pub mod trace;
pub mod worker;
pub mod workers;

pub use error::ClusterError;
/// The Redis client, for callers that talk to Redis beside the protocol.
pub use redis;
