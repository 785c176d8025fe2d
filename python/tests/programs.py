"""Program sources several test files share."""


def product_then(unary: str, *, acc: str = "gemm_acc", name: str) -> str:
    """C = unary(A B): the tiled product (`gemm`, then `acc` over k),
    each tile of C then passed through the one-tile kernel `unary`."""
    return f"""
kernel gemm(a, b) -> (c);
kernel {acc}(c, a, b) -> (d);
kernel {unary}(a) -> (b);

program {name}(M: int, N: int, K: int) {{
    require M >= 1;
    require N >= 1;
    require K >= 1;
    input A[M, K];
    input B[K, N];
    output C[M, N];
    matrix P[K, M, N];
    for m in range(M) {{
        for n in range(N) {{
            P[0, m, n] = gemm(A[m, 0], B[0, n]);
            for k in range(1, K) {{
                P[k, m, n] = {acc}(P[k - 1, m, n], A[m, k], B[k, n]);
            }}
            C[m, n] = {unary}(P[K - 1, m, n]);
        }}
    }}
}}
"""
