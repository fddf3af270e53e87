"""Forced-token logic against a tiny vocabulary and a fake model (no llama.cpp, no llguidance)."""

from __future__ import annotations

import numpy as np
import pytest

from pocketpilot.contracts import SamplerSettings
from pocketpilot.harness.planners import fast_forward as ff
from pocketpilot.harness.planners.llama_cpp import aligned_batches

# A vocabulary where the same bytes split several ways, as `","calls` does in Qwen's.
VOCAB = ['{"', "kind", '":"', '":', '"', "go", "stop", '"}', "}", '","', '",', "x", "<eos>"]
EOS = VOCAB.index("<eos>")
TID = {t: i for i, t in enumerate(VOCAB)}
LANGUAGE = ['{"kind":"go"}', '{"kind":"stop"}']


class FakeMatcher:
    """A byte-exact matcher of a finite language; forced tokens are the canonical (longest-first)
    tokenization of the forced bytes (no token here spans past them, so nothing is chopped)."""

    def __init__(self, language: list[str]) -> None:
        self.language = language
        self.tokens: list[int] = []

    @property
    def text(self) -> str:
        return "".join(VOCAB[t] for t in self.tokens)

    def _ok(self, text: str) -> bool:
        return any(s.startswith(text) for s in self.language)

    def validate_tokens(self, tokens: list[int]) -> int:
        text, n = self.text, 0
        for t in tokens:
            if t == EOS or not self._ok(text + VOCAB[t]):
                break
            text += VOCAB[t]
            n += 1
        return n

    def consume_token(self, token: int) -> bool:
        if self.validate_tokens([token]) != 1:
            return False
        self.tokens.append(token)
        return True

    def rollback(self, num_tokens: int) -> bool:
        del self.tokens[len(self.tokens) - num_tokens :]
        return True

    def is_accepting(self) -> bool:
        return self.text in self.language

    def is_stopped(self) -> bool:
        return self.is_accepting() and not any(s.startswith(self.text) and s != self.text for s in self.language)

    def get_error(self) -> str:
        return ""

    def compute_ff_bytes(self) -> bytes:
        rest = [s[len(self.text):] for s in self.language if s.startswith(self.text)]
        forced = rest[0]
        for r in rest[1:]:
            while not r.startswith(forced):
                forced = forced[:-1]
        return forced.encode()

    def compute_ff_tokens(self) -> list[int]:
        forced = self.compute_ff_bytes().decode()
        out: list[int] = []
        while forced:
            best = max((t for t in VOCAB[:-1] if forced.startswith(t)), key=len)
            out.append(TID[best])
            forced = forced[len(best):]
        return out


class FakeModel:
    """Logits that prefer, after each prefix, the next token of ``path`` (its own favourite split)."""

    def __init__(self, path: list[str]) -> None:
        self.path = [TID[t] for t in path] + [EOS]
        self.seq: list[int] = []
        self.passes = 0

    def row(self, seq: list[int]) -> np.ndarray:
        rng = np.random.default_rng(len(seq))
        row = rng.standard_normal(len(VOCAB)).astype(np.float32)
        if seq == self.path[: len(seq)]:
            row[self.path[len(seq)]] = 10.0
        return row

    def evaluate(self, batch: list[int], all_rows: bool) -> list[np.ndarray]:
        self.passes += 1
        rows = []
        for t in batch:
            self.seq.append(t)
            rows.append(self.row(self.seq[1:]))  # seq[0] is the last prompt token
        return rows if all_rows else rows[-1:]

    def truncate(self, n: int) -> None:
        del self.seq[len(self.seq) - n :]


def run(path: list[str], *, fast: bool, max_tokens: int = 32, splits: ff.SplitMemo | None = None,
        max_batch: int | None = None) -> tuple[ff.DecodeResult, FakeModel]:
    model, matcher = FakeModel(path), FakeMatcher(LANGUAGE)
    out = ff.decode(
        token_bytes=lambda t: VOCAB[t].encode(), splits=splits,
        first=TID["x"], evaluate=model.evaluate, truncate=model.truncate, matcher=matcher,
        fill_mask=lambda: np.array([matcher.validate_tokens([t]) == 1 for t in range(len(VOCAB))]),
        is_eog=lambda t: t == EOS, sampler=SamplerSettings(max_tokens=max_tokens), fast_forward=fast,
        max_batch=max_batch,
    )
    return out, model


def text(ids: list[int]) -> str:
    return "".join(VOCAB[t] for t in ids)


def test_forced_tokens_go_in_one_pass_and_the_output_is_unchanged() -> None:
    path = ['{"', "kind", '":"', "go", '"}']  # the canonical split: every forced token agrees
    bare, bare_model = run(path, fast=False)
    fast, fast_model = run(path, fast=True)
    assert fast.ids == bare.ids == [TID[t] for t in path]
    assert fast.finish == bare.finish == "stop"
    assert fast.forced_tokens > 0 and fast.forced_rejected == 0
    assert fast_model.passes < bare_model.passes
    assert fast.logprobs == pytest.approx(bare.logprobs)


def test_a_split_the_model_prefers_over_the_canonical_one_wins() -> None:
    # the model writes `":` then `"`; the matcher forces `":"` as one token
    path = ['{"', "kind", '":', '"', "stop", '"}']
    bare, _ = run(path, fast=False)
    fast, model = run(path, fast=True)
    assert fast.ids == bare.ids == [TID[t] for t in path]
    assert fast.forced_rejected > 0
    assert model.seq[1:] == [TID[t] for t in path][: len(model.seq) - 1]  # the KV holds the output, nothing dropped


def test_the_models_own_split_is_drafted_the_next_time_and_accepted() -> None:
    path = ['{"', "kind", '":', '"', "stop", '"}']
    memo = ff.SplitMemo()
    first, _ = run(path, fast=True, splits=memo)
    again, model = run(path, fast=True, splits=memo)
    bare, bare_model = run(path, fast=False)
    assert first.forced_rejected > 0 and len(memo) > 0
    assert again.ids == first.ids == bare.ids
    assert again.forced_rejected == 0 and again.forced_tokens >= 4
    assert model.passes < bare_model.passes


def test_max_batch_bounds_every_pass_and_the_output_is_unchanged() -> None:
    path = ['{"', "kind", '":"', "go", '"}']
    bare, _ = run(path, fast=False)
    wide, wide_model = run(path, fast=True)
    sizes: list[int] = []
    model, matcher = FakeModel(path), FakeMatcher(LANGUAGE)

    def evaluate(batch: list[int], all_rows: bool) -> list[np.ndarray]:
        sizes.append(len(batch))
        return model.evaluate(batch, all_rows)

    narrow = ff.decode(first=TID["x"], evaluate=evaluate, truncate=model.truncate, matcher=matcher,
                       fill_mask=lambda: np.ones(len(VOCAB), bool), is_eog=lambda t: t == EOS,
                       sampler=SamplerSettings(max_tokens=32), max_batch=2)
    assert max(sizes) == 2  # a forced stretch of three tokens went in two passes, never one of four
    assert narrow.ids == wide.ids == bare.ids and narrow.forced_tokens > 0
    assert model.passes > wide_model.passes


def test_max_tokens_cuts_a_forced_batch() -> None:
    fast, _ = run(['{"', "kind", '":"', "go", '"}'], fast=True, max_tokens=2)
    assert len(fast.ids) == 2 and fast.finish == "length"


def test_greedy_token_takes_the_best_valid_token_and_ties_go_to_the_lowest_id() -> None:
    matcher = FakeMatcher(LANGUAGE)
    matcher.consume_token(TID['{"'])
    matcher.consume_token(TID["kind"])
    row = np.zeros(len(VOCAB), dtype=np.float32)
    row[TID["x"]] = 9.0  # best, but invalid here
    row[TID['":']] = row[TID['":"']] = 5.0  # a tie between two valid splits
    assert ff.greedy_token(row, matcher, lambda t: t == EOS) == min(TID['":'], TID['":"'])
    row[EOS] = 20.0  # end of turn only once the action is complete
    assert ff.greedy_token(row, matcher, lambda t: t == EOS) != EOS
    for t in ['":"', "go", '"}']:
        matcher.consume_token(TID[t])
    assert ff.greedy_token(row, matcher, lambda t: t == EOS) == EOS


def test_check_forced_stops_at_the_first_disagreement_with_the_matcher_there() -> None:
    matcher = FakeMatcher(LANGUAGE)
    forced = [TID['{"'], TID["kind"], TID['":"']]
    for t in forced:
        matcher.consume_token(t)
    rows = [np.eye(len(VOCAB), dtype=np.float32)[t] for t in (TID['{"'], TID["kind"], TID['":'])]
    n, other = ff.check_forced(forced, rows, matcher, lambda r: ff.greedy_token(r, matcher, lambda t: t == EOS))
    assert (n, other) == (2, TID['":'])
    assert matcher.tokens == forced[:2]


def test_bitmask_words_are_little_endian() -> None:
    mask = np.array([0b101, 0b10], dtype=np.int32)  # tokens 0, 2 and 33
    allowed = ff.bitmask_to_bool(mask, 40)
    assert np.flatnonzero(allowed).tolist() == [0, 2, 33]
    assert len(allowed) == 40


def test_compact_schema_puts_required_keys_first_as_the_gbnf_converter_does() -> None:
    schema = {"type": "object", "properties": {"b": {}, "a": {}, "c": {}}, "required": ["c", "a"]}
    assert list(ff.compact_schema(schema)["properties"]) == ["a", "c", "b"]


@pytest.mark.parametrize(("start", "end", "n_batch"), [(0, 1100, 512), (1000, 1500, 512), (493, 515, 512), (7, 7, 4)])
def test_prompt_batches_never_cross_a_multiple_of_n_batch(start: int, end: int, n_batch: int) -> None:
    batches = aligned_batches(start, end, n_batch)
    assert [a for a, _ in batches[1:]] == [b for _, b in batches[:-1]]
    assert (batches[0][0], batches[-1][1]) == (start, end) if batches else start == end
    for a, b in batches:
        assert 0 < b - a <= n_batch and a // n_batch == (b - 1) // n_batch
