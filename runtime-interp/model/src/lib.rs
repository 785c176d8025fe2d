//! The lpk program model: everything needed to load a compiled `.lpk`
//! program and answer questions about its task DAG without unrolling it. It
//! depends on no solver, parser, kernel, storage or CLI crate, so a runtime
//! (or any other tool) can link it alone.
//!
//! - [`expr`]: expression pool and exact evaluation;
//! - [`ids`]: the typed ids of statements, matrices and kernels;
//! - [`program`]: the program model (the artifact's data model);
//! - [`artifact`]: the artifact container, its encodings and the validating loader;
//! - [`plan`]: dependence plans and their evaluator;
//! - [`task`]: tasks, sequential order and sequential enumeration;
//! - [`query`]: `children`/`parents`/`writer`/`readers` from the plans;
//! - [`dag`]: the DAG from the plans, the brute-force expansion and the walks;
//! - [`frontier`]: the waiting counters every DAG walk shares;
//! - [`stdlib`]: the standard kernels' signatures;
//! - [`flops`]: flop and byte models of the standard kernels.
#![warn(missing_docs)]

pub mod artifact;
pub mod dag;
pub mod expr;
pub mod flops;
pub mod frontier;
mod ids;
pub mod plan;
pub mod program;
pub mod query;
pub mod rng;
pub mod stdlib;
pub mod task;

pub use ids::{IdOverflow, KernelId, MatrixId, StmtId};
