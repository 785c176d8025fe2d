//! The front end: syntax-error diagnostics, name resolution into the HIR,
//! type checking, and the compiler's view of the standard kernels. Its
//! output, a resolved and typed [`hir::Module`] without errors, is what the
//! plan phase ([`crate::plan`]) lowers.

pub mod decls;
pub mod hir;
pub mod kernels;
pub mod resolve;
pub(crate) mod syntax;
pub mod typeck;
