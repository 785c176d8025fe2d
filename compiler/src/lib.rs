//! The lpk compiler library: resolve and type-check `.lpk` programs, lower
//! them to index constraints, solve dependence plans, lint, and emit
//! artifacts. The `lpkc` binary is a thin layer over it.
#![warn(missing_docs)]

pub mod codes;
pub mod diag;
pub mod driver;
pub mod hir;
pub mod kernels;
pub mod lower;
pub mod resolve;
pub mod solve;
pub mod sym;
mod syntax;
pub mod typeck;
