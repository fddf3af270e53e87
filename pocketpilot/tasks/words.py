"""A world's own words: how a person asks for a call of its tools, names its apps and fields.

The generator's templates never name a tool (a world whose tools are named differently gets the
same tasks), so what a phone user says for one particular tool (text Alice "hi", for a call
of the SMS tool) is data the world brings, beside its tools, not part of the templates or the
generator. A world that brings none is said from its tools' declarations alone.

Example (YAML)::

    say:
      send_sms: ['text {to} "{body}"', "text {to}"]
    apps: {launcher: the home screen}
    fields: {distance_km: distance}
    value_forms:
      hours: {kind: time_range, all_day: ["open 24 hours"]}
    number_form: {kind: number, scales: {k: 1000}}
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import TemplateError
from .forms import ValueForm

__all__ = ["WorldWords", "load_words"]


class WorldWords(BaseModel):
    """What a world says about itself in words (all optional)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    say: dict[str, list[str]] = Field(default_factory=dict)
    """How a person asks for one call of a tool, by tool: ``{arg}`` is an argument's value,
    ``{record}`` the record the call's id argument names, as a person names it. A pattern is used
    only where its slots are exactly the arguments the request must state (and ``{record}`` where
    the call names one), so no request leaves out what to do."""
    apps: dict[str, str] = Field(default_factory=dict)
    """How a person names an app (``launcher: the home screen``), where its label does not serve."""
    fields: dict[str, str] = Field(default_factory=dict)
    """How a person calls a result field (``distance_km: distance``), where its key does not read as one."""
    value_forms: dict[str, ValueForm] = Field(default_factory=dict)
    """The equivalent forms an answered field's value may be said in, by result field; an answer
    about a field without one is matched exactly (unless it is a number and ``number_form`` is set)."""
    number_form: ValueForm | None = None
    """The forms of an answered number whose field declares none (separators, declared scales)."""


def load_words(path: str | Path) -> WorldWords:
    """A world's words from a YAML file (see the module docstring).

    Raises:
        TemplateError: the file cannot be read or does not fit :class:`WorldWords`.
    """
    return _cached(str(path))


@lru_cache(maxsize=8)
def _cached(path: str) -> WorldWords:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        return WorldWords.model_validate(data)
    except (OSError, yaml.YAMLError) as exc:
        raise TemplateError(path, f"cannot read: {exc}") from exc
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        raise TemplateError(path, f"{'.'.join(map(str, err['loc']))}: {err['msg']}") from exc
