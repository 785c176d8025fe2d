//! The lpk compiler library, in folders by phase:
//!
//! - [`front`]: resolve and type-check `.lpk` programs (after the
//!   `grammar` crate parsed them);
//! - [`plan`]: lower them to index constraints and solve dependence plans;
//! - [`constraint`]: the constraint engine (affine forms, integer
//!   reasoning, the LP back end) that pair pruning and lint share;
//! - [`lint`]: prove the program's rules (`lpkc lint`);
//! - [`explore`]: queries, the REPL session, statistics, DOT;
//! - [`diag`]: diagnostics and the registry of their codes;
//! - [`pipeline`]: the phases chained, as the CLI, the tests and the
//!   benches call them.
//!
//! It depends on no CLI, terminal, kernel or storage crate; the `lpkc`
//! binary (package `lpkc`) is a thin layer over it.
#![warn(missing_docs)]

pub mod cancel;
pub(crate) mod constraint;
pub mod diag;
pub mod explore;
pub mod front;
pub mod lint;
pub mod pipeline;
pub(crate) mod plan;
