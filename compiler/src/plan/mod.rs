//! The plan phase: lowering a checked program to the index-constraint IR
//! (the runtime's [`model::program::Program`]), the exact symbolic layer,
//! and the dependence solver that attaches an inverse plan to every access
//! and prunes write/read pairs that can never meet.

pub mod feasible;
pub mod lower;
pub mod solve;
pub mod sym;
