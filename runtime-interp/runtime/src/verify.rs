//! Residual checks for programs whose outputs have a known relation to
//! their inputs (`lpkc run --verify`). The relation is recognised from the
//! kernels a program calls and the roles of its matrices:
//!
//! | kernels called | matrices | residual |
//! |---|---|---|
//! | `chol` | input A, output L | ‖A − L Lᵀ‖ / ‖A‖ (A from its lower triangle) |
//! | `lu` | input A, outputs L, U | ‖A − L U‖ / ‖A‖ |
//! | `lq_factor` (a band reduction) | input A, output B | max ᵢ \|σᵢ(A) − σᵢ(B)\| / σ₁(A) |
//! | `qr_factor` | input A, output R | ‖AᵀA − RᵀR‖ / ‖A‖² |
//! | `trtri`, two inputs | inputs L, B, output X | ‖L X − B‖ / (‖L‖ ‖X‖) |
//! | `getrf` or `chol`, two inputs | inputs A, B, output X | ‖A X − B‖ / (‖A‖ ‖X‖) (A from its lower triangle with `chol`) |
//! | `trtri`, one input | input L, output X | ‖L X − I‖ / (‖L‖ ‖X‖) |
//! | only `gemm*`, `add*`, `copy`, `scale` | inputs A, B, output C | ‖C − A B‖ / (‖A‖ ‖B‖) |
//!
//! Norms are Frobenius norms; L is taken as its lower triangle where the
//! program reads only that. The bound is `1e-12 · n` (n the largest
//! dimension), generous for backward-stable algorithms in f64.

use crate::kernels::Tile;
use lpk_model::program::{Instance, Program, Role};
use lpk_model::MatrixId;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A computed residual.
#[derive(Clone, Debug, PartialEq)]
pub struct Residual {
    /// The relation checked, e.g. "A = L Lᵀ".
    pub relation: &'static str,
    /// The residual formula.
    pub formula: &'static str,
    /// Its value.
    pub value: f64,
    /// The bound it must stay under.
    pub bound: f64,
}

impl Residual {
    /// Whether the residual is within its bound.
    pub fn ok(&self) -> bool {
        self.value.is_finite() && self.value <= self.bound
    }
}

fn fro(m: &Tile) -> f64 {
    m.norm_l2()
}

fn tril(m: &Tile) -> Tile {
    Tile::from_fn(
        m.nrows(),
        m.ncols(),
        |i, j| if i >= j { m[(i, j)] } else { 0.0 },
    )
}

fn sym_from_lower(m: &Tile) -> Tile {
    Tile::from_fn(m.nrows(), m.ncols(), |i, j| {
        if i >= j {
            m[(i, j)]
        } else {
            m[(j, i)]
        }
    })
}

/// Why a residual cannot be computed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The program's kernels and matrices match no known relation.
    #[error("--verify knows no relation between the inputs and outputs of program `{program}` (it recognises Cholesky, LU, QR, band reduction, linear and triangular solves, triangular inverse, and matrix products)")]
    Unknown {
        /// The program's name.
        program: String,
    },
    /// An output whose shape is not the one the relation needs.
    #[error("cannot verify: {what} is {}x{} but should be {}x{}", have.0, have.1, want.0, want.1)]
    Shape {
        /// The output ("L", "U", "X").
        what: &'static str,
        /// Its shape.
        have: (usize, usize),
        /// The shape it should have.
        want: (usize, usize),
    },
    /// An R factor that is not square of A's column count.
    #[error("cannot verify: R is {}x{} but A has {a_cols} columns", r.0, r.1)]
    RShape {
        /// R's shape.
        r: (usize, usize),
        /// A's columns.
        a_cols: usize,
    },
    /// Matrices of the relation whose shapes do not conform, e.g. "L and
    /// X" or "A, B and C".
    #[error("cannot verify: {0} do not conform")]
    NotConforming(&'static str),
    /// The reference SVD of a band reduction's check did not converge.
    #[error("cannot verify: the reference SVD did not converge")]
    NoSvd,
}

fn same(a: &Tile, b: &Tile, what: &'static str) -> Result<(), VerifyError> {
    if a.nrows() != b.nrows() || a.ncols() != b.ncols() {
        return Err(VerifyError::Shape {
            what,
            have: (a.nrows(), a.ncols()),
            want: (b.nrows(), b.ncols()),
        });
    }
    Ok(())
}

fn ratio(num: f64, den: f64) -> f64 {
    if den == 0.0 {
        num
    } else {
        num / den
    }
}

/// What a relation's check is given: the dense inputs in matrix order,
/// the outputs with their ids, and the bound.
struct Operands<'a> {
    ins: Vec<&'a Tile>,
    outs: Vec<(MatrixId, &'a Tile)>,
    bound: f64,
    /// The error of a program whose relation is not known.
    unknown: VerifyError,
}

/// Computes the residual of a run. `inputs` and `outputs` are the dense
/// matrices by matrix index (outputs assembled); `qr_r` is the final R
/// factor for QR programs whose R is not a plain 2-D matrix (TSQR).
pub fn verify(
    program: &Program,
    inputs: &BTreeMap<MatrixId, Tile>,
    outputs: &BTreeMap<MatrixId, Tile>,
    qr_r: Option<&Tile>,
) -> Result<Residual, VerifyError> {
    let called: Vec<&str> = program
        .statements
        .iter()
        .filter_map(|s| program.get_kernel(s.kernel))
        .map(|k| k.name.as_str())
        .collect();
    let calls = |k: &str| called.contains(&k);
    let ins: Vec<&Tile> = inputs.values().collect();
    let outs: Vec<(MatrixId, &Tile)> = program
        .matrix_ids()
        .filter(|(_, m)| m.role == Role::Output)
        .filter_map(|(i, _)| outputs.get(&i).map(|t| (i, t)))
        .collect();
    let n = ins
        .iter()
        .chain(outs.iter().map(|(_, t)| t))
        .map(|t| t.nrows().max(t.ncols()))
        .max()
        .unwrap_or(1) as f64;
    let unknown = VerifyError::Unknown {
        program: program.name.clone(),
    };
    let ops = Operands {
        ins,
        outs,
        bound: 1e-12 * n.max(1.0),
        unknown,
    };
    let product_only = called
        .iter()
        .all(|k| matches!(*k, "gemm" | "gemm_acc" | "add" | "add4" | "copy" | "scale"));
    if (calls("getrf") || calls("chol")) && ops.ins.len() == 2 {
        solve(ops, calls("chol"))
    } else if calls("chol") {
        cholesky(ops)
    } else if calls("lu") {
        lu(ops)
    } else if calls("lq_factor") {
        band(ops)
    } else if calls("qr_factor") {
        qr(ops, qr_r)
    } else if calls("trtri") {
        triangular(ops)
    } else if product_only && (calls("gemm") || calls("gemm_acc")) {
        product(ops)
    } else {
        Err(ops.unknown)
    }
}

/// A = L Lᵀ.
fn cholesky(ops: Operands<'_>) -> Result<Residual, VerifyError> {
    let ([a], Some((_, l))) = (ops.ins.as_slice(), ops.outs.first()) else {
        return Err(ops.unknown);
    };
    let a = sym_from_lower(a);
    let l = tril(l);
    same(&l, &a, "L")?;
    let r = &a - &l * l.transpose();
    Ok(Residual {
        relation: "A = L Lᵀ",
        formula: "‖A − L Lᵀ‖ / ‖A‖",
        value: ratio(fro(&r), fro(&a)),
        bound: ops.bound,
    })
}

/// A = L U.
fn lu(ops: Operands<'_>) -> Result<Residual, VerifyError> {
    let ([a], [(_, l), (_, u), ..]) = (ops.ins.as_slice(), ops.outs.as_slice()) else {
        return Err(ops.unknown);
    };
    same(l, a, "L")?;
    same(u, a, "U")?;
    let r = *a - *l * *u;
    Ok(Residual {
        relation: "A = L U",
        formula: "‖A − L U‖ / ‖A‖",
        value: ratio(fro(&r), fro(a)),
        bound: ops.bound,
    })
}

/// The residual ‖T X − B‖ / (‖T‖ ‖X‖) of the solve T X = B (B the
/// identity for an inverse), once X has B's shape and T conforms with
/// both (else the error names the `operands`).
fn solve_residual(
    (relation, formula): (&'static str, &'static str),
    operands: &'static str,
    [t, x, b]: [&Tile; 3],
    bound: f64,
) -> Result<Residual, VerifyError> {
    same(x, b, "X")?;
    if t.ncols() != x.nrows() || t.nrows() != b.nrows() {
        return Err(VerifyError::NotConforming(operands));
    }
    let r = t * x - b;
    Ok(Residual {
        relation,
        formula,
        value: ratio(fro(&r), fro(t) * fro(x)),
        bound,
    })
}

/// A X = B (`gesv`, or `posv` with `symmetric`: A from its lower
/// triangle, the only part such a program reads).
fn solve(ops: Operands<'_>, symmetric: bool) -> Result<Residual, VerifyError> {
    let ([a, b], [(_, x)]) = (ops.ins.as_slice(), ops.outs.as_slice()) else {
        return Err(ops.unknown);
    };
    let a = if symmetric {
        sym_from_lower(a)
    } else {
        (*a).clone()
    };
    let relation = ("A X = B", "‖A X − B‖ / (‖A‖ ‖X‖)");
    solve_residual(relation, "A, X and B", [&a, x, b], ops.bound)
}

/// AᵀA = RᵀR, with the final R given (`qr_r`) or the first output.
fn qr(ops: Operands<'_>, qr_r: Option<&Tile>) -> Result<Residual, VerifyError> {
    let [a] = ops.ins.as_slice() else {
        return Err(ops.unknown);
    };
    let r = match (qr_r, ops.outs.first()) {
        (Some(r), _) => r,
        (None, Some((_, r))) => *r,
        (None, None) => return Err(ops.unknown),
    };
    let r = Tile::from_fn(
        r.nrows(),
        r.ncols(),
        |i, j| if i <= j { r[(i, j)] } else { 0.0 },
    );
    if r.nrows() != a.ncols() || r.ncols() != a.ncols() {
        return Err(VerifyError::RShape {
            r: (r.nrows(), r.ncols()),
            a_cols: a.ncols(),
        });
    }
    let ata = a.transpose() * *a;
    let rtr = r.transpose() * &r;
    let na = fro(a);
    Ok(Residual {
        relation: "AᵀA = RᵀR",
        formula: "‖AᵀA − RᵀR‖ / ‖A‖²",
        value: ratio(fro(&(&ata - &rtr)), na * na),
        bound: ops.bound,
    })
}

/// σ(B) = σ(A) for a two-sided orthogonal reduction B = Q1ᵀ A Q2 (the
/// band reduction `examples/bdfac.lpk`), the singular values from faer's
/// SVD of both.
fn band(ops: Operands<'_>) -> Result<Residual, VerifyError> {
    let ([a], [(_, b), ..]) = (ops.ins.as_slice(), ops.outs.as_slice()) else {
        return Err(ops.unknown);
    };
    same(b, a, "B")?;
    let sv = |m: &Tile| m.as_ref().singular_values().map_err(|_| VerifyError::NoSvd);
    let (sa, sb) = (sv(a)?, sv(b)?);
    let diff = sa
        .iter()
        .zip(&sb)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    Ok(Residual {
        relation: "σ(B) = σ(A)",
        formula: "max |σᵢ(A) − σᵢ(B)| / σ₁(A)",
        value: ratio(diff, sa.first().copied().unwrap_or(0.0)),
        bound: ops.bound,
    })
}

/// L X = I (an inverse) or L X = B (a solve).
fn triangular(ops: Operands<'_>) -> Result<Residual, VerifyError> {
    let Some((_, x)) = ops.outs.first() else {
        return Err(ops.unknown);
    };
    match ops.ins.as_slice() {
        [l] => {
            let l = tril(l);
            let i = Tile::identity(l.nrows(), l.ncols());
            let relation = ("L X = I", "‖L X − I‖ / (‖L‖ ‖X‖)");
            solve_residual(relation, "L and X", [&l, x, &i], ops.bound)
        }
        [l, b] => {
            let l = tril(l);
            let relation = ("L X = B", "‖L X − B‖ / (‖L‖ ‖X‖)");
            solve_residual(relation, "L and X", [&l, x, b], ops.bound)
        }
        _ => Err(ops.unknown),
    }
}

/// C = A B.
fn product(ops: Operands<'_>) -> Result<Residual, VerifyError> {
    let ([a, b], [(_, c)]) = (ops.ins.as_slice(), ops.outs.as_slice()) else {
        return Err(ops.unknown);
    };
    if a.ncols() != b.nrows() || c.nrows() != a.nrows() || c.ncols() != b.ncols() {
        return Err(VerifyError::NotConforming("A, B and C"));
    }
    let r = *c - *a * *b;
    Ok(Residual {
        relation: "C = A B",
        formula: "‖C − A B‖ / (‖A‖ ‖B‖)",
        value: ratio(fro(&r), fro(a) * fro(b)),
        bound: ops.bound,
    })
}

/// For a QR program whose R matrix is not the 2-D factor (TSQR: R is
/// indexed by tree level), the final R is the one R tile no task reads;
/// `None` for other programs. `outputs` holds output tiles by matrix and
/// tile index.
pub(crate) fn final_qr_r(
    inst: &Instance<'_>,
    outputs: &BTreeMap<MatrixId, BTreeMap<Vec<i64>, Arc<Tile>>>,
) -> Option<Arc<Tile>> {
    let program = inst.program;
    let (m, decl) = program
        .matrix_ids()
        .find(|(_, m)| m.role == Role::Output && m.name == "R")?;
    let a_dims = program
        .matrices
        .iter()
        .find(|m| m.role == Role::Input)?
        .extents
        .len();
    if a_dims == 2 && decl.extents.len() == 2 {
        return None;
    }
    let mut engine = lpk_model::query::Engine::new(inst);
    let mut unread = outputs.get(&m)?.iter().filter(|(idx, _)| {
        let tile = lpk_model::task::TileRef {
            matrix: m,
            index: (*idx).clone(),
        };
        engine.readers(&tile).map(|r| r.is_empty()).unwrap_or(false)
    });
    let (_, first) = unread.next()?;
    if unread.next().is_some() {
        return None;
    }
    Some(first.clone())
}
