"""Grammar fast-forward: tokens the constraint forces are evaluated as one batch.

Most of an action's JSON is fixed by the schema once a few choices are made (keys,
punctuation, the rest of a tool name whose prefix is unique). Sampling those tokens one at a
time costs one model pass each; evaluating them together costs about one pass for the lot, at
prompt speed. The constraint engine is llguidance: it computes the token mask over Qwen's
151k vocabulary in microseconds and says which bytes are forced (``compute_ff_tokens``).

Token boundaries: the forced bytes arrive in llguidance's canonical tokenization, but greedy
decoding under the grammar may split the same bytes differently (``"calls`` then ``":[{"`` or
``"`` then ``calls":``). So at temperature 0 the forced batch is *verified*: the batch is
evaluated with logits at every position, and each forced token is kept only while it is the
token greedy decoding under that position's mask would have picked. At the first
disagreement the rest of the batch is dropped from the KV cache and the matcher, and the
greedy token is taken instead. The output is therefore, token for token, what one-by-one
greedy decoding under the same mask produces from the same logits; the only difference left
is numerical (a batched pass against single-token passes), which the benchmark measures.

At temperature > 0 forced tokens are taken as forced (nothing else could be sampled at those
bytes except another split of them), and tokens are sampled here from the masked logits.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ...contracts import SamplerSettings
from ...errors import PlannerBackendError

__all__ = [
    "DecodeResult",
    "Matcher",
    "SplitMemo",
    "bitmask_to_bool",
    "check_forced",
    "compact_schema",
    "decode",
    "greedy_token",
]

logger = logging.getLogger(__name__)


class Matcher(Protocol):
    """The part of ``llguidance.LLMatcher`` the decoder uses (a fake one drives the unit tests)."""

    def compute_ff_tokens(self) -> list[int]: ...
    def compute_ff_bytes(self) -> bytes: ...
    def consume_token(self, token: int) -> bool: ...
    def validate_tokens(self, tokens: list[int]) -> int: ...
    def rollback(self, num_tokens: int) -> bool: ...
    def is_accepting(self) -> bool: ...
    def is_stopped(self) -> bool: ...
    def get_error(self) -> str: ...


def bitmask_to_bool(bitmask: np.ndarray, n_vocab: int) -> np.ndarray:
    """llguidance's packed mask (one bit per token, little-endian words) as a bool per token."""
    bits = np.unpackbits(np.ascontiguousarray(bitmask).view(np.uint8), bitorder="little")
    return bits[:n_vocab].astype(bool)


def greedy_token(row: np.ndarray, matcher: Matcher, is_eog: Callable[[int], bool], *, chunk: int = 64) -> int:
    """The token greedy decoding under the exact grammar picks: the best-scoring valid one.

    Candidates are tried best first (ties to the lowest id, as llama.cpp's greedy sampler),
    each checked byte-exactly with ``validate_tokens``. llguidance's own mask is not used
    here: where bytes are forced it admits only their canonical first token, while
    llama.cpp's grammar admits every token that spells a valid continuation; the model often
    prefers another split (``",`` before ``"calls``), and greedy output must not change.
    Usually the first or second candidate is valid, so this costs microseconds.
    """
    def valid(t: int) -> bool:
        return matcher.is_accepting() if is_eog(t) else matcher.validate_tokens([t]) == 1

    best = int(np.argmax(row))  # the lowest id among the highest scores
    if valid(best):
        return best
    seen = {best}
    k = 1
    while k < len(row):
        k = min(len(row), k * chunk)
        top = np.argpartition(-row, k - 1)[:k] if k < len(row) else np.arange(len(row))
        top = top[np.lexsort((top, -row[top]))]  # by score, then id
        for t in top.tolist():
            if t not in seen:
                seen.add(t)
                if valid(t):
                    return int(t)
    raise PlannerBackendError(f"the grammar allows no token here: {matcher.get_error()}")


def check_forced(
    forced: Sequence[int], rows: Sequence[np.ndarray], matcher: Matcher, pick: Callable[[np.ndarray], int]
) -> tuple[int, int | None]:
    """How many forced tokens greedy decoding would have produced itself.

    The matcher has consumed ``forced``; it is rolled back and walked forward again, and at
    position ``j`` greedy's own pick from ``rows[j]`` (the logits that predict it) must be the
    forced token. Returns ``(n, token)``: the first ``n`` agree and the matcher has consumed
    exactly them; ``token`` is greedy's pick at position ``n`` (None when all agree).
    """
    matcher.rollback(len(forced))
    for j, want in enumerate(forced):
        got = pick(rows[j])
        if got != want:
            return j, got
        matcher.consume_token(want)
    return len(forced), None


def compact_schema(schema: Any) -> Any:
    """Required properties first, in their declared order, as llama.cpp's converter emits them.

    llguidance keeps declaration order; the GBNF path puts required keys first. Both engines
    must accept the same language for their greedy outputs to be comparable.
    """
    if isinstance(schema, dict):
        out = {k: compact_schema(v) for k, v in schema.items()}
        props = out.get("properties")
        if isinstance(props, dict) and schema.get("type", "object") == "object":
            required = set(out.get("required", []))
            order = sorted(enumerate(props), key=lambda ip: (ip[1] not in required, ip[0]))
            out["properties"] = {name: props[name] for _, name in order}
        return out
    if isinstance(schema, list):
        return [compact_schema(v) for v in schema]
    return schema


@dataclass
class DecodeResult:
    """Tokens, their log-probs under the model, and where the time went."""

    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish: str = "length"
    forced_tokens: int = 0
    """Tokens that went into the KV cache in a forced batch rather than one pass each."""
    forced_rejected: int = 0
    """Forced tokens dropped because greedy decoding would have split the bytes differently."""
    passes: int = 0
    """Model passes during decoding (a forced batch is one pass)."""
    constraint_s: float = 0.0
    """Seconds in the constraint engine (choosing valid tokens, forced tokens, masks)."""


def _logprob(row: np.ndarray, token: int) -> float:
    peak = float(row.max())
    return float(row[token] - peak - np.log(np.exp(row.astype(np.float64) - peak).sum()))


def _sample(row: np.ndarray, allowed: np.ndarray, s: SamplerSettings, rng: np.random.Generator) -> int:
    logits = np.where(allowed, row.astype(np.float64), -np.inf)
    order = np.argsort(-logits, kind="stable")
    if s.top_k > 0:
        order = order[: s.top_k]
    order = order[np.isfinite(logits[order])]
    z = logits[order] / s.temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    keep = np.ones(len(order), dtype=bool)
    if s.top_p < 1.0:
        keep &= np.concatenate(([True], np.cumsum(p)[:-1] < s.top_p))
    if s.min_p > 0.0:
        keep &= p >= s.min_p * p.max()
    p = np.where(keep, p, 0.0)
    return int(order[rng.choice(len(order), p=p / p.sum())])


def decode(
    *,
    first: int,
    evaluate: Callable[[list[int], bool], list[np.ndarray]],
    truncate: Callable[[int], None],
    matcher: Matcher,
    fill_mask: Callable[[], np.ndarray],
    is_eog: Callable[[int], bool],
    sampler: SamplerSettings,
    fast_forward: bool = True,
    max_batch: int | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    token_bytes: Callable[[int], bytes] | None = None,
    splits: SplitMemo | None = None,
) -> DecodeResult:
    """Constrained decoding from the last prompt token ``first``.

    Args:
        first: the last prompt token, evaluated by the first pass.
        evaluate: runs tokens through the model in one pass and returns logits rows, all of
            them when asked (a forced batch), else only the last.
        truncate: drops the last ``n`` evaluated tokens from the KV cache.
        matcher: the grammar's state, advanced by every token taken.
        fill_mask: the allowed tokens (bool per token) in the matcher's state (sampling only).
        is_eog: whether a token ends generation.
        sampler: temperature, top-k/top-p/min-p and seed; temperature 0 is greedy.
        should_stop: asked between passes; true ends decoding as cancelled.
        fast_forward: evaluate forced tokens as one batch; off, every token is a pass.
        max_batch: the most tokens one pass evaluates (the chosen token and those forced
            after it); a longer forced stretch takes several passes. Where batches up to
            that size compute what one-token passes compute, output stays bit-identical.
        token_bytes: a token's bytes (with ``splits``).
        splits: with ``token_bytes``, forced bytes are proposed the way the model split
            them before (see :class:`SplitMemo`), and what it does now is remembered.
    """
    out = DecodeResult()
    rng = np.random.default_rng(sampler.seed)
    greedy = sampler.temperature <= 0

    def timed(fn: Callable[..., Any], *args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            out.constraint_s += time.perf_counter() - t0

    def pick(row: np.ndarray) -> int:
        if greedy:
            return greedy_token(row, matcher, is_eog)
        return _sample(row, fill_mask(), sampler, rng)

    events: list[tuple[int, bytes]] = []  # (output length in tokens, forced bytes) per proposal

    def forced_from_here() -> list[int]:
        room = sampler.max_tokens - len(out.ids)
        if max_batch is not None:
            room = min(room, max_batch - 1)
        if not fast_forward or room <= 0:
            return []
        forced: list[int] = []
        if splits is not None and token_bytes is not None:
            wanted = bytes(matcher.compute_ff_bytes())
            if wanted:
                events.append((len(out.ids), wanted))
                forced = splits.get(wanted, matcher)
        if not forced:
            forced = list(matcher.compute_ff_tokens())
        forced = forced[:room]
        for token in forced:
            if not matcher.consume_token(token):
                raise PlannerBackendError(f"constraint rejected its own forced token {token}: {matcher.get_error()}")
        return forced

    def take(token: int, row: np.ndarray) -> list[int] | None:
        """Append a chosen token; the next batch to evaluate, or None when decoding ends."""
        if is_eog(token):
            out.finish = "stop"
            return None
        if not matcher.consume_token(token):
            raise PlannerBackendError(f"constraint rejected token {token}: {matcher.get_error()}")
        out.ids.append(token)
        out.logprobs.append(_logprob(row, token))
        if matcher.is_stopped():  # complete: only end-of-turn could follow, no pass needed
            out.finish = "stop"
            return None
        if len(out.ids) >= sampler.max_tokens:
            out.finish = "length"
            return None
        return [token, *timed(forced_from_here)]

    def loop() -> None:
        # tokens to evaluate next; all but the first are forced (consumed, not yet accepted)
        pending: list[int] | None = [first, *timed(forced_from_here)]
        while pending is not None:
            if should_stop():
                out.finish = "cancelled"
                return
            forced = pending[1:]
            rows = evaluate(pending, bool(forced))
            out.passes += 1
            if forced:
                n_ok, other = timed(check_forced, forced, rows, matcher, pick) if greedy else (len(forced), None)
                for j in range(n_ok):
                    out.ids.append(forced[j])
                    out.logprobs.append(_logprob(rows[j], forced[j]))
                out.forced_tokens += n_ok
                if other is not None:
                    out.forced_rejected += len(forced) - n_ok
                    truncate(len(forced) - n_ok)  # positions after the last agreeing token
                    pending = take(other, rows[n_ok])
                    continue
                if matcher.is_stopped():
                    out.finish = "stop"
                    return
                if len(out.ids) >= sampler.max_tokens:
                    out.finish = "length"
                    return
            row = rows[-1]
            pending = take(timed(pick, row), row)

    loop()
    if splits is not None and token_bytes is not None and out.finish != "cancelled":
        splits.learn(events, out.ids, token_bytes)
    return out


class SplitMemo:
    """How the model tokenized forced bytes before: the draft for the next time they are forced.

    llguidance proposes the canonical tokenization, but a model trained on spaced JSON writes
    compact JSON its own way (``":`` then ``"``), so canonical drafts are rejected about as
    often as they are accepted. Keys, separators and tool names recur every step, and the
    model splits them the same way each time: remembering its split makes the draft right
    from the second time on. A wrong draft costs only a wasted position (it is verified).
    """

    def __init__(self, max_entries: int = 4096) -> None:
        self.max_entries = max_entries
        self._memo: dict[bytes, list[int]] = {}

    def get(self, forced: bytes, matcher: Matcher) -> list[int]:
        draft = self._memo.get(forced, [])
        if draft and matcher.validate_tokens(draft) == len(draft):
            return list(draft)
        return []

    def learn(self, events: Sequence[tuple[int, bytes]], ids: Sequence[int], token_bytes: Callable[[int], bytes]) -> None:
        """Remember the output's tokens that spell each forced stretch from its start."""
        if not events:
            return
        starts = [0]
        for t in ids:
            starts.append(starts[-1] + len(token_bytes(t)))
        for n_tokens, forced in events:
            if n_tokens > len(ids):
                continue
            begin = starts[n_tokens]
            end = begin + len(forced)
            draft = [ids[i] for i in range(n_tokens, len(ids)) if starts[i + 1] <= end]
            if draft:
                if len(self._memo) >= self.max_entries:
                    self._memo.clear()
                self._memo[forced] = draft

    def __len__(self) -> int:
        return len(self._memo)
