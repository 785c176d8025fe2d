//! Typed ids of the program model: a statement, a matrix and a kernel are
//! each named by the index of their entry in the program's arenas
//! (`Program::statements`, `Program::matrices`, `Program::kernels`). The
//! newtypes keep one kind of index from being used for another; they are
//! `#[serde(transparent)]`, so the artifact's CBOR and JSON carry the bare
//! number, and `Display` prints the bare number. Their number is private:
//! another crate makes an id only through [`StmtId::from_index`] (and its
//! twins), which refuses an index that does not fit, or gets one from the
//! program (`Program::statement_ids`, `Program::matrix_named`) or from a
//! validated artifact.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An index that does not fit in a `u32` id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("internal error: {kind} index {index} does not fit in a 32-bit id")]
pub struct IdOverflow {
    /// Which kind of id.
    pub kind: &'static str,
    /// The index.
    pub index: usize,
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(u32);

        impl $name {
            /// The index into the program's arena.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }

            /// The id of a number this crate read where ids are `u32`
            /// (a task id, an iteration over the arena).
            #[inline]
            #[allow(dead_code)] // not every kind of id is counted in this crate
            pub(crate) const fn from_u32(n: u32) -> $name {
                $name(n)
            }

            /// The id of arena entry `i`; an error if `i` does not fit in
            /// a `u32` (never a silent saturation).
            #[inline]
            pub fn from_index(i: usize) -> Result<$name, IdOverflow> {
                u32::try_from(i).map($name).map_err(|_| IdOverflow {
                    kind: $kind,
                    index: i,
                })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl From<$name> for u32 {
            fn from(id: $name) -> u32 {
                id.0
            }
        }
    };
}

id_type!(
    /// A statement: an index into `Program::statements` (and
    /// `Program::plans`).
    StmtId,
    "statement"
);
id_type!(
    /// A matrix: an index into `Program::matrices`.
    MatrixId,
    "matrix"
);
id_type!(
    /// A kernel: an index into `Program::kernels`.
    KernelId,
    "kernel"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transparent_and_display() {
        let s = StmtId(7);
        assert_eq!(s.to_string(), "7");
        assert_eq!(format!("{:>3}", MatrixId(2)), "  2");
        assert_eq!(serde_json::to_string(&s).unwrap(), "7");
        assert_eq!(serde_json::from_str::<KernelId>("3").unwrap(), KernelId(3));
        assert_eq!(s.index(), 7);
        assert_eq!(StmtId::from_index(5), Ok(StmtId(5)));
        #[cfg(target_pointer_width = "64")]
        assert!(StmtId::from_index(u32::MAX as usize + 1).is_err());
    }
}
