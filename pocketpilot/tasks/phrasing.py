"""The English a generated task is phrased in: a record's noun, one call as a clause, a template's variant.

Drafting decides what a task does (:mod:`.families`); this module only says it. The words come
from the world and its declarations: the world's own words for a call of one of its tools
(:mod:`.words`), a record's declared name field, a tool's description (its verb), the state
collection a record lives in (its noun), the pools' clause patterns and nouns; never from a
tool's name in code.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Sequence
from typing import Any

from ..contracts import ToolSpec
from .catalogue import Catalogue
from .gen_world import GenWorld
from .grounding import collection_of, record_of
from .template import Pools

__all__ = [
    "Phrasing",
    "cap",
    "clause_kind",
    "fmt",
    "label",
    "lc",
    "record_name",
    "record_words",
    "said_value",
    "states",
    "value_text",
    "verb",
]

_PAREN = re.compile(r"\s*\([^)]*\)")
_SLOT = re.compile(r"\{(\w+)\}")


class Format(dict[str, str]):
    """Values for ``str.format_map`` that refuse a missing key (a variant names a value the draft lacks)."""

    def __missing__(self, key: str) -> str:
        raise KeyError(key)


def cap(text: str) -> str:
    """``text`` with its first letter upper case (the start of a sentence)."""
    return text[:1].upper() + text[1:]


def lc(text: str) -> str:
    """``text`` with its first letter lower case, unless it starts with two capitals (an acronym)."""
    return text[:1].lower() + text[1:] if text[1:2].islower() or len(text) == 1 else text


def states(value: Any, text: str) -> bool:
    """Whether ``text`` already says ``value``, as a word of its own: "1" is not in "100.0"."""
    return re.search(rf"(?<![\w.]){re.escape(str(value))}(?![\w]|\.\d)", text, re.IGNORECASE) is not None


def label(key: str) -> str:
    """A field or setting key as words ("do_not_disturb" -> "do not disturb")."""
    return key.replace("_", " ")


def value_text(v: Any) -> str:
    """A value as a request says it: booleans as on/off, strings quoted."""
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, str):
        return f'"{v}"'
    return str(v)


def args_text(args: dict[str, Any]) -> str:
    """Arguments as a request lists them ("volume 40, muted on")."""
    return ", ".join(f"{label(k)} {value_text(v)}" for k, v in args.items())


def singular(words: str) -> str:
    """English singular of a collection's last word ("standing orders" -> "standing order")."""
    head, _, last = words.rpartition(" ")
    for plural, single in (("ies", "y"), ("sses", "ss"), ("ches", "ch"), ("shes", "sh"), ("s", "")):
        if last.endswith(plural) and len(last) > len(plural) + 2 and not last.endswith("ss"):
            last = last[: -len(plural)] + single
            break
    return f"{head} {last}".strip()


def verb(spec: ToolSpec) -> str:
    """What a tool does, from the first clause of its description (examples and asides dropped)."""
    line = re.sub(r",?\s*\be\.g\..*", "", spec.description.strip().split("\n")[0])  # examples are not the action
    line = re.sub(r"\s+(?:by id|and return its id)\b", "", line)  # a person names the thing, never its id
    first = re.split(r"\. |; ", line)[0]
    return _PAREN.sub("", first).rstrip(".").strip() or label(spec.name)


class Phrasing:
    """Nouns and clauses for the calls of one world, with its catalogue's probes and the pools' words."""

    def __init__(self, world: GenWorld, catalogue: Catalogue, pools: Pools) -> None:
        self.world, self.cat, self.pools = world, catalogue, pools
        self.specs = catalogue.specs
        self.words = world.words()
        self._base: dict[str, Any] | None = None

    def noun(self, tool: str, args: dict[str, Any] | None = None, state: dict[str, Any] | None = None) -> str:
        """What a request calls the record ``tool`` acts on: the state collection it lives in.

        The record a call names by id sits in one collection of the world's state
        (``bank.payees``); a create call grows one (``music.playlists``). That collection's key,
        singular, is the noun ("payee", "playlist"), read from the state model and never from
        the tool's name; ``pools.nouns`` overrides it by collection path or by app (a generic
        key such as ``items`` says nothing), and the app's name is the last resort.
        """
        spec, app = self.specs[tool], self.world.app_of(tool)
        path = None
        if spec.id_arg:
            if self._base is None:
                self._base = self.world.start(self.cat.patch).dump()
            tried = [(state, args)] if state is not None and args else []
            tried += [(self._base, p.args) for p in self.cat.probes(tool)]
            path = next((found for dump, a in tried if spec.id_arg in a
                         and (found := collection_of(dump, str(a[spec.id_arg])))), None)
        elif spec.effect == "create":
            path = next((c.path for p in self.cat.probes(tool) for c in p.changes
                         if isinstance(c.after, list) and len(c.after) > len(c.before or [])), None)
        if path is not None:
            if path in self.pools.nouns:
                return self.pools.nouns[path]
            key = path.rsplit(".", 1)[-1]
            if key not in self.pools.generic_collections:
                return singular(label(key))
        return self.pools.nouns.get(app, app)

    def clause(self, tool: str, args: dict[str, Any], before: dict[str, Any], rng: random.Random,
               omit: Sequence[str] = ()) -> str:
        """How one call reads as part of a request (lowercase, no final stop)."""
        spec = self.specs[tool]
        app = self.world.app_of(tool)
        shown = {k: v for k, v in args.items() if k != spec.id_arg and k not in omit}
        values = {
            "app": self.app(app), "noun": self.noun(tool, args, before), "verb": verb(spec), "verb_lc": lc(verb(spec)),
            "args": args_text(shown), "setting": label(spec.setting or ""), "record": "", "onoff": "", "value": "",
        }
        bools = [v for v in shown.values() if isinstance(v, bool)]
        if len(shown) == 1 and bools:
            values["onoff"] = "on" if bools[0] else "off"
        elif shown:
            key, first = next(iter(shown.items()))
            props = spec.parameters.get("properties") or {}
            values["value"] = label(first) if isinstance(first, str) and "enum" in props.get(key, {}) else str(first)
        names_record = bool(spec.id_arg and spec.id_arg in args)
        if names_record:
            values["record"] = self.record(tool, before, str(args[spec.id_arg]), values["noun"])
        said = self.say(tool, shown, values["record"], rng)
        if said is not None:
            return said
        kind = clause_kind(spec, names_record=names_record, shown=bool(shown), onoff=bool(values["onoff"]))
        patterns = self.pools.clauses.get(kind) or ["{verb_lc} ({args})"]
        text = rng.choice(patterns).format_map(Format(values))
        return text.replace(", )", ")").replace(" ()", "").replace(": ,", ":").rstrip(", ")

    def say(self, tool: str, shown: dict[str, Any], record: str, rng: random.Random) -> str | None:
        """The call as the world's own words say a person asks for it (``WorldWords.say``), or None.

        Only a pattern whose slots are exactly the arguments the request must state (and
        ``{record}`` where the call names one) is used: a pattern that left an argument out would
        make a request that does not say what to do.
        """
        wanted = set(shown) | ({"record"} if record else set())
        fits = [p for p in self.words.say.get(tool, []) if set(_SLOT.findall(p)) == wanted]
        if not fits:
            return None
        props = self.specs[tool].parameters.get("properties") or {}
        # an enumerated value is a word to a person ("heart rate"), any other value is said as it is
        values = {k: label(v) if isinstance(v, str) and "enum" in props.get(k, {}) else said_value(v)
                  for k, v in shown.items()}
        if record:
            values["record"] = record
        return rng.choice(fits).format_map(Format(values))

    def record(self, tool: str, state: dict[str, Any], record_id: str, noun: str) -> str:
        """How a person names the record ``record_id`` that ``tool`` acts on: by the name field its
        tool declares (``ToolSpec.name_fields``), with its noun where the name alone says little;
        by its fields where no declared name picks it out alone.
        """
        name = record_name(state, record_id, self.specs[tool].name_fields)
        if name is None:
            return f"the {noun} {record_words(state, record_id)}"
        words = name.split()
        proper = (sum(w[:1].isupper() for w in words) >= 2 or any(c.isdigit() for c in name)
                  or any(any(c.isupper() for c in w[1:]) for w in words))  # "FreshMart" is a name of its own
        return name if proper else f"the {name} {noun}"

    def app(self, app: str) -> str:
        """How a person names ``app``: the world's word for it, else its label."""
        return self.words.apps.get(app) or self.world.app_label(app)

    def field(self, key: str) -> str:
        """How a person calls the result field ``key`` (the world's word for it, else its key as words)."""
        return self.words.fields.get(key) or label(key)


def said_value(v: Any) -> str:
    """A value as a person says it inside a sentence: booleans as on/off, the rest as written."""
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def record_name(state: dict[str, Any], record_id: str, name_fields: Sequence[str]) -> str | None:
    """The record's name by the first of ``name_fields`` it holds, if no other record of its list shares it."""
    found = _list_of(state, record_id)
    if found is None:
        return None
    rows, rec = found
    for key in name_fields:
        value = rec.get(key)
        if isinstance(value, str) and value.strip() and not isinstance(value, bool):
            if sum(isinstance(r, dict) and r.get(key) == value for r in rows) == 1:
                return value
            return None  # two records share the name: it does not pick one out
    return None


def _list_of(node: Any, record_id: str) -> tuple[list[Any], dict[str, Any]] | None:
    """The list holding the record whose ``id`` is ``record_id``, with the record."""
    if isinstance(node, dict):
        for v in node.values():
            if (found := _list_of(v, record_id)) is not None:
                return found
    elif isinstance(node, list):
        for v in node:
            if isinstance(v, dict) and v.get("id") == record_id:
                return node, v
        for v in node:
            if (found := _list_of(v, record_id)) is not None:
                return found
    return None


def record_words(state: dict[str, Any], record_id: str) -> str:
    """How a request names a record: by up to two of its plain fields, else by its id."""
    rec = record_of(state, record_id) or {}
    fields = [(k, v) for k, v in rec.items() if k != "id" and isinstance(v, (str, int, float))
              and not isinstance(v, bool) and v != "" and not re.match(r"^\d{4}-\d{2}-\d{2}T", str(v))][:2]
    return "with " + " and ".join(f"{label(k)} {value_text(v)}" for k, v in fields) if fields else record_id


def clause_kind(spec: ToolSpec, *, names_record: bool, shown: bool, onoff: bool) -> str:
    """Which of the pools' clause patterns a call takes, from its tool's declared effect."""
    if names_record:
        if spec.effect == "delete":
            return "delete"
        if spec.effect == "read" or spec.read_only:
            return "read_record"
        return "update_record_bool" if onoff else "update_record"
    if spec.effect == "setting" and spec.setting:
        return "setting_bool" if onoff else "setting_value"
    if spec.effect == "create":
        return "create" if shown else "plain"
    if spec.effect == "read" or spec.read_only:
        return "read" if shown else "plain"
    return "with_args" if shown else "plain"


def fmt(variants: list[str], rng: random.Random, **values: str) -> str:
    """One of a template's ``variants`` filled with ``values`` (``{Key}`` capitalised); "" when none fits.

    A variant that names a value the draft lacks is passed over, so a template may
    offer variants for drafts that know more ("the hours of {subject}") beside ones that know less.
    """
    full = dict(values)
    for k, v in values.items():
        full[k[:1].upper() + k[1:]] = cap(v)
    fitting = []
    for text in variants:
        try:
            fitting.append(string.Formatter().vformat(text, (), Format(full)))
        except KeyError:
            continue
    return rng.choice(fitting) if fitting else ""
