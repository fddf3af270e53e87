from __future__ import annotations

import types

import pocketpilot
from pocketpilot import errors


def test_all_is_exact():
    names = {n for n, v in vars(pocketpilot).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    names.discard("annotations")
    assert sorted(pocketpilot.__all__) == sorted(names)


def test_every_error_has_one_root():
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.PocketPilotError), name
