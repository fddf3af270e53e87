"""The model behind the LLM-simulated backend: a small protocol and its llama.cpp implementation.

The simulated backend only needs "give me JSON text for this prompt, shaped like this schema".
Keeping that behind :class:`ResponseModel` lets the consistency logic be tested with a scripted
model and lets an app plug in any other local model.

The llama.cpp implementation follows the traps in FACTS.md: the grammar comes from
``LlamaGrammar.from_json_schema`` (which raises, unlike ``response_format``), and it is parsed
by llama.cpp before sampling, because a grammar llama.cpp rejects at sampling time takes the
process down. It can share the planner's loaded ``Llama`` (one model in RAM); the two then take
turns under the planner's generation lock, and each simulated call evicts the planner's cached
prompt, so the planner's next step re-evaluates its prefix once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ...contracts import digest
from ...errors import ExecutorError
from ...models.grammar_schema import grammar_friendly  # the same GBNF-safe rewrite as the planner's

__all__ = ["LlamaCppResponseModel", "ResponseModel", "SimulationBackendError"]

logger = logging.getLogger(__name__)


class SimulationBackendError(ExecutorError):
    """The simulation model could not run at all (model failed to load, schema has no grammar)."""


@runtime_checkable
class ResponseModel(Protocol):
    """Produces the raw text of one simulated tool result."""

    async def generate(self, messages: Sequence[dict[str, str]], schema: dict[str, Any]) -> str:
        """Return JSON text for ``messages`` (chat turns), constrained to ``schema`` where possible.

        Raises:
            SimulationBackendError: the model cannot run (the executor does not retry it).
        """
        ...


class LlamaCppResponseModel:
    """A :class:`ResponseModel` on an in-process llama.cpp model with JSON-schema grammars.

    Args:
        llm: a loaded ``llama_cpp.Llama`` to use (e.g. the planner's); or None with ``model_path``.
        model_path: a GGUF file to load on first use when no ``llm`` is given.
        lock: serializes generations with other users of the same ``Llama`` (the planner's
            generation lock when shared).
        max_tokens: cap on one result; output cut there is invalid JSON and is regenerated.
        temperature: 0 for greedy; the executor's retry changes the prompt, not the sampler.
        n_ctx: context size when loading ``model_path``.
    """

    def __init__(
        self,
        llm: Any = None,
        *,
        model_path: str | os.PathLike[str] | None = None,
        lock: asyncio.Lock | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        n_ctx: int = 4096,
        seed: int = 0,
    ) -> None:
        if llm is None and model_path is None:
            raise ValueError("give a loaded Llama or a model_path")
        self._llm = llm
        self._model_path = Path(model_path) if model_path is not None else None
        self._lock = lock or asyncio.Lock()
        self._load_lock = asyncio.Lock()
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._n_ctx = n_ctx
        self._seed = seed
        self._formatter: Any = None
        self._grammars: dict[str, Any] = {}

    @classmethod
    async def from_planner(cls, planner: Any, **kwargs: Any) -> LlamaCppResponseModel:
        """Share a :class:`~pocketpilot.harness.planners.LlamaCppPlanner`'s loaded model and lock.

        One model in RAM instead of two; generations of planner and simulator take turns.
        """
        await planner.load()
        # The planner keeps its Llama and lock private; sharing them is the point of this method.
        return cls(planner._llm, lock=planner._gen_lock, **kwargs)

    async def _ensure_loaded(self) -> Any:
        async with self._load_lock:
            if self._llm is None:
                self._llm = await asyncio.shield(asyncio.to_thread(self._load_sync))
        return self._llm

    def _load_sync(self) -> Any:
        from llama_cpp import Llama

        assert self._model_path is not None
        try:
            return Llama(
                model_path=os.fspath(self._model_path),
                n_ctx=self._n_ctx,
                n_threads=max(1, os.cpu_count() or 1),
                seed=self._seed,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise SimulationBackendError(f"cannot load {self._model_path}: {exc}") from exc

    def _format(self, llm: Any, messages: Sequence[dict[str, str]]) -> str:
        if self._formatter is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            template = llm.metadata.get("tokenizer.chat_template")
            if not template:
                raise SimulationBackendError(
                    "the simulation model has no chat template; use an instruct model"
                )
            eos, bos = llm.token_eos(), llm.token_bos()
            self._formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
                bos_token=llm._model.token_get_text(bos) if bos != -1 else "",
            )
        return str(self._formatter(messages=list(messages)).prompt)

    def _grammar(self, llm: Any, schema: dict[str, Any]) -> Any:
        import llama_cpp
        from llama_cpp.llama_grammar import LlamaGrammar

        key = digest(schema)
        grammar = self._grammars.get(key)
        if grammar is not None:
            return grammar
        try:
            grammar = LlamaGrammar.from_json_schema(json.dumps(grammar_friendly(schema)), verbose=False)
        except (ValueError, RuntimeError, AssertionError, KeyError) as exc:
            raise SimulationBackendError(f"cannot build a grammar from the result schema: {exc}") from exc
        # Parse it in llama.cpp now: a grammar rejected at sampling time crashes the process.
        ptr = llama_cpp.llama_sampler_init_grammar(
            llm._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not ptr:
            raise SimulationBackendError("llama.cpp rejected the grammar of this result schema; simplify it")
        llama_cpp.llama_sampler_free(ptr)
        self._grammars[key] = grammar
        return grammar

    async def generate(self, messages: Sequence[dict[str, str]], schema: dict[str, Any]) -> str:
        """Grammar-constrained completion of the chat ``messages``; the thread is never orphaned."""
        llm = await self._ensure_loaded()
        grammar = self._grammar(llm, schema)
        prompt = self._format(llm, messages)
        stop = threading.Event()
        async with self._lock:
            fut = asyncio.ensure_future(asyncio.to_thread(self._complete_sync, llm, prompt, grammar, stop))
            try:
                return await asyncio.shield(fut)
            except asyncio.CancelledError:
                stop.set()  # polled between tokens
                await asyncio.wait({fut})
                raise

    def _complete_sync(self, llm: Any, prompt: str, grammar: Any, stop: threading.Event) -> str:
        from llama_cpp import StoppingCriteriaList

        out = llm.create_completion(
            prompt,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            grammar=grammar,
            stopping_criteria=StoppingCriteriaList([lambda _ids, _logits: stop.is_set()]),
        )
        choice = out["choices"][0]
        logger.debug("simulated output (%s): %.200s", choice.get("finish_reason"), choice["text"])
        return str(choice["text"])
