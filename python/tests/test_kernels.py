"""User kernels written in Python (`lpk.run(..., kernels=...)`,
`@lpk.kernel`): results against NumPy, the errors before any task (a
missing kernel, a declaration that does not match), the errors of a call
(count, dtype, dimensions, shape, exceptions with their traceback), and
two workers calling Python at once."""

import threading

import numpy as np
import pytest

import lpk
from programs import product_then
from conftest import EXAMPLES

B = 8

SPLIT = """
kernel split(a) -> (b, c);
kernel scale2(a, alpha: real, k: int) -> (b);

program split_prog(N: int) {
    input A[N, N];
    output P[N, N];
    output Q[N, N];
    output S[N, N];
    for i in range(N) {
        for j in range(N) {
            P[i, j], Q[i, j] = split(A[i, j]);
            S[i, j] = scale2(P[i, j], 0.5, i + j);
        }
    }
}
"""


def split_fn(a):
    return np.triu(a), np.tril(a, -1)


def scale2_fn(a, alpha, k):
    assert isinstance(alpha, float) and isinstance(k, int)
    return a * alpha + k


def split_prog():
    return lpk.compile(SPLIT, filename="split.lpk")


def grid_k(n):
    """The value of i + j of the tile each entry lies in."""
    idx = np.arange(n) // B
    return (idx[:, None] + idx[None, :]).astype(float)


def test_user_kernels_match_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((20, 20))  # edge tiles of 4
    k_split = lpk.kernel(split_fn, results=2, shape=[0, 0])
    k_scale = lpk.kernel(scale2_fn, shape=0)
    out = lpk.run(split_prog(), {"A": a}, block=B, kernels={"split": k_split, "scale2": k_scale})
    # Tile-wise triu/tril of each tile.
    want_p = np.zeros_like(a)
    want_q = np.zeros_like(a)
    for i in range(0, 20, B):
        for j in range(0, 20, B):
            t = a[i:i + B, j:j + B]
            want_p[i:i + B, j:j + B] = np.triu(t)
            want_q[i:i + B, j:j + B] = np.tril(t, -1)
    assert np.array_equal(out["P"], want_p)
    assert np.array_equal(out["Q"], want_q)
    assert np.array_equal(out["S"], want_p * 0.5 + grid_k(20))
    assert out.report["tasks"] == 2 * 9


def test_plain_callable_and_decorator():
    @lpk.kernel(results=2, shape=lambda a: [a, a])
    def split(a):
        return split_fn(a)

    a = np.arange(16 * 16, dtype=float).reshape(16, 16)
    out = lpk.run(split_prog(), {"A": a}, block=B, kernels={"split": split, "scale2": scale2_fn})
    assert np.array_equal(out["P"] + out["Q"], a)
    assert split(np.eye(2))[0].shape == (2, 2)  # still callable


GEMM = EXAMPLES / "gemm.lpk"
MYGEMM = product_then("copy", acc="my_gemm_acc", name="mygemm")


def gemm_acc_shape(c, a, b):
    if a[0] != c[0] or b[1] != c[1] or a[1] != b[0]:
        raise ValueError(f"gemm_acc shapes {c} {a} {b} do not fit")
    return c


@lpk.kernel(shape=gemm_acc_shape, flops=lambda c, a, b: 2.0 * a[0] * a[1] * b[1])
def my_gemm_acc(c, a, b):
    return c + a @ b


def test_python_gemm_acc_against_numpy_and_itself():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((30, 45))
    b = rng.standard_normal((45, 20))
    prog = lpk.compile(MYGEMM)
    one = lpk.run(prog, {"A": a, "B": b}, block=B, workers=2, kernels={"my_gemm_acc": my_gemm_acc})
    two = lpk.run(prog, {"A": a, "B": b}, block=B, workers=1, kernels={"my_gemm_acc": my_gemm_acc})
    assert one["C"].tobytes() == two["C"].tobytes()
    c = a @ b
    assert np.max(np.abs(one["C"] - c)) <= 1e-13 * np.max(np.abs(a)) * np.max(np.abs(b)) * 45
    assert one.report["flops"] > 0
    # The built-in kernel under its own name, replaced on request.
    builtin = lpk.run(lpk.load(GEMM), {"A": a, "B": b}, block=B)
    replaced = lpk.run(
        lpk.load(GEMM), {"A": a, "B": b}, block=B,
        kernels={"gemm_acc": lpk.kernel(lambda c, a, b: c + a @ b, override=True)},
    )
    assert np.max(np.abs(builtin["C"] - replaced["C"])) <= 1e-12


class Counting:
    """A kernel that counts its calls."""

    def __init__(self, fn):
        self.fn = fn
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        return self.fn(*args)


def run_split(kernels, n=16, **kw):
    a = np.random.default_rng(3).standard_normal((n, n))
    return lpk.run(split_prog(), {"A": a}, block=B, kernels=kernels, **kw)


def test_missing_kernel_before_any_task():
    k = Counting(split_fn)
    with pytest.raises(lpk.RunError) as e:
        run_split({"split": lpk.kernel(k, results=2, shape=0)})
    msg = str(e.value)
    assert "kernel `scale2` has no implementation (called on line 13)" in msg
    assert 'kernels={"scale2": fn}' in msg
    assert k.calls == 0


def test_declaration_mismatches_before_any_task():
    k = Counting(split_fn)
    with pytest.raises(ValueError, match=r"results=1\), but the program declares `kernel split\(a\) -> \(b, c\)` with 2"):
        run_split({"split": lpk.kernel(k), "scale2": scale2_fn})
    with pytest.raises(ValueError, match=r"declares `kernel scale2\(a, alpha: real, k: int\) -> \(b\)`, so it is called with 3 argument\(s\), but its function, with signature \(a, alpha\), cannot"):
        run_split({"split": lpk.kernel(k, results=2), "scale2": lambda a, alpha: a})
    with pytest.raises(ValueError, match="does not declare"):
        run_split({"split": lpk.kernel(k, results=2), "scale2": scale2_fn, "splt": split_fn})
    with pytest.raises(ValueError, match="shape=1 names tile argument 1"):
        run_split({"split": lpk.kernel(k, results=2, shape=1), "scale2": scale2_fn})
    with pytest.raises(ValueError, match="is a standard kernel"):
        lpk.run(lpk.load(GEMM), {"A": np.eye(8), "B": np.eye(8)}, block=B,
                kernels={"gemm_acc": k})
    with pytest.raises(ValueError, match="no standard kernel is called `split`"):
        run_split({"split": lpk.kernel(k, results=2, override=True), "scale2": scale2_fn})
    with pytest.raises(TypeError, match="must be a callable"):
        run_split({"split": 3, "scale2": scale2_fn})
    assert k.calls == 0


def test_shape_rule_error_at_bind_time():
    k = Counting(split_fn)

    def bad_rule(a):
        raise ValueError("only square tiles")

    with pytest.raises(ValueError, match=r"shape rule raised on tiles [48]×[48]: ValueError: only square tiles"):
        run_split({"split": lpk.kernel(k, results=2, shape=bad_rule), "scale2": scale2_fn}, n=12)
    assert k.calls == 0


def call_error(kernels, n=16):
    with pytest.raises(lpk.RunError) as e:
        run_split(kernels, n=n, workers=1)
    return str(e.value)


def test_call_errors_name_the_task():
    scale = lpk.kernel(scale2_fn, shape=0)
    msg = call_error({"split": lpk.kernel(lambda a: a, results=2, shape=0), "scale2": scale})
    assert msg.startswith("task split@")
    assert "reading A[0, 0]" in msg
    assert "it returned 1 array(s), but it declares 2 result(s)" in msg
    msg = call_error({"split": lpk.kernel(lambda a: (a, a[:, :2]), results=2, shape=0), "scale2": scale})
    assert "result 1 is 8×2, but the kernel's shape rule says 8×8" in msg
    msg = call_error({"split": lpk.kernel(lambda a: (a, a.astype(complex)), results=2), "scale2": scale})
    assert "result 1 has dtype complex128" in msg
    msg = call_error({"split": lpk.kernel(lambda a: (a, a.astype(np.int64)), results=2), "scale2": scale})
    assert "result 1 has dtype int64" in msg
    msg = call_error({"split": lpk.kernel(lambda a: (a, np.array(a, dtype=object)), results=2), "scale2": scale})
    assert "result 1 has dtype object" in msg
    msg = call_error({"split": lpk.kernel(lambda a: (a, a.ravel()), results=2), "scale2": scale})
    assert "result 1 has 1 dimension(s)" in msg
    msg = call_error({"split": lpk.kernel(lambda a: (a, 1.0), results=2), "scale2": scale})
    assert "result 1 is a float, not a NumPy array" in msg
    msg = call_error({"split": lpk.kernel(lambda a: None, results=2), "scale2": scale})
    assert "it returned NoneType" in msg
    # A plain callable takes the declaration's result count.
    msg = call_error({"split": lambda a: a, "scale2": scale})
    assert "it returned 1 array(s), but it declares 2 result(s)" in msg


def test_float32_results_are_converted_and_inputs_read_only():
    seen = []

    def split(a):
        seen.append((a.dtype, a.ndim, a.flags.writeable))
        return a.astype(np.float32), np.zeros(a.shape, dtype=np.float16)

    a = np.random.default_rng(4).standard_normal((16, 16))
    out = lpk.run(split_prog(), {"A": a}, block=B,
                  kernels={"split": lpk.kernel(split, results=2, shape=0), "scale2": scale2_fn})
    assert np.array_equal(out["P"], a.astype(np.float32).astype(np.float64))
    assert set(seen) == {(np.dtype(np.float64), 2, False)}

    def writes(a):
        a[0, 0] = 1.0
        return a, a

    msg = call_error({"split": lpk.kernel(writes, results=2), "scale2": scale2_fn})
    assert "ValueError: assignment destination is read-only" in msg


def test_tiles_pass_in_fortran_order_and_come_back_in_either_order():
    # Tiles of 70 x 70 and the edges 70 x 10, 10 x 70 (block 70 on 150 x
    # 150): more than one block of the transposing copy of a C-ordered
    # result, rows != columns.
    seen = []

    def split(a):
        seen.append(a.flags.f_contiguous)
        return np.ascontiguousarray(a * 2.0), np.asfortranarray(a - 1.0)

    a = np.random.default_rng(5).standard_normal((150, 150))
    out = lpk.run(split_prog(), {"A": a}, block=70,
                  kernels={"split": lpk.kernel(split, results=2, shape=0), "scale2": scale2_fn})
    assert np.array_equal(out["P"], a * 2.0)
    assert np.array_equal(out["Q"], a - 1.0)
    assert seen and all(seen)


def deep_failure(a):
    raise KeyError("no such thing")


def test_exception_carries_type_message_and_traceback():
    def split(a):
        return deep_failure(a)

    msg = call_error({"split": lpk.kernel(split, results=2), "scale2": scale2_fn})
    assert "task split@" in msg
    assert "Python kernel `split`: raised KeyError: 'no such thing'" in msg
    assert "Traceback (most recent call last):" in msg
    assert "in deep_failure" in msg and "test_kernels.py" in msg


def test_two_workers_call_python_at_once():
    """Two workers are inside Python at the same time (each waits at a
    barrier the other must reach): the run holds no GIL while it runs, and
    each call attaches it only for itself."""
    barrier = threading.Barrier(2, timeout=20)
    met = []

    def split(a):
        met.append(barrier.wait())  # the GIL is released while waiting
        return split_fn(a)

    out = run_split({"split": lpk.kernel(split, results=2, shape=0), "scale2": scale2_fn},
                    n=16, workers=2)
    assert len(met) == 4 and sorted(met) == [0, 0, 1, 1]
    assert out["P"].shape == (16, 16)
