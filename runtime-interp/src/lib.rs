//! The lpk runtime: everything a worker needs to execute a compiled `.lpk`
//! program, and nothing of the compiler. It never depends on the parser, the
//! compiler or an LP solver.
//!
//! - [`expr`]: expression pool and exact evaluation;
//! - [`model`]: the program model (the artifact's data model);
//! - [`artifact`]: the artifact container, its encodings and the validating loader;
//! - [`plan`]: dependence plans and their evaluator;
//! - [`task`]: tasks, sequential order and sequential enumeration;
//! - [`query`]: `children`/`parents`/`writer`/`readers` from the plans;
//! - [`stdlib`]: the standard kernels' signatures.
//! - [`exec`]: the embedded multi-threaded executor;
//! - [`kernels`]: the tile kernels and their registry;
//! - [`flops`]: flop and byte models of the standard kernels;
//! - [`reference`]: faer's dense routines, for benchmarks and checks.
//! - [`npy`]: NumPy `.npy` reading and writing;
//! - [`store`]: tile stores (memory, `.npy` directories, `object_store` URLs).
#![warn(missing_docs)]

pub mod artifact;
pub mod dag;
pub mod dense;
pub mod exec;
pub mod expr;
pub mod flops;
pub mod kernels;
pub mod model;
pub mod npy;
pub mod plan;
pub mod query;
pub mod reference;
pub mod stdlib;
pub mod store;
pub mod task;
pub mod verify;
