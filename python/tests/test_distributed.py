"""lpk.submit and lpk.status against a real Redis (LPK_TEST_REDIS, which
scripts/test starts) with `lpkc worker` processes: the collected outputs
equal lpk.run's bit for bit."""

import os
import subprocess
import time

import numpy as np
import pytest

import lpk
from conftest import EXAMPLES

REDIS = os.environ.get("LPK_TEST_REDIS")
needs_redis = pytest.mark.skipif(
    not REDIS, reason="LPK_TEST_REDIS is not set (scripts/test starts a Redis and sets it)"
)


@needs_redis
def test_submit_status_collect(lpkc, tmp_path):
    prog = lpk.load(EXAMPLES / "cholesky.lpk")
    rng = np.random.default_rng(5)
    b = rng.standard_normal((40, 40))
    a = b @ b.T + 40 * np.eye(40)
    store = tmp_path / "store"
    store.mkdir()
    run = lpk.submit(prog, {"A": a}, redis=REDIS, store=str(store), block=16)
    s = lpk.status(run, redis=REDIS)
    assert s["run"] == run and s["program"] == "cholesky"
    assert s["tasks_total"] == prog.bind(N=3).count_tasks()
    worker = subprocess.Popen(
        [lpkc, "worker", "--redis", REDIS, "--idle", "5", "--threads", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 60
        while s["state"] == "running" and time.time() < deadline:
            time.sleep(0.2)
            s = lpk.status(run, redis=REDIS)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert s["state"] == "done", s
    assert s["tasks_done"] == s["tasks_total"]
    out = tmp_path / "out"
    subprocess.run(
        [lpkc, "collect", run, "--redis", REDIS, "--output-dir", str(out)],
        check=True, capture_output=True,
    )
    local = lpk.run(prog, {"A": a}, block=16)
    assert np.load(out / "L.npy").tobytes() == local["L"].tobytes()


@needs_redis
def test_distributed_bad_arguments(tmp_path):
    prog = lpk.load(EXAMPLES / "cholesky.lpk")
    with pytest.raises(ValueError):
        lpk.status("not a run id!", redis=REDIS)
    with pytest.raises(ValueError, match="not a matrix"):
        lpk.submit(prog, {"X": "spd:32"}, redis=REDIS, store=str(tmp_path), block=16)
    with pytest.raises(ValueError, match="needs data"):
        lpk.submit(prog, {}, redis=REDIS, store=str(tmp_path), block=16)
    with pytest.raises(TypeError, match="float64"):
        lpk.submit(prog, {"A": np.eye(32, dtype=np.float32)}, redis=REDIS, store=str(tmp_path), block=16)


def test_bad_redis_url():
    with pytest.raises(ValueError, match="Redis URL"):
        lpk.status("1-00000000", redis="http://nowhere")


def test_huge_or_bad_leases_are_value_errors_not_panics():
    for lease in (1e20, float("inf"), float("nan"), 0.0, -1.0):
        with pytest.raises(ValueError, match="lease must be a number of seconds"):
            lpk.status("1-00000000", redis="redis://127.0.0.1:1", lease=lease)


def test_an_endless_file_is_refused_after_a_bounded_read():
    with pytest.raises(ValueError, match="larger than 64 MiB"):
        lpk.load("/dev/zero")
