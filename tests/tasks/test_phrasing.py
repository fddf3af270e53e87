"""Goals read as people talk: a record is named by the name field its tool declares, a call is
said by the world's own words where it has them (and only where they state every argument),
and a template's variants that need a value the draft lacks are passed over."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from pocketpilot.contracts import ToolSpec
from pocketpilot.tasks.phrasing import Phrasing, fmt, record_name
from pocketpilot.tasks.template import Pools
from pocketpilot.tasks.words import WorldWords

STATE: dict[str, Any] = {"places": {"items": [
    {"id": "p1", "name": "Fuel Stop", "category": "gas_station"},
    {"id": "p2", "name": "Corner Cafe", "category": "cafe"},
    {"id": "p3", "name": "Corner Cafe", "category": "cafe"},
    {"id": "p4", "name": "Dentist", "category": "clinic"},
]}}


class _World:
    def __init__(self, words: WorldWords | None = None) -> None:
        self._words = words or WorldWords()

    def words(self) -> WorldWords:
        return self._words

    def app_of(self, tool: str) -> str:
        return "places"

    def app_label(self, app: str) -> str:
        return "Places"

    def start(self, patch: Any = None) -> Any:
        class _Run:
            def dump(self) -> dict[str, Any]:
                return STATE

        return _Run()


class _Catalogue:
    patch: dict[str, Any] = {}

    def __init__(self, specs: dict[str, ToolSpec]) -> None:
        self.specs = specs

    def probes(self, tool: str) -> list[Any]:
        return []


SPECS = {
    "drop": ToolSpec(name="drop", effect="delete", id_arg="pid", name_fields=["name"],
                     parameters={"type": "object", "properties": {"pid": {"type": "string"}}}),
    "bare": ToolSpec(name="bare", effect="delete", id_arg="pid",
                     parameters={"type": "object", "properties": {"pid": {"type": "string"}}}),
    "tell": ToolSpec(name="tell", effect="send", description="Send a message.", parameters={
        "type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string", "maxLength": 400},
                                         "mood": {"type": "string", "enum": ["very_happy", "sad"]}}}),
}


def phrasing(words: WorldWords | None = None, **pools: Any) -> Phrasing:
    base = {"names": ["x"], "phrases": ["y"], "occasions": ["z"], "owners": ["o"],
            "nouns": {"places": "place"},
            "clauses": {"delete": ["delete {record}"], "with_args": ["{verb_lc} ({args})"]}, **pools}
    return Phrasing(_World(words), _Catalogue(SPECS), Pools.model_validate(base))  # type: ignore[arg-type]


def test_a_record_is_named_by_its_declared_name_field() -> None:
    assert record_name(STATE, "p1", ["name"]) == "Fuel Stop"
    assert record_name(STATE, "p1", ["title", "name"]) == "Fuel Stop"  # the first declared field it holds
    assert record_name(STATE, "p1", []) is None  # a tool that declares none gives no names
    assert record_name(STATE, "p2", ["name"]) is None  # two Corner Cafes: the name picks out neither
    assert record_name(STATE, "nope", ["name"]) is None


def test_a_request_names_the_record_as_a_person_would_not_by_a_field_list() -> None:
    p = phrasing()
    clause = p.clause("drop", {"pid": "p1"}, STATE, random.Random(0))
    assert clause == "delete Fuel Stop"
    assert p.clause("drop", {"pid": "p4"}, STATE, random.Random(0)) == "delete the Dentist place"
    # no declared name (or a shared one): the record is told apart by its fields, as before
    assert 'name "Fuel Stop"' in p.clause("bare", {"pid": "p1"}, STATE, random.Random(0))
    assert 'category "cafe"' in p.clause("drop", {"pid": "p2"}, STATE, random.Random(0))


def test_the_world_s_words_are_used_only_where_they_state_every_argument() -> None:
    say = {"tell": ['text {to} "{body}"', "text {to}", "cheer {to} up ({mood})"]}
    p = phrasing(WorldWords(say=say))
    rng = random.Random(1)
    assert p.clause("tell", {"to": "Alice", "body": "hi"}, STATE, rng) == 'text Alice "hi"'
    assert p.clause("tell", {"to": "Alice"}, STATE, rng) == "text Alice"
    assert p.clause("tell", {"to": "Alice", "mood": "very_happy"}, STATE, rng) == "cheer Alice up (very happy)"
    # no pattern says all three: the call is said from its declarations, every argument stated
    said = p.clause("tell", {"to": "Alice", "body": "hi", "mood": "sad"}, STATE, rng)
    assert said.startswith("send a message") and all(v in said for v in ("Alice", "hi", "sad"))


def test_a_variant_that_needs_a_missing_value_is_passed_over() -> None:
    variants = ["What's the {key} of {subject}?", "{Read} and tell me the {key}."]
    said = {fmt(variants, random.Random(i), read="check the phone", key="battery") for i in range(20)}
    assert said == {"Check the phone and tell me the battery."}
    both = {fmt(variants, random.Random(i), read="look at it", key="hours", subject="FreshMart") for i in range(40)}
    assert both == {"What's the hours of FreshMart?", "Look at it and tell me the hours."}
    assert fmt(["{nothing}"], random.Random(0), key="x") == ""


def test_the_sandbox_s_words_are_its_data_and_fit_its_tools() -> None:
    """Every say pattern of the sandbox's words names one of its tools and only arguments that tool takes."""
    from pocketpilot.tasks.gen_world import SandboxGenWorld

    world = SandboxGenWorld()
    specs = {s.name: s for s in world.tools()}
    words = world.words()
    assert words.say and words.value_forms
    for tool, patterns in words.say.items():
        assert tool in specs, tool
        props = set(specs[tool].parameters.get("properties") or {})
        for pattern in patterns:
            slots = set(re.findall(r"\{(\w+)\}", pattern)) - {"record"}
            assert slots <= props, (tool, pattern)
            if "{record}" in pattern:
                assert specs[tool].id_arg, (tool, pattern)


@pytest.mark.slow  # generates from the seed-0 catalogue: about 15 s
def test_generated_goals_name_records_and_read_as_requests() -> None:
    from pocketpilot.tasks.gen_world import SandboxGenWorld
    from pocketpilot.tasks.generate import generate

    gen = generate(SandboxGenWorld(), count=40, seed=0, only=["info-read", "update-record", "multi-two"])
    assert len(gen.tasks) >= 30
    goals = [t["goal"] for t in gen.tasks]
    # the old shape: 'the place with name "Fuel Stop" and category "gas_station"'
    assert not [g for g in goals if re.search(r'with name "[^"]+" and \w+ "', g)], goals
    info = [t for t in gen.tasks if t["id"].startswith("gen-info-read")]
    assert all(not re.search(r"\bthe id\b", t["goal"]) for t in info)  # a person asks for hours, not ids
    assert gen.tasks == generate(SandboxGenWorld(), count=40, seed=0,
                                 only=["info-read", "update-record", "multi-two"]).tasks


def test_a_world_s_words_that_do_not_fit_are_refused(tmp_path) -> None:
    from pocketpilot.errors import TemplateError
    from pocketpilot.tasks.words import load_words

    bad = tmp_path / "words.yaml"
    bad.write_text("value_forms: {hours: {kind: colour}}\n")
    with pytest.raises(TemplateError, match="value_forms"):
        load_words(bad)
