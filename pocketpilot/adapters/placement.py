"""η's ``memory`` section: the switches of recall, memory placement and the answer path.

Each is a hypothesis until dev says otherwise (DESIGN.md, round three), so each is a key of η
that a reviewed revision, or an ablation, turns on and off:

- ``recall``: the session recalls the owner's memories at the start of a request;
- ``recall_k``: how many retrieval brings when the history does not go in whole;
- ``budget``: tokens of memories that go in whole (0: always retrieve);
- ``dated``: memories dated, oldest first, under today's date;
- ``standing_wishes``: the owner's own statements marked as wishes the planner may act on;
- ``answers``: ``finish`` carries an answer, and the rules and the recall note say a question
  about the past is answered from the evidence;
- ``keep_search``: ``memory_search`` stays offered after a recall (a first recall that missed
  can be searched again);
- ``newest_last``: the rules above the memories and the newest memory last, next to the
  request, the newest standing wish marked, a memory the store records as replaced left out
  (off by default until dev measures it; an η whose section leaves it off hashes as before
  the key existed).
- ``whole_closes_search``: when the owner's whole history went in (and no shared store can
  add to a search), ``memory_search`` is not offered and its note not shown: a search can
  find nothing the planner has not been shown (on the dev memory group, a harness search after
  a whole recall returned the memories already shown, and spent the run's steps on them).
- ``as_messages``: each memory its own message, in time order, the newest last before the
  request, under one message with the date and the rules (the chat form the bare planner
  reads its history in), instead of one list.
- ``drop_recall_note``: the recall note is left out of the guidance. The evidence message's
  own rules already say what it says (dated, a newer memory replaces an older one, a question
  is answered from them), all but "before changing something, check its live state with a
  tool": on the dev memory group the harness then read before acting where bare acted (a
  listing before a create, an item's details after finding it), and its next action took an
  older or unrelated memory's value. The rules' "check a state before a conditional change"
  stays.

An η without the section (None) runs the harness's defaults (:meth:`MemorySettings.defaults`:
``whole_closes_search``, ``as_messages`` and ``drop_recall_note`` on, ``newest_last`` off), and
hashes as it did before the section existed. Dev measured the three together (each alone gained
nothing): they gained on the short-history memory group and were level on the long histories.

A section that is written out keeps what it says: a key it leaves out is off, because η files
were stored with those keys left out while they were off by default (their versions hash that
content). So the fields' own defaults stay off, and code that starts a section from "what runs
today" starts from :meth:`MemorySettings.defaults`, never from ``MemorySettings()``.

The adapters never import the harness: the kit maps the section onto the session's configuration.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from ._content import OmitAtDefault

__all__ = ["MemorySettings"]


class MemorySettings(BaseModel):
    """The memory placement and answer-path switches η runs under (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recall: bool = True
    recall_k: int = Field(default=5, ge=1, le=50)
    budget: int = Field(default=1000, ge=0, le=100_000)
    dated: bool = True
    standing_wishes: bool = True
    answers: bool = True
    keep_search: bool = True
    newest_last: Annotated[bool, OmitAtDefault()] = False
    whole_closes_search: Annotated[bool, OmitAtDefault()] = False
    as_messages: Annotated[bool, OmitAtDefault()] = False
    drop_recall_note: Annotated[bool, OmitAtDefault()] = False

    @classmethod
    def defaults(cls) -> MemorySettings:
        """What an η without a ``memory`` section runs: the harness's defaults."""
        return cls(whole_closes_search=True, as_messages=True, drop_recall_note=True)

    @classmethod
    def legacy(cls) -> MemorySettings:
        """Every switch off: the harness as it was before these features (the ablation's baseline)."""
        return cls(budget=0, dated=False, standing_wishes=False, answers=False, keep_search=False)
