"""`lpk.calibrate`: Python kernels timed for the simulator, merged into a
cost file, and the simulation of a program calling them takes its time
from there."""

import json
import subprocess
import time

import numpy as np
import pytest

import lpk

NEGATED = """
kernel negate(a) -> (b);
kernel shift(a, s: real) -> (b);

program negated(N: int) {
    input A[N];
    output B[N];
    output C[N];
    for i in range(N) {
        B[i] = negate(A[i]);
        C[i] = shift(A[i], 1.5);
    }
}
"""


@lpk.kernel(shape=0)
def negate(a):
    time.sleep(0.004)
    return -a


@lpk.kernel(shape=0)
def shift(a, s):
    return a + s


def test_times_each_kernel_at_each_block_on_the_tiles_it_takes():
    seen = []

    @lpk.kernel(shape=0)
    def pair(a, b):
        seen.append((a.shape, b.shape, a.flags.writeable, a.flags.f_contiguous))
        return a + b

    table = lpk.calibrate({"pair": pair, "negate": negate}, blocks=[16, 8], repeats=3)
    assert list(table) == ["pair", "negate"]
    assert [e["block"] for e in table["pair"]] == [8, 16]
    # A warm-up and three timed calls per block, on two block x block tiles.
    assert seen == [((8, 8), (8, 8), False, True)] * 4 + [((16, 16), (16, 16), False, True)] * 4
    for e in table["negate"]:
        assert 0.004 <= e["seconds"] < 1.0, e
    # A kernel with a scalar takes its arguments from args=.
    t = lpk.calibrate([shift], 8, args={"shift": lambda b: (np.ones((b, b)), 2.0)})
    assert list(t) == ["shift"] and t["shift"][0]["block"] == 8


def test_merged_times_drive_the_simulation(lpkc, tmp_path):
    src = tmp_path / "negated.lpk"
    src.write_text(NEGATED)
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({
        "gflops": 10.0,
        "store": {"latency_s": 0.0, "bandwidth_bytes_per_s": 0.0},
        "kernels": {"negate": [{"block": 4, "seconds": 9.0}, {"block": 8, "seconds": 99.0}]},
    }))
    table = lpk.calibrate(
        {"negate": negate, "shift": shift}, [8], repeats=2,
        args={"shift": lambda b: (np.zeros((b, b)), 1.5)}, into=str(costs),
    )
    model = json.loads(costs.read_text())
    # The same kernel at the same block is replaced; other blocks are kept.
    assert model["kernels"]["negate"][0] == {"block": 4, "seconds": 9.0}
    assert model["kernels"]["negate"][1] == table["negate"][0]
    assert model["kernels"]["shift"] == table["shift"]
    assert model["gflops"] == 10.0
    r = subprocess.run(
        [str(lpkc), "simulate", str(src), "-p", "N=5", "--block", "8", "--workers", "1",
         "--costs", str(costs), "--format", "json"],
        capture_output=True, text=True, timeout=60,
    )
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    assert v["unmodelled_kernels"] == [], v
    want = 5 * (table["negate"][0]["seconds"] + table["shift"][0]["seconds"])
    assert v["work_s"] == pytest.approx(want, rel=1e-9), v


def test_bad_arguments_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="a block is an int from 1 to 8192, found 0"):
        lpk.calibrate({"negate": negate}, [0])
    with pytest.raises(ValueError, match="args= names other, which kernels= does not give"):
        lpk.calibrate({"negate": negate}, 8, args={"other": lambda b: ()})
    with pytest.raises(ValueError, match=r"kernel `many`: its parameters do not say"):
        lpk.calibrate({"many": lambda *tiles: tiles[0]}, 8)
    with pytest.raises(FileNotFoundError, match=r"lpkc calibrate -o"):
        lpk.calibrate({"negate": negate}, 8, repeats=1, into=str(tmp_path / "none.json"))
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a cost file"):
        lpk.calibrate({"negate": negate}, 8, repeats=1, into=str(tmp_path / "bad.json"))

    def boom(a):
        raise ZeroDivisionError("no")

    with pytest.raises(RuntimeError, match="kernel `boom` raised ZeroDivisionError at block 8"):
        lpk.calibrate({"boom": boom}, 8)
