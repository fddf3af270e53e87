"""Which tools a skill (or an η note) was written for: the same world, never a matching name.

A skill's front matter names tools (``requires``, ``exposes``, its preconditions) and says
which world those names belong to (``world: sandbox`` for the bundled library). A session's
tools declare their world on their spec (:attr:`~pocketpilot.contracts.ToolSpec.world`). A
skill applies to a session only through tools of its own world: a team's ``start_cast`` is not
the sandbox's ``start_cast``, and a procedure, a gate or a routing note written for the one
would steer or block the other. Two worlds may share a name; they never share a tool unless the
team declares the other world's identity for it (data on its spec, not code here).

:class:`ToolSet` is the session's tools as this module reads them: each name with the world its
spec declares. A bare name (no spec) carries no identity; it is taken on the caller's word as
the tool the skill means (the name-only API of a caller holding one world's tools). A set built
from specs, or a bare name looked up in a catalogue of specs, is matched by world.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from ..contracts import ToolSpec

__all__ = ["ToolSet", "Tools"]

Tools = Iterable[str | ToolSpec]
"""What callers pass: tool specs (matched by their declared world) or bare names."""


@dataclass(frozen=True)
class ToolSet:
    """A session's tools by name, each with the world it declares.

    Attributes:
        declared: name -> the world the tool's spec declares (None: undeclared).
        vouched: bare names given without a spec or catalogue entry: whatever world asks.
    """

    declared: Mapping[str, str | None] = field(default_factory=dict)
    vouched: frozenset[str] = frozenset()

    @classmethod
    def of(cls, tools: Tools | ToolSet | None, catalogue: ToolSet | None = None) -> ToolSet:
        """The set of ``tools``; a bare name is looked up in ``catalogue`` when one is given.

        A name a catalogue does not hold is undeclared: the catalogue is the session's whole
        tool list, so a name outside it is nobody's tool.
        """
        if isinstance(tools, ToolSet):
            return tools
        declared: dict[str, str | None] = {}
        vouched: set[str] = set()
        for item in tools or ():
            if isinstance(item, ToolSpec):
                declared[item.name] = item.world
            elif catalogue is not None and item not in catalogue.vouched:
                declared[item] = catalogue.world_of(item)
            else:
                vouched.add(item)
        return cls(declared, frozenset(vouched - declared.keys()))

    @property
    def names(self) -> frozenset[str]:
        """Every tool name in the set."""
        return frozenset(self.declared) | self.vouched

    def world_of(self, name: str) -> str | None:
        """The world ``name`` declares here (None: undeclared or not in the set)."""
        return self.declared.get(name)

    @cached_property
    def _by_world(self) -> dict[str | None, frozenset[str]]:
        # asked once per note and skill at every step: partitioned once per set
        groups: dict[str | None, set[str]] = {}
        for name, world in self.declared.items():
            groups.setdefault(world, set()).add(name)
        return {world: frozenset(names) for world, names in groups.items()}

    @cached_property
    def _memo(self) -> dict[tuple[str, str | None], frozenset[str]]:
        return {}

    def of_world(self, world: str | None) -> frozenset[str]:
        """Names a skill or note written for ``world`` may speak about: that world's tools and bare names."""
        key = ("of", world)
        if key not in self._memo:
            self._memo[key] = self._by_world.get(world, frozenset()) | self.vouched
        return self._memo[key]

    def foreign_to(self, world: str | None) -> frozenset[str]:
        """Names of tools that declare another world than ``world`` (undeclared counts as one)."""
        key = ("foreign", world)
        if key not in self._memo:
            self._memo[key] = frozenset(self.declared).difference(self._by_world.get(world, ()))
        return self._memo[key]

    def admits(self, world: str | None, names: Iterable[str]) -> bool:
        """Whether an entry written for ``world`` that names ``names`` applies to this set at all.

        Not when a name it uses belongs here to a tool of another world (the entry would steer
        or gate a tool it was not written for), nor, for an entry of a declared world, when the
        set has no tool of that world (a procedure for the sandbox means nothing elsewhere).
        A set of bare names alone (no spec, no catalogue) vouches for every world.
        """
        if not self.foreign_to(world).isdisjoint(names):
            return False
        return world is None or not self.declared or bool(self.of_world(world))
