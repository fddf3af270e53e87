"""Who may serve: the rule every route to the serving pointer applies (import, promote, swap).

A version that never served may serve only if every required gate ran and passed, or a
person gave a reason to override them (``--force --reason``), which the registry keeps. A gate
that could not run (nothing to compare with, no dev tasks) blocks like a failed one: a
skipped gate is exactly how a different model slipped into service before. Versions that
served before (rollback targets) were admitted by this rule then and are not re-gated; their
files are still re-hashed by the registry.

Integrity is not a gate: no reason overrides a sha256 mismatch, a truncated file or a
checkpoint that does not fit its base.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import UsageError

__all__ = ["REQUIRED_GATES", "check_force_reason", "promotion_blockers"]

REQUIRED_GATES: tuple[str, ...] = ("parity", "dev")
"""Gates whose reports must say ``passed`` before a new version serves."""


def promotion_blockers(gates: Mapping[str, Any]) -> list[str]:
    """What keeps a version with these gate records from serving (empty: nothing).

    Args:
        gates: ``ModelVersion.gates``: a report per gate that ran (``passed`` in each) and
            ``skipped``, the ``"gate: why"`` lines of the gates that did not run.
    """
    skipped = gates.get("skipped") or []
    blockers = []
    for gate in REQUIRED_GATES:
        report = gates.get(gate)
        if not isinstance(report, Mapping):
            why = next((s.split(":", 1)[1].strip() for s in skipped
                        if isinstance(s, str) and s.split(":", 1)[0] == gate and ":" in s), "")
            blockers.append(f"the {gate} gate did not run" + (f" ({why})" if why else ""))
        elif report.get("passed") is not True:
            blockers.append(f"the {gate} gate failed")
    return blockers


def check_force_reason(reason: str | None) -> str | None:
    """The reason, stripped; a blank one is refused (an override nobody explained audits as nothing)."""
    if reason is None:
        return None
    text = " ".join(reason.split())
    if not text:
        raise UsageError("--force needs a non-empty --reason saying why the gates are overridden")
    return text
