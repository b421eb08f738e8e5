"""The README's Python examples run as written."""

from __future__ import annotations

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S) if README.exists() else []


@pytest.mark.skipif(not BLOCKS, reason="README.md not found next to the tests")
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index):
    import posenc

    previous = posenc.get_backend()
    try:
        exec(compile(BLOCKS[index], f"README.md[python block {index}]", "exec"), {})
    finally:
        posenc.set_backend(previous)
        posenc.set_num_threads(None)
