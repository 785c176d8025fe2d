//! The shape rules of the standard kernels (`docs/kernels.md`): which
//! dimensions of which tile arguments must agree, and which argument
//! dimension each result dimension copies. The kernels check the same
//! rules on real tiles (`blas.rs`, `factor.rs`, `qr.rs`); these tables let
//! a run check them on tile shapes alone, before any task runs
//! ([`crate::shapes`]). Result sizes the rules do not copy from an argument
//! (the `min(m, n)` of a QR) come from `lpk_model::flops::result_shapes`.

/// A dimension of a tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dim {
    /// Rows.
    Rows,
    /// Columns.
    Cols,
}

impl Dim {
    /// 0 for rows, 1 for columns.
    pub fn index(self) -> usize {
        match self {
            Dim::Rows => 0,
            Dim::Cols => 1,
        }
    }

    /// "rows" or "columns".
    pub fn plural(self) -> &'static str {
        match self {
            Dim::Rows => "rows",
            Dim::Cols => "columns",
        }
    }
}

/// A dimension of a tile argument: its position among the kernel's tile
/// arguments (scalars skipped) and the dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgDim {
    /// Position among the tile arguments.
    pub arg: usize,
    /// Rows or columns.
    pub dim: Dim,
}

/// The shape rule of one kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShapeRule {
    /// Pairs of argument dimensions that must have the same size, in the
    /// order the kernel checks them.
    pub ties: &'static [(ArgDim, ArgDim)],
    /// Per result, the argument dimension its rows and its columns copy
    /// (`None`: a size computed otherwise).
    pub results: &'static [[Option<ArgDim>; 2]],
}

const fn r(arg: usize) -> ArgDim {
    ArgDim {
        arg,
        dim: Dim::Rows,
    }
}

const fn c(arg: usize) -> ArgDim {
    ArgDim {
        arg,
        dim: Dim::Cols,
    }
}

const SAME_AS_FIRST: &[[Option<ArgDim>; 2]] = &[[Some(r(0)), Some(c(0))]];
const SQUARE: &[(ArgDim, ArgDim)] = &[(r(0), c(0))];

/// `gemm_acc` and `gemm_sub`, c ± a · b on (c, a, b): a's rows = c's
/// rows, b's columns = c's columns, a's columns = b's rows.
const ACCUMULATED_PRODUCT: ShapeRule = ShapeRule {
    ties: &[(r(1), r(0)), (c(2), c(0)), (c(1), r(2))],
    results: SAME_AS_FIRST,
};

/// `trsm` (x lᵀ = b) and `trsm_ru` (x u = b) on a square (t, b): b's
/// columns = t's order; x has b's shape.
const RIGHT_SOLVE: ShapeRule = ShapeRule {
    ties: &[(r(0), c(0)), (c(1), r(0))],
    results: &[[Some(r(1)), Some(c(1))]],
};

/// `trsm_lu`, `trsm_ln` and `trsm_lt` (t x = b or tᵀ x = b) on a square
/// (t, b): b's rows = t's order; x has b's shape.
const LEFT_SOLVE: ShapeRule = ShapeRule {
    ties: &[(r(0), c(0)), (r(1), r(0))],
    results: &[[Some(r(1)), Some(c(1))]],
};

/// Every standard kernel's rule, in the order of `docs/kernels.md`.
const RULES: &[(&str, ShapeRule)] = &[
    (
        "copy",
        ShapeRule {
            ties: &[],
            results: SAME_AS_FIRST,
        },
    ),
    (
        "scale",
        ShapeRule {
            ties: &[],
            results: SAME_AS_FIRST,
        },
    ),
    (
        "add",
        ShapeRule {
            ties: &[(r(0), r(1)), (c(0), c(1))],
            results: SAME_AS_FIRST,
        },
    ),
    (
        "add4",
        ShapeRule {
            ties: &[
                (r(0), r(1)),
                (c(0), c(1)),
                (r(0), r(2)),
                (c(0), c(2)),
                (r(0), r(3)),
                (c(0), c(3)),
            ],
            results: SAME_AS_FIRST,
        },
    ),
    (
        "gemm",
        ShapeRule {
            ties: &[(c(0), r(1))],
            results: &[[Some(r(0)), Some(c(1))]],
        },
    ),
    ("gemm_acc", ACCUMULATED_PRODUCT),
    ("gemm_sub", ACCUMULATED_PRODUCT),
    // (c, a, b): d = c - a bᵀ.
    (
        "syrk",
        ShapeRule {
            ties: &[(r(1), r(0)), (r(2), c(0)), (c(1), c(2))],
            results: SAME_AS_FIRST,
        },
    ),
    (
        "chol",
        ShapeRule {
            ties: SQUARE,
            results: SAME_AS_FIRST,
        },
    ),
    (
        "trtri",
        ShapeRule {
            ties: SQUARE,
            results: SAME_AS_FIRST,
        },
    ),
    (
        "lu",
        ShapeRule {
            ties: SQUARE,
            results: &[[Some(r(0)), Some(c(0))], [Some(r(0)), Some(c(0))]],
        },
    ),
    ("trsm", RIGHT_SOLVE),
    // (l, b): l x = b, b's rows = l's order.
    (
        "trsm_ll",
        ShapeRule {
            ties: &[(r(0), c(0)), (r(1), r(0))],
            results: &[[Some(r(1)), Some(c(1))]],
        },
    ),
    ("trsm_ru", RIGHT_SOLVE),
    // The pivoted tile LU. (a) -> (l, u, p): p is n×1.
    (
        "getrf",
        ShapeRule {
            ties: SQUARE,
            results: &[
                [Some(r(0)), Some(c(0))],
                [Some(r(0)), Some(c(0))],
                [Some(r(0)), None],
            ],
        },
    ),
    // (p, l, a): l square, p's rows and a's rows = l's order.
    (
        "gessm",
        ShapeRule {
            ties: &[(r(1), c(1)), (r(0), r(1)), (r(2), r(1))],
            results: &[[Some(r(2)), Some(c(2))]],
        },
    ),
    // (u, a) -> (u2, l, p): u square, a's columns = u's order; l and p
    // have u's rows plus a's rows, a sum left to the flop model.
    (
        "tstrf",
        ShapeRule {
            ties: &[(r(0), c(0)), (c(1), c(0))],
            results: &[[Some(r(0)), Some(c(0))], [None, Some(c(0))], [None, None]],
        },
    ),
    // (l, p, c0, c1): p's rows = l's rows, c0's rows = l's columns; c0's
    // rows + c1's rows = l's rows is a sum, left to the kernel.
    (
        "ssssm",
        ShapeRule {
            ties: &[(r(1), r(0)), (r(2), c(0)), (c(3), c(2))],
            results: &[[Some(r(2)), Some(c(2))], [Some(r(3)), Some(c(3))]],
        },
    ),
    ("trsm_lu", LEFT_SOLVE),
    ("trsm_ln", LEFT_SOLVE),
    ("trsm_lt", LEFT_SOLVE),
    // (c, a, b): d = c - aᵀ b.
    (
        "gemm_sub_t",
        ShapeRule {
            ties: &[(c(1), r(0)), (c(2), c(0)), (r(1), r(2))],
            results: SAME_AS_FIRST,
        },
    ),
    // (a) -> (v, t, r): v m×k, t k×k, r k×n with k = min(m, n).
    (
        "qr_factor",
        ShapeRule {
            ties: &[],
            results: &[[Some(r(0)), None], [None, None], [None, Some(c(0))]],
        },
    ),
    // (r0, r1) -> (v, t, r): v (m0 + m1)×k, t k×k, r k×n.
    (
        "qr_pair",
        ShapeRule {
            ties: &[(c(0), c(1))],
            results: &[[None, None], [None, None], [None, Some(c(0))]],
        },
    ),
    // (v, t, c): t square of v's columns, c's rows = v's rows.
    (
        "qr_apply",
        ShapeRule {
            ties: &[(r(1), c(0)), (c(1), c(0)), (r(2), r(0))],
            results: &[[Some(r(2)), Some(c(2))]],
        },
    ),
    // (v, t, c0, c1): c0's rows + c1's rows = v's rows is a sum,
    // not a tie, and is left to the kernel.
    (
        "qr_apply_pair",
        ShapeRule {
            ties: &[(r(1), c(0)), (c(1), c(0)), (c(2), c(3))],
            results: &[[Some(r(2)), Some(c(2))], [Some(r(3)), Some(c(3))]],
        },
    ),
    // (a) -> (v, t, l): v k×n, t k×k, l m×k with k = min(m, n).
    (
        "lq_factor",
        ShapeRule {
            ties: &[],
            results: &[[None, Some(c(0))], [None, None], [Some(r(0)), None]],
        },
    ),
    // (l0, l1) -> (v, t, l): v k×(n0 + n1), t k×k, l m×k.
    (
        "lq_pair",
        ShapeRule {
            ties: &[(r(0), r(1))],
            results: &[[None, None], [None, None], [Some(r(0)), None]],
        },
    ),
    // (v, t, c): t square of v's rows, c's columns = v's columns.
    (
        "lq_apply",
        ShapeRule {
            ties: &[(r(1), r(0)), (c(1), r(0)), (c(2), c(0))],
            results: &[[Some(r(2)), Some(c(2))]],
        },
    ),
    // (v, t, c0, c1): c0's columns + c1's columns = v's columns is a sum,
    // not a tie, and is left to the kernel.
    (
        "lq_apply_pair",
        ShapeRule {
            ties: &[(r(1), r(0)), (c(1), r(0)), (r(2), r(3))],
            results: &[[Some(r(2)), Some(c(2))], [Some(r(3)), Some(c(3))]],
        },
    ),
];

/// The shape rule of a standard kernel, `None` for any other name.
pub fn shape_rule(kernel: &str) -> Option<ShapeRule> {
    RULES.iter().find(|(n, _)| *n == kernel).map(|(_, r)| *r)
}
