//! The lpk runtime: everything a worker needs to execute a compiled `.lpk`
//! program, and nothing of the compiler. It never depends on the parser, the
//! compiler or an LP solver.
#![warn(missing_docs)]

pub mod stdlib;
