"""Every script in python/examples runs to the end in a fresh folder."""
import importlib.util
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted((pathlib.Path(__file__).parent.parent / "examples").glob("*.py"))


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script, tmp_path):
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip(), "an example says what it did"
    if script.name == "plummer.py" and importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "energy.png").stat().st_size > 1000


def test_every_example_is_there():
    assert {p.name for p in EXAMPLES} >= {"forces.py", "plummer.py", "tree_leaf.py", "gpu.py"}
