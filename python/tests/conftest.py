"""Shared fixtures: the repository, the examples, and the `lpkc` binary the
answers are compared with (env LPKC, else the cargo target directory)."""

import json
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def find_lpkc():
    env = os.environ.get("LPKC")
    if env:
        return pathlib.Path(env)
    dirs = []
    if os.environ.get("CARGO_TARGET_DIR"):
        dirs.append(pathlib.Path(os.environ["CARGO_TARGET_DIR"]))
    dirs.append(REPO / "target")
    found = [
        d / profile / "lpkc"
        for d in dirs
        for profile in ("debug", "release")
        if (d / profile / "lpkc").exists()
    ]
    if not found:
        raise RuntimeError(
            "no lpkc binary: build it (cargo build -p lpkc) or set LPKC=/path/to/lpkc"
        )
    # The newest build is the one that matches the sources.
    return max(found, key=lambda p: p.stat().st_mtime)


@pytest.fixture(scope="session")
def lpkc():
    path = find_lpkc()
    assert path.exists(), f"LPKC={path} does not exist"
    return str(path)


def lpkc_json_lines(lpkc, args, stdin=None):
    """Runs lpkc, returns its stdout as one JSON value per line."""
    r = subprocess.run(
        [lpkc, *args], input=stdin, capture_output=True, text=True, timeout=120
    )
    return r, [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
