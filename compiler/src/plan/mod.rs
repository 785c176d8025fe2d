//! The plan phase: lowering a checked program to the index-constraint IR
//! (the runtime's [`lpk_model::program::Program`]) and the dependence solver
//! that builds an inverse plan for every access and pairs the write/read
//! accesses that may meet (dropping the others with [`pairs`], through the
//! constraint engine [`crate::constraint`]).

pub(crate) mod emit;
pub mod lower;
pub(crate) mod pairs;
pub mod solve;
