"""`lpk.calibrate`: times Python user kernels on tiles of the blocks a
simulation asks for, and merges the times into a cost file of `lpkc
calibrate -o` (its ``kernels`` table), so that `lpkc simulate --costs`
models programs that call them (docs/python.md, "Timing your kernels for
the simulator")."""

from __future__ import annotations

import inspect
import json
import math
import os
import statistics
import tempfile
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

# The blocks a simulation most often asks for, as `lpkc calibrate`'s.
DEFAULT_BLOCKS = (256, 512)
# The largest block timed: a call on larger tiles is a benchmark, not a
# calibration (and 3 tiles of 8192² already take 1.5 GiB).
MAX_BLOCK = 8192


def _tile_count(name: str, function: Callable[..., Any]) -> int:
    """How many tiles a kernel takes when every positional parameter is a
    tile (the default when `args=` gives no arguments for it)."""
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        raise ValueError(
            f"kernel `{name}`: Python cannot tell its parameters; give its arguments "
            f"in args={{{name!r}: lambda block: (...)}}"
        ) from None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p for p in params if p.kind in kinds and p.default is p.empty]
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params) or not required:
        raise ValueError(
            f"kernel `{name}`: its parameters do not say how many tiles it takes; give its "
            f"arguments in args={{{name!r}: lambda block: (...)}}"
        )
    return len(required)


def _arguments(name, function, make, block, rng):
    """The arguments of one timed call: `make(block)`'s, or one random
    read-only block × block tile per parameter."""
    if make is not None:
        out = make(block)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)
    tiles = []
    for _ in range(_tile_count(name, function)):
        t = np.asfortranarray(rng.standard_normal((block, block)))
        t.setflags(write=False)
        tiles.append(t)
    return tuple(tiles)


def _time_one(function, args, repeats, budget):
    """The median of `repeats` timed calls (after one untimed warm-up),
    fewer when the calls exceed `budget` seconds."""
    function(*args)
    times: List[float] = []
    spent = 0.0
    while len(times) < repeats and (not times or spent < budget):
        t0 = time.perf_counter()
        function(*args)
        dt = time.perf_counter() - t0
        times.append(dt)
        spent += dt
    return statistics.median(times)


def _kernel_entries(kernels) -> Dict[str, Any]:
    """`{name: Kernel or callable}` from a dict or a list of `lpk.Kernel`s
    (named by their function)."""
    if isinstance(kernels, Mapping):
        return dict(kernels)
    out = {}
    for k in kernels:
        name = getattr(k, "__name__", None)
        if not isinstance(name, str) or not callable(k):
            raise TypeError(
                "kernels must be a dict {name: kernel} or a list of lpk.kernel objects, "
                f"found {type(k).__name__}"
            )
        out[name] = k
    return out


def _check_blocks(blocks) -> List[int]:
    if isinstance(blocks, int):
        blocks = [blocks]
    out = []
    for b in blocks:
        if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_BLOCK:
            raise ValueError(f"a block is an int from 1 to {MAX_BLOCK}, found {b!r}")
        out.append(b)
    if not out:
        raise ValueError("blocks is empty: give at least one block size")
    return sorted(set(out))


def _merge(path: str, table: Dict[str, List[Dict[str, float]]]) -> None:
    """Merges `table` into the cost file at `path` (the entries of the same
    kernel and block replaced), written back atomically."""
    try:
        with open(path, encoding="utf-8") as f:
            model = json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: no such cost file; write one with `lpkc calibrate -o {path}` first "
            "(it also measures the store and the machine's rate)"
        ) from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not a cost file (invalid JSON: {e})") from None
    if not isinstance(model, dict) or not isinstance(model.get("kernels", {}), dict):
        raise ValueError(f"{path}: not a cost file (no `kernels` object)")
    known = model.setdefault("kernels", {})
    for name, entries in table.items():
        old = known.get(name, [])
        if not isinstance(old, list):
            raise ValueError(f"{path}: `kernels.{name}` is not a list")
        new_blocks = {e["block"] for e in entries}
        kept = [e for e in old if not (isinstance(e, dict) and e.get("block") in new_blocks)]
        known[name] = sorted(kept + entries, key=lambda e: e.get("block", 0))
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".lpk-costs-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(model, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def calibrate(
    kernels: Union[Mapping[str, Any], Sequence[Any]],
    blocks: Union[int, Sequence[int]] = DEFAULT_BLOCKS,
    *,
    args: Optional[Mapping[str, Callable[[int], Any]]] = None,
    repeats: int = 5,
    budget: float = 10.0,
    into: Optional[str] = None,
    seed: int = 0,
) -> Dict[str, List[Dict[str, float]]]:
    """Times Python kernels for ``lpkc simulate``: each kernel at each block
    of ``blocks``, the median of ``repeats`` calls after a warm-up (fewer
    once a kernel's calls at a block exceed ``budget`` seconds), on one
    thread, as an executor worker calls it.

    - ``kernels``: ``{name: kernel}`` (an ``lpk.kernel`` or a plain
      function), or a list of ``lpk.kernel`` objects named by their
      function.
    - Arguments: by default every required positional parameter is a
      random ``block × block`` float64 tile (read-only, as a run passes
      them). A kernel with scalar parameters, or tiles of other shapes,
      gives its arguments in ``args={name: lambda block: (...)}``.
    - ``into``: a cost file written by ``lpkc calibrate -o``; the times are
      merged into its ``kernels`` table (replacing the same kernel's
      entries at the same blocks) and the file is written back.

    Returns the table it measured, ``{name: [{"block": b, "seconds": s},
    ...]}``, the cost file's format.
    """
    entries = _kernel_entries(kernels)
    block_list = _check_blocks(blocks)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, found {repeats!r}")
    if not (isinstance(budget, (int, float)) and math.isfinite(budget) and budget > 0):
        raise ValueError(f"budget must be a number of seconds above 0, found {budget!r}")
    makers = dict(args or {})
    unknown = sorted(set(makers) - set(entries))
    if unknown:
        raise ValueError(f"args= names {', '.join(unknown)}, which kernels= does not give")
    rng = np.random.default_rng(seed)
    table: Dict[str, List[Dict[str, float]]] = {}
    for name, k in entries.items():
        function = getattr(k, "function", k)
        if not callable(function):
            raise TypeError(f"kernel `{name}` is a {type(k).__name__}, not a function")
        rows = []
        for block in block_list:
            call_args = _arguments(name, function, makers.get(name), block, rng)
            try:
                seconds = _time_one(function, call_args, repeats, budget)
            except Exception as e:
                raise RuntimeError(
                    f"kernel `{name}` raised {type(e).__name__} at block {block}: {e}"
                ) from e
            rows.append({"block": block, "seconds": seconds})
        table[name] = rows
    if into is not None:
        _merge(into, table)
    return table
