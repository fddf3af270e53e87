"""Three memory-placement switches from the dev memory group's traces (issue 35):

- ``whole_closes_search``: when the owner's whole history went in, ``memory_search`` is not
  offered (nor its search-again note): a harness search after a whole recall returned the
  memories already shown;
- ``as_messages``: each memory its own message, the newest last before the request, as the
  bare planner reads the same history, under one message with the date and the rules;
- ``drop_recall_note``: the recall note is left out of the guidance (the evidence's own rules
  say what it says, all but "before changing something, check its live state with a tool",
  after which the harness read where bare acted).

All read what was recalled, its provenance and its timestamps, never its wording. Dev measured
the three together as a gain, so an η without a ``memory`` section runs them on
(``MemorySettings.defaults()``; ``MemoryPlacement.as_messages`` defaults on); a section written
out keeps what it says, a key it leaves out off (η files stored before the flip hash as before).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from _recall_support import caller, policy
from bench_scripts import bench_script

from pocketpilot.adapters import compile_eta, sandbox_tool_apps
from pocketpilot.adapters.eta import Eta
from pocketpilot.adapters.kit import session_kwargs
from pocketpilot.adapters.placement import MemorySettings
from pocketpilot.contracts import Episode, RetrievedMemory
from pocketpilot.evaluation.task_episode import HarnessKit, load_harness_kit, run_task_episode
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import HarnessConfig, MemoryPlacement, Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.harness.recall import recall, render_recall
from pocketpilot.memory import BoundMemory, MemoryCandidate, Provenance, SqliteMemory
from pocketpilot.tasks import TaskSpec
from pocketpilot.tasks.loader import load_task
from pocketpilot.tasks.split_index import read_split_index

NOW = datetime(2025, 3, 14, 9, 30, tzinfo=UTC)
OLD = "For a trip, I always want this: record a 70-second video."
NEW = "Different now: for a trip, a 55-second video."
REQUEST = "Get the camera ready for a trip, like I always want."
SUITE = Path(__file__).resolve().parents[2] / "pocketpilot" / "tasks" / "suite"


def mem(id_: str, content: str, day: int, source: str = "user_statement", **prov: str) -> RetrievedMemory:
    return RetrievedMemory(id=id_, tier="user", content=content, score=0.0,
                           provenance={"source": source, "owner": "alice", "store": "private",
                                       "observed_at": f"2025-03-{day:02d}T18:00:00+00:00", **prov})


# ---------------------------------------------------------------- as_messages: the rendering


def test_as_messages_gives_the_rules_then_one_entry_per_memory_oldest_first() -> None:
    hits = [mem("b", NEW, 11), mem("o", "Bob: 30 seconds.", 12, owner="bob"), mem("a", OLD, 2)]
    heading, *memories = render_recall(hits, MemoryPlacement(as_messages=True), now=NOW, owner="alice", whole=True)
    assert heading.startswith("All memories of the user, oldest first (today is Friday 2025-03-14), each in a message")
    assert "standing wishes: act on them" in heading and "A newer memory replaces an older one" in heading
    assert memories == [f"[2025-03-02 Sun 18:00] the user said: {OLD}",
                        f"[2025-03-11 Tue 18:00] the user said: {NEW}",
                        "[2025-03-12 Wed 18:00] someone else said: Bob: 30 seconds."]  # provenance, not wording


def test_as_messages_composes_with_newest_last() -> None:
    both = MemoryPlacement(as_messages=True, newest_last=True)
    _, *memories = render_recall([mem("a", OLD, 2, status="superseded"), mem("b", NEW, 11, supersedes="a")], both,
                                 now=NOW, owner="alice")
    assert memories == [f"[2025-03-11 Tue 18:00] the user said (replaces the memory of 2025-03-02): {NEW}"]


def test_as_messages_off_renders_one_entry_as_before() -> None:
    hits = [mem("b", NEW, 11), mem("a", OLD, 2)]
    (text,) = render_recall(hits, MemoryPlacement(as_messages=False), now=NOW, owner="alice")
    assert text.splitlines()[1:3] == [f"- [2025-03-02 Sun 18:00] the user said: {OLD}",
                                      f"- [2025-03-11 Tue 18:00] the user said: {NEW}"]
    # the default is one entry per memory
    assert render_recall(hits, MemoryPlacement(), now=NOW, owner="alice") == render_recall(
        hits, MemoryPlacement(as_messages=True), now=NOW, owner="alice")


# ---------------------------------------------------------------- as_messages: in a session


def remember(store: SqliteMemory, content: str, days_ago: int) -> None:
    prov = Provenance(source="user_statement", observed_at=NOW - timedelta(days=days_ago))
    store.write(caller(), MemoryCandidate(content=content, tier="user",
                                                                            provenance=prov))


async def first_prompt(store: SqliteMemory, placement: MemoryPlacement) -> list:
    planner = ScriptedPlanner([{"kind": "finish", "summary": "done"}])
    session = Session(planner, SandboxExecutor(SandboxPhone()), tools=["list_notes"],
                      memory=BoundMemory(store, caller(), "s1"),
                      clock=lambda: NOW, config=HarnessConfig(memory=placement))
    await session.run(REQUEST)
    return planner.requests[0].messages


async def test_in_a_session_each_memory_is_a_message_and_the_newest_is_right_before_the_request(store):
    remember(store, OLD, days_ago=12)
    remember(store, NEW, days_ago=3)
    messages = await first_prompt(store, MemoryPlacement(as_messages=True))
    evidence = [m for m in messages if m.section == "evidence"]
    assert [m.role for m in evidence] == ["user"] * 4  # the clock, the heading, two memories
    assert evidence[0].content.startswith("On the device it is now Friday 2025-03-14")
    assert evidence[1].content.startswith("All memories of the user")
    assert evidence[2].content.endswith(OLD) and evidence[3].content.endswith(NEW)
    after = messages[messages.index(evidence[3]) + 1]
    assert after.section == "request" and after.content == REQUEST
    one = [m for m in await first_prompt(store, MemoryPlacement(as_messages=False)) if m.section == "evidence"]
    assert len(one) == 1 and OLD in one[0].content and NEW in one[0].content  # off: one message, as before
    # a session's default configuration: one message per memory (the runs above added their records)
    default = [m for m in await first_prompt(store, HarnessConfig().memory) if m.section == "evidence"]
    assert default[1].content.startswith("All memories of the user") and len(default) > 4
    assert default[2].content.endswith(OLD) and default[3].content.endswith(NEW)


async def test_a_session_s_recall_is_whole_only_without_a_shared_store_and_renders_the_same(store, tmp_path, eta):
    """``Recall.whole`` is decided where recall runs, so an app building a Session reads it off the
    recall; a shared store beside the owner's changes it, and nothing the planner is shown."""
    remember(store, OLD, days_ago=12)
    remember(store, NEW, days_ago=3)
    shared = SqliteMemory(tmp_path / "shared.db", policy())
    alice = caller()
    alone, beside = BoundMemory(store, alice, "s1"), BoundMemory(store, alice, "s1", shared=shared)
    try:
        count = ScriptedPlanner([]).count_tokens
        recalls = [await recall(m, REQUEST, MemoryPlacement(), count, owner="alice", now=NOW) for m in (alone, beside)]
        prompts = []
        for memory, got in zip((alone, beside), recalls, strict=True):  # recalled first: a run captures its episode
            planner = ScriptedPlanner([{"kind": "finish", "summary": "done"}])
            session = Session(planner, SandboxExecutor(SandboxPhone()), tools=["list_notes"], memory=memory,
                              clock=lambda: NOW, recalled=got)
            await session.run(REQUEST)
            prompts.append([(m.role, m.section, m.content) for m in planner.requests[0].messages])
        (mine, with_shared) = recalls
        assert mine.history and not mine.shared and mine.whole
        assert with_shared.history and with_shared.shared and not with_shared.whole  # a search may find more
        assert [h.content for h in mine.hits] == [h.content for h in with_shared.hits]
        assert prompts[0] == prompts[1]  # "All memories of the user" either way: the rendering is unchanged
        assert any("All memories of the user, oldest first" in c for _, section, c in prompts[0] if section == "evidence")
        # what the kit does with it: a whole recall closes memory_search, one beside a shared store does not
        on = MemorySettings(whole_closes_search=True)
        assert "memory_search" not in offered(eta, on, whole=mine.whole)[0]
        assert "memory_search" in offered(eta, on, whole=with_shared.whole)[0]
        # a retrieval is never whole, shared store or not
        retrieved = await recall(alone, REQUEST, MemoryPlacement(budget=0), count, owner="alice")
        assert retrieved.hits and not retrieved.history and not retrieved.whole
    finally:
        shared.close()


# ---------------------------------------------------------------- whole_closes_search: the kit


@pytest.fixture(scope="module")
def eta():  # noqa: ANN201
    tools, apps = sandbox_tool_apps()
    return compile_eta(tools, apps=apps)


def offered(eta: Eta, settings: MemorySettings, *, whole: bool) -> tuple[list[str], str]:
    names = [t.name for t in sandbox_tool_apps()[0]]
    kw = session_kwargs(eta.model_copy(update={"memory": settings}), names, memory=True, request=REQUEST,
                        recalled=[OLD, NEW], recalled_whole=whole)
    return kw["actions"], "\n".join(kw["guidance_for"](names))


def test_a_whole_recall_closes_memory_search_only_with_the_switch_on(eta):
    on = MemorySettings(whole_closes_search=True)
    actions, notes = offered(eta, on, whole=True)
    assert "memory_search" not in actions and "memory_search with other words" not in notes
    assert "The memories shown with the request are dated" in notes  # the recall note stays
    # a retrieval (not the whole history) may have missed: search stays offered
    actions, notes = offered(eta, on, whole=False)
    assert "memory_search" in actions and "memory_search with other words" in notes
    # off (a written-out section that leaves it out): offered after a whole recall, as before
    actions, notes = offered(eta, MemorySettings(), whole=True)
    assert "memory_search" in actions and "memory_search with other words" in notes


def test_nothing_recalled_leaves_memory_search_offered_whatever_the_switch(eta):
    names = [t.name for t in sandbox_tool_apps()[0]]
    kw = session_kwargs(eta.model_copy(update={"memory": MemorySettings(whole_closes_search=True)}), names,
                        memory=True, request=REQUEST, recalled=[], recalled_whole=True)
    assert "memory_search" in kw["actions"]


# ---------------------------------------------------------------- drop_recall_note: the kit


def test_drop_recall_note_leaves_the_note_out_and_nothing_else(eta):
    actions, notes = offered(eta, MemorySettings(drop_recall_note=True), whole=True)
    assert "The memories shown with the request" not in notes and "check its live state" not in notes
    assert "memory_search" in actions and "memory_search with other words" in notes  # search is its own switch
    _, notes = offered(eta, MemorySettings(drop_recall_note=True, whole_closes_search=True), whole=True)
    assert "memory_search" not in notes  # the two together: no memory note at all
    _, notes = offered(eta, MemorySettings(), whole=True)
    assert "The memories shown with the request are dated" in notes and "check its live state" in notes
    # what the note said but "check" is in the evidence the planner is shown with the request
    evidence = "\n".join(render_recall([mem("a", OLD, 2), mem("b", NEW, 11)], MemoryPlacement(), now=NOW,
                                       owner="alice"))
    assert "A newer memory replaces an older one it contradicts" in evidence
    assert "A question about the past is answered from these" in evidence


# ---------------------------------------------------------------- η, the kit's config, the bench


def test_the_switches_hash_as_before_when_off_and_map_onto_the_session() -> None:
    keys = ("whole_closes_search", "as_messages", "drop_recall_note")
    assert set(Eta(memory=MemorySettings()).content()["memory"]).isdisjoint(keys)
    for key in keys:
        on = Eta(memory=MemorySettings(**{key: True}))
        assert on.content()["memory"][key] is True and on.version != Eta(memory=MemorySettings()).version
    cfg = HarnessKit(None, eta=Eta(memory=MemorySettings(as_messages=True))).configure(HarnessConfig())
    assert cfg.memory.as_messages is True
    assert HarnessKit(None, eta=Eta(memory=MemorySettings())).configure(HarnessConfig()).memory.as_messages is False


def test_the_bench_turns_off_one_switch_or_several_and_on_any() -> None:
    with bench_script("bench_memory_answer") as script:
        base = HarnessKit(None, eta=Eta())
        assert script.variant_kit(base, "on").eta.memory == MemorySettings.defaults()
        for key in ("whole_closes_search", "as_messages", "drop_recall_note"):
            assert f"no-{key}" in script.VARIANTS and f"with-{key}" not in script.VARIANTS  # on by default
            assert getattr(script.variant_kit(base, f"no-{key}").eta.memory, key) is False
        kit = script.variant_kit(base, "no-whole_closes_search+as_messages")
        assert kit.eta.memory == MemorySettings(drop_recall_note=True)
        kit = script.variant_kit(base, "with-newest_last+whole_closes_search")  # with-: any switch on
        assert kit.eta.memory == MemorySettings.defaults().model_copy(update={"newest_last": True})
        assert script._variant("no-whole_closes_search+as_messages+drop_recall_note")
        for name in ("with-whole_closes_search+no_such", "no-budget+recall", "no-"):
            with pytest.raises(Exception, match="unknown variant"):
                script._variant(name)  # only known on/off switches combine


# ---------------------------------------------------------------- a task episode, end to end


def _dev_task_with_wishes() -> TaskSpec:
    """The first dev memory task whose owner has two or more of their own statements seeded."""
    for task_id in sorted(read_split_index(SUITE)["dev"]):
        task = load_task(SUITE / f"{task_id}.yaml", roots=(SUITE, SUITE.parent))
        mine = [m for m in task.memory if m.source == "user_statement" and m.owner == "user"]
        if task.group == "memory" and len(mine) >= 2 and len(mine) == len(task.memory):
            return task
    raise AssertionError("no dev memory task seeds two statements of its owner")


@pytest.fixture(scope="module")
def kit() -> HarnessKit:
    return load_harness_kit()


async def test_a_task_episode_under_both_switches(kit: HarnessKit, tmp_path: Path) -> None:
    task = _dev_task_with_wishes()
    search = {"kind": "memory_search", "query": "what I always want"}
    finish = {"kind": "finish", "summary": "done"}
    on = HarnessKit(kit.library, eta=kit.eta.model_copy(
        update={"memory": MemorySettings(whole_closes_search=True, as_messages=True)}))
    assert kit.eta.memory is None  # the bundled η: the harness's defaults, both switches on
    for under in (on, kit):
        episode, _ = await run_task_episode(task, ScriptedPlanner([search, finish]), mode="harness", kit=under,
                                            trace_dir=tmp_path)
        assert_both_switches_on(episode, task)
    # a written-out section that leaves them out: searched, one evidence message
    off = HarnessKit(kit.library, eta=kit.eta.model_copy(update={"memory": MemorySettings()}))
    episode, _ = await run_task_episode(task, ScriptedPlanner([search, finish]), mode="harness", kit=off,
                                        trace_dir=tmp_path)
    assert "memory_search" in episode.header.kinds and episode.steps[0].retrieved
    assert len(episode.header.preamble) == 1
    with bench_script("bench_memory_answer") as script:  # the bench's rows count the searches
        assert script._actions(episode) == ["memory_search", "finish"]


def assert_both_switches_on(episode: Episode, task: TaskSpec) -> None:
    """The search is not offered after a whole recall, and each memory is a message of its own."""
    assert episode.header.recalled and "memory_search" not in episode.header.kinds
    step = episode.steps[0]  # not offered: the planner's grammar has no such action, and no search runs
    assert step.action is None and step.error is not None and step.error.code == "invalid_action"
    assert not step.retrieved
    memories = [m["content"] for m in episode.header.preamble][2:]
    assert len(memories) == len(task.memory)  # one message each, after the clock and the heading
    assert all(m.content in text for m, text in zip(sorted(task.memory, key=lambda m: m.created_at), memories,
                                                       strict=True))
