"""The decode memo (``pocketpilot.harness.planners.decode_memo``): the memo is real, the planner a fake that counts.

``PromptPlanner`` stands in for a greedy model: its action is a function of the prompt (the
task's oracle action at the step the prompt has reached), and it counts every decode. Episodes
run through the real harness (``run_task``) with η's kit.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from greedy_fakes import GreedyStandIn

from pocketpilot.adapters import Revision, apply_revision
from pocketpilot.adapters.revision import SetToolText
from pocketpilot.contracts import PlannerTurn, SamplerSettings
from pocketpilot.errors import PlannerOutputError, PocketPilotError
from pocketpilot.evaluation.compare import run_task
from pocketpilot.evaluation.task_episode import HarnessKit, load_harness_kit
from pocketpilot.harness.action_schema import parse_action
from pocketpilot.harness.base import PlanRequest
from pocketpilot.harness.planners import LlamaCppPlanner, ScriptedPlanner
from pocketpilot.harness.planners.decode_memo import DecodeMemo, DecodeMemoError, MemoPlanner
from pocketpilot.tasks import load_suite, oracle_actions

SETTINGS, LAUNCHER = "settings-meeting-mode", "launcher-open-spotify"  # dev and evolve tasks; neither is test


class PromptPlanner(GreedyStandIn):
    """A greedy stand-in: the oracle's action at the step the prompt has reached; counts decodes."""

    def __init__(self, actions: list[Any], *, temperature: float = 0.0, sha: str = "sha-a",
                 grammar: str = "g1", vouch: bool = True, raw: str | None = None) -> None:
        super().__init__(sha=sha, temperature=temperature, vouch=vouch)
        self.actions = actions
        self.decodes: list[PlanRequest] = []
        self.grammar, self.raw = grammar, raw

    def extra_identity(self) -> dict[str, Any]:
        return {"grammar": self.grammar}

    async def plan(self, request: PlanRequest):  # type: ignore[no-untyped-def]
        self.decodes.append(request)
        step = sum(1 for m in request.messages if m.role == "assistant")
        raw = self.raw or json.dumps(self.actions[step].model_dump(mode="json"))
        turn = PlannerTurn(raw=raw, latency_s=2.5, decode_s=2.0, prompt_tokens_evaluated=100, token_ids=[7, 8],
                           token_logprobs=[-0.1, -0.2], completion_tokens=2)
        try:
            action = parse_action(raw, request.tools, request.kinds)
        except PlannerOutputError as exc:
            raise PlannerOutputError(raw, exc.reason, turn) from exc
        from pocketpilot.harness.base import PlannerOutput

        return PlannerOutput(action=action, turn=turn)


@pytest.fixture(scope="module")
def kit() -> HarnessKit:
    return load_harness_kit()


@pytest.fixture(scope="module")
def tasks() -> dict:
    return {t.id: t for t in load_suite() if t.id in (SETTINGS, LAUNCHER)}


async def _run(tasks: dict, kit: HarnessKit, memo: DecodeMemo | None, **planner: Any):
    """Both tasks under ``kit``; (decodes per task, episodes per task)."""
    decodes, episodes = {}, {}
    for tid, task in sorted(tasks.items()):
        fake = PromptPlanner(oracle_actions(task), **planner)
        episode, outcome = await run_task(task, MemoPlanner(fake, memo) if memo is not None else fake, mode="harness", kit=kit)
        assert outcome.success, tid
        decodes[tid], episodes[tid] = len(fake.decodes), episode
    return decodes, episodes


def _actions(episode) -> list:  # noqa: ANN001
    return [s.action.model_dump(mode="json") for s in episode.steps]


async def test_a_second_identical_episode_decodes_nothing(tmp_path: Path, kit, tasks) -> None:
    path = tmp_path / "decode-memo.jsonl"
    first, base = await _run(tasks, kit, DecodeMemo(path))
    assert all(n >= 2 for n in first.values())
    assert len(path.read_text().splitlines()) == sum(first.values())
    memo = DecodeMemo(path)  # a new process (a resumed run) reads the file
    again, rerun = await _run(tasks, kit, memo)
    assert again == {SETTINGS: 0, LAUNCHER: 0}
    assert memo.stats.hits == sum(first.values()) and memo.stats.misses == 0
    for tid in tasks:
        assert _actions(rerun[tid]) == _actions(base[tid])
        for step in rerun[tid].steps:  # the trace says the step was served, and counts no decode
            turn = step.planner
            assert turn.memo and turn.decode_s == 0 and turn.prompt_tokens_evaluated == 0
            assert turn.latency_s < 1.0 and turn.token_ids == [7, 8]
            assert json.loads(step.model_dump_json())["planner"]["memo"] is True
        for step in base[tid].steps:  # decoded turns dump as before the field existed
            assert "memo" not in json.loads(step.model_dump_json())["planner"]
    assert memo.stats.saved_s == pytest.approx(2.5 * sum(first.values()))


async def test_a_candidate_decodes_only_the_task_whose_prompt_it_changes(tmp_path: Path, kit, tasks) -> None:
    memo = DecodeMemo(tmp_path / "m.jsonl")
    base, _ = await _run(tasks, kit, memo)
    rev = Revision(id="tool-text", base_version=kit.eta.version, rationale="tool text",
                   ops=[SetToolText(tool="launch_app", description="Open an app by its exact name, e.g. Spotify.")])
    candidate = HarnessKit(kit.library, eta=apply_revision(kit.eta, rev))
    after, episodes = await _run(tasks, candidate, memo)
    assert after == {SETTINGS: 0, LAUNCHER: base[LAUNCHER]}  # the settings task never shows launch_app
    assert not any(s.planner.memo for s in episodes[LAUNCHER].steps)


async def test_a_rerun_decodes_from_the_step_where_its_prompt_first_differs(tmp_path: Path, tasks) -> None:
    task = tasks[SETTINGS]
    recorder = ScriptedPlanner(oracle_actions(task))
    await run_task(task, recorder, mode="harness")
    requests = recorder.requests
    assert len(requests) >= 2
    memo = DecodeMemo(tmp_path / "m.jsonl")
    fake = PromptPlanner(oracle_actions(task))
    for r in requests:
        await MemoPlanner(fake, memo).plan(r)
    assert len(fake.decodes) == len(requests)
    # the same run, but the world answered step 0 otherwise: every prompt from step 1 differs
    changed = [requests[0]]
    for r in requests[1:]:
        messages = list(r.messages)
        i = next(k for k, m in enumerate(messages) if m.role == "tool")
        messages[i] = messages[i].model_copy(update={"content": messages[i].content + " (changed)"})
        changed.append(r.model_copy(update={"messages": messages}))
    fake = PromptPlanner(oracle_actions(task))
    for r in changed:
        await MemoPlanner(fake, memo).plan(r)
    assert fake.decodes == changed[1:]


async def test_sampling_or_a_planner_that_cannot_vouch_is_never_memoized(tmp_path: Path, kit, tasks) -> None:
    path = tmp_path / "m.jsonl"
    memo = DecodeMemo(path)
    for kwargs in ({"temperature": 0.7}, {"vouch": False}):
        first, _ = await _run(tasks, kit, memo, **kwargs)
        again, _ = await _run(tasks, kit, memo, **kwargs)
        assert again == first and all(first.values())
    # a scripted replay follows its script's position, not the prompt: no identity to vouch with
    scripted = ScriptedPlanner(oracle_actions(tasks[SETTINGS]))
    await run_task(tasks[SETTINGS], MemoPlanner(scripted, memo), mode="harness", kit=kit)
    assert scripted.remaining == 0
    assert not path.exists() and len(memo) == 0 and memo.stats.hits == 0 and memo.stats.bypassed > 0


async def test_an_unparseable_output_is_stored_and_raised_again(tmp_path: Path, tasks) -> None:
    task = tasks[SETTINGS]
    recorder = ScriptedPlanner(oracle_actions(task))
    await run_task(task, recorder, mode="harness")
    request = recorder.requests[0]
    memo = DecodeMemo(tmp_path / "m.jsonl")
    fake = PromptPlanner([], raw='{"kind": "tool_call", "calls": [{"name": "no_such_tool", "arguments": {}}]}')
    with pytest.raises(PlannerOutputError) as first:
        await MemoPlanner(fake, memo).plan(request)
    with pytest.raises(PlannerOutputError) as again:
        await MemoPlanner(fake, DecodeMemo(tmp_path / "m.jsonl")).plan(request)
    assert len(fake.decodes) == 1
    assert again.value.reason == first.value.reason and again.value.raw == first.value.raw
    assert again.value.turn.memo


def _write_two(path: Path, tasks: dict) -> list[PlanRequest]:
    import asyncio

    task = tasks[SETTINGS]
    recorder = ScriptedPlanner(oracle_actions(task))
    asyncio.run(run_task(task, recorder, mode="harness"))
    memo = DecodeMemo(path)
    fake = PromptPlanner(oracle_actions(task))
    for r in recorder.requests[:2]:
        asyncio.run(MemoPlanner(fake, memo).plan(r))
    return recorder.requests[:2]


def test_a_line_cut_short_by_a_kill_is_skipped_and_cut_off(tmp_path: Path, tasks) -> None:
    """Skipped, not an error: a killed run leaves it, and the entry is only a decode to run again."""
    path = tmp_path / "m.jsonl"
    requests = _write_two(path, tasks)
    whole = path.read_bytes()
    last = whole.splitlines(keepends=True)[-1]
    path.write_bytes(whole[: -len(last)] + last[: len(last) // 2])  # the second record, half written
    memo = DecodeMemo(path)
    assert len(memo) == 1
    import asyncio

    fake = PromptPlanner(oracle_actions(tasks[SETTINGS]))
    for r in requests:
        asyncio.run(MemoPlanner(fake, memo).plan(r))
    assert fake.decodes == requests[1:]  # the cut record decodes again
    lines = path.read_bytes().splitlines(keepends=True)
    assert len(lines) == 2 and all(line.endswith(b"\n") for line in lines)  # the fragment is gone
    assert len(DecodeMemo(path)) == 2


@pytest.mark.parametrize("bad", ["{not json\n", '{"v": 1, "key": "k"}\n', "VERSION"])
def test_a_complete_line_that_does_not_parse_is_a_typed_error(tmp_path: Path, tasks, bad: str) -> None:
    """An error, not a skip: a kill cuts only the last line, so this file was changed by something else."""
    path = tmp_path / "m.jsonl"
    _write_two(path, tasks)
    lines = path.read_text().splitlines(keepends=True)
    if bad == "VERSION":
        bad = json.dumps({**json.loads(lines[0]), "v": 99}) + "\n"
    path.write_text(lines[0] + bad + lines[1])
    with pytest.raises(DecodeMemoError) as err:
        DecodeMemo(path)
    assert isinstance(err.value, PocketPilotError) and err.value.line == 2
    assert "m.jsonl:2" in str(err.value) and "\n" not in str(err.value)


def test_the_key_changes_with_the_weights_or_the_grammar(tmp_path: Path, tasks) -> None:
    task = tasks[SETTINGS]
    recorder = ScriptedPlanner(oracle_actions(task))
    import asyncio

    asyncio.run(run_task(task, recorder, mode="harness"))
    request = recorder.requests[0]

    def key(**kwargs: Any) -> str | None:
        return MemoPlanner(PromptPlanner([], **kwargs), DecodeMemo(tmp_path / "k.jsonl"))._key(request)

    assert key() == key()
    assert len({key(), key(sha="sha-b"), key(grammar="g2")}) == 3
    assert key(sha="") is None  # weights not named by a hash: not memoized


@pytest.fixture
def unloaded_llama(tmp_path: Path) -> LlamaCppPlanner:
    """A LlamaCppPlanner over a GGUF stub, its model and chat template stubbed (no weights are read)."""
    path = tmp_path / "stub.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 60)
    planner = LlamaCppPlanner(path, constraint="llguidance", reproducible=True, prefix_cache=False)
    planner._llm = object()
    planner._sha256 = "a" * 64
    planner._formatter = lambda messages: SimpleNamespace(prompt="|".join(f"{m['role']}:{m['content']}" for m in messages))
    return planner


def test_the_llama_planner_names_weights_grammar_and_prompt(unloaded_llama: LlamaCppPlanner, tasks,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("llguidance")
    task = tasks[SETTINGS]
    recorder = ScriptedPlanner(oracle_actions(task))
    import asyncio

    asyncio.run(run_task(task, recorder, mode="harness"))
    request = recorder.requests[0]
    p = unloaded_llama
    base = p.decode_identity(request)
    assert base is not None and base["prompt"].startswith("system:")
    assert p.decode_identity(request) == base
    p._sha256 = "b" * 64
    assert p.decode_identity(request)["model_sha256"] != base["model_sha256"]
    p._sha256 = "a" * 64
    monkeypatch.setattr(p, "_llg_grammar", lambda schema: "start: other")
    assert p.decode_identity(request)["grammar"] != base["grammar"]
    monkeypatch.undo()
    keys = {DecodeMemo.key(p.info, ident, request) for ident in (base, {**base, "grammar": "x"},
                                                                 {**base, "model_sha256": "b"})}
    assert len(keys) == 3


def test_the_llama_planner_vouches_only_for_exact_greedy_decoding(unloaded_llama: LlamaCppPlanner, tasks) -> None:
    task = tasks[SETTINGS]
    recorder = ScriptedPlanner(oracle_actions(task))
    import asyncio

    asyncio.run(run_task(task, recorder, mode="harness"))
    request = recorder.requests[0]
    p = unloaded_llama
    p.sampler = SamplerSettings(temperature=0.7)
    assert p.decode_identity(request) is None  # a sample may rightly differ
    p.sampler = SamplerSettings()
    p.reproducible, p.batch_invariant = False, False  # a batch's logits differ from one-token passes'
    assert p.decode_identity(request) is None
    p._llm = None  # not loaded: no sha256, no chat template to render with
    p.reproducible = True
    assert p.decode_identity(request) is None
