"""From η to a Session: guidance filtered to the session's tools, skills, gates and the η version."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..contracts import ACTION_KINDS, ToolSpec
from ..skills import SkillLibrary
from ..skills.worlds import ToolSet
from .delegation import DelegationPlan
from .errors import EtaError
from .eta import Eta
from .examples import with_experience, with_tool_text
from .filter import GuidanceFilter
from .placement import MemorySettings
from .route import SkillRouter, asks_to_delegate, asks_to_remember
from .tool_retrieval import ToolRetriever

__all__ = ["check_library", "session_kwargs"]

_PARENT_ONLY = frozenset({"delegate", "skills", "recall", "recall-answer", "search-again"})
"""Resources a sub-agent lacks: it cannot delegate or load skills, and is shown no recalled memories."""


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
    exposed_tools: Sequence[str | ToolSpec],
    *,
    library: SkillLibrary | None = None,
    memory: bool = False,
    delegate: bool = False,
    resources: Iterable[str] = (),
    guidance_filter: GuidanceFilter | None = None,
    request: str | None = None,
    recalled: Sequence[str] = (),
    router: SkillRouter | None = None,
    memory_search: bool = True,
    recalled_whole: bool = False,
    owner: str | None = None,
    embedder: Any | None = None,
    tool_retriever: ToolRetriever | None = None,
) -> dict[str, Any]:
    """Keyword arguments for :class:`~pocketpilot.harness.Session` under η.

    Example::

        kw = session_kwargs(eta, executor.tools(), library=lib, memory=True)
        session = Session(planner, executor, memory=store, **kw)

    Everything is matched against the tools of each skill's and note's own world
    (:mod:`pocketpilot.skills.worlds`): a world whose tools share names with the sandbox's gets
    none of the sandbox's skills, gates or notes unless its tools declare the sandbox's identity.
    The session's skill store is the library bound to ``exposed_tools``, so the skills the
    session offers for loading are judged the same way.

    Given the ``request`` (the per-request form), the adapter also routes it:

    - the skills it needs (:class:`~pocketpilot.adapters.route.SkillRouter`, on the request and
      the ``recalled`` memories) come back as ``preloaded``: their procedures are in the first
      context, and the skill index, the load note and ``load_skill`` itself give way to them
      (``load_skill`` stays offered when the router found nothing for the request);
    - ``actions`` leaves ``memory_write`` out unless the request asks to remember something,
      ``delegate`` out unless it asks for a helper or sub-agent, and ``memory_search`` out
      when ``memory_search`` is False (an empty store), or when memories were ``recalled`` for
      the request already and η's ``memory.keep_search`` is off (the 1.5B planner's searches
      then re-ran the request as a query and found the same memories; kept, a first recall
      that missed can be searched again, as the ``memory.search-again`` note says), and out
      when ``recalled_whole`` and η's ``memory.whole_closes_search`` is on (what was recalled
      is all a search could find);
    - ``guidance_for`` re-filters guidance to the tools exposed at each point (after a
      ``load_skill`` exposes new ones), with request-bound notes matched against the request;
      ``guidance`` is then empty (the session asks ``guidance_for``).

    Args:
        eta: the configuration to run under (its version goes into every trace).
        exposed_tools: the session's tools: their specs, which declare the world each belongs
            to (bare names are taken as the tools η and the library were written for).
        library: the skills η was compiled from; gives ``skills`` (bound to ``exposed_tools``)
            and the always-on ``gates``.
        memory: whether the session has a memory store (memory notes apply).
        delegate: whether the session may delegate to sub-agents.
        resources: further resource names notes may require.
        guidance_filter: a filter compiled from ``eta`` earlier (saves rebuilding it per session).
        request: the user's request (enables routing; see above).
        recalled: contents of the memories recalled for the request and shown with it: the
            ``memory.recalled`` note replaces the memory_search one, and routing reads them too
            (a "home routine" memory names the settings the request needs).
        router: a router built from ``library`` earlier (saves rebuilding it per session).
        memory_search: whether searching memory can find anything (False for an empty store:
            the action and its note would only invite a wasted step).
        recalled_whole: ``recalled`` is everything a search could find (the owner's whole
            history went in, and no shared store is searched beside it); with η's
            ``memory.whole_closes_search`` the action and its search-again note are not offered.
        tool_retriever: tool exposure by retrieval (built with the caller's embedder); None: η's
            ``tool_retrieval`` entry, keyword-only, when it has one, else every tool shown. Given
            a request, it comes back as ``tool_exposure``.
        owner: whose run it is: η's experience learned from another owner's runs is shown
            only where no owner data is left in it (:mod:`.examples`).
        embedder: scores experience by meaning as well as by words (None: BM25 alone).

    Returns:
        ``guidance``, ``skills``, ``gates``, ``policies`` (η's policy set, fresh) and
        ``eta_version``; with a request also ``guidance_for``, ``preloaded`` and ``actions``,
        and ``handoff`` when η has a ``delegation`` section (:mod:`.delegation`: how a sub-agent
        is briefed, its guidance filtered to its own tools).

    Raises:
        EtaError: ``library`` is not the one η was compiled from, or the filter is for another η.
    """
    tools = ToolSet.of(exposed_tools)
    bound = _bind(eta, library, tools)
    res = _resources(resources, bound, tools, memory=memory, delegate=delegate)
    filt, version = _filter(eta, guidance_filter)
    gates = library.always_on_gates(tools) if library is not None else []
    if request is None:
        guidance = filt.guidance(tools, res)
        return with_tool_text(eta, {"guidance": guidance, "skills": bound, "gates": gates, "eta_version": version,
                                    "policies": eta.build_policies()})
    settings = eta.memory or MemorySettings.defaults()
    # a whole recall leaves a search nothing new to find (only when η says so: a measured hypothesis)
    memory_search = memory_search and not (recalled and recalled_whole and settings.whole_closes_search)
    searching = memory_search and (not recalled or settings.keep_search)
    _recall_resources(res, recalled, memory_search=memory_search, settings=settings)
    remember = asks_to_remember(request, eta.offers.get("memory_write")) if "memory_write" in eta.offers else True
    delegating = asks_to_delegate(request, eta.offers.get("delegate")) if "delegate" in eta.offers else True
    if not delegating:
        res.discard("delegate")  # the action is not offered, so neither is its note
    preloaded = _route(eta, library, router, version, " ".join([request, *recalled]), tools)
    if preloaded:
        res.discard("skills")
    offered = {"memory_write": remember, "memory_search": searching, "delegate": delegating,
               "load_skill": not preloaded}  # routed: the procedures are shown already
    actions = [k for k in ACTION_KINDS if offered.get(k, True)]
    tool_retriever = tool_retriever if tool_retriever is not None else _declared_retriever(eta)
    kwargs = {
        "guidance": [],
        "guidance_for": _guidance_for(filt, tools, frozenset(res), request, tuple(preloaded)),
        "skills": bound,
        "gates": gates,
        "eta_version": version,
        "policies": eta.build_policies(),
        "preloaded": preloaded,
        "actions": actions,
        **({"tool_exposure": tool_retriever} if tool_retriever is not None else {}),
        **_handoff(eta, filt, tools, frozenset(res), request, bound, preloaded),
    }
    # η's experience: worked examples after the routed guidance, step hints as a policy
    names = [t if isinstance(t, str) else t.name for t in exposed_tools]
    return with_tool_text(eta, with_experience(eta, kwargs, request, names, owner=owner, embedder=embedder))


def _bind(eta: Eta, library: SkillLibrary | None, tools: ToolSet) -> SkillLibrary | None:
    """The library bound to the session's tools (None without one), after checking it is η's."""
    if library is None:
        return None
    check_library(eta, library)
    return library.bind(tools)


def _resources(resources: Iterable[str], bound: SkillLibrary | None, tools: ToolSet, *, memory: bool,
               delegate: bool) -> set[str]:
    """The resource names guidance notes may require, before the request is known."""
    res = set(resources)
    if bound is not None and bound.available(tools):  # no skill speaks about these tools: no note about loading one
        res.add("skills")
    if memory:
        res.add("memory")
    if delegate:
        res.add("delegate")
    return res


def _filter(eta: Eta, given: GuidanceFilter | None) -> tuple[GuidanceFilter, str]:
    """The guidance filter and the η version the session records (a given filter must be η's)."""
    filt = given or GuidanceFilter(eta)
    version = filt.version if given is None else eta.version
    if filt.version != version:
        raise EtaError(f"eta {version}", f"guidance filter was compiled for η {filt.version}")
    return filt, version


def _recall_resources(res: set[str], recalled: Sequence[str], *, memory_search: bool,
                      settings: MemorySettings) -> None:
    """Swap the memory_search note for the recall notes when memories were recalled (in place)."""
    if recalled or not memory_search:
        res.discard("memory")
    if recalled:  # the answer path's note says a question is answered from them; the earlier one said check
        if not settings.drop_recall_note:  # left out, the evidence's own rules say what it said but "check"
            res.add("recall-answer" if settings.answers else "recall")
        if memory_search and settings.keep_search:
            res.add("search-again")


def _route(eta: Eta, library: SkillLibrary | None, router: SkillRouter | None, version: str, text: str,
           tools: ToolSet) -> list[str]:
    """The skills the request (and what was recalled with it) needs, preloaded into the first context."""
    if library is None:
        return []
    router = router if router is not None else SkillRouter(library, stop_words=eta.stop_words)
    if router.library is not library:
        raise EtaError(f"eta {version}", "the router was built from another skill library")
    return router.route(text, tools)


def _declared_retriever(eta: Eta) -> ToolRetriever | None:
    """η's ``tool_retrieval`` entry as a (keyword-only) retriever; None when η has none."""
    if eta.tool_retrieval is None:
        return None
    apps = {name: entry.app for name, entry in eta.tools.items() if entry.app}
    return ToolRetriever(eta.tool_retrieval, apps=apps)


def _handoff(eta: Eta, filt: GuidanceFilter, tools: ToolSet, res: frozenset[str], request: str,
             bound: SkillLibrary | None, preloaded: Sequence[str]) -> dict[str, Any]:
    """η's ``delegation`` section as the session's ``handoff`` (none without the section).

    The child's guidance is the parent's over the child's tools: the notes, and the procedures
    of the skills routed for the request that the child's tools make available (a child cannot
    load a skill itself), as the parent's context shows them.
    """
    if eta.delegation is None:
        return {}
    apps = {name: entry.app for name, entry in eta.tools.items() if entry.app}
    child_res = res - _PARENT_ONLY

    def child_guidance(now: Sequence[str]) -> list[str]:
        held = ToolSet.of(list(now), catalogue=tools)
        skills = [n for n in bound.available(held) if n in preloaded] if bound is not None else []
        procedures = [f"[{n}] {bound.load(n).guidance}" for n in skills] if bound is not None else []
        return [*filt.guidance(held, child_res, request=request, shown_skills=skills), *procedures]

    return {"handoff": DelegationPlan.of(eta.delegation, apps, child_guidance)}


def _guidance_for(filt: GuidanceFilter, tools: ToolSet, res: frozenset[str], request: str,
                  shown: tuple[str, ...]) -> Callable[[Sequence[str | ToolSpec]], list[str]]:
    """Guidance re-filtered to the tools exposed at each point (a loaded skill exposes more)."""
    resolved: dict[tuple[str, ...], ToolSet] = {}

    def guidance_for(now: Sequence[str | ToolSpec]) -> list[str]:
        # the session asks by name, at every step: each name is the tool of that name handed in
        # above, and the set changes only when a loaded skill exposes tools
        key = tuple(t if isinstance(t, str) else t.name for t in now)
        if key not in resolved:
            resolved[key] = ToolSet.of(now, catalogue=tools)
        return filt.guidance(resolved[key], res, request=request, shown_skills=shown)

    return guidance_for
