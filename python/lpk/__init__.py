"""lpk for Python: compile ``.lpk`` tiled loop programs, ask their task
graphs, and run them on NumPy arrays.

>>> import lpk, numpy as np
>>> prog = lpk.load("examples/cholesky.lpk")
>>> inst = prog.bind(N=4)
>>> inst.children("chol@21(i=0)")          # doctest: +SKIP
[Task('trsm@24(i=0, j=1)'), ...]
>>> out = lpk.run(prog, {"A": spd_matrix}, block=256)   # doctest: +SKIP
>>> out["L"]                                 # a NumPy array

See docs/python.md for the whole API.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Union

import numpy as np

from . import _lpk
from ._lpk import (
    DEFAULT_MAX_TASKS,
    BindError,
    CompileError,
    Dag,
    Diagnostic,
    Instance,
    LpkError,
    Program,
    QueryError,
    RunError,
    Task,
    TaskLimitError,
    Tile,
    __version__,
    compile,
    load,
    status,
    submit,
)

__all__ = [
    "DEFAULT_MAX_TASKS",
    "BindError",
    "CompileError",
    "Dag",
    "Diagnostic",
    "Instance",
    "Kernel",
    "LpkError",
    "Outputs",
    "Program",
    "QueryError",
    "RunError",
    "Task",
    "TaskLimitError",
    "Tile",
    "__version__",
    "calibrate",
    "compile",
    "kernel",
    "load",
    "run",
    "status",
    "submit",
    "svdvals",
    "worker",
]

from ._worker import worker  # noqa: E402  (needs the names above)
from ._calibrate import calibrate  # noqa: E402


class Outputs(dict):
    """The outputs of :func:`run`: a ``dict`` from output name to a NumPy
    array (or, for an output whose tiles form no grid, a dict from
    :class:`Tile` to array), with the run's figures in :attr:`report`
    (tasks, workers, wall_seconds, gflops_per_second, params, and
    ``residual`` with ``verify=True``)."""

    report: Dict[str, Any]

    def __init__(self, arrays: Mapping[str, Any], report: Dict[str, Any]):
        super().__init__(arrays)
        self.report = report


class Kernel:
    """A user kernel written in Python, as :func:`kernel` makes it: the
    function and what it declares (result count, shape rule, flop model,
    whether it replaces a standard kernel). Calling it calls the function.
    Pass it in ``lpk.run(..., kernels={"name": k})``."""

    __lpk_kernel__ = True

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        results: int = 1,
        shape: Union[None, int, Sequence[int], Callable[..., Any]] = None,
        flops: Optional[Callable[..., float]] = None,
        override: bool = False,
    ):
        if not callable(function):
            raise TypeError(
                "lpk.kernel wraps a callable, found " + type(function).__name__
            )
        if isinstance(results, bool) or not isinstance(results, int) or results < 1:
            raise ValueError(f"results must be an int >= 1, found {results!r}")
        if isinstance(shape, bool):
            raise TypeError("shape must be None, an int, a list of ints or a callable")
        if isinstance(shape, int):
            if shape < 0:
                raise ValueError(f"shape={shape}: a tile argument index is >= 0")
        elif shape is not None and not callable(shape):
            try:
                per = list(shape)
            except TypeError:
                raise TypeError(
                    "shape must be None, an int, a list of ints or a callable, found "
                    + type(shape).__name__
                ) from None
            if not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in per):
                raise ValueError(f"shape={shape!r}: every entry is a tile argument index >= 0")
            if len(per) != results:
                raise ValueError(
                    f"shape={shape!r} lists {len(per)} argument(s) but results={results}"
                )
            shape = per
        if flops is not None and not callable(flops):
            raise TypeError("flops must be a callable from tile shapes to a number")
        self.function = function
        self.results = results
        self.shape = shape
        self.flops = flops
        self.override = bool(override)
        self.__doc__ = getattr(function, "__doc__", None)
        self.__name__ = getattr(function, "__name__", "kernel")

    def __call__(self, *args: Any) -> Any:
        return self.function(*args)

    def __repr__(self) -> str:
        return (
            f"lpk.Kernel({self.__name__}, results={self.results}, shape={self.shape!r}"
            + (", override=True" if self.override else "")
            + ")"
        )


def kernel(
    function: Optional[Callable[..., Any]] = None,
    *,
    results: int = 1,
    shape: Union[None, int, Sequence[int], Callable[..., Any]] = None,
    flops: Optional[Callable[..., float]] = None,
    override: bool = False,
) -> Any:
    """Declares a Python function as an lpk kernel (docs/python.md, "User
    kernels"). As a decorator, ``@lpk.kernel(results=2, shape=0)``, or
    called, ``lpk.kernel(fn, shape=0)``.

    - ``results``: how many tiles it returns (the program's declaration
      must have as many results).
    - ``shape``: its shape rule. ``None``: not declared (results are not
      checked against a shape; outputs they fill are assembled after the
      run). An int ``k``: every result is shaped like tile argument ``k``
      (counted from 0 among the tile arguments, scalars skipped). A list of
      ints: result ``i`` like tile argument ``shape[i]``. A callable: called
      with the tile arguments' shapes, ``(rows, cols)`` tuples, it returns
      the result shapes (one pair, or a list of pairs), and may raise on
      shapes that do not fit; it is asked at bind time, before any task.
    - ``flops``: a callable from the tile shapes to the call's floating
      point operations, for the report's GFLOP/s figure.
    - ``override``: allow the kernel to replace the standard kernel of the
      same name (refused otherwise). With ``shape=None`` it keeps the
      standard kernel's shape rule (and its flops with ``flops=None``).
    """

    def wrap(f: Callable[..., Any]) -> Kernel:
        return Kernel(f, results=results, shape=shape, flops=flops, override=override)

    if function is None:
        return wrap
    return wrap(function)


def run(
    program: Union[Program, Instance],
    inputs: Optional[Mapping[str, Any]] = None,
    *,
    params: Optional[Mapping[str, int]] = None,
    block: int = 512,
    workers: Optional[int] = None,
    verify: bool = False,
    seed: int = 0,
    kernels: Optional[Mapping[str, Any]] = None,
    **more_inputs: Any,
) -> Outputs:
    """Runs ``program`` on NumPy arrays with the embedded executor and
    returns its outputs (:class:`Outputs`, a dict of NumPy arrays).

    - ``program``: a :class:`Program` (parameters from ``params=`` and
      inferred from the input shapes, as ``lpkc run`` infers them) or an
      :class:`Instance` (parameters bound already; ``params=`` not allowed).
    - ``inputs``: a mapping from input matrix name to its data; input
      matrices may also be given as keywords (``lpk.run(prog, A=a)``). Data
      is a ``numpy.float64`` array, 2-D (or 1-D), C-contiguous: it is read
      in place, tile by tile, never copied whole. A string is a spec as
      ``lpkc run --input`` takes it (``"spd:4096"``, ``"random:512x256"``,
      ``"identity:N"`` with ``seed``, or a ``.npy`` path).
    - ``params``: parameter values, e.g. ``{"N": 16}``.
    - ``block``: the tile side; ``workers``: threads (default: the cores).
    - ``verify``: compute the residual (``report["residual"]``) and raise
      :class:`RunError` if it is above its bound.
    - ``kernels``: user kernels, ``{"name": fn_or_lpk_kernel}``, for the
      kernels the program declares beyond the standard ones (see
      :func:`kernel`). Checked against the program's declarations before
      any task.

    The GIL is released while the run runs; Ctrl-C cancels it
    (``KeyboardInterrupt``). A failing kernel raises :class:`RunError`
    naming the task. Bad arguments raise ``TypeError``/``ValueError``.
    """
    given: Dict[str, Any] = {}
    if inputs is not None:
        if not isinstance(inputs, Mapping):
            raise TypeError(
                "inputs must be a mapping from input name to array, found "
                + type(inputs).__name__
            )
        given.update(inputs)
    for name, value in more_inputs.items():
        if name in given:
            raise ValueError(f"input `{name}` is given twice")
        given[name] = value
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(
            "params must be a mapping from parameter name to int, found "
            + type(params).__name__
        )
    if kernels is not None and not isinstance(kernels, Mapping):
        raise TypeError(
            "kernels must be a mapping from kernel name to function, found "
            + type(kernels).__name__
        )
    arrays, report = _lpk.run(
        program,
        given,
        params=dict(params) if params is not None else None,
        block=block,
        workers=workers,
        verify=verify,
        seed=seed,
        kernels=dict(kernels) if kernels is not None else None,
    )
    residual = report.get("residual")
    if verify and residual is not None and not residual.get("ok", False):
        raise RunError(
            "verify=True: residual {} = {:.3e} is above its bound {:.1e}".format(
                residual["formula"], residual["value"], residual["bound"]
            )
        )
    return Outputs(arrays, report)


def svdvals(
    a: Any,
    *,
    block: int = 256,
    workers: Optional[int] = None,
    finish: str = "auto",
) -> "np.ndarray":
    """The singular values of the matrix ``a``, largest first, as numpywren
    computed them: the band reduction ``examples/bdfac.lpk`` runs in
    parallel on lpk's embedded executor (:func:`run`), then one machine
    finds the singular values of the band matrix it returns.

    - ``a``: a 2-D array (converted to ``float64``). A non-square ``a`` is
      padded with zero rows or columns to a square (which adds only zero
      singular values, dropped again); ``min(m, n)`` values are returned.
    - ``block``: the tile side, which is also the band's width.
    - ``workers``: threads of the band reduction (default: the cores).
    - ``finish``: how the band matrix B (upper banded, bandwidth ``block``)
      gives its singular values. ``"banded"``: they are the non-negative
      eigenvalues of the symmetric [[0, B], [Bᵀ, 0]], which under the
      perfect shuffle is a band matrix of bandwidth 2·block − 1;
      ``scipy.linalg.eig_banded`` (LAPACK ``dsbevd``) finds them in
      O(n² · block) with an absolute error of order ε·‖B‖ (B is never
      squared, so small singular values keep that absolute accuracy).
      Needs SciPy (``ImportError`` otherwise). ``"dense"``:
      ``numpy.linalg.svd`` of B as a dense matrix, O(n³). ``"auto"``
      (default): ``"banded"`` if SciPy imports, else ``"dense"``.

    Raises ``ValueError`` on a bad argument, :class:`RunError` if the band
    reduction fails, and ``RuntimeError`` if its result is not banded
    (which would be a bug, never a silent wrong answer). See docs/python.md.
    """
    x = np.asarray(a, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"svdvals needs a 2-D matrix, found {x.ndim} dimension(s)")
    if not isinstance(block, int) or isinstance(block, bool) or block < 1:
        raise ValueError(f"block must be a positive int, found {block!r}")
    if finish not in ("auto", "banded", "dense"):
        raise ValueError(f"finish must be 'auto', 'banded' or 'dense', found {finish!r}")
    if not np.all(np.isfinite(x)):
        raise ValueError("svdvals: the matrix has a NaN or an infinity")
    m, n = x.shape
    k = min(m, n)
    if k == 0:
        return np.zeros(0)
    if m != n:
        padded = np.zeros((max(m, n), max(m, n)))
        padded[:m, :n] = x
        x = padded
    x = np.ascontiguousarray(x)
    global _BDFAC_PROGRAM
    if _BDFAC_PROGRAM is None:
        _BDFAC_PROGRAM = compile(_BDFAC_SOURCE, "bdfac", filename="examples/bdfac.lpk")
    band = run(_BDFAC_PROGRAM, {"A": x}, block=block, workers=workers)["B"]
    s = _band_svdvals(band, block, finish)
    return s[:k]


def _band_svdvals(band: "np.ndarray", block: int, finish: str) -> "np.ndarray":
    """The singular values, largest first, of ``band`` (square, zero outside
    its diagonal and first ``block`` superdiagonals)."""
    n = band.shape[0]
    width = min(block, n - 1)
    outside = np.triu(band, width + 1).any() or np.tril(band, -1).any()
    if outside:
        raise RuntimeError(
            f"svdvals: the band reduction left entries outside the band of width {width}"
        )
    if finish == "auto":
        try:
            import scipy.linalg  # noqa: F401

            finish = "banded"
        except ImportError:
            finish = "dense"
    if finish == "dense":
        return np.linalg.svd(band, compute_uv=False)
    try:
        from scipy.linalg import eig_banded
    except ImportError as e:
        raise ImportError(
            "svdvals(finish='banded') needs SciPy (scipy.linalg.eig_banded); "
            "install scipy or pass finish='dense'"
        ) from e
    # The Golub-Kahan form: column c of B is unknown 2c, row r is 2r + 1, so
    # B[r, r + d] sits at (2r + 1, 2r + 2d), d >= 1, and B[r, r] at
    # (2r, 2r + 1) (the mirror of (2r + 1, 2r)): offsets 2d - 1 and 1.
    kd = max(2 * width - 1, 1)
    ab = np.zeros((kd + 1, 2 * n))
    for d in range(width + 1):
        r = np.arange(n - d)
        i, j = (2 * r, 2 * r + 1) if d == 0 else (2 * r + 1, 2 * (r + d))
        ab[kd - (j - i), j] = band[r, r + d]
    w = eig_banded(ab, lower=False, eigvals_only=True, check_finite=False)
    # The eigenvalues are the pairs ±σ, ascending: the top n are the σ (a
    # zero σ may come out as a tiny negative number).
    return np.sort(np.abs(w[n:]))[::-1].copy()


_BDFAC_PROGRAM: Optional[Program] = None

# examples/bdfac.lpk, verbatim (python/tests/test_svdvals.py checks that the
# two are equal), so that an installed package needs no repository.
_BDFAC_SOURCE = """\
# Band reduction (BDFAC) of an N x N tile grid to upper-banded form,
# A = Q1 * B * Q2^T with Q1, Q2 orthogonal, the first stage of an SVD
# (numpywren's BDFAC, with flat reduction chains as PLASMA's instead of
# binary trees, so it is correct for every N and lint proves every rule).
#
# Parameters:
#   N   tile rows and tile columns of A
# Requires: N >= 1.
#
# Step k (0 <= k < N) works on the trailing tiles (i, j), i, j >= k:
#   1. QR of column panel k (rows k .. N-1), a flat chain: qr_factor of
#      tile (k, k), then for each row i > k a qr_pair of the running R with
#      tile (i, k). Each factor's Q^T is applied to the trailing tiles of
#      the rows it touches (qr_apply on row k, qr_apply_pair on rows k and
#      i). The last R is B[k, k]; the tiles (i, k), i > k, become zero and
#      are not computed.
#   2. LQ of row panel k (columns k+1 .. N-1, if any), a flat chain:
#      lq_factor of tile (k, k+1), then for each column j > k+1 an lq_pair
#      of the running L with tile (k, j). Each factor's Q^T is applied from
#      the right to the tiles of rows i > k in the columns it touches
#      (lq_apply on column k+1, lq_apply_pair on columns k+1 and j). The
#      last L is B[k, k+1]; the tiles (k, j), j > k+1, become zero.
# B has the singular values of A: its tile row k holds an upper-triangular
# B[k, k] and a lower-triangular B[k, k+1], so B is upper banded with
# bandwidth = block (entry (r, c) is zero unless r <= c <= r + block).
#
# Outputs:
#   B[N, N]   the band matrix: tiles B[k, k] and B[k, k+1] are written;
#             every other tile stays unwritten (zero).
#   VN[0], TN[0]    the compact-WY factors of the last step's QR (of the
#                   last diagonal tile). The other Householder factors are
#                   intermediates: singular values do not need Q1 and Q2.
# Intermediates:
#   S[k, i, j]      tile (i, j), j > k, of the trailing matrix entering
#                   step k >= 1 (step 0 reads A directly); its column k is
#                   CL[k - 1, i, N - 1]
#   RQ[k, i], VQ[k, i], TQ[k, i]   the R of column panel k after rows k .. i,
#                   and the compact-WY factors of that chain node
#   CQ[k, i, j]     tile (k, j), j > k, after the chain node of row i
#   U[k, i, j]      tile (i, j), i, j > k, after the column panel QR
#   LL[k, j], VL[k, j], TL[k, j]   the L of row panel k after columns
#                   k+1 .. j, and the factors of that chain node
#   CL[k, i, j]     tile (i, k+1), i > k, after the chain node of column j
#                   (for j = N - 1: tile (i, k+1) entering step k + 1)
#
# Task count. Step k with m = N - k has m + m(m - 1) QR tasks and
# (m - 1) + (m - 1)^2 LQ tasks, so the total is
#   sum over m in [1, N] of (2m^2 - m) = N(N + 1)(4N - 1) / 6:
#   qr_factor N, qr_pair N(N - 1)/2, qr_apply N(N - 1)/2,
#   qr_apply_pair (N - 1)N(2N - 1)/6, lq_factor N - 1, lq_pair (N - 1)(N - 2)/2,
#   lq_apply N(N - 1)/2, lq_apply_pair (N - 2)(N - 1)N/3.
# Examples: N = 1: 1; N = 2: 7; N = 3: 22; N = 5: 95; N = 8: 372.
# Critical path: each chain is sequential and step k + 1 starts from step
# k's last LQ apply, so it holds at least the 2(N - k) - 1 factor tasks of
# every step, N^2 in all (binary trees would make it O(N log N)).

kernel qr_factor(a) -> (v, t, r);
kernel qr_pair(r0, r1) -> (v, t, r);
kernel qr_apply(v, t, c) -> (d);
kernel qr_apply_pair(v, t, c0, c1) -> (d0, d1);
kernel lq_factor(a) -> (v, t, l);
kernel lq_pair(l0, l1) -> (v, t, l);
kernel lq_apply(v, t, c) -> (d);
kernel lq_apply_pair(v, t, c0, c1) -> (d0, d1);

program bdfac(N: int) {
    require N >= 1;
    input A[N, N];
    output B[N, N];
    output VN[1];
    output TN[1];
    matrix S[N, N, N];
    matrix RQ[N, N];
    matrix VQ[N, N];
    matrix TQ[N, N];
    matrix CQ[N, N, N];
    matrix U[N, N, N];
    matrix LL[N, N];
    matrix VL[N, N];
    matrix TL[N, N];
    matrix CL[N, N, N];

    for k in range(N) {
        # 1. QR of column panel k (its tiles (i, k) are A[i, k] for k == 0,
        # else CL[k - 1, i, N - 1], the last LQ apply of step k - 1)
        if k == N - 1 {
            # the last step: one tile, its R is final
            if k == 0 {
                VN[0], TN[0], B[k, k] = qr_factor(A[k, k]);
            } else {
                VN[0], TN[0], B[k, k] = qr_factor(CL[k - 1, k, N - 1]);
            }
        } else {
            if k == 0 {
                VQ[k, k], TQ[k, k], RQ[k, k] = qr_factor(A[k, k]);
            } else {
                VQ[k, k], TQ[k, k], RQ[k, k] = qr_factor(CL[k - 1, k, N - 1]);
            }
            for j in range(k + 1, N) {
                if k == 0 {
                    CQ[k, k, j] = qr_apply(VQ[k, k], TQ[k, k], A[k, j]);
                } else {
                    CQ[k, k, j] = qr_apply(VQ[k, k], TQ[k, k], S[k, k, j]);
                }
            }
            for i in range(k + 1, N) {
                if i == N - 1 {
                    if k == 0 {
                        VQ[k, i], TQ[k, i], B[k, k] = qr_pair(RQ[k, i - 1], A[i, k]);
                    } else {
                        VQ[k, i], TQ[k, i], B[k, k] = qr_pair(RQ[k, i - 1], CL[k - 1, i, N - 1]);
                    }
                } else {
                    if k == 0 {
                        VQ[k, i], TQ[k, i], RQ[k, i] = qr_pair(RQ[k, i - 1], A[i, k]);
                    } else {
                        VQ[k, i], TQ[k, i], RQ[k, i] = qr_pair(RQ[k, i - 1], CL[k - 1, i, N - 1]);
                    }
                }
                for j in range(k + 1, N) {
                    if k == 0 {
                        CQ[k, i, j], U[k, i, j] =
                            qr_apply_pair(VQ[k, i], TQ[k, i], CQ[k, i - 1, j], A[i, j]);
                    } else {
                        CQ[k, i, j], U[k, i, j] =
                            qr_apply_pair(VQ[k, i], TQ[k, i], CQ[k, i - 1, j], S[k, i, j]);
                    }
                }
            }

            # 2. LQ of row panel k (columns k+1 .. N-1)
            if k + 1 == N - 1 {
                # one tile: its L is final
                VL[k, k + 1], TL[k, k + 1], B[k, k + 1] = lq_factor(CQ[k, N - 1, k + 1]);
            } else {
                VL[k, k + 1], TL[k, k + 1], LL[k, k + 1] = lq_factor(CQ[k, N - 1, k + 1]);
            }
            for i in range(k + 1, N) {
                CL[k, i, k + 1] = lq_apply(VL[k, k + 1], TL[k, k + 1], U[k, i, k + 1]);
            }
            for j in range(k + 2, N) {
                if j == N - 1 {
                    VL[k, j], TL[k, j], B[k, k + 1] = lq_pair(LL[k, j - 1], CQ[k, N - 1, j]);
                } else {
                    VL[k, j], TL[k, j], LL[k, j] = lq_pair(LL[k, j - 1], CQ[k, N - 1, j]);
                }
                for i in range(k + 1, N) {
                    CL[k, i, j], S[k + 1, i, j] =
                        lq_apply_pair(VL[k, j], TL[k, j], CL[k, i, j - 1], U[k, i, j]);
                }
            }
        }
    }
}
"""
