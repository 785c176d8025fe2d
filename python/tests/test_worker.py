"""`python -m lpk worker` and `lpk.worker`: distributed workers that carry
Python user kernels, against a real redis-server (LPK_TEST_REDIS's
database 31, or one started here) and real worker processes. A run
calling a Python kernel survives a SIGKILLed worker and gives the
embedded run's outputs bit for bit; a run calling a kernel no live worker
has is shown blocked by `lpkc status`; bad modules and undecorated
functions are clear errors."""

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import lpk
from programs import product_then

KERNELS_MODULE = '''
import os
import time
import numpy as np
import lpk

_HOLD = os.environ.get("WOBBLE_HOLD")

@lpk.kernel(results=1, shape=0)
def wobble(a):
    if _HOLD:
        # The worker to be killed: say it holds a task, and keep it.
        open(_HOLD, "w").close()
        time.sleep(60)
    time.sleep(0.01)
    return np.tanh(a) * 3.0 - a / 7.0

def helper(a):  # not decorated: not a kernel
    return a
'''

PROGRAM = product_then("wobble", name="wobbled_product")

BLOCKED = """
kernel wobble(a) -> (b);
kernel twist(a) -> (b);

program needs_twist(N: int) {
    require N >= 1;
    input A[N, N];
    output C[N, N];
    matrix D[N, N];
    for i in range(N) {
        for j in range(N) {
            D[i, j] = wobble(A[i, j]);
            C[i, j] = twist(D[i, j]);
        }
    }
}
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def redis_url():
    """Database 31 of the test Redis (the Rust tests use 0 to 30), or a
    redis-server of our own."""
    env = os.environ.get("LPK_TEST_REDIS")
    if env:
        yield env.rstrip("/") + "/31"
        return
    if shutil.which("redis-server") is None:
        pytest.skip("no LPK_TEST_REDIS and no redis-server on PATH")
    port = _free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.time() < deadline, "redis-server did not start"
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def kernels_dir(tmp_path):
    d = tmp_path / "kmods"
    d.mkdir()
    (d / "wobble_kernels.py").write_text(KERNELS_MODULE)
    return d


def _load_module(path):
    spec = importlib.util.spec_from_file_location("wobble_kernels_here", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Workers:
    """`python -m lpk worker` processes, stopped when the test ends."""

    def __init__(self, redis, kernels_dir, logs):
        self.redis, self.kernels_dir, self.logs = redis, kernels_dir, logs
        self.procs = []

    def start(self, hold=None):
        k = len(self.procs)
        env = _with_path(self.kernels_dir)
        if hold is not None:
            env["WOBBLE_HOLD"] = str(hold)
        log = open(self.logs / f"worker-{k}.log", "w")
        p = subprocess.Popen(
            [sys.executable, "-m", "lpk", "worker", "--redis", self.redis,
             "--kernels", "wobble_kernels", "--lease", "0.5", "--idle", "60",
             "--name", f"pyworker-{os.getpid()}-{k}"],
            env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        )
        log.close()
        self.procs.append(p)
        return p

    def log(self, k):
        return (self.logs / f"worker-{k}.log").read_text()

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=30)


@pytest.fixture
def workers(redis_url, kernels_dir, tmp_path):
    w = Workers(redis_url, kernels_dir, tmp_path)
    yield w
    w.stop_all()


def test_python_kernel_survives_a_sigkilled_worker_bit_for_bit(
    lpkc, redis_url, kernels_dir, workers, tmp_path
):
    prog = lpk.compile(PROGRAM, filename="wobbled_product.lpk")
    rng = np.random.default_rng(37)
    a = rng.standard_normal((32, 16))
    b = rng.standard_normal((16, 32))
    # 4 x 4 output tiles of 8, K = 2: 48 tasks, 16 of them `wobble`.
    store = tmp_path / "store"
    store.mkdir()
    run = lpk.submit(prog, {"A": a, "B": b}, redis=redis_url, store=str(store), block=8,
                     max_expiries=100)
    # The first worker keeps the first `wobble` task it takes (it sleeps in
    # it), so the run cannot finish before it is SIGKILLed and another
    # worker takes that task over. It starts alone (so it surely takes
    # one); the second starts once it holds it, and the first is killed
    # once the second is registered.
    holding = tmp_path / "holding"
    first = workers.start(hold=holding)
    deadline = time.time() + 60
    while not holding.exists():
        assert first.poll() is None, workers.log(0)
        assert time.time() < deadline, "the first worker took no `wobble`"
        time.sleep(0.005)
    second = workers.start()
    while True:
        s = lpk.status(run, redis=redis_url)
        assert s["state"] == "running", f"the run ended before a kill: {s}"
        if s["live_workers"] >= 2:
            break
        assert time.time() < deadline, f"the second worker did not register: {s}"
        time.sleep(0.005)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    at_kill = lpk.status(run, redis=redis_url)
    assert at_kill["tasks_done"] < at_kill["tasks_total"], "the run was done at the kill"
    workers.start()
    while s["state"] == "running":
        assert time.time() < deadline, f"the run did not finish: {s}"
        time.sleep(0.05)
        s = lpk.status(run, redis=redis_url)
    assert s["state"] == "done", s
    assert s["tasks_done"] == s["tasks_total"] == 48
    # SIGTERM stops the survivors cleanly (exit 0, saying so).
    for k in (1, 2):
        workers.procs[k].send_signal(signal.SIGTERM)
    for k in (1, 2):
        assert workers.procs[k].wait(timeout=10) == 0, workers.log(k)
        assert "stopped on SIGTERM" in workers.log(k)
    assert first.returncode == -signal.SIGKILL
    assert second.returncode == 0
    assert "took over" in workers.log(1) + workers.log(2)

    out = tmp_path / "out"
    subprocess.run(
        [lpkc, "collect", run, "--redis", redis_url, "--output-dir", str(out)],
        check=True, capture_output=True, timeout=60,
    )
    module = _load_module(kernels_dir / "wobble_kernels.py")
    local = lpk.run(prog, {"A": a, "B": b}, block=8, kernels={"wobble": module.wobble})
    assert np.load(out / "C.npy").tobytes() == local["C"].tobytes()
    # And the kernel really ran: C is wobble(A B), not A B.
    assert np.allclose(local["C"], np.tanh(a @ b) * 3.0 - (a @ b) / 7.0)


def test_a_run_whose_kernel_no_live_worker_has_is_blocked_naming_it(
    lpkc, redis_url, workers, tmp_path
):
    prog = lpk.compile(BLOCKED, filename="needs_twist.lpk")
    store = tmp_path / "store"
    store.mkdir()
    run = lpk.submit(prog, {"A": np.eye(16)}, redis=redis_url, store=str(store), block=8)
    workers.start()  # has `wobble` (from Python), not `twist`
    assert "kernels: the standard ones and wobble" in _wait_for_log(workers, 0)
    deadline = time.time() + 30
    while True:
        r = subprocess.run([lpkc, "status", run, "--redis", redis_url],
                           capture_output=True, text=True, timeout=30)
        text = r.stdout + r.stderr
        if "(1 live worker)" in text:
            break
        assert time.time() < deadline, text
        time.sleep(0.1)
    blocked = [line for line in text.splitlines() if "blocked:" in line]
    assert len(blocked) == 1, text
    assert "no live worker has kernel `twist` (line" in blocked[0]
    assert "wobble" not in blocked[0], "the Python worker's `wobble` was not registered"
    assert lpk.status(run, redis=redis_url)["tasks_done"] == 0
    # Ctrl-C stops it cleanly.
    workers.procs[0].send_signal(signal.SIGINT)
    assert workers.procs[0].wait(timeout=10) == 0, workers.log(0)
    assert "stopped on Ctrl-C" in workers.log(0)


def _with_path(d):
    """The environment with `d` first on PYTHONPATH."""
    old = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=str(d) + (os.pathsep + old if old else ""))


def _wait_for_log(workers, k):
    """Worker k's log once it has a line."""
    deadline = time.time() + 30
    while not workers.log(k).strip():
        assert workers.procs[k].poll() is None, workers.log(k)
        assert time.time() < deadline, "the worker printed nothing"
        time.sleep(0.02)
    return workers.log(k)


def _worker_cli(args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "lpk", "worker", *args],
        capture_output=True, text=True, timeout=60, env=env,
    )


def test_bad_modules_and_undecorated_functions_are_clear_errors(kernels_dir):
    # Nothing here reaches Redis: the kernels are refused first.
    unreachable = "redis://127.0.0.1:1"
    r = _worker_cli(["--redis", unreachable, "--kernels", "no_such_kernels_module"])
    assert r.returncode == 2
    assert "cannot import kernels module `no_such_kernels_module`: ModuleNotFoundError" in r.stderr
    assert "Traceback" not in r.stderr
    (kernels_dir / "plain_kernels.py").write_text("def negate(a):\n    return -a\n")
    r = _worker_cli(["--redis", unreachable, "--kernels", "plain_kernels"],
                    env=_with_path(kernels_dir))
    assert r.returncode == 2
    assert "module `plain_kernels` defines no lpk kernel (undecorated functions: negate)" in r.stderr
    assert "@lpk.kernel(results=..., shape=...)" in r.stderr
    with pytest.raises(TypeError, match=r"kernel `negate` is a plain callable.*@lpk\.kernel"):
        lpk.worker(unreachable, {"negate": lambda a: -a}, quiet=True)
    with pytest.raises(ValueError, match="cannot import kernels module"):
        lpk.worker(unreachable, "no_such_kernels_module", quiet=True)
    with pytest.raises(ValueError, match="lease must be"):
        lpk.worker(unreachable, lease=0.0, quiet=True)


def test_an_unreachable_redis_is_an_error_not_a_hang(kernels_dir):
    r = _worker_cli(["--redis", "redis://127.0.0.1:1", "--idle", "5"])
    assert r.returncode == 2
    assert "Redis at redis://127.0.0.1:1" in r.stderr and "Traceback" not in r.stderr
    with pytest.raises(lpk.LpkError, match="Connection refused"):
        lpk.worker("redis://127.0.0.1:1", quiet=True)
    r = _worker_cli(["--redis", "http://nowhere"])
    assert r.returncode == 2 and "is not a Redis URL" in r.stderr




def test_a_python_kernel_that_does_not_fit_the_declaration_fails_the_run_at_load(
    lpkc, redis_url, tmp_path
):
    calls = []

    @lpk.kernel(results=2, shape=0)
    def wobble(a):
        calls.append(1)
        return a, a

    prog = lpk.compile(PROGRAM, filename="wobbled_product.lpk")
    store = tmp_path / "store"
    store.mkdir()
    run = lpk.submit(prog, {"A": np.eye(8), "B": np.eye(8)}, redis=redis_url, store=str(store),
                     block=4)
    line = PROGRAM.splitlines().index("            C[m, n] = wobble(P[K - 1, m, n]);") + 1
    lpk.worker(redis_url, {"wobble": wobble}, idle=1.0, quiet=True)
    s = lpk.status(run, redis=redis_url)
    assert s["state"] == "failed", s
    assert s["tasks_done"] == 0 and not calls, "a task ran before the kernel was checked"
    assert s["error"]["task"] is None, "the run failed as a whole, in no task"
    text = str(s)
    assert f"kernel `wobble` (line {line}) is declared `kernel wobble(a) -> (b);`" in text, text
    assert "Python kernel does not fit it: lpk.kernel(results=2)" in text, text
    r = subprocess.run([lpkc, "status", run, "--redis", redis_url],
                       capture_output=True, text=True, timeout=30)
    assert "  failed: run " in r.stdout and "failed at task" not in r.stdout, r.stdout
