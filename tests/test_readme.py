"""The README's examples run as written: every Python and shell block, or a stated reason not to.

Each fenced block is either run (``python`` through this interpreter, ``bash``/``sh``/``shell``
with ``bash -e``) or preceded by ``<!-- not-run: reason -->``; a block that is neither fails
the structure test, so a new example cannot be left out by accident.

The model: the README uses the default planner (1.5B); here it runs on the small test planner
(``POCKETPILOT_TEST_MODEL``, the 0.5B). In Python blocks ``LlamaCppPlanner("default")``
becomes ``LlamaCppPlanner("<test model>")``; in shell blocks ``pocketpilot run`` without a
``--model`` gets ``--model <test model>``. A runnable block that names another model fails:
it would download it. Blocks run in a scratch directory holding a link to ``examples/``,
with this checkout first on ``PYTHONPATH`` and this virtual environment first on ``PATH``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

TEST_MODEL = os.environ.get("POCKETPILOT_TEST_MODEL", "qwen2.5-coder-0.5b")  # as tests/conftest.py

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RUNNABLE = {"python": "python", "bash": "shell", "sh": "shell", "shell": "shell"}
_FENCE = re.compile(r"^```(\S*)\s*$")
_NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    line: int
    lang: str
    code: str
    not_run: str | None
    """The stated reason, or None for a block that must run."""

    @property
    def id(self) -> str:
        return f"line{self.line}-{self.lang or 'plain'}"


def blocks(text: str) -> list[Block]:
    """The README's fenced blocks, with the not-run marker of the line before each, if any."""
    found, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        start, lang = i, fence.group(1).lower()
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
        assert end is not None, f"README line {start + 1}: unclosed code block"
        before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = _NOT_RUN.match(before.strip())
        found.append(Block(start + 1, lang, "\n".join(lines[start + 1:end]) + "\n",
                           marker.group(1) if marker else None))
        i = end + 1
    return found


BLOCKS = blocks(README.read_text())


def test_every_block_is_run_or_marked_with_a_reason():
    assert BLOCKS, "the README has no code blocks?"
    for block in BLOCKS:
        if block.not_run is not None:
            assert block.not_run, f"README line {block.line}: `not-run:` needs a reason"
        else:
            assert block.lang in RUNNABLE, (
                f"README line {block.line}: a ```{block.lang} block cannot run; mark it <!-- not-run: reason -->")
    markers = sum(1 for line in README.read_text().splitlines() if _NOT_RUN.match(line.strip()))
    assert markers == sum(b.not_run is not None for b in BLOCKS), "a not-run marker that precedes no block"
    assert any(b.not_run is None and RUNNABLE[b.lang] == "python" for b in BLOCKS)
    assert any(b.not_run is None and RUNNABLE[b.lang] == "shell" for b in BLOCKS)


def for_test_model(block: Block) -> str:
    """The block with the default planner swapped for the test planner (see the module docstring)."""
    code = block.code
    if RUNNABLE[block.lang] == "python":
        code = code.replace('LlamaCppPlanner("default")', f'LlamaCppPlanner("{TEST_MODEL}")')
    else:
        code = re.sub(r"\bpocketpilot run\b(?![^\n]*--model)", f"pocketpilot run --model {TEST_MODEL}", code)
    assert not re.search(r"1\.5b|qwen2\.5-coder-1|\"default\"", code), (
        f"README line {block.line} names a model the test cannot map to {TEST_MODEL}")
    return code


def run_block(block: Block, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    if RUNNABLE[block.lang] == "python":
        script = cwd / f"readme_{block.line}.py"
        script.write_text(code)
        argv = [sys.executable, str(script)]
    else:
        argv = ["bash", "-e", "-o", "pipefail", "-c", code]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=240,
                          stdin=subprocess.DEVNULL)


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_readme_block_runs(block: Block, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if block.not_run is not None:
        pytest.skip(f"README says not-run: {block.not_run}")
    code = for_test_model(block)
    if code != block.code:
        request.getfixturevalue("test_gguf")  # the test planner is installed before a block needs it
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    out = run_block(block, code, tmp_path)
    assert out.returncode == 0, f"README line {block.line} failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}"
    assert "Traceback" not in out.stderr, out.stderr[-4000:]
