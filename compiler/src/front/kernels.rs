//! The compiler's view of the standard kernels: lookups for suggestions and
//! the check that a program's declaration of a standard kernel matches its
//! standard signature (arity and scalar types; names are free).

use crate::front::hir::{Kernel, ParamKind};
use lpk_grammar::ast::ScalarType;
pub use lpk_model::stdlib::{standard as standard_signature, ScalarKind, Signature};

/// Whether a declaration agrees with a standard signature: the same number
/// of parameters and results, tiles where tiles are, and the same scalar
/// types.
pub(crate) fn matches_standard(kernel: &Kernel, sig: &Signature) -> bool {
    kernel.results.len() == sig.results.len()
        && kernel.params.len() == sig.params.len()
        && kernel.params.iter().zip(sig.params).all(|(p, (_, s))| {
            matches!(
                (p.kind, s),
                (ParamKind::Tile, None)
                    | (ParamKind::Scalar(ScalarType::Int), Some(ScalarKind::Int))
                    | (ParamKind::Scalar(ScalarType::Real), Some(ScalarKind::Real))
            )
        })
}
