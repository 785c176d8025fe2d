"""Every query answer of the Python API equals `lpkc query`'s on every
example at several sizes: the task list, children and parents of every
task (with the tiles of each edge), writer and readers of every tile the
edges name, and errors for tasks outside the instance."""

import pytest

import lpk
from conftest import EXAMPLES, lpkc_json_lines

SIZES = {
    "cholesky": [{"N": 1}, {"N": 3}, {"N": 6}],
    "lu": [{"N": 1}, {"N": 4}],
    "gemm": [{"M": 1, "N": 1, "K": 1}, {"M": 2, "N": 3, "K": 4}],
    "gemm_tree": [{"M": 2, "N": 1, "K": 5}, {"M": 1, "N": 2, "K": 9}],
    "gemm_tree_zero": [{"M": 2, "N": 2, "K": 5}, {"M": 1, "N": 1, "K": 8}],
    "trsolve": [{"N": 3, "R": 2}, {"N": 5, "R": 1}],
    "trtri": [{"N": 1}, {"N": 4}],
    "tsqr": [{"N": 1}, {"N": 5}, {"N": 8}],
    "caqr": [{"M": 4, "N": 2}, {"M": 5, "N": 3}],
    "bdfac": [{"N": 1}, {"N": 4}],
    "getrf": [{"N": 1}, {"N": 4}],
    "gesv": [{"N": 1, "M": 1}, {"N": 3, "M": 2}],
    "posv": [{"N": 1, "M": 2}, {"N": 4, "M": 1}],
}


def test_every_example_has_sizes():
    names = sorted(p.stem for p in EXAMPLES.glob("*.lpk"))
    assert names == sorted(SIZES), "add the new example to SIZES"


def key(task):
    """A task as lpkc's JSON has it."""
    if isinstance(task, dict):
        return (task["kernel"], task["line"], task["column"], tuple(task["vars"].items()))
    return (task.kernel, task.line, task.column, tuple(task.vars.items()))


def cases():
    return [
        pytest.param(name, params, id=f"{name}-" + "-".join(f"{k}{v}" for k, v in params.items()))
        for name, sizes in sorted(SIZES.items())
        for params in sizes
    ]


@pytest.mark.parametrize("name,params", cases())
def test_answers_equal_lpkc_query(lpkc, name, params):
    path = EXAMPLES / f"{name}.lpk"
    inst = lpk.load(path).bind(**params)
    tasks = inst.tasks()
    assert len(tasks) == inst.count_tasks()
    commands = ["tasks"]
    for t in tasks:
        commands += [f"children {t}", f"parents {t}"]
    edges = {}
    for t in tasks:
        edges[("children", str(t))] = inst.children(t, tiles=True)
        edges[("parents", str(t))] = inst.parents(str(t), tiles=True)
    tiles = sorted({str(x) for pairs in edges.values() for _, ts in pairs for x in ts})
    for x in tiles:
        commands += [f"writer {x}", f"readers {x}"]
    args = ["query", str(path), "--format", "json"]
    for k, v in params.items():
        args += ["-p", f"{k}={v}"]
    r, answers = lpkc_json_lines(lpkc, args, stdin="\n".join(commands) + "\n")
    assert r.returncode == 0, r.stderr
    assert len(answers) == len(commands)
    by_cmd = {a["cmd"]: a for a in answers}
    assert [key(t) for t in tasks] == [key(t) for t in by_cmd["tasks"]["tasks"]]
    for (kind, t), pairs in edges.items():
        want = by_cmd[f"{kind} {t}"]["tasks"]
        assert [(key(c), [str(x) for x in ts]) for c, ts in pairs] == [
            (key(c), c["tiles"]) for c in want
        ], f"{kind} {t}"
        # Without tiles: the same tasks.
        plain = inst.children(t) if kind == "children" else inst.parents(t)
        assert [key(c) for c in plain] == [key(c) for c in want]
    for x in tiles:
        for kind, method in (("writer", inst.writer), ("readers", inst.readers)):
            want = by_cmd[f"{kind} {x}"]["tasks"]
            assert [key(c) for c in method(x)] == [key(c) for c in want], f"{kind} {x}"


@pytest.mark.parametrize("name,params", cases())
def test_dag_edges_are_the_children(name, params):
    inst = lpk.load(EXAMPLES / f"{name}.lpk").bind(**params)
    dag = inst.dag()
    assert dag.tasks == inst.tasks()
    from_dag = {}
    for a, b, tile in dag.edges:
        from_dag.setdefault(str(a), set()).add((str(b), str(tile)))
    for t in dag.tasks:
        want = {(str(c), str(x)) for c, ts in inst.children(t, tiles=True) for x in ts}
        assert from_dag.get(str(t), set()) == want


def test_names_and_value_types():
    inst = lpk.load(EXAMPLES / "cholesky.lpk").bind(N=4)
    t = inst.tasks()[0]
    assert str(t) == "chol@37(k=0)"
    assert t == "chol@37(k=0)" and t == inst.task("chol@37(k=0)")
    assert hash(t) == hash("chol@37(k=0)")
    assert "chol@37(k=0)" in set(inst.tasks())
    assert sorted(reversed(inst.tasks())) == inst.tasks()
    tile = inst.tile("L[2,1]")
    assert str(tile) == "L[2, 1]" and tile == "L[2, 1]"
    assert tile.matrix == "L" and tile.index == (2, 1)
    assert {tile: 1}["L[2, 1]"] == 1
    # A task of another compilation of the same source is accepted by name.
    other = lpk.load(EXAMPLES / "cholesky.lpk").bind(N=4)
    assert inst.children(other.tasks()[0]) == inst.children(t)


def test_bad_queries_raise():
    inst = lpk.load(EXAMPLES / "cholesky.lpk").bind(N=3)
    with pytest.raises(lpk.QueryError, match="not a task of this instance"):
        inst.children("chol@37(k=1)")
    with pytest.raises(lpk.QueryError):
        inst.children("nonsense")
    with pytest.raises(lpk.QueryError, match="outside"):
        inst.writer("L[7, 0]")
    with pytest.raises(TypeError):
        inst.children(42)
    assert isinstance(lpk.QueryError("x"), ValueError)


def test_task_limit_refused_before_work():
    inst = lpk.load(EXAMPLES / "cholesky.lpk").bind(N=200)
    n = inst.count_tasks()
    assert n > lpk.DEFAULT_MAX_TASKS
    with pytest.raises(lpk.TaskLimitError, match=f"{n:,}|{n}") as e:
        inst.tasks()
    assert "max_tasks" in str(e.value)
    assert len(inst.tasks(max_tasks=n)) == n
    with pytest.raises(lpk.TaskLimitError):
        inst.dag()
    with pytest.raises(lpk.TaskLimitError):
        inst.to_dot()
    # Queries do not need the whole DAG.
    assert [str(c) for c in inst.parents("chol@39(k=1)")] == ["syrk@53(k=0, j=1, i=1)"]


def test_bind_errors():
    prog = lpk.load(EXAMPLES / "cholesky.lpk")
    with pytest.raises(lpk.BindError, match="not a parameter"):
        prog.bind(N=2, Q=1)
    with pytest.raises(lpk.BindError, match="needs a value"):
        prog.bind()
    with pytest.raises(lpk.BindError, match="requirement"):
        prog.bind(N=0)
    with pytest.raises(TypeError):
        prog.bind(N="4")
    with pytest.raises(TypeError):
        prog.bind(N=True)
    assert isinstance(lpk.BindError("x"), ValueError)


def test_stats_equal_lpkc_stats(lpkc):
    import json
    import subprocess

    path = EXAMPLES / "lu.lpk"
    got = lpk.load(path).bind(N=6).stats(block=128)
    r = subprocess.run(
        [lpkc, "stats", str(path), "-p", "N=6", "--block", "128", "--format", "json"],
        capture_output=True, text=True, check=True,
    )
    assert got == json.loads(r.stdout)


def test_dot_equals_lpkc_dot(lpkc):
    import subprocess

    path = EXAMPLES / "cholesky.lpk"
    prog = lpk.load(path)
    r = subprocess.run([lpkc, "dot", str(path)], capture_output=True, text=True, check=True)
    assert prog.to_dot() == r.stdout.rstrip("\n") or prog.to_dot() == r.stdout
    r = subprocess.run(
        [lpkc, "dot", str(path), "-p", "N=3"], capture_output=True, text=True, check=True
    )
    got = prog.bind(N=3).to_dot()
    assert got == r.stdout or got == r.stdout.rstrip("\n")


def test_networkx():
    nx = pytest.importorskip("networkx")
    inst = lpk.load(EXAMPLES / "cholesky.lpk").bind(N=4)
    g = inst.dag().to_networkx()
    assert isinstance(g, nx.DiGraph)
    assert g.number_of_nodes() == inst.count_tasks()
    t = inst.task("chol@37(k=0)")
    assert sorted(g.successors(t)) == inst.children(t)
    assert nx.is_directed_acyclic_graph(g)
