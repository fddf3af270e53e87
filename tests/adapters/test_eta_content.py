"""η's content: a key added to its models later is declared on its field and left out at its default."""

from __future__ import annotations

from typing import Annotated, get_args

import pytest
from pydantic import BaseModel, ConfigDict

from pocketpilot.adapters import compile_eta, sandbox_tool_apps
from pocketpilot.adapters._content import OmitAtDefault, omit_defaults
from pocketpilot.adapters.delegation import DelegationSettings
from pocketpilot.adapters.eta import Eta, ToolEntry
from pocketpilot.adapters.placement import MemorySettings

HASHED_AT_DEFAULT = {
    "Eta": {"format", "tools", "skills", "notes", "policies", "offers", "stop_words", "experience_config"},
    "ToolEntry": {"description", "parameters", "destructive", "semantics", "app", "skills"},
    "SkillEntry": {"version", "description", "requires", "exposes", "preconditions", "keywords", "sha256"},
    "RoutingNote": {"id", "text", "requires_tools", "requires_resources", "when_request", "covered_by"},
    "PolicyEntry": {"name", "params"},
    "MemorySettings": {"recall", "recall_k", "budget", "dated", "standing_wishes", "answers", "keep_search"},
    "ToolRetrievalSettings": {"k", "hybrid", "vector_share", "state_weight", "clause_vectors", "lookups",
                              "state_vectors", "more_tools", "more_k"},
    "DelegationSettings": {"app_tools", "show_request", "guidance", "grounded_artifacts", "carry_ids"},
    "ExperienceEntry": {"id", "request", "variants", "calls", "slots", "recoveries", "steps", "provenance",
                        "memory_ids", "owner", "shareable", "made_at"},
    "WorkflowCall": {"tool", "arguments", "check"},
    "SlotInfo": {"name", "source", "call", "path"},
    "Recovery": {"tool", "code", "then"},
    "StepCase": {"tool", "code", "action"},
    "ExperienceConfig": {"enabled", "k", "budget_tokens", "steps"},
}
"""The keys of each of η's models that stored η files hold even at their default: every other key
must be declared ``OmitAtDefault``, or every stored η would stop hashing to its recorded version."""


def _declared(cls: type[BaseModel]) -> set[str]:
    return {n for n, info in cls.model_fields.items() if any(isinstance(m, OmitAtDefault) for m in info.metadata)}


def _models(cls: type[BaseModel], seen: dict[str, type[BaseModel]]) -> dict[str, type[BaseModel]]:
    seen[cls.__name__] = cls
    for info in cls.model_fields.values():
        stack = [info.annotation]
        while stack:
            a = stack.pop()
            if isinstance(a, type) and issubclass(a, BaseModel) and a.__name__ not in seen:
                _models(a, seen)
            stack.extend(get_args(a))
    return seen


def test_every_key_of_eta_is_hashed_at_its_default_only_as_stored_files_were():
    models = _models(Eta, {})
    assert set(models) == set(HASHED_AT_DEFAULT), "a model joined or left η: list the keys its stored files hold"
    for name, cls in models.items():
        undeclared = set(cls.model_fields) - _declared(cls)
        assert undeclared == HASHED_AT_DEFAULT[name], (
            f"{name}: {sorted(undeclared ^ HASHED_AT_DEFAULT[name])}: a key added later is declared "
            "Annotated[..., OmitAtDefault()] so that stored η hash as before; a key hashed even at its "
            "default changes every stored η's version"
        )


class _Leaf(BaseModel):
    model_config = ConfigDict(frozen=True)

    kept: bool = False
    later: Annotated[bool, OmitAtDefault()] = False
    note: Annotated[str | None, OmitAtDefault()] = None


class _Root(BaseModel):
    model_config = ConfigDict(frozen=True)

    section: Annotated[_Leaf | None, OmitAtDefault()] = None
    leaves: dict[str, _Leaf] = {}
    items: list[_Leaf] = []


def test_a_declared_key_is_left_out_at_its_default_and_kept_otherwise_at_any_depth():
    root = _Root()
    assert omit_defaults(root, root.model_dump(mode="json")) == {"leaves": {}, "items": []}
    leaf, set_leaf = _Leaf(), _Leaf(later=True, note="n")
    root = _Root(section=leaf, leaves={"a": leaf, "b": set_leaf}, items=[set_leaf, leaf])
    assert omit_defaults(root, root.model_dump(mode="json")) == {
        "section": {"kept": False},
        "leaves": {"a": {"kept": False}, "b": {"kept": False, "later": True, "note": "n"}},
        "items": [{"kept": False, "later": True, "note": "n"}, {"kept": False}],
    }
    # the marker is metadata only: the schema does not carry it
    assert "OmitAtDefault" not in str(_Root.model_json_schema())


@pytest.fixture(scope="module")
def eta() -> Eta:
    tools, apps = sandbox_tool_apps()
    return compile_eta(tools, apps=apps)


@pytest.mark.parametrize(("section", "model"), [("delegation", DelegationSettings), ("memory", MemorySettings)])
def test_each_declared_switch_of_a_section_is_hashed_only_when_on(eta, section, model):
    written = eta.model_copy(update={section: model()})
    assert set(written.content()[section]) == HASHED_AT_DEFAULT[model.__name__]
    for key in _declared(model):
        on = eta.model_copy(update={section: model(**{key: True})})
        assert on.content()[section][key] is True and on.version != written.version


def test_world_and_revision_are_hashed_only_when_set(eta):
    name = next(iter(eta.tools))
    bare = eta.model_copy(update={"tools": {**eta.tools, name: ToolEntry(description="d")}})
    assert set(bare.content()["tools"][name]) == HASHED_AT_DEFAULT["ToolEntry"]
    revised = ToolEntry(description="d", world="w", revised_description="r")
    changed = eta.model_copy(update={"tools": {**eta.tools, name: revised}})
    assert {"world": "w", "revised_description": "r"}.items() <= changed.content()["tools"][name].items()
    assert changed.version != bare.version
