"""CompileError carries what `lpkc check --format json` reports (code,
severity, line, column, message) on every broken program of tests/ui, and
renders as rustc-style text; artifacts round-trip; lint matches `lpkc
lint --format json`."""

import json
import subprocess

import pytest

import lpk
from conftest import EXAMPLES, REPO

BROKEN = sorted(
    p for d in ("parse", "resolve", "types") for p in (REPO / "tests" / "ui" / d).glob("*.lpk")
)


def check_json(lpkc, path):
    r = subprocess.run(
        [lpkc, "check", str(path), "--format", "json"], capture_output=True, text=True
    )
    return r.returncode, json.loads(r.stdout)["diagnostics"]


def test_there_are_broken_programs():
    assert len(BROKEN) > 40


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_compile_error_matches_lpkc_check(lpkc, path):
    code, want = check_json(lpkc, path)
    text = path.read_text()
    if code == 0:
        # A program that checks clean (its errors come later, at lint).
        lpk.compile(text, filename=str(path))
        return
    with pytest.raises(lpk.CompileError) as e:
        lpk.compile(text, filename=str(path))
    got = e.value.diagnostics
    assert [(d.code, d.severity, d.line, d.column, d.message) for d in got] == [
        (d["code"], d["severity"], d["line"], d["column"], d["message"]) for d in want
    ]
    rendered = str(e.value)
    for d in got:
        assert f"{d.severity}[{d.code}]: {d.message}" in rendered
        assert f"{path}:{d.line}:{d.column}" in rendered
    # load() gives the same.
    with pytest.raises(lpk.CompileError) as e2:
        lpk.load(path)
    assert [(d.code, d.line) for d in e2.value.diagnostics] == [(d.code, d.line) for d in got]


def test_program_choice():
    src = (EXAMPLES / "cholesky.lpk").read_text()
    assert lpk.compile(src, "cholesky").name == "cholesky"
    with pytest.raises(ValueError, match="no program named `nope`"):
        lpk.compile(src, "nope")
    with pytest.raises(lpk.CompileError, match="declares no program"):
        lpk.compile("\n")


@pytest.mark.parametrize("json_twin", [False, True])
def test_save_and_load_artifact(tmp_path, json_twin):
    prog = lpk.load(EXAMPLES / "lu.lpk")
    out = tmp_path / ("lu.lpka.json" if json_twin else "lu.lpka")
    prog.save(out)
    head = out.read_bytes()[:4]
    assert (head == b"LPKA") != json_twin
    again = lpk.load(out)
    a, b = prog.bind(N=5), again.bind(N=5)
    assert [str(t) for t in a.tasks()] == [str(t) for t in b.tasks()]
    for t in a.tasks():
        assert [str(c) for c in a.children(t)] == [str(c) for c in b.children(str(t))]
    assert again.source == prog.source
    assert again.lint()["lint"]["rules"] == prog.lint()["lint"]["rules"]


def test_broken_artifact(tmp_path):
    bad = tmp_path / "bad.lpka"
    bad.write_bytes(b"LPKA" + b"\x00" * 40)
    with pytest.raises(lpk.CompileError) as e:
        lpk.load(bad)
    assert e.value.diagnostics[0].code.startswith("E04")
    with pytest.raises(OSError):
        lpk.load(tmp_path / "missing.lpk")


@pytest.mark.parametrize("name", ["cholesky", "gemm_tree_zero"])
def test_lint_equals_lpkc_lint(lpkc, name):
    path = EXAMPLES / f"{name}.lpk"
    r = subprocess.run(
        [lpkc, "lint", str(path), "--format", "json"], capture_output=True, text=True
    )
    want = json.loads(r.stdout)
    got = lpk.load(path).lint()
    assert got["lint"] == want["lint"]
    assert [d["code"] for d in got["diagnostics"]] == [d["code"] for d in want["diagnostics"]]


def test_lint_reports_violations(lpkc):
    path = REPO / "tests" / "ui" / "lint" / "single_assignment.lpk"
    if not path.exists():
        path = sorted((REPO / "tests" / "ui" / "lint").glob("*.lpk"))[0]
    r = subprocess.run(
        [lpkc, "lint", str(path), "--format", "json"], capture_output=True, text=True
    )
    want = json.loads(r.stdout)
    got = lpk.load(path).lint()
    assert got["lint"]["rules"] == want["lint"]["rules"]
    assert [(d["code"], d["line"]) for d in got["diagnostics"]] == [
        (d["code"], d["line"]) for d in want["diagnostics"]
    ]
