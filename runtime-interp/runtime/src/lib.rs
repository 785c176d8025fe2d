//! The lpk runtime: everything a worker needs to execute a compiled `.lpk`
//! program, on the program model ([`model`]) alone. It never depends on the
//! parser, the compiler or an LP solver.
//!
//! - [`exec`]: the embedded multi-threaded executor;
//! - [`pipeline`]: the stages every run goes through (prepare, execute, finish), whichever driver starts it;
//! - [`job`]: a whole run on files (`lpkc run`), the pipeline's driver over files: tiles read and written in place as tasks run;
//! - [`kernels`]: the tile kernels and their registry;
//! - [`dense`]: generated inputs, tiles cut from dense matrices, assembly;
//! - [`in_memory`]: the pipeline's driver over dense matrices in memory (`lpkc bench`);
//! - [`verify`]: residual checks of `--verify`;
//! - [`reference`]: faer's dense routines, for benchmarks and checks;
//! - [`shapes`]: input shapes against the kernels' shape rules, before a run;
//! - [`npy`]: NumPy `.npy` reading and writing;
//! - [`outputs`]: which outputs a run writes (`--output`) and in what form;
//! - [`timeline`]: task timelines as Chrome trace JSON and SVG Gantt charts;
//! - [`store`]: tile stores (memory, `.npy` directories, `object_store` URLs);
//! - [`zero`]: the zero tiles a task reads from a zero matrix, made on demand.
#![warn(missing_docs)]

pub mod dense;
pub mod exec;
pub mod in_memory;
pub mod job;
pub mod kernels;
pub mod npy;
pub mod outputs;
pub mod pipeline;
pub mod reference;
pub mod shapes;
pub mod store;
pub mod timeline;
pub mod verify;
pub mod zero;
