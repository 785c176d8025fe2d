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
    "compile",
    "kernel",
    "load",
    "run",
    "status",
    "submit",
]


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
