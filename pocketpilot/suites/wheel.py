"""The bfcl-eval wheel: fetched once into pocketpilot's cache, read with ``zipfile``, never installed.

The wheel pins heavy dependencies (numpy 1.26, provider SDKs, faiss) that an SDK on a phone must
not pull; the multi-turn data and the stateful API classes inside it need none of them. So the
wheel is downloaded without dependencies, its data files are read straight from the archive,
and only the stdlib-only modules the multi-turn category runs on are extracted for import.
"""

from __future__ import annotations

import glob
import json
import logging
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from .errors import SuiteDataError, SuiteUnavailableError

__all__ = ["BfclWheel", "default_cache", "fetch_wheel"]

logger = logging.getLogger(__name__)

_PREFIX = "bfcl_eval/"
_SOURCE_FILES = (
    "__init__.py",
    "constants/__init__.py",
    "constants/executable_backend_config.py",
    "eval_checker/__init__.py",
    "eval_checker/multi_turn_eval/__init__.py",
    "eval_checker/multi_turn_eval/multi_turn_checker.py",
    "eval_checker/multi_turn_eval/multi_turn_utils.py",
    "eval_checker/multi_turn_eval/func_source_code/__init__.py",
    "eval_checker/multi_turn_eval/func_source_code/long_context.py",
    "eval_checker/multi_turn_eval/func_source_code/gorilla_file_system.py",
    "eval_checker/multi_turn_eval/func_source_code/math_api.py",
    "eval_checker/multi_turn_eval/func_source_code/message_api.py",
    "eval_checker/multi_turn_eval/func_source_code/posting_api.py",
    "eval_checker/multi_turn_eval/func_source_code/ticket_api.py",
    "eval_checker/multi_turn_eval/func_source_code/trading_bot.py",
    "eval_checker/multi_turn_eval/func_source_code/travel_booking.py",
    "eval_checker/multi_turn_eval/func_source_code/vehicle_control.py",
)
"""What the multi-turn category imports: the checker, its backend map and the eight worlds
(their imports are stdlib, plus mpmath for one math function). The memory and web-search
classes need sentence-transformers, faiss and requests and are not extracted."""


def default_cache() -> Path:
    """``$POCKETPILOT_HOME/bench/bfcl``: beside the models, so one cleanup covers both."""
    from ..models.store import pocketpilot_home

    return pocketpilot_home() / "bench" / "bfcl"


def fetch_wheel(cache: Path | None = None, *, download: bool = True) -> Path:
    """The newest bfcl-eval wheel in ``cache``, downloaded there (no dependencies) if none is.

    Raises:
        SuiteUnavailableError: none is cached and ``pip download`` failed or was not allowed.
    """
    cache = cache or default_cache()
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(glob.glob(str(cache / "bfcl_eval-*.whl")))
    if not found and download:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "bfcl-eval",
            "-d",
            str(cache),
            "-q",
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SuiteUnavailableError(f"pip download bfcl-eval failed: {exc}") from exc
        if proc.returncode != 0:
            raise SuiteUnavailableError(f"pip download bfcl-eval failed: {proc.stderr.strip()[-400:]}")
        found = sorted(glob.glob(str(cache / "bfcl_eval-*.whl")))
    if not found:
        raise SuiteUnavailableError(f"no bfcl-eval wheel in {cache}")
    return Path(found[-1])


class BfclWheel:
    """Read access to one bfcl-eval wheel: its JSON-lines data files and its extracted sources."""

    def __init__(self, path: Path, cache: Path | None = None) -> None:
        self.path = Path(path)
        self.cache = Path(cache) if cache is not None else self.path.parent
        self._zip = zipfile.ZipFile(self.path)

    @classmethod
    def fetch(cls, cache: Path | None = None, *, download: bool = True) -> BfclWheel:
        """The cached (or freshly downloaded) wheel; see :func:`fetch_wheel`."""
        cache = cache or default_cache()
        return cls(fetch_wheel(cache, download=download), cache)

    @property
    def version(self) -> str:
        """The wheel's version, from its file name (recorded in every bench report)."""
        return self.path.name.split("-")[1]

    def close(self) -> None:
        """Release the archive."""
        self._zip.close()

    def names(self, under: str) -> list[str]:
        """Archive members below ``bfcl_eval/<under>``, relative to ``bfcl_eval/``."""
        prefix = _PREFIX + under
        return [n[len(_PREFIX) :] for n in self._zip.namelist() if n.startswith(prefix)]

    def jsonl(self, name: str) -> list[dict[str, Any]]:
        """A JSON-lines data file (``data/BFCL_v4_multi_turn_base.json`` ...), one dict a line."""
        try:
            text = self._zip.read(_PREFIX + name).decode("utf-8")
        except KeyError as exc:
            raise SuiteDataError(f"{self.path.name} has no {name}") from exc
        try:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise SuiteDataError(f"{self.path.name}:{name}: not JSON lines: {exc}") from exc

    def source_root(self) -> Path:
        """A directory holding the extracted ``bfcl_eval`` package (the modules the category runs on).

        Extracted once per wheel version; the directory goes on ``sys.path`` only while those
        modules are imported (see :mod:`pocketpilot.suites.bfcl`).
        """
        root = self.cache / "src" / self.path.stem
        marker = root / ".complete"
        if marker.exists():
            return root
        for rel in _SOURCE_FILES:
            target = root / "bfcl_eval" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                data = self._zip.read(_PREFIX + rel)
            except KeyError as exc:
                raise SuiteDataError(f"{self.path.name} has no bfcl_eval/{rel}") from exc
            tmp = target.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(target)  # a concurrent reader never sees half a module
        marker.write_text(self.path.name)
        logger.info("extracted bfcl_eval sources to %s", root)
        return root
