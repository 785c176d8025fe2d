//! The lpk compiler library: resolve and type-check `.lpk` programs, lower
//! them to index constraints, solve dependence plans, lint, and emit
//! artifacts. The `lpkc` binary is a thin layer over it.
#![warn(missing_docs)]

pub mod codes;
pub mod dagfmt;
pub mod diag;
pub mod dot;
pub mod driver;
pub mod feasible;
pub mod hir;
pub mod kernels;
pub mod lint;
pub mod lower;
pub mod plans_text;
pub mod query;
pub mod repl;
pub mod resolve;
pub mod solve;
pub mod stats;
pub mod sym;
mod syntax;
pub mod typeck;
