"""From η to a Session: guidance filtered to the session's tools, skills, gates and the η version."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..skills import SkillLibrary
from .errors import EtaError
from .eta import Eta
from .filter import GuidanceFilter

__all__ = ["check_library", "session_kwargs"]


def check_library(eta: Eta, library: SkillLibrary) -> None:
    """Fail unless ``library`` is the one η was compiled from (same skills, same SKILL.md digests).

    The trace records η's version as the configuration it ran under; running other skills
    under that version would make the record false.

    Raises:
        EtaError: naming the skills that differ.
    """
    have = {s.name: s.sha256 for s in library.skills()}
    want = {name: entry.sha256 for name, entry in eta.skills.items()}
    if have != want:
        differ = sorted(n for n in set(have) | set(want) if have.get(n) != want.get(n))
        raise EtaError(f"eta {eta.version}", f"skill library differs from the compiled one: {', '.join(differ)}")


def session_kwargs(
    eta: Eta,
    exposed_tools: Sequence[str],
    *,
    library: SkillLibrary | None = None,
    memory: bool = False,
    delegate: bool = False,
    resources: Iterable[str] = (),
    guidance_filter: GuidanceFilter | None = None,
) -> dict[str, Any]:
    """Keyword arguments for :class:`~pocketpilot.harness.Session` under η.

    Example::

        kw = session_kwargs(eta, [t.name for t in executor.tools()], library=lib, memory=True)
        session = Session(planner, executor, memory=store, **kw)

    Args:
        eta: the configuration to run under (its version goes into every trace).
        exposed_tools: the session's tool names.
        library: the skills η was compiled from; gives ``skills`` and the always-on ``gates``.
        memory: whether the session has a memory store (memory notes apply).
        delegate: whether the session may delegate to sub-agents.
        resources: further resource names notes may require.
        guidance_filter: a filter compiled from ``eta`` earlier (saves rebuilding it per session).

    Returns:
        ``guidance``, ``skills``, ``gates`` and ``eta_version``.

    Raises:
        EtaError: ``library`` is not the one η was compiled from, or the filter is for another η.
    """
    res = set(resources)
    if library is not None:
        check_library(eta, library)
        res.add("skills")
    if memory:
        res.add("memory")
    if delegate:
        res.add("delegate")
    filt = guidance_filter or GuidanceFilter(eta)
    version = filt.version if guidance_filter is None else eta.version
    if filt.version != version:
        raise EtaError(f"eta {version}", f"guidance filter was compiled for η {filt.version}")
    return {
        "guidance": filt.guidance(exposed_tools, res),
        "skills": library,
        "gates": library.always_on_gates(exposed_tools) if library is not None else [],
        "eta_version": version,
    }
