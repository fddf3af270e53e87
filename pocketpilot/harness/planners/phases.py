"""A turn decoded in phases: think, then act; choose, then fill.

Both are off by default, and then a turn is one constrained decode of the whole action.

- **Think, then act.** The planner first writes one line of free text, ``Thought: ...``, held
  to at most ``think_tokens`` tokens by the decoder (not by asking), then the action under its
  grammar on the next line. A thought cut at its budget gets the newline from the planner.
  A reasoning step before a constrained answer helps small models (the CRANE result); the
  token bound keeps its cost known.
- **Choose, then fill.** A tool call is decoded twice: first a line that names the tools
  (``{"kind":"tool_call","tools":[...]}``, a grammar over the exposed names only, no argument
  schema to steer the choice), then the call itself with exactly those tools, each call's
  arguments under its own tool's schema. Any other action kind is written whole by the first
  decode. This is the "Natural Language Tools" split, in grammar form.

The phases share one token budget (``max_tokens``) and one assistant turn: the turn's text is
every phase's text, one line each, so the next step's prompt continues the KV cache as it is;
the action is its last line (compact JSON has no raw newline). Inserted delimiters are
evaluated one token per pass and their log-probs under the model are recorded like any
generated token's, so ``token_ids``/``token_logprobs`` still spell the turn's text.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...contracts import ChatMessage, DecodePhase, SamplerSettings
from ...errors import UsageError
from ..action_schema import chosen_tools
from . import fast_forward as ff
from .kv_snapshots import common_prefix

__all__ = [
    "CHOOSE_RULE",
    "THINK_RULE",
    "THOUGHT_GBNF",
    "THOUGHT_OPENER",
    "THOUGHT_REGEX",
    "PhasedDecode",
    "action_text",
    "check_think_budget",
    "thought_text",
    "with_rules",
]

THOUGHT_OPENER = "Thought:"
THOUGHT_REGEX = r"Thought:[^\n]*\n"
"""llguidance's grammar of a thought: the opener, any text on one line, the newline."""
THOUGHT_GBNF = r'root ::= "Thought:" [^\n]* "\n"'
"""The same language for llama.cpp's grammar sampler."""

THINK_RULE = (
    'Before the action, write one short line that begins with "Thought:" and says what the next '
    "action must do and why; then write the JSON action on the next line."
)
CHOOSE_RULE = (
    'To call tools, first write one line {"kind":"tool_call","tools":[...]} that names the tools to call, '
    "then the whole action with their arguments on the next line."
)

Decoder = Callable[[Any, list[int], Any, SamplerSettings, threading.Event], ff.DecodeResult]
"""One constrained decode (``llm, context, grammar, sampler, stop``): the KV cache holds all of
``context`` but its last token, which the decode evaluates first."""


def check_think_budget(think_tokens: int, max_tokens: int, n_ctx: int) -> None:
    """Refuse a reasoning budget that leaves the action no room.

    Raises:
        UsageError: a negative budget, one of ``max_tokens`` or more (the phases share it),
            or one the context window cannot hold.
    """
    if think_tokens < 0:
        raise UsageError(f"think_tokens must be >= 0, not {think_tokens}")
    if think_tokens == 0:
        return
    if think_tokens >= max_tokens:
        raise UsageError(f"a reasoning budget of {think_tokens} tokens leaves no room for the action within "
                         f"max_tokens={max_tokens} (the thought and the action share it: raise --max-tokens)")
    if think_tokens >= n_ctx:
        raise UsageError(f"a reasoning budget of {think_tokens} tokens does not fit the context of n_ctx={n_ctx}")


def with_rules(messages: Sequence[ChatMessage], *, think: bool, choose: bool) -> list[ChatMessage]:
    """The messages with the phases' format lines added to the system message (unchanged when off)."""
    lines = [rule for on, rule in ((think, THINK_RULE), (choose, CHOOSE_RULE)) if on]
    out = list(messages)
    if lines and out and out[0].role == "system":
        out[0] = out[0].model_copy(update={"content": out[0].content + "\n\n" + "\n".join(lines)})
    return out


def action_text(raw: str) -> str:
    """The action of a phased turn's text: its last line."""
    return raw.rsplit("\n", 1)[-1]


def thought_text(raw: str) -> str:
    """The reasoning of a thought line, without its opener and newline."""
    text = raw[len(THOUGHT_OPENER):] if raw.startswith(THOUGHT_OPENER) else raw
    return text.strip()


@dataclass
class PhasedDecode:
    r"""What one phased turn decodes, and in which order.

    Args:
        think_tokens: the thought's budget (0: no thought).
        thought_grammar: the thought's grammar in the planner's engine (with ``think_tokens``).
        action_grammar: the action's grammar, or with ``fill`` the choice's.
        fill: the fill's grammar for the tools a choice names (None: the action is one decode).
        sampler: the planner's sampler; ``max_tokens`` bounds all phases together.
        newline: the tokens of ``"\n"``, the delimiter inserted between phases.
    """

    think_tokens: int
    thought_grammar: Any
    action_grammar: Any
    fill: Callable[[list[str]], Any] | None
    sampler: SamplerSettings
    newline: list[int]

    def decode(self, llm: Any, tokens: list[int], stop: threading.Event, decode_one: Decoder,
               detokenize: Callable[[list[int]], str]) -> tuple[ff.DecodeResult, list[DecodePhase], str | None]:
        """Every phase after the prompt ``tokens`` (the KV cache holds all but the last).

        Returns the tokens of the whole turn, the phases, and the thought (None without one).
        """
        out = ff.DecodeResult()
        phases: list[DecodePhase] = []
        context = list(tokens)
        pending = 0  # delimiter tokens inserted at the end of context, their log-probs still owed

        def insert(delimiter: list[int]) -> None:
            nonlocal pending
            context.extend(delimiter)
            out.ids.extend(delimiter)
            pending += len(delimiter)

        def phase(name: str, grammar: Any, limit: int) -> ff.DecodeResult:
            nonlocal pending
            t0 = time.monotonic()
            logprobs, passes = _feed(llm, context, pending)
            out.logprobs.extend(logprobs)
            pending = 0
            sampler = self.sampler.model_copy(update={"max_tokens": limit})
            r = decode_one(llm, context, grammar, sampler, stop)
            context.extend(r.ids)
            out.ids.extend(r.ids)
            out.logprobs.extend(r.logprobs)
            out.forced_tokens += r.forced_tokens
            out.forced_rejected += r.forced_rejected
            out.passes += r.passes + passes
            out.constraint_s += r.constraint_s
            out.finish = r.finish
            phases.append(DecodePhase(name=name, tokens=len(r.ids), passes=r.passes + passes,  # type: ignore[arg-type]
                                      decode_s=time.monotonic() - t0, finish=r.finish))
            return r

        def room() -> int:
            return self.sampler.max_tokens - len(out.ids)

        thought = None
        if self.think_tokens > 0:
            r = phase("thought", self.thought_grammar, min(self.think_tokens, room() - 1))
            if r.finish == "cancelled":
                return out, phases, None
            text = detokenize(r.ids)
            thought = thought_text(text)
            if not text.endswith("\n"):  # cut at its budget: the action still starts on a line of its own
                insert(self.newline)
        if room() <= 0:
            out.finish = "length"
            return out, phases, thought
        r = phase("choice" if self.fill is not None else "action", self.action_grammar, room())
        if self.fill is None or r.finish != "stop":
            return out, phases, thought
        names = chosen_tools(detokenize(r.ids))
        if names is None:  # another kind of action, written whole
            return out, phases, thought
        insert(self.newline)
        if room() <= 0:
            out.finish = "length"
            return out, phases, thought
        phase("fill", self.fill(names), room())
        return out, phases, thought


def _feed(llm: Any, context: list[int], inserted: int) -> tuple[list[float], int]:
    """Evaluate what the KV cache lacks of ``context[:-1]``, one token a pass.

    The last ``inserted`` tokens of ``context`` were put there by the planner, not sampled:
    their log-probs under the model come from the pass before each. Returns those and the
    number of passes.
    """
    import llama_cpp

    have = common_prefix(llm._input_ids[: llm.n_tokens], context[:-1])
    start = min(have, len(context) - 1 - inserted)
    llm.n_tokens = start
    logprobs: list[float] = []
    for i in range(start, len(context) - 1):
        llm.eval([context[i]])
        if i + 1 >= len(context) - inserted:
            ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
            row = np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).astype(np.float64)
            peak = row.max()
            logprobs.append(float(row[context[i + 1]] - peak - np.log(np.exp(row - peak).sum())))
    return logprobs, len(context) - 1 - start
