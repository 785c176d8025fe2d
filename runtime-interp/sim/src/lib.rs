//! `lpk-sim`: a discrete-event simulation of one instance of a program on
//! simulated workers and a tile store (`lpkc simulate`, docs/simulation.md).
//!
//! The DAG is never materialised: the simulator walks it as a runtime
//! schedules it (`lpk_model::dag::walk`): roots from the parents plans, a
//! counter per waiting task (from `in_degree` on first sight), children
//! from the children plans when a task completes. Memory is the frontier
//! (waiting and ready tasks), the workers' tile caches and, for the
//! `locality` policy, a coarsened task/tile graph of bounded size.
//!
//! - [`cost`]: the cost model (per-kernel seconds from `lpkc calibrate`, or
//!   the flop model at a GFLOP/s figure; the store's latency and
//!   bandwidth).
//! - [`quantile`]: the binomial upper bound of a quantile from observed
//!   samples (start-up delays, speculation thresholds, automatic leases).
//! - `config`, `policy`, `faults`: the settings ([`Config`], [`Workers`],
//!   [`Policy`], and the fault model: failures, leases, stragglers,
//!   speculation) and their checks.
//! - [`engine`]: the event loop and the DAG walk; in it, `schedule` (the
//!   policies at work), `workers` (their life, caches and autoscaling),
//!   `executions` (failures, stragglers, speculative backups and leases)
//!   and `memory` (live tile bytes). The modules that define the settings,
//!   the report and the timeline are private: their public paths are
//!   `engine::*` (re-exported there).
//! - `report`, `timeline`: what a simulation found ([`Report`]) and
//!   utilisation over time ([`engine::Timeline`]).
//! - [`partition`]: the coarsened graph and its METIS partition (`locality`).
//! - [`svg`]: utilisation over time as an SVG chart.

mod config;
pub mod cost;
pub mod engine;
pub(crate) mod error;
mod faults;
pub(crate) mod partition;
mod policy;
pub mod quantile;
mod report;
pub mod svg;
mod timeline;

pub use engine::{simulate, Config, Policy, Report, SimError, Workers};

#[cfg(test)]
mod tests;
