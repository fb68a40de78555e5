"""The README's Python example, exactly as written, in a fresh interpreter
(in a scratch directory: it writes an artifact)."""

import os
import pathlib
import re
import subprocess
import sys

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_example_runs(tmp_path):
    m = re.search(r"<!-- readme-example: python -->\n```python\n(.*?)```", README.read_text(), re.S)
    assert m, "README.md has no Python example after <!-- readme-example: python -->"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)
    r = subprocess.run([sys.executable, "-c", m.group(1)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "input [1, 3, 224, 224] tensor(float)" in r.stdout
    assert (tmp_path / "squeezenet.tsr").exists()
