"""``lpk.worker``: a distributed worker that carries Python user kernels
(docs/python.md, "Distributed workers with your kernels"), and the rule
that finds the kernels of a module."""

from __future__ import annotations

import importlib
import types
from typing import Any, Dict, Iterable, Mapping, Optional, Union

from . import _lpk

KernelSpec = Union[None, str, types.ModuleType, Mapping[str, Any], Iterable[Any]]


class KernelModuleError(ValueError):
    """A ``--kernels`` module that cannot be imported or defines no kernel."""


def _is_kernel(value: Any) -> bool:
    return getattr(value, "__lpk_kernel__", False) is True


def module_kernels(module: Union[str, types.ModuleType]) -> Dict[str, Any]:
    """The kernels a module defines: each of its public (not ``_``-prefixed)
    module-level names bound to an :class:`lpk.Kernel` (what
    ``@lpk.kernel(...)`` makes) is a kernel of that name. ``module`` is a
    module or the dotted name of one, imported here.

    Raises :class:`KernelModuleError` (a ``ValueError``) if the module
    cannot be imported (the import's exception is its ``__cause__``) or
    defines no kernel."""
    if isinstance(module, str):
        try:
            module = importlib.import_module(module)
        except Exception as e:  # any error of the module's own code too
            raise KernelModuleError(
                f"cannot import kernels module `{module}`: {type(e).__name__}: {e}"
            ) from e
    if not isinstance(module, types.ModuleType):
        raise TypeError(f"a kernels module is a module or its name, found {type(module).__name__}")
    found = {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_") and _is_kernel(value)
    }
    if not found:
        plain = sorted(
            name
            for name, value in vars(module).items()
            if not name.startswith("_")
            and isinstance(value, types.FunctionType)
            and getattr(value, "__module__", None) == module.__name__
        )
        hint = f" (undecorated functions: {', '.join(plain)})" if plain else ""
        raise KernelModuleError(
            f"module `{module.__name__}` defines no lpk kernel{hint}: decorate each kernel "
            "function with @lpk.kernel(results=..., shape=...)"
        )
    return found


def collect_kernels(kernels: KernelSpec) -> Dict[str, Any]:
    """``kernels=`` of :func:`worker` as one ``{name: lpk.Kernel}`` dict:
    a mapping is taken as it is (every value must be an ``lpk.Kernel``,
    checked by the worker), a module or module name gives its kernels
    (:func:`module_kernels`), and a list or tuple of those is merged (a
    name given twice by different objects is an error)."""
    if kernels is None:
        return {}
    if isinstance(kernels, Mapping):
        return dict(kernels)
    if isinstance(kernels, (str, types.ModuleType)):
        return module_kernels(kernels)
    if not isinstance(kernels, (list, tuple)):
        raise TypeError(
            "kernels must be a module, a module name, a {name: lpk.Kernel} mapping or a list "
            "of those, found " + type(kernels).__name__
        )
    merged: Dict[str, Any] = {}
    for part in kernels:
        for name, k in collect_kernels(part).items():
            if name in merged and merged[name] is not k:
                raise ValueError(f"kernel `{name}` is given twice, by different objects")
            merged[name] = k
    return merged


def worker(
    redis: str,
    kernels: KernelSpec = None,
    *,
    name: Optional[str] = None,
    threads: int = 1,
    lease: float = 30.0,
    idle: float = 60.0,
    cache_mb: int = 1024,
    quiet: bool = False,
    inject_faults: Optional[str] = None,
) -> Dict[str, Any]:
    """Runs a distributed worker, as ``lpkc worker --redis URL`` does, with
    Python user kernels on top of the standard ones; returns, once it has
    been idle for ``idle`` seconds, what it did: ``name``, ``tasks``,
    ``taken_over``, ``duplicates``, ``failed_runs``, ``round_trips``.

    - ``redis``: the Redis that holds the runs (``lpk.submit``'s).
    - ``kernels``: a module or module name (its ``@lpk.kernel`` functions,
      see :func:`module_kernels`), a ``{name: lpk.Kernel}`` mapping, or a
      list of those. A plain function is refused: a worker serves runs of
      any program, so a kernel declares its results and shape rule.
    - ``name``: its name in Redis (default ``HOST-PID``); ``threads``:
      threads taking tasks; ``lease``: seconds after which a task it stops
      renewing is taken over by another worker; ``idle``: exit after this
      many seconds without work; ``cache_mb``: tile cache; ``quiet``: no
      log lines on stderr; ``inject_faults``: testing aid, as ``lpkc
      worker --inject-faults``.

    The GIL is released while it works (each kernel call takes it). Ctrl-C
    (or an exception a signal handler raises) stops it: it finishes and
    completes the tasks it holds, then the exception propagates. Raises
    ``ValueError`` for bad arguments or modules, ``TypeError`` for a
    kernel that is not an ``lpk.Kernel``, and ``lpk.LpkError`` if Redis
    cannot be reached.
    """
    table = collect_kernels(kernels)
    return _lpk.worker(
        redis,
        kernels=table,
        name=name,
        threads=threads,
        lease=lease,
        idle=idle,
        cache_mb=cache_mb,
        quiet=quiet,
        inject_faults=inject_faults,
    )
