"""The two decode loops of the in-process planner, one action per call.

``decode_gbnf`` runs llama.cpp's own sampler chain under a GBNF grammar, one token per pass;
``decode_llg`` masks the raw logits with llguidance and evaluates grammar-forced tokens as one
batch (:mod:`.fast_forward`). Both start with the KV cache holding all but the last prompt token.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ...contracts import SamplerSettings
from ...errors import PlannerBackendError
from . import fast_forward as ff
from . import numerics

__all__ = ["decode_gbnf", "decode_llg", "is_eog"]


def decode_gbnf(
    llm: Any, tokens: list[int], grammar: Any, sampler: SamplerSettings, stop: threading.Event
) -> ff.DecodeResult:
    """llama.cpp's own sampler chain with the GBNF grammar, one token per pass.

    The KV cache holds all but the last prompt token, so ``generate`` evaluates that one
    alone, as the llguidance path does.
    """
    s = sampler
    last: dict[str, Any] = {}

    def remember_logits(input_ids: Any, scores: Any) -> Any:
        row = np.asarray(scores, dtype=np.float64)
        peak = row.max()
        last["scores"], last["lse"] = row, peak + np.log(np.exp(row - peak).sum())
        return scores

    from llama_cpp import LogitsProcessorList

    out = ff.DecodeResult()
    for token in llm.generate(
        tokens,
        top_k=s.top_k,
        top_p=s.top_p,
        min_p=s.min_p,
        temp=s.temperature,
        repeat_penalty=s.repeat_penalty,
        grammar=grammar,
        logits_processor=LogitsProcessorList([remember_logits]),
        reset=True,
    ):
        out.passes += 1
        if is_eog(llm, token):
            out.finish = "stop"
            break
        out.ids.append(int(token))
        if "scores" in last:
            out.logprobs.append(float(last["scores"][token] - last["lse"]))
        if stop.is_set():
            out.finish = "cancelled"
            break
        if len(out.ids) >= s.max_tokens:
            break
    return out


def decode_llg(
    llm: Any,
    first: int,
    grammar: str,
    tokenizer: Any,
    sampler: SamplerSettings,
    stop: threading.Event,
    *,
    fast_forward: bool,
    batch_invariant: bool,
    splits: ff.SplitMemo,
) -> ff.DecodeResult:
    """llguidance masks over the raw logits, forced tokens in one batch (see :mod:`.fast_forward`)."""
    import llama_cpp
    import llguidance
    from llguidance.numpy import allocate_token_bitmask, fill_next_token_bitmask

    matcher = llguidance.LLMatcher(tokenizer, grammar, log_level=0)
    if matcher.is_error():
        raise PlannerBackendError(f"llguidance could not start the action grammar: {matcher.get_error()}")
    n_vocab = llm.n_vocab()
    bitmask = allocate_token_bitmask(1, tokenizer.vocab_size)
    ctx = llm._ctx.ctx

    def fill_mask() -> np.ndarray:
        fill_next_token_bitmask(matcher, bitmask)
        return ff.bitmask_to_bool(bitmask[0], n_vocab)

    def evaluate(batch: list[int], all_rows: bool) -> list[np.ndarray]:
        rows: list[np.ndarray] = []
        for i in range(0, len(batch), llm.n_batch):
            chunk = batch[i : i + llm.n_batch]
            n_past = llm.n_tokens
            llm._ctx.kv_cache_seq_rm(-1, n_past, -1)
            llm._batch.set_batch(batch=chunk, n_past=n_past, logits_all=all_rows)
            llm._ctx.decode(llm._batch)
            llm.input_ids[n_past : n_past + len(chunk)] = chunk
            llm.n_tokens += len(chunk)
            for j in range(len(chunk)) if all_rows else (-1,):
                ptr = llama_cpp.llama_get_logits_ith(ctx, j)
                rows.append(np.ctypeslib.as_array(ptr, shape=(n_vocab,)).copy())
        llm._requires_eval = False
        return rows

    def truncate(n: int) -> None:
        llm.n_tokens -= n
        llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)

    return ff.decode(
        first=first,
        evaluate=evaluate,
        truncate=truncate,
        matcher=matcher,
        fill_mask=fill_mask,
        is_eog=lambda t: is_eog(llm, t),
        sampler=sampler,
        fast_forward=fast_forward,
        max_batch=numerics.INVARIANT_BATCH if batch_invariant else None,
        should_stop=stop.is_set,
        token_bytes=lambda t: bytes(tokenizer.decode_bytes([t])),
        splits=splits,
    )


def is_eog(llm: Any, token: int) -> bool:
    """End of generation: any of the model's end tokens (the grammar allows them all at the end)."""
    import llama_cpp

    return bool(llama_cpp.llama_vocab_is_eog(llm._model.vocab, token))
