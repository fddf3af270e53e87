"""Typed candidate revisions of η that reach model-side failures too, for review and for ``evolve``.

:mod:`.diagnosis_revisions` answers the rare harness-side findings with routing notes. Most
failures of a small planner are model-side: wrong arguments, a missing call, a premature
stop. What a harness can carry for those, each as a :class:`Candidate` holding a rule-checked
:class:`~pocketpilot.adapters.Revision` (nothing is applied until approved):

- ``experience``: workflows distilled from verified runs (:func:`.distil.distil`) added to
  η's library; ``evict_experience``: an entry that measured as harmful goes.
- ``tool_text``: repeated ``invalid_arguments``/``not_found`` on a tool (the findings'
  error codes, across episodes) → its description rewritten in η with the values its schema
  allows and an example call (slotted) taken from a verified run, or, for a tool's declared id
  argument, from any call of it that worked, failed runs included, with the id shown as coming
  from the result that carried it (:mod:`.id_sources`); with no such call, the tools whose
  results carry that id for the tools that take the same one. The app's code is untouched.
- ``exposure``: a tool that was needed but not exposed → where η exposes tools by retrieval,
  a larger ``k`` (enough for every tool missed); else map it to a skill that exposes it, or a
  note to ask rather than substitute (the session's tool list itself is the deployment's).
- ``memory_policy``: retrieval misses → η's memory section recalls more and keeps
  ``memory_search`` offered after a recall; stale memories → memories shown dated, oldest
  first (what replaced what reads in order); plus the memory notes of the harness findings.
- ``policy_off``: a policy the ablation shows costing tasks is left out (never a safety one).

Everything is read from structured fields: findings' categories, tools and codes (a tool
error's code, a notice's code, a criterion's kind), never the words of a message.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..adapters import Eta, Revision, RevisionError, apply_revision, render_diff
from ..adapters.experience import ExperienceEntry, call_text
from ..adapters.placement import MemorySettings
from ..adapters.revision import AddExperience, EvictExperience, RemovePolicy, SetMemory, SetToolRetrieval, SetToolText
from ..contracts import Episode
from ..policy_registry import registered
from .diagnosis import ARGUMENT_CODES, Diagnosis
from .diagnosis_revisions import propose_revisions
from .id_sources import id_sources

__all__ = [
    "Candidate",
    "CandidateKind",
    "apply_candidate",
    "combine",
    "eviction_candidates",
    "exposure_candidates",
    "experience_candidate",
    "experience_harm",
    "generate_candidates",
    "memory_candidates",
    "policy_off_candidates",
    "shown_experience",
    "tool_text_candidates",
]

CandidateKind = Literal["experience", "evict_experience", "tool_text", "exposure", "memory_policy", "policy_off",
                        "harness_note"]


class Candidate(BaseModel):
    """One candidate revision: what kind, what it targets, the revision, and its evidence."""

    model_config = ConfigDict(frozen=True)

    kind: CandidateKind
    target: str | None = None
    """The tool, policy or entry id it is about (None: η-wide)."""
    revision: Revision
    evidence: list[dict[str, Any]] = Field(default_factory=list)
    """Per supporting episode: episode_id, task_id, steps, code."""
    diff: str = ""
    """The semantic diff it makes against the η it was generated for."""


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:8]


def _make(kind: CandidateKind, target: str | None, eta: Eta, ops: list[Any], rationale: str,
          evidence: list[dict[str, Any]]) -> Candidate | None:
    digest = _digest(eta.version, kind, target, [o.model_dump(mode="json") for o in ops])
    rev = Revision(id=f"{kind.replace('_', '-')}-{digest}",
                   base_version=eta.version, rationale=rationale[:1000], ops=ops, source="evolve")
    try:
        new = apply_revision(eta, rev)
    except RevisionError:
        return None
    return Candidate(kind=kind, target=target, revision=rev, evidence=evidence, diff=render_diff(eta, new))


def apply_candidate(eta: Eta, candidate: Candidate) -> Eta:
    """``eta`` with the candidate's ops applied (rebased onto ``eta``'s version; rule-checked).

    Raises:
        RevisionError: the ops fail a rule on this η (a note already there, an entry gone).
    """
    rev = candidate.revision.model_copy(update={"base_version": eta.version})
    return apply_revision(eta, rev)


def combine(eta: Eta, candidates: Sequence[Candidate], rev_id: str, rationale: str) -> Revision:
    """One revision of ``eta`` holding every candidate's ops, in order (what ``evolve`` writes as pending).

    Raises:
        RevisionError: the combined ops fail a rule (checked by applying them once).
    """
    ops = [op for c in candidates for op in c.revision.ops]
    rev = Revision(id=rev_id, base_version=eta.version, rationale=rationale[:1000], ops=ops, source="evolve")
    apply_revision(eta, rev)
    return rev


# --------------------------------------------------------------------------- experience


def experience_candidate(eta: Eta, entries: Sequence[ExperienceEntry]) -> Candidate | None:
    """Add the entries η lacks (by id and provenance) as one candidate; None when nothing is new."""
    have = {e.id: set(e.provenance) for e in eta.experience}
    new = [e for e in entries if e.tools and not set(e.provenance) <= have.get(e.id, set())]
    new = [e for e in new if all(t in eta.tools for t in e.tools)]
    if not new:
        return None
    evidence = [{"episode_id": p, "entry": e.id} for e in new for p in e.provenance]
    return _make("experience", None, eta, [AddExperience(entries=new)],
                 f"{len(new)} workflow(s) from {len(evidence)} verified episode(s)", evidence)


def shown_experience(episode: Episode) -> list[str]:
    """Ids of the experience entries the run was shown (the header's ``experience_hints`` parameters)."""
    return [i for p in episode.header.policies if p.get("name") == "experience_hints"
            for i in p.get("params", {}).get("entries", [])]


def experience_harm(before: Mapping[str, bool], after: Sequence[Episode]) -> dict[str, int]:
    """Entry id → tasks lost minus tasks gained where the entry was shown, paired by task.

    Args:
        before: task id → passed under the η without the entries (or the previous η).
        after: the episodes under the η with them (each names its task and the entries shown).
    """
    harm: dict[str, int] = defaultdict(int)
    for episode in after:
        task = episode.header.task_id
        if task is None or task not in before:
            continue
        passed = bool(episode.verdict and episode.verdict.success)
        delta = int(before[task] and not passed) - int(passed and not before[task])
        for entry in shown_experience(episode):
            harm[entry] += delta
    return dict(harm)


def eviction_candidates(eta: Eta, harm: Mapping[str, int], *, min_harm: int = 2) -> list[Candidate]:
    """Evict entries whose measured harm (tasks lost where it was shown, net) reaches ``min_harm``."""
    out = []
    for e in eta.experience:
        lost = int(harm.get(e.id, 0))
        if lost >= min_harm:
            c = _make("evict_experience", e.id, eta, [EvictExperience(entry_id=e.id)],
                      f"entry {e.id} measured harmful: {lost} task(s) lost where it was shown", [{"entry": e.id}])
            if c is not None:
                out.append(c)
    return out


# --------------------------------------------------------------------------- tool text


def _allowed_values(parameters: Mapping[str, Any]) -> list[str]:
    out = []
    defs = parameters.get("$defs", {})
    for name, schema in parameters.get("properties", {}).items():
        if "$ref" in schema:
            schema = defs.get(str(schema["$ref"]).rsplit("/", 1)[-1], {})
        values = schema.get("enum") or [v for alt in schema.get("anyOf", []) for v in alt.get("enum", [])]
        if values:
            out.append(f"{name}: {'|'.join(json.dumps(v) for v in values)}")
        elif schema.get("type") in ("integer", "number") and ("minimum" in schema or "maximum" in schema):
            out.append(f"{name}: {schema.get('minimum', '')}..{schema.get('maximum', '')}")
    return out


def _example(tool: str, entries: Sequence[ExperienceEntry]) -> str | None:
    for e in sorted(entries, key=lambda e: -len(e.provenance)):
        for c in e.calls:
            if c.tool == tool:
                return call_text(c)
    return None


def tool_text_candidates(
    diagnoses: Sequence[Diagnosis],
    eta: Eta,
    *,
    experience: Sequence[ExperienceEntry] = (),
    episodes: Sequence[Episode] = (),
    min_support: int = 2,
) -> list[Candidate]:
    """Rewrite the description of each tool with argument errors in ``min_support`` episodes or more.

    The new text is the tool's own description, then the values its schema allows and an
    example call (slots as slots). For a tool that declares an id argument, the example is a
    call of it that worked, in ``episodes`` (failed runs included: an id is free text that no
    schema constrains, and ``not_found`` is what is left once decoding is constrained) or in
    ``experience``, with the id shown as a slot from the result that carried it; without one,
    the text names the tools whose results carried the id for tools taking the same id
    argument. A tool with none of these gets no candidate: repeating its description would
    change nothing.

    Args:
        diagnoses: diagnoses of the failed episodes.
        eta: the η they ran under.
        experience: entries distilled from the verified successes.
        episodes: the runs whose calls that worked may give an example (the failed dev runs).
        min_support: episodes with an argument error a tool needs.
    """
    support: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for d in diagnoses:
        if not d.failed or d.eta_version not in (None, eta.version):
            continue
        for f in d.findings:
            if f.tool and f.code in ARGUMENT_CODES:
                support[f.tool].append({"episode_id": d.episode_id, "task_id": d.task_id, "steps": f.steps,
                                        "code": f.code})
    if not support:
        return []
    out = []
    known = [*experience, *eta.experience]
    declared = {name: {**t.semantics, "world": t.world} for name, t in eta.tools.items()}
    ids = id_sources(episodes, known, declared)
    for tool, ev in sorted(support.items()):
        failed = {e["episode_id"] for e in ev}
        if len(failed) < min_support or tool not in eta.tools:
            continue
        entry = eta.tools[tool]
        parts = [entry.description.rstrip(". ")] if entry.description else []
        said = []
        allowed = _allowed_values(entry.parameters)
        if allowed:
            parts.append("Allowed values: " + "; ".join(allowed))
            said.append("the allowed values")
        example = ids.example(tool, entry.world) or _example(tool, known)
        id_arg = ids.id_args.get(tool)
        sources = [s for s in ids.sibling_sources(tool, id_arg, entry.world) if s in eta.tools][:3]
        if example:
            parts.append(f"Example: {example}")
            said.append("an example call")
        elif id_arg and sources:
            parts.append(f"Its {id_arg} is an id from the result of {' or '.join(sources)}")
            said.append(f"where its {id_arg} comes from")
        if len(parts) < 2:
            continue
        text = (". ".join(parts) + ".")[:1000]
        if text == entry.revised_description:
            continue
        codes = sorted({e["code"] for e in ev})
        c = _make("tool_text", tool, eta, [SetToolText(tool=tool, description=text)],
                  f"{', '.join(codes)} on {tool} in {len(failed)} failed episode(s): its description now says "
                  f"{' and '.join(said)}", ev)
        if c is not None:
            out.append(c)
    return out


def exposure_candidates(diagnoses: Sequence[Diagnosis], eta: Eta, *, min_support: int = 2) -> list[Candidate]:
    """Where η retrieves the tools a step shows, show more when needed tools were left out.

    Reads ``wrong_tool_exposure`` findings (a needed tool outside the header's exposed tools)
    on tools η knows; with support from ``min_support`` episodes, ``k`` grows by the number
    of distinct tools missed (at least 4). Without retrieval there is nothing of η's to widen.
    """
    if eta.tool_retrieval is None:
        return []
    missed: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for d in diagnoses:
        if not d.failed or d.eta_version not in (None, eta.version):
            continue
        for f in d.findings:
            if f.category == "wrong_tool_exposure" and f.tool in eta.tools:
                missed[f.tool].append({"episode_id": d.episode_id, "task_id": d.task_id, "steps": f.steps,
                                       "code": f.code})
    episodes = {e["episode_id"] for ev in missed.values() for e in ev}
    if len(episodes) < min_support:
        return []
    settings = eta.tool_retrieval
    k = min(128, settings.k + max(4, len(missed)))
    if k == settings.k:
        return []
    c = _make("exposure", None, eta, [SetToolRetrieval(settings=settings.model_copy(update={"k": k}))],
              f"{len(missed)} needed tool(s) not shown in {len(episodes)} failed episode(s) "
              f"({', '.join(sorted(missed))}): show {k} tools per step instead of {settings.k}",
              [e for ev in missed.values() for e in ev])
    return [c] if c is not None else []


def memory_candidates(diagnoses: Sequence[Diagnosis], eta: Eta, *, min_support: int = 2) -> list[Candidate]:
    """Memory policy parameters from ``retrieval_miss`` and ``stale_memory`` findings (η's ``memory`` section).

    A retrieval miss in ``min_support`` episodes or more: ``recall_k`` grows by 5 and
    ``memory_search`` stays offered after a recall; stale memories: memories are shown dated.
    A change the settings already hold is not proposed.
    """
    support: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for d in diagnoses:
        if not d.failed or d.eta_version not in (None, eta.version):
            continue
        for f in d.findings:
            if f.category in ("retrieval_miss", "stale_memory"):
                support[f.category].append({"episode_id": d.episode_id, "task_id": d.task_id, "steps": f.steps})
    now = eta.memory or MemorySettings.defaults()
    out = []
    for category, ev in sorted(support.items()):
        episodes = {e["episode_id"] for e in ev}
        if len(episodes) < min_support:
            continue
        if category == "retrieval_miss":
            new = now.model_copy(update={"recall_k": min(50, now.recall_k + 5), "keep_search": True})
            why = f"recall {new.recall_k} memories and keep memory_search offered"
        else:
            new = now.model_copy(update={"dated": True})
            why = "show memories dated, oldest first"
        if new == now:
            continue
        c = _make("memory_policy", category, eta, [SetMemory(settings=new)],
                  f"{category} in {len(episodes)} failed episode(s): {why}", ev)
        if c is not None:
            out.append(c)
    return out


# --------------------------------------------------------------------------- policies


def policy_off_candidates(eta: Eta, ablation: Mapping[str, int], *, min_cost: int = 2) -> list[Candidate]:
    """Leave out each policy whose ablation shows it costs ``min_cost`` tasks or more.

    Args:
        eta: the η whose policy set the ablation measured.
        ablation: policy name → tasks passed without it minus tasks passed with it (paired,
            on dev); safety policies are never proposed.
        min_cost: tasks a policy must cost to be proposed for removal.
    """
    names = [p.name for p in eta.policies]
    out = []
    for name, cost in sorted(ablation.items()):
        if cost < min_cost or name not in names or registered()[name].safety:
            continue
        c = _make("policy_off", name, eta, [RemovePolicy(name=name)],
                  f"the ablation shows {name} costing {cost} task(s)", [{"policy": name, "cost": cost}])
        if c is not None:
            out.append(c)
    return out


_HARNESS_KINDS: dict[str, CandidateKind] = {
    "wrong_tool_exposure": "exposure",
    "missing_skill": "exposure",
    "conflicting_skill": "exposure",
    "retrieval_miss": "memory_policy",
    "stale_memory": "memory_policy",
}


def generate_candidates(
    diagnoses: Sequence[Diagnosis],
    eta: Eta,
    *,
    experience: Sequence[ExperienceEntry] = (),
    episodes: Sequence[Episode] = (),
    harm: Mapping[str, int] | None = None,
    ablation: Mapping[str, int] | None = None,
    min_support: int = 2,
) -> list[Candidate]:
    """Every candidate the evidence supports, each rule-checked against ``eta``, one revision each.

    Args:
        diagnoses: diagnoses of the failed episodes (:func:`.diagnosis.diagnose_many`).
        eta: the η they ran under.
        experience: entries distilled from the verified successes (:func:`.distil.distil`).
        episodes: runs whose calls that worked may show where a tool's id comes from (the
            failed dev runs; see :func:`tool_text_candidates`).
        harm: entry id → tasks lost where it was shown (from the evolve measurement).
        ablation: policy name → tasks it costs on dev.
        min_support: episodes a tool-text or harness finding needs.
    """
    out: list[Candidate] = []
    exp = experience_candidate(eta, experience)
    if exp is not None:
        out.append(exp)
    out.extend(eviction_candidates(eta, harm or {}))
    out.extend(tool_text_candidates(diagnoses, eta, experience=experience, episodes=episodes, min_support=min_support))
    out.extend(exposure_candidates(diagnoses, eta, min_support=min_support))
    out.extend(memory_candidates(diagnoses, eta, min_support=min_support))
    harness, _skipped = propose_revisions(diagnoses, eta, min_support=min_support)
    for h in harness:
        kind = _HARNESS_KINDS.get(h.category, "harness_note")
        out.append(Candidate(kind=kind, target=h.tool, revision=h.revision.model_copy(update={"source": "evolve"}),
                             evidence=h.evidence, diff=h.diff))
    out.extend(policy_off_candidates(eta, ablation or {}))
    return out
