//! A kernel of one's own for lpk, in Rust: `negate(a) -> (b)`, b = −a.
//!
//! [`Negate`] implements [`Kernel`]: its name and its call are all a
//! kernel needs; its signature, shape rule, result shapes and flops let
//! lpk check a run's shapes before any task, shape the zero tiles it
//! reads, and count its flops. [`registry`] is the standard registry with
//! it added: the embedded executor (`lpk_runtime::job::run_job`) and the
//! distributed worker (`lpk_cluster::worker::work`, see `src/main.rs`)
//! both take it. `negated_product.lpk` beside this crate calls it.

use lpk_runtime::kernels::rules::{ArgDim, Dim, ShapeRule};
use lpk_runtime::kernels::{Kernel, KernelArg, KernelError, Registry, Signature, Tile};
use std::sync::Arc;

/// `negate(a) -> (b)`: b = −a.
pub struct Negate;

impl Kernel for Negate {
    fn name(&self) -> &str {
        "negate"
    }

    fn call(&self, args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
        match args {
            [KernelArg::Tile(a)] => {
                Ok(vec![Tile::from_fn(a.nrows(), a.ncols(), |i, j| -a[(i, j)])])
            }
            _ => Err(KernelError::new("negate takes one tile")),
        }
    }

    fn signature(&self) -> Option<Signature> {
        Some(Signature {
            name: "negate",
            params: &[("a", None)],
            results: &["b"],
        })
    }

    /// No ties; the result is shaped like the argument.
    fn shape_rule(&self) -> Option<ShapeRule> {
        const LIKE_A: [Option<ArgDim>; 2] = [
            Some(ArgDim {
                arg: 0,
                dim: Dim::Rows,
            }),
            Some(ArgDim {
                arg: 0,
                dim: Dim::Cols,
            }),
        ];
        Some(ShapeRule {
            ties: &[],
            results: &[LIKE_A],
        })
    }

    fn result_shapes(&self, tiles: &[(usize, usize)]) -> Option<Vec<(usize, usize)>> {
        Some(vec![*tiles.first()?])
    }

    fn flops(&self, tiles: &[(usize, usize)]) -> Option<f64> {
        let (r, c) = *tiles.first()?;
        Some((r * c) as f64)
    }
}

/// The standard kernels and [`Negate`].
pub fn registry() -> Registry {
    let mut r = Registry::standard();
    r.register(Arc::new(Negate));
    r
}
