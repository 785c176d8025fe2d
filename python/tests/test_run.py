"""lpk.run equals `lpkc run` bit for bit on every runnable example (same
.npy inputs, outputs compared byte by byte), and bad arguments raise clear
Python exceptions."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import lpk
from conftest import EXAMPLES, REPO

B = 8


def spd(n, rng):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def lower(n, rng):
    return np.tril(rng.standard_normal((n, n))) + n * np.eye(n)


# Inputs of each example; sizes that are not multiples of the block make
# edge tiles.
INPUTS = {
    "cholesky": lambda r: {"A": spd(21, r)},
    "lu": lambda r: {"A": r.standard_normal((20, 20)) + 20 * np.eye(20)},
    "gemm": lambda r: {"A": r.standard_normal((20, 13)), "B": r.standard_normal((13, 17))},
    "gemm_tree": lambda r: {"A": r.standard_normal((10, 40)), "B": r.standard_normal((40, 9))},
    "gemm_tree_zero": lambda r: {"A": r.standard_normal((10, 37)), "B": r.standard_normal((37, 9))},
    "trsolve": lambda r: {"L": lower(20, r), "B": r.standard_normal((20, 7))},
    "trtri": lambda r: {"L": lower(20, r)},
    "tsqr": lambda r: {"A": r.standard_normal((40, 6))},
    "caqr": lambda r: {"A": r.standard_normal((32, 16))},
    "bdfac": lambda r: {"A": r.standard_normal((29, 29))},
    "getrf": lambda r: {"A": r.standard_normal((21, 21))},
    "gesv": lambda r: {"A": r.standard_normal((21, 21)), "B": r.standard_normal((21, 10))},
    "posv": lambda r: {"A": spd(21, r), "B": r.standard_normal((21, 10))},
}


def test_every_example_is_run():
    assert sorted(p.stem for p in EXAMPLES.glob("*.lpk")) == sorted(INPUTS)


def lpkc_run(lpkc, path, inputs, tmp_path, extra=()):
    args = [lpkc, "run", str(path), "--block", str(B), "--no-progress", "--format", "json"]
    for name, a in inputs.items():
        f = tmp_path / f"in_{name}.npy"
        np.save(f, a)
        args += ["--input", f"{name}={f}"]
    out = tmp_path / "out"
    args += ["--output-dir", str(out), *extra]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return out, json.loads(r.stdout)


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_run_equals_lpkc_run(lpkc, tmp_path, name):
    inputs = INPUTS[name](np.random.default_rng(7))
    path = EXAMPLES / f"{name}.lpk"
    out_dir, report = lpkc_run(lpkc, path, inputs, tmp_path)
    prog = lpk.load(path)
    got = lpk.run(prog, inputs, block=B, workers=2)
    assert got.report["params"] == report["params"]
    assert got.report["tasks"] == report["tasks"]
    assert sorted(got) == sorted(prog.outputs)
    for m, value in got.items():
        if isinstance(value, np.ndarray):
            want = np.load(out_dir / f"{m}.npy")
            assert value.dtype == np.float64 and value.flags.c_contiguous
            assert value.shape == want.shape, m
            assert value.tobytes() == want.tobytes(), f"{name}: output {m} differs"
        else:
            # Tiles that form no grid: lpkc writes each as DIR/M/i_j.npy.
            files = sorted(p.name for p in (out_dir / m).glob("*.npy"))
            assert len(files) == len(value)
            for tile, arr in value.items():
                assert isinstance(tile, lpk.Tile) and tile.matrix == m
                f = out_dir / m / ("_".join(map(str, tile.index)) + ".npy")
                want = np.load(f)
                assert arr.shape == want.shape and arr.tobytes() == want.tobytes(), str(tile)


def test_generated_inputs_equal_lpkc(lpkc, tmp_path):
    path = EXAMPLES / "cholesky.lpk"
    out = tmp_path / "out"
    subprocess.run(
        [lpkc, "run", str(path), "--block", "16", "--input", "A=spd:40", "--seed", "3",
         "--output-dir", str(out), "--no-progress"],
        check=True, capture_output=True,
    )
    got = lpk.run(lpk.load(path), {"A": "spd:40"}, block=16, seed=3)
    assert got["L"].tobytes() == np.load(out / "L.npy").tobytes()


def test_instance_workers_keywords_and_verify():
    prog = lpk.load(EXAMPLES / "cholesky.lpk")
    a = spd(50, np.random.default_rng(1))
    one = lpk.run(prog.bind(N=4), A=a, block=16, workers=1, verify=True)
    two = lpk.run(prog, {"A": a}, params={"N": 4}, block=16, workers=2)
    assert one["L"].tobytes() == two["L"].tobytes()
    assert one.report["residual"]["ok"] and one.report["workers"] == 1
    assert np.allclose(one["L"] @ one["L"].T, a)
    # The input is not modified.
    assert np.array_equal(a, spd(50, np.random.default_rng(1)))


def test_kernel_error_names_the_task():
    prog = lpk.load(EXAMPLES / "cholesky.lpk")
    a = -np.eye(32)
    with pytest.raises(lpk.RunError, match=r"chol@\d+\(k=0\)"):
        lpk.run(prog, A=a, block=16)


def test_bad_arguments():
    prog = lpk.load(EXAMPLES / "cholesky.lpk")
    a = spd(32, np.random.default_rng(2))
    with pytest.raises(TypeError, match="float64"):
        lpk.run(prog, A=a.astype(np.float32), block=16)
    with pytest.raises(TypeError, match="NumPy"):
        lpk.run(prog, A=a.tolist(), block=16)
    with pytest.raises(ValueError, match="C-contiguous"):
        lpk.run(prog, A=np.asfortranarray(a), block=16)
    with pytest.raises(ValueError, match="C-contiguous"):
        lpk.run(prog, A=spd(64, np.random.default_rng(2))[::2, ::2], block=16)
    with pytest.raises(ValueError, match="dimensions"):
        lpk.run(prog, A=np.zeros((2, 2, 2)), block=16)
    with pytest.raises(ValueError, match="needs data"):
        lpk.run(prog, block=16)
    with pytest.raises(ValueError, match="not a matrix"):
        lpk.run(prog, A=a, X=a, block=16)
    with pytest.raises(ValueError, match="not an input"):
        lpk.run(prog, A=a, L=a, block=16)
    with pytest.raises(lpk.BindError, match="not a parameter"):
        lpk.run(prog, A=a, params={"Q": 2}, block=16)
    # A shape that does not fit the block and the parameters.
    with pytest.raises(ValueError, match="A"):
        lpk.run(prog, A=a, params={"N": 3}, block=16)
    with pytest.raises(ValueError):
        lpk.run(prog, A=a[:, :20].copy(), block=16)
    with pytest.raises(ValueError, match="block"):
        lpk.run(prog, A=a, block=0)
    with pytest.raises(ValueError, match="workers"):
        lpk.run(prog, A=a, block=16, workers=0)
    with pytest.raises(ValueError, match="bound already"):
        lpk.run(prog.bind(N=2), A=a, params={"N": 2}, block=16)
    with pytest.raises(TypeError):
        lpk.run("cholesky", A=a)
    with pytest.raises(TypeError):
        lpk.run(prog, inputs=[a])
    with pytest.raises(ValueError, match="spd"):
        lpk.run(prog, A="spd:zero", block=16)


def test_submit_refuses_params_beside_an_instance(tmp_path):
    # lpk.submit took an Instance and dropped params= without a word;
    # it goes through lpk.run's choice of program now, before any Redis.
    prog = lpk.load(os.path.join(EXAMPLES, "cholesky.lpk"))
    with pytest.raises(ValueError, match="bound already"):
        lpk.submit(
            prog.bind(N=2),
            {"A": "spd:32"},
            redis="redis://127.0.0.1:1",
            store=str(tmp_path),
            params={"N": 3},
            block=16,
        )
    with pytest.raises(TypeError, match="lpk.submit takes an lpk.Program"):
        lpk.submit("cholesky", {}, redis="redis://127.0.0.1:1", store=str(tmp_path))


def test_ctrl_c_cancels_a_run(tmp_path):
    script = tmp_path / "long.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time, lpk
        prog = lpk.load({str(EXAMPLES / 'cholesky.lpk')!r})
        print("start", flush=True)
        t = time.time()
        try:
            lpk.run(prog, A="spd:6000", block=64, workers=1)
            print("finished", flush=True)
        except KeyboardInterrupt:
            print("interrupted %.2f" % (time.time() - t), flush=True)
    """))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "start"
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    assert out.startswith("interrupted"), out


TWICE = textwrap.dedent(
    """\
    kernel copy(a) -> (b);
    kernel scale(a, alpha: real) -> (b);

    program twice(N: int) {
        require N >= 1;
        input A[N];
        output C[N];
        matrix T[N];
        for i in range(N) {
            T[i] = copy(A[i]);
        }
        for i in range(N) {
            T[i] = scale(A[i], 2.0);
        }
        for i in range(N) {
            C[i] = copy(T[i]);
        }
    }
    """
)


def test_a_program_that_breaks_a_rule_is_refused_with_lints_diagnostics(lpkc, tmp_path):
    """lpk.run refuses a tile written twice before any task, with the
    code, message and line `lpkc lint` reports; queries still answer."""
    prog = lpk.compile(TWICE, filename="twice.lpk")
    a = np.ones((32, 8))
    for target in (prog, prog.bind(N=4)):
        with pytest.raises(lpk.CompileError) as e:
            lpk.run(target, {"A": a}, block=8)
        got = [(d.code, d.line, d.message) for d in e.value.diagnostics]
        assert got and all(code == "E0501" for code, _, _ in got), got
        assert "error[E0501]" in str(e.value)
    src = tmp_path / "twice.lpk"
    src.write_text(TWICE)
    out = subprocess.run(
        [lpkc, "lint", str(src), "--format", "json"], capture_output=True, text=True
    )
    lint = [
        (d["code"], d["line"], d["message"])
        for d in json.loads(out.stdout)["diagnostics"]
        if d["severity"] == "error"
    ]
    assert got == lint
    # The plans still answer queries about it.
    assert len(prog.bind(N=2).tasks()) == 6
