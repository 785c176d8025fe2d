//! The grammar's integration tests, in one binary: parser behaviour
//! (`parse`), formatter round trips (`fmt`) and proptest robustness on
//! hostile input (`robustness`); `erase` compares trees up to spans.

mod erase;
mod fmt;
mod parse;
mod robustness;

/// The contract's example (TSQR), the one real program the parser, the
/// formatter and the robustness properties all start from.
pub const TSQR: &str = "\
kernel qr_factor(a) -> (v, t, r);
kernel qr_pair(r0, r1) -> (v, t, r);

program tsqr(N: int) {
    require N >= 1;
    input  A[N];
    output R[ceil(log2(N)) + 1, N];
    matrix V[ceil(log2(N)) + 1, N];
    matrix T[ceil(log2(N)) + 1, N];

    for j in range(N) {
        V[0, j], T[0, j], R[0, j] = qr_factor(A[j]);
    }
    for level in range(ceil(log2(N))) {
        for j in range(0, N, 2 ** (level + 1)) {
            if j + 2 ** level < N {
                V[level + 1, j], T[level + 1, j], R[level + 1, j] =
                    qr_pair(R[level, j], R[level, j + 2 ** level]);
            } else {
                V[level + 1, j], T[level + 1, j], R[level + 1, j] = qr_factor(R[level, j]);
            }
        }
    }
}
";
