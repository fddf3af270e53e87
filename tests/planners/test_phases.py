"""Think, then act and choose, then fill without a model: budgets, schemas, and the phase order."""

from __future__ import annotations

import threading

import jsonschema
import pytest
from click.testing import CliRunner

from pocketpilot.cli.main import cli
from pocketpilot.contracts import ChatMessage, SamplerSettings, ToolSpec
from pocketpilot.errors import ContractError, UsageError
from pocketpilot.harness.action_schema import (
    action_json_schema,
    choice_json_schema,
    chosen_tools,
    fill_json_schema,
)
from pocketpilot.harness.planners import LlamaCppPlanner, phases
from pocketpilot.harness.planners import fast_forward as ff
from pocketpilot.harness.planners.numerics import build_id

TOOLS = [
    ToolSpec(name="set_alarm", description="Set an alarm.",
             parameters={"type": "object", "properties": {"time": {"type": "string", "pattern": "^[0-9]{2}:[0-9]{2}$"},
                                                          "label": {"type": "string"}},
                         "required": ["time"], "additionalProperties": False}),
    ToolSpec(name="send_message", description="Send a text message.",
             parameters={"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
                         "required": ["to", "body"], "additionalProperties": False}),
    ToolSpec(name="get_weather", description="Today's weather.",
             parameters={"type": "object", "properties": {}, "additionalProperties": False}),
]
KINDS = ("tool_call", "ask_user", "finish")


@pytest.fixture
def fake_gguf(tmp_path):
    path = tmp_path / "fake.gguf"
    path.write_bytes(b"GGUF" + bytes(60))  # the header check reads the magic only; nothing loads
    return path


# ------------------------------------------------------------------ budgets


@pytest.mark.parametrize(("think", "max_tokens", "n_ctx"), [(256, 256, 8192), (300, 256, 8192), (-1, 256, 8192),
                                                            (9000, 20000, 8192)])
def test_a_budget_that_leaves_the_action_no_room_is_refused(think, max_tokens, n_ctx, fake_gguf) -> None:
    with pytest.raises(UsageError) as err:
        phases.check_think_budget(think, max_tokens, n_ctx)
    assert "\n" not in str(err.value)
    with pytest.raises(UsageError):
        LlamaCppPlanner(fake_gguf, sampler=SamplerSettings(max_tokens=max_tokens), n_ctx=n_ctx, think_tokens=think,
                        prefix_cache=False)


def test_a_budget_with_room_is_accepted(fake_gguf) -> None:
    phases.check_think_budget(0, 1, 512)
    phases.check_think_budget(64, 256, 8192)
    planner = LlamaCppPlanner(fake_gguf, sampler=SamplerSettings(max_tokens=256), think_tokens=64,
                              choose_then_fill=True, prefix_cache=False)
    assert planner.think_tokens == 64 and planner.choose_then_fill


def test_the_cli_refuses_a_budget_beyond_max_tokens_with_exit_2(fake_gguf) -> None:
    result = CliRunner().invoke(cli, ["run", "--model", str(fake_gguf), "--no-pull", "--think-tokens", "300",
                                      "--max-tokens", "256", "set an alarm"])
    assert result.exit_code == 2, result.output
    line = [x for x in result.output.splitlines() if x.startswith("error:")]
    assert len(line) == 1 and "no room for the action" in line[0]


def test_kv_options_are_checked_and_reach_llama_cpp(fake_gguf) -> None:
    with pytest.raises(UsageError):
        LlamaCppPlanner(fake_gguf, kv_type="q8_0", prefix_cache=False)  # a quantized V cache needs flash attention
    with pytest.raises(UsageError):
        LlamaCppPlanner(fake_gguf, kv_type="bf17", flash_attn=True, prefix_cache=False)
    plain = LlamaCppPlanner(fake_gguf, prefix_cache=False)
    assert "flash_attn" not in plain._kwargs and "type_k" not in plain._kwargs
    fast = LlamaCppPlanner(fake_gguf, flash_attn=True, kv_type="q8_0", prefix_cache=False)
    assert fast._kwargs["flash_attn"] is True and fast._kwargs["type_k"] == fast._kwargs["type_v"] == 8


def test_the_prefix_cache_key_tells_attention_and_kv_type_apart() -> None:
    base = build_id(repack=False)
    assert build_id(repack=False, flash_attn=False, kv_type="f16") == base  # default keys unchanged
    assert len({base, build_id(repack=False, flash_attn=True),
                build_id(repack=False, flash_attn=True, kv_type="q8_0")}) == 3


def test_the_settings_dump_as_before_while_off(fake_gguf) -> None:
    planner = LlamaCppPlanner(fake_gguf, prefix_cache=False)
    planner._kwargs["n_threads"] = 1
    dumped = planner.eval_settings.model_dump()
    assert not {"think_tokens", "choose_then_fill", "flash_attn", "kv_type"} & set(dumped)
    planner.think_tokens = 32
    assert planner.eval_settings.model_dump()["think_tokens"] == 32


# ------------------------------------------------------------------ prompt lines and text


def test_rules_are_added_to_the_system_message_only_when_on() -> None:
    messages = [ChatMessage(role="system", content="rules"), ChatMessage(role="user", content="hi")]
    assert phases.with_rules(messages, think=False, choose=False) == messages
    both = phases.with_rules(messages, think=True, choose=True)
    assert both[0].content.startswith("rules\n\n") and phases.THINK_RULE in both[0].content
    assert phases.CHOOSE_RULE in both[0].content and both[1] == messages[1]


def test_the_action_is_the_last_line_and_the_thought_the_first() -> None:
    raw = 'Thought: the alarm first\n{"kind":"tool_call","tools":["set_alarm"]}\n{"kind":"finish","summary":"x"}'
    assert phases.action_text(raw) == '{"kind":"finish","summary":"x"}'
    assert phases.thought_text("Thought: the alarm first\n") == "the alarm first"
    assert phases.action_text('{"kind":"finish","summary":"a\\nb"}') == '{"kind":"finish","summary":"a\\nb"}'


# ------------------------------------------------------------------ choose, then fill schemas


def test_the_choice_names_exposed_tools_only_and_keeps_other_kinds_whole() -> None:
    action = action_json_schema(TOOLS, KINDS)
    choice = choice_json_schema(action, TOOLS)
    jsonschema.validate({"kind": "tool_call", "tools": ["set_alarm", "get_weather"]}, choice)
    jsonschema.validate({"kind": "finish", "summary": "done"}, choice)
    for bad in ({"kind": "tool_call", "tools": ["open_door"]}, {"kind": "tool_call", "tools": []},
                {"kind": "tool_call", "calls": [{"name": "set_alarm", "arguments": {"time": "07:00"}}]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, choice)
    assert "arguments" not in str(choice)  # no argument schema steers the choice
    assert chosen_tools('{"kind":"tool_call","tools":["set_alarm"]}') == ["set_alarm"]
    assert chosen_tools('{"kind":"finish","summary":"done"}') is None


def test_the_choice_honours_batch_groups_and_is_the_action_without_tools() -> None:
    action = action_json_schema(TOOLS, KINDS, batch_groups=[["get_weather"], ["set_alarm", "send_message"]])
    choice = choice_json_schema(action, TOOLS, [["get_weather"], ["set_alarm", "send_message"]])
    jsonschema.validate({"kind": "tool_call", "tools": ["set_alarm", "send_message"]}, choice)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"kind": "tool_call", "tools": ["get_weather", "set_alarm"]}, choice)
    plain = action_json_schema([], ("ask_user", "finish"))
    assert choice_json_schema(plain, []) is plain


def test_the_fill_holds_each_call_to_its_chosen_tools_schema() -> None:
    fill = fill_json_schema(TOOLS, ["send_message", "set_alarm"])
    good = {"kind": "tool_call", "calls": [{"name": "send_message", "arguments": {"to": "Ann", "body": "hi"}},
                                           {"name": "set_alarm", "arguments": {"time": "07:30"}}]}
    jsonschema.validate(good, fill)
    for calls in ([good["calls"][1], good["calls"][0]],  # another order
                  [good["calls"][0]],  # one call missing
                  [good["calls"][0], {"name": "set_alarm", "arguments": {"label": "x"}}],  # its required time missing
                  [good["calls"][0], {"name": "set_alarm", "arguments": {"time": "7"}}]):  # not its pattern
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({"kind": "tool_call", "calls": calls}, fill)
    with pytest.raises(ContractError):
        fill_json_schema(TOOLS, ["open_door"])
    with pytest.raises(ContractError):
        fill_json_schema(TOOLS, [])


# ------------------------------------------------------------------ the phase order, with a fake decoder


class FakeDecoder:
    """Each phase's tokens as characters (one character, one token), cut at the phase's limit."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts
        self.calls: list[tuple[str, int, int]] = []  # (grammar, limit, context length)

    def __call__(self, llm, context, grammar, sampler, stop) -> ff.DecodeResult:  # noqa: ANN001
        self.calls.append((grammar, sampler.max_tokens, len(context)))
        text = self.texts[grammar]
        ids = [ord(c) for c in text[: sampler.max_tokens]]
        return ff.DecodeResult(ids=ids, logprobs=[-0.5] * len(ids), passes=len(ids),
                               finish="stop" if len(ids) == len(text) else "length")


def _detok(ids: list[int]) -> str:
    return "".join(chr(i) for i in ids)


@pytest.fixture
def no_model(monkeypatch):
    fed: list[int] = []

    def feed(llm, context, inserted):  # noqa: ANN001
        fed.append(inserted)
        return [-1.0] * inserted, inserted

    monkeypatch.setattr(phases, "_feed", feed)
    return fed


def _plan(think: int, fill: bool, max_tokens: int = 200) -> phases.PhasedDecode:
    return phases.PhasedDecode(
        think_tokens=think, thought_grammar="thought", action_grammar="choice" if fill else "action",
        fill=(lambda names: f"fill:{','.join(names)}") if fill else None,
        sampler=SamplerSettings(max_tokens=max_tokens), newline=[ord("\n")],
    )


def test_a_thought_is_bounded_recorded_and_followed_by_the_action(no_model) -> None:
    action = '{"kind":"finish","summary":"done"}'
    decoder = FakeDecoder({"thought": "Thought: nothing left to do because it is done already\n", "action": action})
    out, steps, thought = _plan(think=20, fill=False).decode(None, [1, 2, 3], threading.Event(), decoder, _detok)
    text = _detok(out.ids)
    assert [s.name for s in steps] == ["thought", "action"] and steps[0].tokens == 20 and steps[0].finish == "length"
    assert thought == "nothing lef" and text.endswith("\n" + action)  # cut at 20 tokens; the newline inserted
    assert phases.action_text(text) == action and out.finish == "stop"
    assert len(out.logprobs) == len(out.ids) and no_model == [0, 1]  # the inserted newline got its log-prob
    assert decoder.calls[1][1] == 200 - 21  # the action gets what the thought left of max_tokens


def test_a_thought_that_ends_its_line_needs_no_newline(no_model) -> None:
    decoder = FakeDecoder({"thought": "Thought: ask\n", "action": '{"kind":"ask_user","question":"who?"}'})
    out, _, thought = _plan(think=64, fill=False).decode(None, [1], threading.Event(), decoder, _detok)
    assert thought == "ask" and _detok(out.ids).count("\n") == 1 and no_model == [0, 0]


def test_choose_then_fill_decodes_the_chosen_tools_arguments(no_model) -> None:
    call = '{"kind":"tool_call","calls":[{"name":"set_alarm","arguments":{"time":"07:00"}}]}'
    decoder = FakeDecoder({"choice": '{"kind":"tool_call","tools":["set_alarm"]}', "fill:set_alarm": call})
    out, steps, thought = _plan(think=0, fill=True).decode(None, [1, 2], threading.Event(), decoder, _detok)
    assert [s.name for s in steps] == ["choice", "fill"] and thought is None
    assert phases.action_text(_detok(out.ids)) == call and out.finish == "stop"
    assert decoder.calls[1][2] == 2 + len('{"kind":"tool_call","tools":["set_alarm"]}') + 1  # the fill continues the turn


def test_a_choice_of_another_kind_is_the_action(no_model) -> None:
    decoder = FakeDecoder({"choice": '{"kind":"finish","summary":"done"}'})
    out, steps, _ = _plan(think=0, fill=True).decode(None, [1], threading.Event(), decoder, _detok)
    assert [s.name for s in steps] == ["choice"] and _detok(out.ids) == '{"kind":"finish","summary":"done"}'


def test_an_action_cut_by_the_shared_budget_ends_as_length(no_model) -> None:
    decoder = FakeDecoder({"thought": "Thought: x\n", "action": '{"kind":"finish","summary":"' + "a" * 100 + '"}'})
    out, steps, _ = _plan(think=16, fill=False, max_tokens=40).decode(None, [1], threading.Event(), decoder, _detok)
    assert out.finish == "length" and len(out.ids) == 40 and steps[-1].finish == "length"


# ------------------------------------------------------------------ feeding the KV cache between phases


class FakeLlm:
    """What ``_feed`` reads of a ``Llama``: the evaluated tokens, one-token passes, the last logits."""

    def __init__(self, evaluated: list[int], n_vocab: int = 8) -> None:
        import numpy as np

        self.input_ids = np.zeros(64, dtype=np.intc)
        self.input_ids[: len(evaluated)] = evaluated
        self.n_tokens = len(evaluated)
        self.passes: list[list[int]] = []
        self._n_vocab = n_vocab
        self._ctx = type("Ctx", (), {"ctx": None})()

    @property
    def _input_ids(self):  # noqa: ANN202
        return self.input_ids[: self.n_tokens]

    def n_vocab(self) -> int:
        return self._n_vocab

    def eval(self, tokens: list[int]) -> None:
        self.passes.append(list(tokens))
        self.input_ids[self.n_tokens : self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)


@pytest.fixture
def logits(monkeypatch):
    """llama.cpp's last logits: token t scores t after a pass over token 1, else 0 (a fixed row)."""
    import ctypes

    import llama_cpp

    row = (ctypes.c_float * 8)(*range(8))
    monkeypatch.setattr(llama_cpp, "llama_get_logits_ith",
                        lambda ctx, i: ctypes.cast(row, ctypes.POINTER(ctypes.c_float)))
    return row


def test_feeding_evaluates_only_what_the_cache_lacks_one_token_a_pass(logits) -> None:
    import math

    llm = FakeLlm([5, 6, 7, 1])  # the prompt and the thought's tokens; the thought's last token not evaluated
    context = [5, 6, 7, 1, 2, 3]  # ... + the thought's last token (2) + an inserted newline (3)
    lps, passes = phases._feed(llm, context, inserted=1)
    assert llm.passes == [[2]] and passes == 1 and llm.n_tokens == 5  # the cache holds all but the last token
    lse = math.log(sum(math.exp(x) for x in range(8)))
    assert lps == [pytest.approx(3 - lse)]  # the newline's log-prob from the pass before it
    llm = FakeLlm([5, 6, 7, 1, 2, 3])  # a decoder that also evaluated the line's last token
    lps, passes = phases._feed(llm, [5, 6, 7, 1, 2, 3], inserted=0)
    assert llm.passes == [] and llm.n_tokens == 5 and lps == [] and passes == 0
    llm = FakeLlm([5, 6, 7, 1, 2])
    lps, passes = phases._feed(llm, [5, 6, 7, 1, 2, 3], inserted=1)  # the delimiter's row must be computed again
    assert llm.passes == [[2]] and len(lps) == 1 and llm.n_tokens == 5


# ------------------------------------------------------------------ the grammars under llguidance (a byte vocabulary)


class _ByteVocabulary:
    """One token per byte and an end token: llguidance's view of a model, without a model."""

    eos_token_id = 256
    bos_token_id = None
    tokens = [bytes([i]) for i in range(256)] + [b"\xff<eos>"]
    special_token_ids = [256]

    def __call__(self, s: bytes | str) -> list[int]:
        return list(s if isinstance(s, bytes) else s.encode())


def _accepts(grammar: str, text: str) -> tuple[bool, bool]:
    """Whether the grammar takes ``text`` whole, and whether nothing may follow it."""
    llguidance = pytest.importorskip("llguidance")
    tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteVocabulary()))
    matcher = llguidance.LLMatcher(tokenizer, grammar, log_level=0)
    assert not matcher.is_error(), matcher.get_error()
    for byte in text.encode():
        if not matcher.consume_token(byte):
            return False, matcher.is_stopped()
    return matcher.is_accepting(), matcher.is_stopped()


def _llg(schema: dict) -> str:
    llguidance = pytest.importorskip("llguidance")
    return llguidance.LLMatcher.grammar_from_json_schema(ff.compact_schema(schema), defaults={"whitespace_flexible": False})


def test_the_thought_grammar_is_one_line_and_stops_at_its_newline() -> None:
    llguidance = pytest.importorskip("llguidance")
    thought = llguidance.LLMatcher.grammar_from_regex(phases.THOUGHT_REGEX)
    assert _accepts(thought, "Thought: the alarm first\n") == (True, True)  # complete: decoding ends here
    assert _accepts(thought, "Thought: a\nb")[0] is False  # nothing after the newline
    assert _accepts(thought, '{"kind":"finish"}')[0] is False  # the opener is forced
    assert _accepts(thought, "Thought: not done yet") == (False, False)


def test_the_choice_and_fill_grammars_under_llguidance() -> None:
    choice = _llg(choice_json_schema(action_json_schema(TOOLS, KINDS, lengths=True), TOOLS))
    assert _accepts(choice, '{"kind":"tool_call","tools":["set_alarm","get_weather"]}') == (True, True)
    assert _accepts(choice, '{"kind":"tool_call","tools":["open_door"]}')[0] is False
    assert _accepts(choice, '{"kind":"finish","summary":"done"}')[0] is True
    fill = _llg(fill_json_schema(TOOLS, ["send_message", "set_alarm"], lengths=True))
    good = ('{"kind":"tool_call","calls":[{"name":"send_message","arguments":{"to":"Ann","body":"hi"}},'
            '{"name":"set_alarm","arguments":{"time":"07:30"}}]}')
    assert _accepts(fill, good) == (True, True)
    assert _accepts(fill, good.replace('"07:30"', '"7"'))[0] is False  # the chosen tool's own schema
    assert _accepts(fill, good.replace('"send_message"', '"set_alarm"', 1))[0] is False  # the chosen order
