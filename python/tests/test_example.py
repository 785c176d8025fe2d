"""docs/python_example.py runs from start to end."""

import subprocess
import sys

from conftest import REPO


def test_docs_example_runs():
    r = subprocess.run(
        [sys.executable, str(REPO / "docs" / "python_example.py")],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip().endswith("done")
    assert "children of chol@37(k=0) -> [Task('trsm@44(k=0, i=1)')" in r.stdout
