"""The Scenario Adapter: compile a versioned harness configuration η; filter guidance per request.

Public API::

    from pocketpilot.adapters import compile_eta, sandbox_tool_apps, save_eta, load_eta
    tools, apps = sandbox_tool_apps()
    eta = compile_eta(tools, SkillLibrary.builtin(), apps=apps)   # eta.version: content hash
    save_eta(eta, "eta.json"); eta = load_eta("eta.json")         # atomic; hash verified
    print(render_diff(old, new))                                  # semantic diff
    kw = session_kwargs(eta, executor.tools(), library=lib, memory=True)
    Session(planner, executor, **kw)                              # guidance, skills, gates, eta_version
    kw = session_kwargs(eta, specs, library=lib, request=goal)    # + routed skills, actions, re-filtering
    new = apply_revision(eta, revision)                           # rule-checked candidate revision
    RevisionStore("eta.json").propose(revision) / .approve(id, approver)

It never discovers tools and never executes actions. Skills and notes apply through the tools of
the world they were written for (``ToolSpec.world``), never through a namesake of another world:
hand it the session's tool specs.
"""

from __future__ import annotations

from .compile import compile_eta, sandbox_tool_apps
from .diff import EtaChange, diff_eta, render_diff
from .errors import EtaError, EtaIntegrityError, RevisionError
from .eta import Eta, RoutingNote, SkillEntry, ToolEntry, canonical_json, load_eta, save_eta
from .filter import GuidanceFilter
from .kit import check_library, session_kwargs
from .notes import DEFAULT_NOTES
from .revision import AddNote, MapTool, RemoveNote, ReplaceNote, Revision, RevisionStore, apply_revision
from .route import SkillRouter, asks_to_delegate, asks_to_remember

__all__ = [
    "DEFAULT_NOTES",
    "AddNote",
    "Eta",
    "EtaChange",
    "EtaError",
    "EtaIntegrityError",
    "GuidanceFilter",
    "MapTool",
    "RemoveNote",
    "ReplaceNote",
    "Revision",
    "RevisionError",
    "RevisionStore",
    "RoutingNote",
    "SkillEntry",
    "SkillRouter",
    "ToolEntry",
    "apply_revision",
    "asks_to_delegate",
    "asks_to_remember",
    "canonical_json",
    "check_library",
    "compile_eta",
    "diff_eta",
    "load_eta",
    "render_diff",
    "sandbox_tool_apps",
    "save_eta",
    "session_kwargs",
]
