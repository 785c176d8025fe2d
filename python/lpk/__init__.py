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

from typing import Any, Dict, Mapping, Optional, Union

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


def run(
    program: Union[Program, Instance],
    inputs: Optional[Mapping[str, Any]] = None,
    *,
    params: Optional[Mapping[str, int]] = None,
    block: int = 512,
    workers: Optional[int] = None,
    verify: bool = False,
    seed: int = 0,
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
    arrays, report = _lpk.run(
        program,
        given,
        params=dict(params) if params is not None else None,
        block=block,
        workers=workers,
        verify=verify,
        seed=seed,
    )
    residual = report.get("residual")
    if verify and residual is not None and not residual.get("ok", False):
        raise RunError(
            "verify=True: residual {} = {:.3e} is above its bound {:.1e}".format(
                residual["formula"], residual["value"], residual["bound"]
            )
        )
    return Outputs(arrays, report)
