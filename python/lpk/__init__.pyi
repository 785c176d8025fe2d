"""Type stubs of the lpk package (the native module lpk._lpk and lpk.run)."""

from os import PathLike
from types import ModuleType
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
    overload,
)

import numpy as np
import numpy.typing as npt

__version__: str
DEFAULT_MAX_TASKS: int

class LpkError(Exception): ...

class CompileError(LpkError):
    diagnostics: List[Diagnostic]

class BindError(ValueError): ...
class QueryError(ValueError): ...
class TaskLimitError(LpkError): ...
class RunError(LpkError): ...

class Diagnostic:
    code: str
    severity: str
    message: str
    file: str
    line: int
    column: int
    notes: List[str]

class Task:
    kernel: str
    line: int
    column: int
    statement: int
    vars: Dict[str, int]
    def __hash__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    def __lt__(self, other: Task) -> bool: ...
    def __le__(self, other: Task) -> bool: ...
    def __gt__(self, other: Task) -> bool: ...
    def __ge__(self, other: Task) -> bool: ...

class Tile:
    matrix: str
    index: Tuple[int, ...]
    def __hash__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    def __lt__(self, other: Tile) -> bool: ...

TaskLike = Union[Task, str]
TileLike = Union[Tile, str]

class Dag:
    tasks: List[Task]
    edges: List[Tuple[Task, Task, Tile]]
    def __len__(self) -> int: ...
    def to_networkx(self) -> Any: ...

class Program:
    name: str
    params: Dict[str, Optional[int]]
    inputs: List[str]
    outputs: List[str]
    warnings: List[Diagnostic]
    source: Optional[str]
    def bind(self, **params: int) -> Instance: ...
    def lint(
        self, bound: Optional[int] = None, params: Optional[Mapping[str, int]] = None
    ) -> Dict[str, Any]: ...
    def save(
        self, path: Union[str, PathLike[str]], *, json: Optional[bool] = None, source: bool = True
    ) -> None: ...
    def to_dot(self) -> str: ...

class Instance:
    program: Program
    params: Dict[str, int]
    def count_tasks(self) -> int: ...
    def tasks(self, max_tasks: int = ...) -> List[Task]: ...
    @overload
    def children(self, task: TaskLike, *, tiles: Literal[False] = False) -> List[Task]: ...
    @overload
    def children(self, task: TaskLike, *, tiles: Literal[True]) -> List[Tuple[Task, List[Tile]]]: ...
    @overload
    def parents(self, task: TaskLike, *, tiles: Literal[False] = False) -> List[Task]: ...
    @overload
    def parents(self, task: TaskLike, *, tiles: Literal[True]) -> List[Tuple[Task, List[Tile]]]: ...
    def writer(self, tile: TileLike) -> List[Task]: ...
    def readers(self, tile: TileLike) -> List[Task]: ...
    def task(self, name: TaskLike) -> Task: ...
    def tile(self, name: TileLike) -> Tile: ...
    def stats(self, block: int = 256, max_tasks: int = 2000000) -> Dict[str, Any]: ...
    def dag(self, max_tasks: int = ...) -> Dag: ...
    def to_dot(self, max_tasks: int = 2000, cluster: Optional[str] = None) -> str: ...

class Outputs(Dict[str, Union[npt.NDArray[np.float64], Dict[Tile, npt.NDArray[np.float64]]]]):
    report: Dict[str, Any]

TileShape = Tuple[int, int]
ShapeRule = Union[
    None,
    int,
    Sequence[int],
    Callable[..., Union[TileShape, Sequence[TileShape]]],
]

class Kernel:
    """A user kernel: the function and what it declares (see `kernel`)."""
    __lpk_kernel__: bool
    function: Callable[..., Any]
    results: int
    shape: ShapeRule
    flops: Optional[Callable[..., float]]
    override: bool
    def __init__(
        self,
        function: Callable[..., Any],
        *,
        results: int = 1,
        shape: ShapeRule = None,
        flops: Optional[Callable[..., float]] = None,
        override: bool = False,
    ) -> None: ...
    def __call__(self, *args: Any) -> Any: ...

@overload
def kernel(
    function: Callable[..., Any],
    *,
    results: int = 1,
    shape: ShapeRule = None,
    flops: Optional[Callable[..., float]] = None,
    override: bool = False,
) -> Kernel: ...
@overload
def kernel(
    function: None = None,
    *,
    results: int = 1,
    shape: ShapeRule = None,
    flops: Optional[Callable[..., float]] = None,
    override: bool = False,
) -> Callable[[Callable[..., Any]], Kernel]: ...

KernelLike = Union[Kernel, Callable[..., Any]]

def compile(source: str, program: Optional[str] = None, *, filename: str = "<string>") -> Program: ...
def load(path: Union[str, PathLike[str]], program: Optional[str] = None) -> Program: ...
def run(
    program: Union[Program, Instance],
    inputs: Optional[Mapping[str, Union[npt.NDArray[np.float64], str]]] = None,
    *,
    params: Optional[Mapping[str, int]] = None,
    block: int = 512,
    workers: Optional[int] = None,
    verify: bool = False,
    seed: int = 0,
    kernels: Optional[Mapping[str, KernelLike]] = None,
    **more_inputs: Union[npt.NDArray[np.float64], str],
) -> Outputs: ...
def submit(
    program: Union[Program, Instance],
    inputs: Mapping[str, Union[npt.NDArray[np.float64], str, PathLike[str]]],
    *,
    redis: str,
    store: str,
    params: Optional[Mapping[str, int]] = None,
    block: int = 512,
    seed: int = 0,
    keep_intermediates: bool = False,
    max_expiries: int = 3,
    max_tasks: Optional[int] = None,
    max_store_bytes: Optional[int] = None,
) -> str: ...
def status(
    run: str, *, redis: str, lease: float = 10.0, limit: int = 5, blocked: bool = False
) -> Dict[str, Any]: ...
def svdvals(
    a: npt.ArrayLike,
    *,
    block: int = 256,
    workers: Optional[int] = None,
    finish: Literal["auto", "banded", "dense"] = "auto",
) -> npt.NDArray[np.float64]: ...

KernelSource = Union[str, ModuleType, Mapping[str, Kernel]]

def worker(
    redis: str,
    kernels: Union[None, KernelSource, Iterable[KernelSource]] = None,
    *,
    name: Optional[str] = None,
    threads: int = 1,
    lease: float = 30.0,
    idle: float = 60.0,
    cache_mb: int = 1024,
    quiet: bool = False,
    inject_faults: Optional[str] = None,
) -> Dict[str, Any]: ...
def calibrate(
    kernels: Union[Mapping[str, Any], Sequence[Any]],
    blocks: Union[int, Sequence[int]] = ...,
    *,
    args: Optional[Mapping[str, Callable[[int], Any]]] = None,
    repeats: int = 5,
    budget: float = 10.0,
    into: Optional[str] = None,
    seed: int = 0,
) -> Dict[str, List[Dict[str, float]]]: ...
