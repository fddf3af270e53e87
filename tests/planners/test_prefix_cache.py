"""The stable prefix's KV state on disk: a new process restores it, and a bad file is never used."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from pocketpilot.contracts import SamplerSettings
from pocketpilot.harness.base import ChatMessage, PlanRequest
from pocketpilot.harness.context import ContextAssembler, ContextBudget
from pocketpilot.harness.planners import LlamaCppPlanner
from pocketpilot.harness.planners.prefix_cache import PrefixCache, PrefixKey

KEY = PrefixKey.of("a" * 64, 4096, 512, "0.3.36", [1, 2, 3])


def test_a_saved_state_loads_back_and_touches_its_use(tmp_path: Path) -> None:
    cache = PrefixCache(tmp_path)
    path = cache.save(KEY, b"state-bytes")
    os.utime(path, (1, 1))
    assert cache.load(KEY) == b"state-bytes"
    assert path.stat().st_mtime > 1  # most recently used now


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "other_key", "appended", "huge_size"])
def test_a_bad_state_file_is_ignored_and_removed(tmp_path: Path, damage: str, caplog) -> None:
    cache = PrefixCache(tmp_path)
    path = cache.save(KEY, b"x" * 1000)
    raw = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(raw[:-10])
    elif damage == "flip":
        path.write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))
    elif damage == "garbage":
        path.write_bytes(b"\x00\x01not a state")
    elif damage == "appended":  # the payload read whole and checksummed, then more bytes
        path.write_bytes(raw + b"tail")
    elif damage == "huge_size":  # a header that would have the reader allocate terabytes
        path.write_bytes(raw.replace(b'"size": 1000', b'"size": 10000000000000'))
    else:  # a file under this key's name that was written for another key
        head, _, payload = raw.partition(b"\n")[2].partition(b"\n")
        header = json.loads(head)
        header["key"]["model_sha256"] = "b" * 64
        path.write_bytes(b"PPKV1\n" + json.dumps(header).encode() + b"\n" + payload)
    assert cache.load(KEY) is None
    assert not path.exists() and "computed again" in caplog.text


def test_every_part_of_the_key_changes_the_file() -> None:
    names = {
        KEY.name,
        PrefixKey.of("b" * 64, 4096, 512, "0.3.36", [1, 2, 3]).name,
        PrefixKey.of("a" * 64, 8192, 512, "0.3.36", [1, 2, 3]).name,
        PrefixKey.of("a" * 64, 4096, 256, "0.3.36", [1, 2, 3]).name,
        PrefixKey.of("a" * 64, 4096, 512, "0.3.37", [1, 2, 3]).name,
        PrefixKey.of("a" * 64, 4096, 512, "0.3.36", [1, 2, 4]).name,
    }
    assert len(names) == 6


def test_least_recently_used_states_go_first_past_the_bound(tmp_path: Path) -> None:
    keys = [PrefixKey.of("a" * 64, 4096, 512, "v", [i]) for i in range(3)]
    one = PrefixCache(tmp_path / "probe").save(keys[0], b"x" * 1000).stat().st_size
    cache = PrefixCache(tmp_path / "kv", max_bytes=3 * one)
    for i, key in enumerate(keys):
        os.utime(cache.save(key, b"x" * 1000), (100 + i, 100 + i))
    assert len(cache.entries()) == 3
    cache.load(keys[0])  # used again: now the newest
    cache.save(PrefixKey.of("a" * 64, 4096, 512, "v", [9]), b"x" * 1000)
    left = {p.name for p, _ in cache.entries()}
    assert keys[0].name in left and keys[1].name not in left
    assert cache.size() <= 3 * one and len(left) == 3
    assert cache.clear() > 0 and cache.entries() == []


def _request(tools, planner, text: str) -> PlanRequest:
    assembler = ContextAssembler(ContextBudget(), planner.count_tokens)
    kinds = ("tool_call", "finish")
    prefix, _ = assembler.prefix(tools, kinds)
    return PlanRequest(messages=assembler.assemble(prefix, ChatMessage(role="user", content=text), []),
                       tools=tools, kinds=kinds)


@pytest.mark.slow
def test_a_new_process_restores_the_prefix_and_decodes_the_same(test_gguf: Path, tmp_path: Path) -> None:
    """Greedy output is identical whether the prefix was evaluated, restored, or never cached."""
    from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone

    tools = SandboxExecutor(SandboxPhone()).tools()[:3]
    requests = ["Turn on do not disturb.", "What is the battery level?"]
    sampler = SamplerSettings(temperature=0.0, max_tokens=48)

    async def run(cache, texts=requests) -> list:  # noqa: ANN001
        planner = LlamaCppPlanner(test_gguf, sampler=sampler, n_ctx=4096, prefix_cache=cache)
        try:
            out = []
            for text in texts:
                await planner.load()
                t0 = time.monotonic()
                got = await planner.plan(_request(tools, planner, text))
                out.append((got.turn, time.monotonic() - t0))
                planner._llm.reset()  # as a new process would: nothing in the KV cache
            return out
        finally:
            await planner.aclose()

    cache = PrefixCache(tmp_path / "kv")
    first = asyncio.run(run(cache))
    assert [t.prefix for t, _ in first] == ["evaluated", "restored"]  # saved by the first, restored by the second
    assert sorted(p.suffix for p, _ in cache.entries()) == [".kv", ".vocab"]  # one state; llguidance's pieces
    assert first[0][0].prefix_tokens > 100 and first[1][0].prefix_tokens == first[0][0].prefix_tokens
    assert first[1][0].prompt_tokens_evaluated <= first[1][0].prompt_tokens - first[1][0].prefix_tokens + 1
    again = asyncio.run(run(cache, requests[1:]))  # a new planner, a new Llama: what a new process gets
    assert [t.prefix for t, _ in again] == ["restored"]
    plain = asyncio.run(run(None, requests[1:]))
    assert [t.prefix for t, _ in plain] == ["evaluated"]
    # greedy, token for token: evaluated here, restored in this process, restored in a new one
    assert first[1][0].token_ids == again[0][0].token_ids == plain[0][0].token_ids
    assert first[0][0].token_ids != first[1][0].token_ids  # two requests, two answers: the check can fail


@pytest.mark.slow
def test_swapping_the_model_file_misses_the_cache(test_gguf: Path, tmp_path: Path) -> None:
    cache = PrefixCache(tmp_path / "kv")
    key = PrefixKey.of("0" * 64, 4096, 512, "x", [1])
    cache.save(key, b"from another model")
    from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone

    tools = SandboxExecutor(SandboxPhone()).tools()[:4]

    async def go():  # noqa: ANN202
        planner = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(max_tokens=32), n_ctx=4096,
                                  prefix_cache=cache, sha256="f" * 64)  # another model's hash
        try:
            return (await planner.plan(_request(tools, planner, "Turn on wifi."))).turn
        finally:
            await planner.aclose()

    turn = asyncio.run(go())
    assert turn.prefix == "evaluated"
    states = [p for p, _ in cache.entries() if p.suffix == ".kv"]
    assert len(states) == 2  # its own state beside the other model's, never mixed


def test_cache_info_and_clear_on_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from pocketpilot.cli.cache import cache

    monkeypatch.setenv("POCKETPILOT_HOME", str(tmp_path))
    PrefixCache().save(KEY, b"x" * 2_000_000)
    shown = CliRunner().invoke(cache, ["info"])
    assert shown.exit_code == 0 and "1 prefix state(s), 0 vocabulary file(s), 2.0 MB" in shown.output
    assert str(tmp_path) in shown.output
    cleared = CliRunner().invoke(cache, ["clear"])
    assert cleared.exit_code == 0 and "cleared 2.0 MB" in cleared.output
    assert PrefixCache().entries() == []


@pytest.mark.slow
def test_a_cancel_stops_prompt_processing_not_only_sampling(test_gguf: Path) -> None:
    """A long prompt takes many seconds to evaluate: the abort callback ends it within a graph node."""
    messages = [ChatMessage(role="system", content="Answer with one JSON action."),
                ChatMessage(role="user", content="Remember this: " + "the quick brown fox jumps over the lazy dog. " * 300)]
    request = PlanRequest(messages=messages, tools=[], kinds=("finish",))

    async def go() -> tuple[float, str]:
        planner = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(max_tokens=16), n_ctx=8192, prefix_cache=None)
        try:
            await planner.load()
            task = asyncio.create_task(planner.plan(request))
            await asyncio.sleep(0.5)  # well inside the ~3,000-token prompt's evaluation
            t0 = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            waited = time.monotonic() - t0
            short = [ChatMessage(role="system", content="Answer with one JSON action."),
                     ChatMessage(role="user", content="Say done.")]
            after = await planner.plan(PlanRequest(messages=short, tools=[], kinds=("finish",)))
            return waited, after.action.kind
        finally:
            await planner.aclose()

    waited, kind = asyncio.run(go())
    assert waited < 3.0, f"cancelling took {waited:.1f}s: prompt processing was not aborted"
    assert kind == "finish"  # the planner is usable after an aborted decode
