"""lpk from Python, as a notebook would use it: compile a program, ask its
task graph, run it on a NumPy matrix and check the result. Run it from the
repository root (python3 docs/python_example.py) after `pip install ./python`;
the test suite runs it too."""

import pathlib
import tempfile

import numpy as np

import lpk

ROOT = pathlib.Path(__file__).resolve().parents[1]

# %% Compile: from a file, or from source text.
prog = lpk.load(ROOT / "examples" / "cholesky.lpk")
print(prog, "inputs", prog.inputs, "outputs", prog.outputs)

try:
    lpk.compile("program p(N: int) { input A[N]; output B[N]; for i in 0..N { B[i] = f(A[i]); } }")
except lpk.CompileError as e:
    print("a broken program:", [(d.code, d.line, d.column) for d in e.diagnostics])
    print(e)

# %% Bind the parameters and ask the task graph: tasks and tiles print as
# lpkc names them, and the methods take those names too.
inst = prog.bind(N=4)
print(inst, "has", inst.count_tasks(), "tasks")
first = inst.tasks()[0]
print("children of", first, "->", inst.children(first))
for child, tiles in inst.children("chol@37(k=0)", tiles=True):
    print(f"  {child} reads {', '.join(map(str, tiles))}")
print("writer of L[2, 1]:", inst.writer("L[2, 1]"), "readers:", inst.readers("L[2, 1]"))
stats = inst.stats(block=512)
print("critical path:", stats["critical_path"], "tasks; flops:", stats["flops"])

dag = inst.dag()
print(dag)
try:
    import networkx as nx

    g = dag.to_networkx()
    print("networkx: longest path has", len(nx.dag_longest_path(g)), "tasks")
except ImportError:
    print("(networkx is not installed: pip install networkx for Dag.to_networkx())")

# Whole-graph work is refused before it starts above the task limit.
try:
    prog.bind(N=300).tasks()
except lpk.TaskLimitError as e:
    print("refused:", e)

# %% Run it on a matrix: the parameters are inferred from the shapes.
n, block = 2000, 256
rng = np.random.default_rng(0)
a = rng.standard_normal((n, n))
a = a @ a.T + n * np.eye(n)
out = lpk.run(prog, {"A": a}, block=block, verify=True)
L = out["L"]
print(f"L is {L.shape}, {out.report['tasks']} tasks in {out.report['wall_seconds']:.3f} s,",
      f"residual {out.report['residual']['value']:.2e}")
assert np.allclose(L @ L.T, a)
assert np.allclose(L, np.linalg.cholesky(a))

# %% Save the compiled artifact and load it back.
with tempfile.TemporaryDirectory() as d:
    path = pathlib.Path(d) / "cholesky.lpka"
    prog.save(path)
    again = lpk.load(path)
    assert again.bind(N=4).children(first) == [str(c) for c in inst.children(first)]
    print("artifact round trip ok:", again)
print("done")
