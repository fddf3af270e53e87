"""Several llama.cpp contexts over one model's weights: each conversation keeps its KV resident.

With four phones on one planner, the steps of their sessions interleave. One context holds one
sequence, so every switch between sessions saved the live sequence and restored another
(:mod:`.kv_snapshots`): a dump and a restore of the whole KV state per switch. Here a step's
prompt goes to the context whose sequence it continues furthest; a conversation that would
overwrite another's sequence gets a context of its own (a copy of the shared part, once) while
fewer than ``cap`` exist, and past the cap the least recently used context goes back to a
snapshot. The weights are loaded once; each context adds only its KV cache and compute buffers.

What a step evaluates is what it would have evaluated after a restore from a snapshot: a copy
between contexts is llama.cpp's per-sequence state, bit for bit, so greedy output is the same
whichever context a conversation lands in. With ``cap=1`` this is exactly the snapshot scheme.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
from collections.abc import Callable, Sequence
from typing import Any

from .kv_snapshots import KvSnapshots, common_prefix

__all__ = ["KvContexts", "fork_context"]

logger = logging.getLogger(__name__)


class KvContexts:
    """Resident contexts (least recently used first) and the snapshots they spill to.

    The operations on a context are passed in, so the choice of context is testable without a
    model: ``tokens(ctx)`` the sequence it holds, ``dump(ctx)`` its state, ``load(ctx, payload,
    tokens)`` a state into it (False if refused; the context is then empty), ``fork()`` a new
    empty context over the same weights, ``close(ctx)`` to free one.

    Args:
        base: the first context (the planner's ``Llama``; never closed here).
        cap: the most contexts kept resident, ``base`` included.
        snapshots: where sequences go when no context can keep them.
    """

    def __init__(
        self,
        base: Any,
        cap: int,
        snapshots: KvSnapshots,
        *,
        tokens: Callable[[Any], Sequence[int]],
        dump: Callable[[Any], bytes | memoryview],
        load: Callable[[Any, bytes | bytearray | memoryview, list[int]], bool],
        fork: Callable[[], Any],
        close: Callable[[Any], None],
    ) -> None:
        if cap < 1:
            raise ValueError(f"cap must be at least 1, not {cap}")
        self.cap = cap
        self.snapshots = snapshots
        self._base = base
        self._slots: list[Any] = [base]
        self._tokens, self._dump, self._load, self._fork, self._close = tokens, dump, load, fork, close
        self.copies = 0
        """Sequences copied from one resident context to another (one per conversation that forked)."""
        self.spills = 0
        """Sequences saved to a snapshot to free a context."""
        self.restores = 0
        """Sequences brought back from a snapshot."""

    def __len__(self) -> int:
        return len(self._slots)

    def acquire(self, tokens: list[int]) -> Any:
        """The context to evaluate ``tokens`` in, holding as much of them as any sequence kept.

        Called under the planner's generation lock (one step at a time).
        """
        min_gain = self.snapshots.min_gain
        scored = []
        for age, ctx in enumerate(self._slots):
            held = self._tokens(ctx)
            n = common_prefix(held, tokens)
            scored.append((n, -(len(held) - n), age, ctx))  # longest shared, least lost, most recent
        n, neg_tail, _, best = max(scored, key=lambda s: s[:3])
        found = self.snapshots.best(tokens, n)
        if found is not None:
            key, saved = found
            payload = self.snapshots.payload(key)  # read before a spill may replace that file
            target = self._spare(tokens, exclude=None)
            assert target is not None  # with nothing excluded there is always a context
            self.restores += 1
            if not self._load(target, payload, list(saved)):
                logger.warning("llama.cpp refused a saved sequence; evaluating it again")
        elif -neg_tail > min_gain:  # continuing here would overwrite another conversation's sequence
            target = self._spare(tokens, exclude=best)
            if target is None:  # one context: the other sequence goes to a snapshot
                self.snapshots.save(list(self._tokens(best)), self._dump(best))
                self.spills += 1
                target = best
            else:
                self.copies += 1
                if not self._load(target, self._dump(best), list(self._tokens(best))):
                    logger.warning("llama.cpp refused a copied sequence; evaluating it again")
        else:
            target = best
        self._slots.remove(target)
        self._slots.append(target)
        return target

    def _spare(self, tokens: list[int], exclude: Any) -> Any:
        """A context other than ``exclude`` to overwrite.

        A new one under the cap, else the least recently used, its sequence saved to a snapshot
        first when worth keeping.
        """
        if len(self._slots) < self.cap:
            try:
                ctx = self._fork()
            except (RuntimeError, ValueError, MemoryError) as exc:  # llama.cpp could not allocate another
                logger.warning("no further llama.cpp context (%s): %d kept, the others go to snapshots",
                               exc, len(self._slots))
                self.cap = len(self._slots)
            else:
                self._slots.insert(0, ctx)
                return ctx
        for ctx in self._slots:
            if ctx is exclude:
                continue
            held = list(self._tokens(ctx))
            if len(held) - common_prefix(held, tokens) > self.snapshots.min_gain:
                self.snapshots.save(held, self._dump(ctx))
                self.spills += 1
            return ctx
        return None

    def close(self) -> None:
        """Free every context but the base (the model's owner frees that one)."""
        slots, self._slots = self._slots, [self._base]
        for ctx in slots:
            if ctx is not self._base:
                self._close(ctx)


def fork_context(llm: Any) -> Any:
    """A ``Llama`` sharing ``llm``'s loaded model, with a context, batch and token buffers of its own.

    llama-cpp-python offers no constructor over a loaded model, so this copies the ``Llama``'s
    attributes and replaces what belongs to the context: the weights, vocabulary, metadata and LoRA
    adapter stay shared, and closing the fork frees only its context. Greedy output in the
    fork is the base context's: the same model and context parameters.
    """
    import llama_cpp
    import numpy as np
    from llama_cpp import _internals as internals

    # not copy.copy: Llama's __setstate__ would construct it again, loading the model a second time
    fork = object.__new__(type(llm))
    fork.__dict__.update(llm.__dict__)
    fork.__dict__.pop("_pp_abort", None)  # the abort callback is installed per context
    fork._stack = contextlib.ExitStack()
    fork._ctx = fork._stack.enter_context(contextlib.closing(
        internals.LlamaContext(model=llm._model, params=llm.context_params, verbose=llm.verbose)))
    fork._batch = fork._stack.enter_context(contextlib.closing(
        internals.LlamaBatch(n_tokens=llm.n_batch, embd=0, n_seq_max=llm.context_params.n_ctx, verbose=llm.verbose)))
    adapter = getattr(llm, "_lora_adapter", None)
    if adapter is not None:
        adapters = (llama_cpp.llama_adapter_lora_p_ctypes * 1)(adapter)
        scales = (ctypes.c_float * 1)(llm.lora_scale)
        if llama_cpp.llama_set_adapters_lora(fork._ctx.ctx, adapters, 1, scales):
            fork.close()
            raise RuntimeError("could not set the LoRA adapter on a new context")
    fork._candidates = internals.LlamaTokenDataArray(n_vocab=llm._n_vocab)
    fork.n_tokens = 0
    fork._requires_eval = True
    fork.input_ids = np.ndarray(llm.input_ids.shape, dtype=np.intc)
    fork.scores = np.ndarray(llm.scores.shape, dtype=np.single)
    fork._mirostat_mu = ctypes.c_float(2.0 * 5.0)
    fork._sampler = None
    return fork
