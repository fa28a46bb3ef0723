"""The README's "Use from Python" example runs as written."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_readme_python_example_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert len(blocks) == 1
    out = subprocess.run([sys.executable, "-c", blocks[0]], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "('banks'," in out.stdout and "'queen'" in out.stdout
    assert "(7, 12, 384)" in out.stdout and "(6, 12, 12, 12)" in out.stdout and "(2, 7, 384)" in out.stdout
    assert "minilm-l6 installed" in out.stdout
