//! Flop and byte models of the standard kernels (`docs/kernels.md`), used by
//! `lpkc stats` and by the executor's GFLOP/s figure.
//!
//! Every model takes the shapes `(rows, cols)` of the kernel's tile
//! arguments in parameter order (scalars are skipped) and returns `None` for
//! a kernel it does not know or an argument count that does not fit. The
//! counts are the usual LAPACK leading terms plus the element-wise work
//! (one flop per multiply and per add), documented in `docs/performance.md`:
//!
//! | kernel | shapes | flops |
//! |---|---|---|
//! | `copy` | a m×n | 0 |
//! | `add` | a m×n | m n |
//! | `add4` | a m×n | 3 m n |
//! | `scale` | a m×n | m n |
//! | `gemm` | a m×k, b k×n | 2 m n k |
//! | `gemm_acc`, `gemm_sub` | c m×n, a m×k | 2 m n k + m n |
//! | `chol` | a n×n | n³/3 + n²/2 |
//! | `trsm` | l n×n, b m×n | m n² |
//! | `syrk` | c m×n, a m×k | 2 m n k + m n |
//! | `lu` | a n×n | 2n³/3 |
//! | `trsm_ll` | l m×m, b m×n | m² n |
//! | `trsm_ru` | u n×n, b m×n | m n² |
//! | `getrf` | a n×n | 2n³/3 |
//! | `gessm` | l n×n, a n×k | n² k |
//! | `tstrf` | u n×n, a m×n | (n + m) n² − n³/3 |
//! | `ssssm` | l (n+m)×n, c0 n×k, c1 m×k | n² k + 2 m n k |
//! | `trsm_lu`, `trsm_ln`, `trsm_lt` | t n×n, b n×k | n² k |
//! | `gemm_sub_t` | c m×n, a k×m | 2 m n k + m n |
//! | `qr_factor` | a m×n | 2 n² (m − n/3) + m n² (forming t) |
//! | `qr_pair` | r0 m0×n, r1 m1×n | as `qr_factor` with m = m0 + m1 |
//! | `qr_apply` | v m×n, c m×k | 4 m n k + n² k |
//! | `qr_apply_pair` | v m×n, c0, c1 (m0 + m1 = m) ×k | 4 m n k + n² k |
//! | `lq_factor` | a m×n | `qr_factor` of aᵀ (n×m) |
//! | `lq_pair` | l0 m×n0, l1 m×n1 | `qr_factor` of an (n0 + n1)×m tile |
//! | `lq_apply`, `lq_apply_pair` | v k×n, c (or c0, c1) p×n | 4 n k p + k² p |
//! | `trtri` | l n×n | n³/3 |
//!
//! Bytes moved are 8 per element of every tile read and every tile written.

/// Flops of one call of `kernel` on tiles of these shapes.
pub fn flops(kernel: &str, tiles: &[(usize, usize)]) -> Option<f64> {
    let f = |x: usize| x as f64;
    let (m, n) = *tiles.first()?;
    let (m, n) = (f(m), f(n));
    let need = |k: usize| (tiles.len() == k).then_some(());
    Some(match kernel {
        "copy" => {
            need(1)?;
            0.0
        }
        "add" => {
            need(2)?;
            m * n
        }
        "add4" => {
            need(4)?;
            3.0 * m * n
        }
        "scale" => {
            need(1)?;
            m * n
        }
        "gemm" => {
            need(2)?;
            2.0 * m * f(tiles[1].1) * n
        }
        "gemm_acc" | "gemm_sub" | "syrk" => {
            need(3)?;
            2.0 * m * n * f(tiles[1].1) + m * n
        }
        "chol" => {
            need(1)?;
            n * n * n / 3.0 + n * n / 2.0
        }
        "trsm" | "trsm_ru" => {
            need(2)?;
            let (bm, bn) = tiles[1];
            f(bm) * f(bn) * f(bn)
        }
        "trsm_ll" => {
            need(2)?;
            let (bm, bn) = tiles[1];
            f(bm) * f(bm) * f(bn)
        }
        "lu" => {
            need(1)?;
            2.0 * n * n * n / 3.0
        }
        "getrf" | "gessm" | "tstrf" | "ssssm" | "trsm_lu" | "trsm_ln" | "trsm_lt"
        | "gemm_sub_t" => return solve_flops(kernel, tiles),
        "qr_factor" => {
            need(1)?;
            qr_flops(m, n)
        }
        "qr_pair" => {
            need(2)?;
            qr_flops(m + f(tiles[1].0), n.max(f(tiles[1].1)))
        }
        "qr_apply" | "qr_apply_pair" => {
            need(if kernel == "qr_apply" { 3 } else { 4 })?;
            let k = f(tiles[2].1);
            4.0 * m * n * k + n * n * k
        }
        "trtri" => {
            need(1)?;
            n * n * n / 3.0
        }
        "lq_factor" | "lq_pair" | "lq_apply" | "lq_apply_pair" => {
            let (qr, transposed) = as_qr(kernel, tiles);
            return flops(&qr, &transposed);
        }
        _ => return None,
    })
}

/// Flops of the pivoted-LU and left-solve kernels.
fn solve_flops(kernel: &str, tiles: &[(usize, usize)]) -> Option<f64> {
    let f = |x: usize| x as f64;
    let need = |k: usize| (tiles.len() == k).then_some(());
    let (n, k) = (f(tiles.first()?.0), f(tiles.last()?.1));
    Some(match kernel {
        "getrf" => {
            need(1)?;
            2.0 * n * n * n / 3.0
        }
        "gessm" => {
            need(3)?;
            let n = f(tiles[1].0);
            n * n * k
        }
        "tstrf" => {
            need(2)?;
            let m = f(tiles[1].0);
            (n + m) * n * n - n * n * n / 3.0
        }
        "ssssm" => {
            need(4)?;
            let (n, m) = (f(tiles[2].0), f(tiles[3].0));
            n * n * k + 2.0 * m * n * k
        }
        "trsm_lu" | "trsm_ln" | "trsm_lt" => {
            need(2)?;
            n * n * k
        }
        "gemm_sub_t" => {
            need(3)?;
            let (m, nc, inner) = (f(tiles[0].0), f(tiles[0].1), f(tiles[1].0));
            2.0 * m * nc * inner + m * nc
        }
        _ => return None,
    })
}

/// The QR kernel an LQ kernel is the transpose of (`lq_pair` of l0, l1 is
/// `qr_pair` of l0ᵀ, l1ᵀ, transposed), with the transposed tile shapes.
fn as_qr(kernel: &str, tiles: &[(usize, usize)]) -> (String, Vec<(usize, usize)>) {
    let qr = kernel.replacen("lq", "qr", 1);
    (qr, tiles.iter().map(|&(r, c)| (c, r)).collect())
}

fn qr_flops(m: f64, n: f64) -> f64 {
    // Householder QR of an m×n panel (k = min(m, n) reflectors) plus forming
    // the k×k triangular factor t.
    let k = m.min(n);
    2.0 * k * k * (m - k / 3.0) + 2.0 * (n - k) * k * m + m * k * k
}

/// Shapes of the results of one call of `kernel` on tiles of these shapes,
/// in result order (`None` for an unknown kernel or wrong argument count).
pub fn result_shapes(kernel: &str, tiles: &[(usize, usize)]) -> Option<Vec<(usize, usize)>> {
    let a = *tiles.first()?;
    let need = |k: usize| (tiles.len() == k).then_some(());
    Some(match kernel {
        // One result the shape of the first argument.
        "copy" | "scale" | "chol" | "trtri" => {
            need(1)?;
            vec![a]
        }
        "add" => {
            need(2)?;
            vec![a]
        }
        "gemm_acc" | "gemm_sub" | "syrk" | "gemm_sub_t" => {
            need(3)?;
            vec![a]
        }
        "add4" => {
            need(4)?;
            vec![a]
        }
        "gemm" => {
            need(2)?;
            vec![(a.0, tiles[1].1)]
        }
        // Solves: x has the shape of the right-hand side b.
        "trsm" | "trsm_ll" | "trsm_ru" | "trsm_lu" | "trsm_ln" | "trsm_lt" => {
            need(2)?;
            vec![tiles[1]]
        }
        "lu" => {
            need(1)?;
            vec![a, a]
        }
        "getrf" => {
            need(1)?;
            vec![a, a, (a.0, 1)]
        }
        // Appliers of a factor: the result has the shape of c.
        "gessm" | "qr_apply" | "lq_apply" => {
            need(3)?;
            vec![tiles[2]]
        }
        "ssssm" | "qr_apply_pair" | "lq_apply_pair" => {
            need(4)?;
            vec![tiles[2], tiles[3]]
        }
        "tstrf" => {
            need(2)?;
            let rows = a.0 + tiles[1].0;
            vec![a, (rows, a.1), (rows, 1)]
        }
        "qr_factor" => {
            need(1)?;
            let k = a.0.min(a.1);
            vec![(a.0, k), (k, k), (k, a.1)]
        }
        "qr_pair" => {
            need(2)?;
            let m = a.0 + tiles[1].0;
            let n = a.1.max(tiles[1].1);
            let k = m.min(n);
            vec![(m, k), (k, k), (k, n)]
        }
        "lq_factor" | "lq_pair" => {
            let (qr, transposed) = as_qr(kernel, tiles);
            let shapes = result_shapes(&qr, &transposed)?;
            shapes.into_iter().map(|(r, c)| (c, r)).collect()
        }
        _ => return None,
    })
}

/// Bytes read and written by one call (8 per f64 element).
pub fn bytes(kernel: &str, tiles: &[(usize, usize)]) -> Option<f64> {
    let outs = result_shapes(kernel, tiles)?;
    let elems: usize = tiles.iter().chain(&outs).map(|&(r, c)| r * c).sum();
    Some(8.0 * elems as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_terms() {
        assert_eq!(flops("gemm", &[(2, 3), (3, 4)]), Some(48.0));
        assert_eq!(flops("gemm_acc", &[(2, 4), (2, 3), (3, 4)]), Some(56.0));
        assert_eq!(flops("chol", &[(6, 6)]), Some(72.0 + 18.0));
        assert_eq!(flops("trsm", &[(4, 4), (3, 4)]), Some(48.0));
        assert_eq!(flops("trsm_ll", &[(3, 3), (3, 5)]), Some(45.0));
        assert_eq!(flops("lu", &[(3, 3)]), Some(18.0));
        assert_eq!(flops("gemm", &[(2, 3)]), None);
        assert_eq!(flops("nope", &[(2, 3)]), None);
        assert_eq!(flops("copy", &[]), None);
    }

    #[test]
    fn shapes_and_bytes() {
        // (kernel, argument shapes, result shapes): the LQ kernels are the
        // QR kernels on transposed tiles.
        type Shapes = &'static [(usize, usize)];
        let cases: [(&str, Shapes, Shapes); 5] = [
            ("qr_factor", &[(10, 4)], &[(10, 4), (4, 4), (4, 4)]),
            ("qr_pair", &[(4, 4), (3, 4)], &[(7, 4), (4, 4), (4, 4)]),
            ("lq_factor", &[(4, 10)], &[(4, 10), (4, 4), (4, 4)]),
            ("lq_pair", &[(4, 4), (4, 3)], &[(4, 7), (4, 4), (4, 4)]),
            ("gemm", &[(2, 3), (3, 5)], &[(2, 5)]),
        ];
        for (kernel, tiles, want) in cases {
            assert_eq!(
                result_shapes(kernel, tiles).as_deref(),
                Some(want),
                "{kernel}"
            );
        }
        assert_eq!(bytes("add", &[(2, 2), (2, 2)]), Some(8.0 * 12.0));
        assert!(flops("qr_factor", &[(10, 4)]).is_some_and(|f| f > 0.0));
        assert_eq!(
            flops("lq_factor", &[(4, 10)]),
            flops("qr_factor", &[(10, 4)])
        );
        // v 4×10, c 3×10: 4 n k p + k² p with n = 10, k = 4, p = 3.
        let lq_apply = flops("lq_apply", &[(4, 10), (4, 4), (3, 10)]);
        assert_eq!(lq_apply, Some(4.0 * 10.0 * 4.0 * 3.0 + 16.0 * 3.0));
        assert_eq!(lq_apply, flops("qr_apply", &[(10, 4), (4, 4), (10, 3)]));
    }
}
