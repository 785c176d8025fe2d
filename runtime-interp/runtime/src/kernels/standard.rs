//! The table of standard kernels (`docs/kernels.md`): each name with the
//! function that implements it, wrapped as a [`Kernel`] for the registry
//! with its signature (`lpk_model::stdlib`), shape rule ([`super::rules`]) and
//! flop and shape models (`lpk_model::flops`).

use super::{
    blas, factor, lq, pivot, qr, solve, Kernel, KernelArg, KernelError, ShapeRule, Signature, Tile,
};
use std::sync::Arc;

/// A standard kernel's implementation.
type KernelFn = fn(&[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError>;

/// A standard kernel: its name and its function.
struct StandardKernel {
    name: &'static str,
    run: KernelFn,
}

impl Kernel for StandardKernel {
    fn name(&self) -> &str {
        self.name
    }

    fn call(&self, args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
        (self.run)(args)
    }

    fn signature(&self) -> Option<Signature> {
        lpk_model::stdlib::standard(self.name).copied()
    }

    fn shape_rule(&self) -> Option<ShapeRule> {
        super::rules::shape_rule(self.name)
    }

    fn result_shapes(&self, tiles: &[(usize, usize)]) -> Option<Vec<(usize, usize)>> {
        lpk_model::flops::result_shapes(self.name, tiles)
    }

    fn flops(&self, tiles: &[(usize, usize)]) -> Option<f64> {
        lpk_model::flops::flops(self.name, tiles)
    }
}

/// Every standard kernel, in the order of `docs/kernels.md`.
const TABLE: &[(&str, KernelFn)] = &[
    ("copy", blas::copy),
    ("add", blas::add),
    ("add4", blas::add4),
    ("scale", blas::scale),
    ("gemm", blas::gemm),
    ("gemm_acc", blas::gemm_acc),
    ("gemm_sub", blas::gemm_sub),
    ("chol", factor::chol),
    ("trsm", blas::trsm),
    ("syrk", blas::syrk),
    ("lu", factor::lu),
    ("trsm_ll", blas::trsm_ll),
    ("trsm_ru", blas::trsm_ru),
    // The pivoted tile LU and the left solves of gesv/posv.
    ("getrf", pivot::getrf),
    ("gessm", pivot::gessm),
    ("tstrf", pivot::tstrf),
    ("ssssm", pivot::ssssm),
    ("trsm_lu", solve::trsm_lu),
    ("trsm_ln", solve::trsm_ln),
    ("trsm_lt", solve::trsm_lt),
    ("gemm_sub_t", blas::gemm_sub_t),
    ("qr_factor", qr::qr_factor),
    ("qr_pair", qr::qr_pair),
    ("qr_apply", qr::qr_apply),
    ("qr_apply_pair", qr::qr_apply_pair),
    ("lq_factor", lq::lq_factor),
    ("lq_pair", lq::lq_pair),
    ("lq_apply", lq::lq_apply),
    ("lq_apply_pair", lq::lq_apply_pair),
    ("trtri", factor::trtri),
];

/// The standard kernels as registry entries.
pub(super) fn kernels() -> impl Iterator<Item = Arc<dyn Kernel>> {
    TABLE.iter().map(|&(name, run)| {
        let kernel: Arc<dyn Kernel> = Arc::new(StandardKernel { name, run });
        kernel
    })
}
