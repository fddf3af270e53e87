"""An in-process GGUF planner on llama.cpp with grammar-constrained decoding.

Design notes (FACTS.md has the measurements):
- The grammar is built with ``LlamaGrammar.from_json_schema``, which raises on a schema it
  cannot convert; ``response_format`` silently ignores json_schema, so it is never used.
- One ``Llama`` keeps the KV cache of its last prompt only, so the harness puts the stable
  prefix first and this class feeds the model's own raw output back verbatim as the
  assistant turn: step k then evaluates only the tokens added since step k-1.
- Generation runs in a worker thread that is never orphaned: cancelling sets a flag checked
  between tokens and waits for the thread to stop before re-raising.
- Each step records the prompt tokens evaluated, the generated token ids and their
  log-probs under the model (the behaviour policy an RL trainer needs), and the sampler.
- The stable prefix (the system message) is always evaluated on its own, then the rest: the
  KV state at that boundary is saved to disk (``PrefixCache``) and a new process restores it
  instead of evaluating the prefix again. Splitting the same way whether the prefix was
  restored or evaluated keeps greedy output identical either way; the split point is in the
  trace.
- Every prompt is evaluated in batches aligned to multiples of ``n_batch`` (absolute
  positions), its last token alone, so the split does not depend on where the cache ended. With
  ``reproducible=True`` only the stable prefix is reused from the cache: the evaluation order
  then depends on the prompt alone, and greedy output is reproducible from a trace.
- The constraint engine is llguidance when it is installed (``constraint="llguidance"``):
  tokens the grammar forces are evaluated in batches (``fast_forward``), verified against
  greedy choice (see :mod:`.fast_forward`), no wider than the batches that compute what a
  one-token pass computes (see :mod:`.numerics`). ``constraint="gbnf"`` is llama.cpp's own grammar
  sampler, one token per pass. Both decode compact JSON (no optional whitespace), so the two
  accept the same language.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from ...contracts import EvalSettings, PlannerInfo, PlannerTurn, SamplerSettings, digest
from ...errors import ModelIntegrityError, PlannerBackendError, PlannerOutputError, UsageError
from ...models.files import cached_sha256, quant_type_name
from ...models.store import ModelStore, check_gguf_header
from ..action_schema import action_json_schema, choice_json_schema, fill_json_schema, parse_action
from ..base import PlannerOutput, PlanRequest
from . import decoding, numerics, vocabulary
from . import fast_forward as ff
from . import phases as ph
from .kv_contexts import KvContexts, fork_context
from .kv_snapshots import KvSnapshots
from .kv_snapshots import common_prefix as _common
from .prefix_cache import PrefixCache, PrefixKey

__all__ = ["LlamaCppPlanner", "aligned_batches", "llguidance_available"]

logger = logging.getLogger(__name__)

def llguidance_available() -> bool:
    """Whether the llguidance constraint engine (and so fast-forward) can be used here."""
    try:
        import llguidance  # noqa: F401
        import llguidance.llamacpp  # noqa: F401
    except ImportError:
        return False
    return True


def aligned_batches(start: int, end: int, n_batch: int) -> list[tuple[int, int]]:
    """Batches ``[a, b)`` covering ``[start, end)`` that never cross a multiple of ``n_batch``.

    A token's batch then depends on its position, not on where evaluation began, except for
    the first batch; with only the stable prefix reused that start is fixed by the prompt.
    """
    out = []
    a = start
    while a < end:
        b = min(end, (a // n_batch + 1) * n_batch)
        out.append((a, b))
        a = b
    return out


class LlamaCppPlanner:
    """Planner backed by llama-cpp-python; construct cheaply, the model loads on first use.

    Args:
        model_path: a catalogue name or alias (``"default"``, ``"qwen2.5-coder-0.5b"``), found
            in the model store as the CLI's ``--model`` does (the cache differs by system), or
            a path to a GGUF file (``~`` expands).
        model_store: where catalogue names are looked up (default: the user cache).

    Raises:
        ModelNotInstalledError: a catalogue model that is not pulled yet (the message says how).
        UnknownModelError: neither a file nor a catalogue name.
        ModelIntegrityError: the file is missing or not GGUF.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        sampler: SamplerSettings | None = None,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        n_batch: int = 512,
        lora_path: str | os.PathLike[str] | None = None,
        sha256: str | None = None,
        quant_type: str | None = None,
        verbose: bool = False,
        prefix_cache: PrefixCache | None | bool = True,
        model_store: ModelStore | None = None,
        n_ubatch: int | None = None,
        constraint: Literal["gbnf", "llguidance"] | None = None,
        fast_forward: bool | None = None,
        reproducible: bool = False,
        repack: bool = False,
        think_tokens: int = 0,
        choose_then_fill: bool = False,
        flash_attn: bool = False,
        kv_type: str = "f16",
        contexts: int = 1,
    ) -> None:
        """``prefix_cache``: True for the default cache under ``$POCKETPILOT_HOME``, a
        :class:`PrefixCache`, or False/None to keep prefix states in memory only.

        ``constraint``: None picks llguidance when installed, else llama.cpp's GBNF sampler.
        ``fast_forward`` (llguidance only) evaluates grammar-forced tokens as one batch. None
        (the default) turns it on where batches of forced tokens compute what one-token passes
        compute (see :mod:`.numerics`), so greedy output is token for token one-by-one
        decoding's; elsewhere a batch's logits differ in the last bits, which flips greedy
        choices at near ties, and True still turns it on.
        ``reproducible`` reuses only the stable prefix from the KV cache, so every prompt is
        evaluated in the same order whatever ran before (slower steps on long histories).
        ``repack`` interleaves the weights at load for llama.cpp's faster K-quant kernels:
        a slower load, faster decoding, and batches no longer match one-token passes.
        ``think_tokens`` > 0: think, then act, a reasoning line of at most that many tokens
        before the action (within ``max_tokens``); ``choose_then_fill``: a tool call decoded as
        its tools, then their arguments (see :mod:`.phases`; both off: one decode, as before).
        ``flash_attn`` and ``kv_type`` (``f16``, ``q8_0``, ``q4_0``; quantized needs flash
        attention): llama.cpp's attention kernels and KV cache type, cheaper deep in a long
        context; greedy output can differ from the defaults'.
        ``contexts``: the most llama.cpp contexts kept over the loaded weights, one per
        conversation in flight (see :mod:`.kv_contexts`); 1 keeps one context and swaps other
        conversations' sequences through snapshots. Each adds its KV cache (``n_ctx`` tokens).
        """
        if contexts < 1:
            raise UsageError(f"contexts must be at least 1, not {contexts}")
        if constraint is None:
            constraint = "llguidance" if llguidance_available() else "gbnf"
        if constraint not in ("gbnf", "llguidance"):
            raise UsageError(f"constraint must be 'gbnf' or 'llguidance', not {constraint!r}")
        if constraint == "llguidance" and not llguidance_available():
            raise UsageError("constraint='llguidance' needs the llguidance package (pip install 'pocketpilot[fast]')")
        self.constraint: Literal["gbnf", "llguidance"] = constraint
        self.repack = repack
        self.batch_invariant = numerics.batch_invariant(repack=repack)
        """Whether batches of up to ``numerics.INVARIANT_BATCH`` tokens compute what one-token passes do."""
        if fast_forward is None:
            fast_forward = self.batch_invariant
        self.fast_forward = fast_forward and constraint == "llguidance"
        self.reproducible = reproducible
        path = Path(model_path).expanduser()
        if not path.is_file():
            # a name, or a path that is not there (the store says which, with the right error)
            path, entry = (model_store or ModelStore()).resolve(os.fspath(model_path))
            if entry is not None:
                sha256 = sha256 or entry.sha256
                quant_type = quant_type or entry.quant_type
        self.model_path = path
        check_gguf_header(self.model_path)
        self.sampler = sampler or SamplerSettings()
        self._kwargs: dict[str, Any] = {
            "n_ctx": n_ctx,
            "n_threads": n_threads or max(1, os.cpu_count() or 1),
            "n_batch": n_batch,
            "n_ubatch": n_ubatch or n_batch,
            "verbose": verbose,
            "seed": self.sampler.seed,
        }
        if lora_path is not None:
            self._kwargs["lora_path"] = os.fspath(lora_path)
        if kv_type not in numerics.KV_TYPES:
            raise UsageError(f"kv_type must be one of {', '.join(numerics.KV_TYPES)}, not {kv_type!r}")
        if kv_type != "f16" and not flash_attn:
            raise UsageError(f"kv_type={kv_type} needs flash_attn (llama.cpp quantizes the V cache only under it)")
        if flash_attn:
            self._kwargs["flash_attn"] = True
        if kv_type != "f16":
            self._kwargs["type_k"] = self._kwargs["type_v"] = numerics.KV_TYPES[kv_type]
        self.flash_attn, self.kv_type = flash_attn, kv_type
        ph.check_think_budget(think_tokens, self.sampler.max_tokens, n_ctx)
        self.think_tokens = think_tokens
        """Think, then act: the most tokens of reasoning before the action (0: off); checked each step."""
        self.choose_then_fill = choose_then_fill
        """Choose, then fill: a tool call's tools, then their arguments, in two decodes."""
        self._thought_grammars: dict[str, Any] = {}
        self._sha256 = sha256
        self._quant = quant_type
        self._llm: Any = None
        self._formatter: Any = None
        self._grammars: dict[str, Any] = {}
        self._llg_grammars: dict[str, str] = {}
        self._llg_tokenizer: Any = None
        self._llg_building: concurrent.futures.Future[Any] | None = None
        """The tokenizer being built in its own thread (started when the model loads, awaited
        where decoding starts)."""
        self._splits = ff.SplitMemo()
        """How this model split grammar-forced bytes before: the next fast-forward draft."""
        self._load_lock = asyncio.Lock()
        self._gen_lock = asyncio.Lock()
        self.last_schema: dict[str, Any] | None = None
        self.prefix_cache: PrefixCache | None = (
            PrefixCache() if prefix_cache is True else prefix_cache if isinstance(prefix_cache, PrefixCache) else None
        )
        self._prefix_texts: dict[str, str] = {}
        self._stop_now: threading.Event | None = None
        self._snapshots = KvSnapshots()
        """Other conversations' KV sequences, while this one's is live (several sessions, one model)."""
        self.max_contexts = contexts
        self._contexts: KvContexts | None = None
        """The resident contexts over the loaded weights (made with the model)."""

    # ------------------------------------------------------------------ identity

    @property
    def info(self) -> PlannerInfo:
        """Model file, sha256, quantization and sampler (sha256 is filled once the model loads)."""
        return PlannerInfo(
            backend="llama.cpp",
            model=self.model_path.name,
            model_sha256=self._sha256,
            quant_type=self._quant,
            sampler=self.sampler,
            adapter=self._kwargs.get("lora_path"),
            output_mode="grammar",
            eval=self.eval_settings,
        )

    @property
    def eval_settings(self) -> EvalSettings:
        """The settings greedy output depends on."""
        import llama_cpp

        return EvalSettings(
            n_ctx=self._kwargs["n_ctx"],
            n_threads=self._kwargs["n_threads"],
            n_batch=self._kwargs["n_batch"],
            n_ubatch=self._kwargs["n_ubatch"],
            llama_cpp_version=llama_cpp.__version__,
            constraint=self.constraint,
            fast_forward=self.fast_forward,
            reproducible=self.reproducible,
            repack=self.repack,
            batch_invariant=self.batch_invariant,
            flash_attn=self.flash_attn,
            kv_type=self.kv_type,
            think_tokens=self.think_tokens,
            choose_then_fill=self.choose_then_fill,
        )

    def count_tokens(self, text: str) -> int:
        """Exact count once loaded; before that about 3.5 characters a token."""
        if self._llm is None:
            return max(1, int(len(text) / 3.5))
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    # ------------------------------------------------------------------ loading

    async def load(self) -> None:
        """Load the model off the event loop (idempotent); plan() calls it on first use."""
        async with self._load_lock:
            if self._llm is None:
                await asyncio.shield(asyncio.to_thread(self._load_sync))

    def _load_sync(self) -> None:
        t0 = time.monotonic()
        llm, formatter = self._open_sync(self.model_path, self._kwargs, repack=self.repack)
        self._formatter = formatter
        if self._quant is None:
            self._quant = quant_type_name(llm.metadata)
        if self._sha256 is None:
            self._sha256 = cached_sha256(self.model_path)
        self._llm = llm
        self._contexts = self._context_pool(llm)
        logger.info("loaded %s (%s) in %.1fs", self.model_path.name, self._quant, time.monotonic() - t0)

    @staticmethod
    def _open_sync(model_path: Path, kwargs: dict[str, Any], *, repack: bool) -> tuple[Any, Any]:
        """A loaded ``Llama`` and its chat formatter, or a typed error (shared by load and swap)."""
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        try:
            with numerics.weights_in_place(not repack):
                llm = Llama(model_path=os.fspath(model_path), **kwargs)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelIntegrityError(str(model_path), f"llama.cpp could not load it: {exc}") from exc
        trained = llm._model.n_ctx_train()
        if trained and kwargs["n_ctx"] > trained:
            llm.close()
            raise UsageError(f"n_ctx={kwargs['n_ctx']} exceeds what {model_path.name} was trained for ({trained})")
        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            llm.close()
            raise PlannerBackendError(f"{model_path.name} has no chat template; use an instruct model")
        eos_id, bos_id = llm.token_eos(), llm.token_bos()
        formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=llm._model.token_get_text(eos_id) if eos_id != -1 else "",
            bos_token=llm._model.token_get_text(bos_id) if bos_id != -1 else "",
        )
        return llm, formatter

    async def swap_model(
        self,
        model_path: str | os.PathLike[str],
        *,
        lora_path: str | os.PathLike[str] | None = None,
        sha256: str | None = None,
        quant_type: str | None = None,
    ) -> None:
        """Replace the model (and LoRA) between steps: a checkpoint promotion or rollback.

        The new model loads off the event loop while the current one keeps serving; only the
        pointer exchange happens under the generation lock, so a swap never interleaves with a
        generation in flight. If the new files fail to load, nothing changes and the error
        (ModelIntegrityError or PlannerBackendError) propagates.
        """
        new_path = Path(model_path).expanduser()  # noqa: ASYNC240 - no I/O: expands ~ from the environment
        check_gguf_header(new_path)
        kwargs = dict(self._kwargs)
        kwargs.pop("lora_path", None)
        if lora_path is not None:
            kwargs["lora_path"] = os.fspath(lora_path)
        async with self._load_lock:  # one load or swap at a time
            fut = asyncio.ensure_future(asyncio.to_thread(self._open_sync, new_path, kwargs, repack=self.repack))
            try:
                llm, formatter = await asyncio.shield(fut)
            except asyncio.CancelledError:
                await asyncio.wait({fut})  # never orphan the loading thread or the model it made
                if not fut.cancelled() and fut.exception() is None:
                    await asyncio.to_thread(fut.result()[0].close)
                raise
            async with self._gen_lock:
                await self._tokenizer_built()  # it reads the old model's vocabulary in place
                old = self._llm
                if self._contexts is not None:
                    self._contexts.close()  # the old model's other contexts go before it
                self._snapshots.close()  # sequences of the old weights are no KV of the new ones
                self._llm, self._formatter, self._kwargs = llm, formatter, kwargs
                self._contexts = self._context_pool(llm)
                self.model_path = new_path
                self._sha256, self._quant = sha256, quant_type or quant_type_name(llm.metadata)
                self._grammars.clear()  # grammars were checked against the previous vocabulary
                self._llg_grammars.clear()
                self._splits = ff.SplitMemo()
                self._llg_tokenizer = None  # built for the new vocabulary on first use
            if self._sha256 is None:
                self._sha256 = await asyncio.to_thread(cached_sha256, new_path)
            if old is not None:
                await asyncio.to_thread(old.close)
        logger.info("swapped in %s%s", new_path.name, f" + {Path(lora_path).name}" if lora_path else "")

    # ------------------------------------------------------------------ planning

    def render(self, request: PlanRequest) -> str:
        """The prompt text for a request (the model's own chat template)."""
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        return str(self._formatter(messages=messages).prompt)

    def _grammar(self, schema: dict[str, Any]) -> Any:
        from llama_cpp import LlamaGrammar

        key = digest(schema)
        grammar = self._grammars.get(key)
        if grammar is None:
            try:
                grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
                grammar = _compact(grammar)
            except (ValueError, RuntimeError, AssertionError) as exc:
                raise PlannerBackendError(f"cannot build a grammar from the action schema: {exc}") from exc
            self._check_grammar(grammar)
            if len(self._grammars) > 32:
                self._grammars.clear()
            self._grammars[key] = grammar
        return grammar

    def _check_grammar(self, grammar: Any) -> None:
        """Parse the grammar in llama.cpp before sampling with it.

        llama-cpp-python builds its sampler from a grammar only at generation time, and a
        grammar llama.cpp rejects there (an unsupported escape, a repetition past its limits)
        crashes the process. Parsing it here turns that into a typed error.
        """
        import llama_cpp

        ptr = llama_cpp.llama_sampler_init_grammar(
            self._llm._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not ptr:
            raise PlannerBackendError(
                "llama.cpp rejected the action grammar generated for this step's tools "
                "(see its 'parse:' message on stderr); simplify the offending tool schema"
            )
        llama_cpp.llama_sampler_free(ptr)

    def _llg_grammar(self, schema: dict[str, Any]) -> str:
        """The llguidance grammar of a step's schema: compact JSON, keys in the GBNF order."""
        import llguidance

        key = digest(schema)
        grammar = self._llg_grammars.get(key)
        if grammar is None:
            grammar = llguidance.LLMatcher.grammar_from_json_schema(
                ff.compact_schema(schema), defaults={"whitespace_flexible": False}
            )
            # checked early once the tokenizer is there; before that, starting the matcher checks it
            error = self._llg_tokenizer and llguidance.LLMatcher.validate_grammar(grammar, self._llg_tokenizer)
            if error:
                raise PlannerBackendError(f"llguidance rejected the action grammar generated for this step's tools: {error}")
            if len(self._llg_grammars) > 32:
                self._llg_grammars.clear()
                self._splits = ff.SplitMemo()
            self._llg_grammars[key] = grammar
        return grammar

    def _prepared(self, request: PlanRequest) -> tuple[PlanRequest, dict[str, Any], Any]:
        """The request as decoded (the phases' format lines added), its action schema and grammar."""
        if self.think_tokens or self.choose_then_fill:  # the phases' format lines in the system message
            request = request.model_copy(update={"messages": ph.with_rules(
                request.messages, think=self.think_tokens > 0, choose=self.choose_then_fill)})
        # llguidance compiles length bounds into its lexer: an over-long summary or argument is
        # then unreachable instead of rejected after decoding (and written again on retry)
        schema = action_json_schema(request.tools, request.kinds, request.skills, request.batch_groups,
                                    lengths=self.constraint == "llguidance", answers=request.answers)
        grammar = self._grammar(schema) if self.constraint == "gbnf" else self._llg_grammar(schema)
        return request, schema, grammar

    def decode_identity(self, request: PlanRequest) -> dict[str, Any] | None:
        """What a decode of ``request`` reads besides the request, for the decode memo
        (:mod:`.decode_memo`); None where this planner cannot vouch its output is a function of it.

        It vouches only for greedy decoding (a sample may rightly differ) of loaded weights with a
        known sha256, and only where evaluation is exact: ``reproducible`` (the prompt alone fixes
        the evaluation order), or small batches bit-identical to one-token passes
        (``batch_invariant``: fast-forward's batches change nothing). In the second case a prompt's
        evaluation still starts where the KV cache left off, so a near tie could in principle fall
        otherwise after another prompt; reruns of untouched tasks repeated the baseline's actions
        where the ablation checked, and ``reproducible`` removes the case. The identity: the
        weights' and a LoRA's sha256, the sampler, the evaluation settings and llama.cpp's build,
        the rendered prompt and its stable prefix, the action schema and the grammar's text.
        """
        if (self.sampler.temperature != 0 or self._llm is None or not self._sha256
                or not (self.reproducible or self.batch_invariant)):
            return None
        request, schema, grammar = self._prepared(request)
        text = grammar if isinstance(grammar, str) else grammar._grammar
        lora = self._kwargs.get("lora_path")
        return {
            "backend": "llama.cpp",
            "model_sha256": self._sha256,
            "lora_sha256": cached_sha256(Path(lora)) if lora else None,
            "sampler": self.sampler.model_dump(mode="json"),
            "eval": self.eval_settings.model_dump(mode="json"),
            "build": numerics.build_id(repack=self.repack, flash_attn=self.flash_attn, kv_type=self.kv_type),
            "prompt": self.render(request),
            "prefix": self._prefix_text(request),
            "schema": digest(schema),
            "grammar": digest(text),
        }

    async def plan(self, request: PlanRequest) -> PlannerOutput:
        """One grammar-constrained action; raises PlannerOutputError when the output is cut or invalid."""
        await self.load()
        request, schema, grammar = self._prepared(request)
        self.last_schema = schema
        grammar = self._phased(request, schema, grammar)
        prompt = self.render(request)
        prefix = self._prefix_text(request)
        stop = threading.Event()
        async with self._gen_lock:
            fut = asyncio.ensure_future(asyncio.to_thread(self._generate_sync, prompt, grammar, stop, prefix))
            try:
                turn = await asyncio.shield(fut)
            except asyncio.CancelledError:
                stop.set()  # stop at the next token
                await asyncio.wait({fut})  # a thread cannot be killed; wait before re-raising
                raise
        if turn.finish_reason == "length":
            raise PlannerOutputError(
                turn.raw, f"output cut at max_tokens={self.sampler.max_tokens} before the action was complete", turn
            )
        try:
            action = parse_action(ph.action_text(turn.raw) if turn.phases else turn.raw, request.tools, request.kinds)
        except PlannerOutputError as exc:
            raise PlannerOutputError(turn.raw, exc.reason, turn) from exc
        return PlannerOutput(action=action, turn=turn)

    def _phased(self, request: PlanRequest, schema: dict[str, Any], grammar: Any) -> Any:
        """The action's grammar, or with a phase on, the phased decode built around it (see :mod:`.phases`)."""
        if not (self.think_tokens or self.choose_then_fill):
            return grammar
        ph.check_think_budget(self.think_tokens, self.sampler.max_tokens, self._kwargs["n_ctx"])
        compile_grammar = self._grammar if self.constraint == "gbnf" else self._llg_grammar
        fill: Callable[[list[str]], Any] | None = None
        if self.choose_then_fill:
            choice = choice_json_schema(schema, request.tools, request.batch_groups)
            if choice is not schema:  # a tool call is possible in this step
                grammar = compile_grammar(choice)
                tools, lengths = list(request.tools), self.constraint == "llguidance"

                def fill_grammar(names: list[str]) -> Any:
                    return compile_grammar(fill_json_schema(tools, names, lengths=lengths))

                fill = fill_grammar
        return ph.PhasedDecode(
            think_tokens=self.think_tokens,
            thought_grammar=self._thought_grammar() if self.think_tokens else None,
            action_grammar=grammar,
            fill=fill,
            sampler=self.sampler,
            newline=self._llm.tokenize(b"\n", add_bos=False, special=False),
        )

    def _thought_grammar(self) -> Any:
        """The thought line's grammar in this planner's engine (one per engine, built once)."""
        grammar = self._thought_grammars.get(self.constraint)
        if grammar is None:
            if self.constraint == "gbnf":
                from llama_cpp import LlamaGrammar

                grammar = LlamaGrammar.from_string(ph.THOUGHT_GBNF, verbose=False)
                self._check_grammar(grammar)
            else:
                import llguidance

                grammar = llguidance.LLMatcher.grammar_from_regex(ph.THOUGHT_REGEX)
            self._thought_grammars[self.constraint] = grammar
        return grammar

    def _prefix_text(self, request: PlanRequest) -> str | None:
        """The rendered text of the stable prefix: everything before the first request message.

        Found template-agnostically: two renders that differ only in the request share exactly
        the prefix (the system message and the chat template's opening of the next turn).
        """
        messages = request.messages
        if len(messages) < 2 or messages[0].role != "system":
            return None
        key = digest(messages[0].content)
        text = self._prefix_texts.get(key)
        if text is None:
            system = {"role": "system", "content": messages[0].content}
            a, b = (str(self._formatter(messages=[system, {"role": "user", "content": c}]).prompt) for c in "\x01\x02")
            text = os.path.commonprefix([a, b])
            if len(self._prefix_texts) > 16:
                self._prefix_texts.clear()
            self._prefix_texts[key] = text
        return text

    def _warm_prefix(self, llm: Any, tokens: list[int], prefix_text: str | None) -> tuple[int, str, float, list[int]]:
        """Make the KV cache hold the prompt's stable prefix: (its length, how, seconds, batch starts).

        How: ``warm`` (already there), ``restored`` (from the disk cache) or ``evaluated`` (and
        saved for the next process).
        """
        if not prefix_text:
            return 0, "none", 0.0, []
        prefix_tokens = llm.tokenize(prefix_text.encode("utf-8"), add_bos=False, special=True)
        n = _common(prefix_tokens, tokens)
        n = min(n, len(tokens) - 1)  # generate needs at least one token of its own to evaluate
        if n <= 0:
            return 0, "none", 0.0, []
        prefix = tokens[:n]
        have = _common(llm._input_ids[: llm.n_tokens], prefix)
        if have >= n:
            return n, "warm", 0.0, []
        if self.reproducible:
            have = 0  # a partly cached prefix would split its evaluation somewhere else
        t0 = time.monotonic()
        key = None
        if self.prefix_cache is not None and self._sha256:
            build = numerics.build_id(repack=self.repack, flash_attn=self.flash_attn, kv_type=self.kv_type)
            key = PrefixKey.of(self._sha256, llm.n_ctx(), llm.n_batch, build, prefix)
            payload = self.prefix_cache.load(key)
            if payload is not None and _restore(llm, payload, prefix):
                return n, "restored", time.monotonic() - t0, []
        llm.n_tokens = have  # keep what is shared, evaluate the rest of the prefix on its own
        splits = _eval_aligned(llm, prefix, have)
        if key is not None:
            try:
                self.prefix_cache.save(key, _dump(llm))  # type: ignore[union-attr]
            except OSError as exc:
                logger.warning("could not save the prefix state: %s", exc)
        return n, "evaluated", time.monotonic() - t0, splits

    def _context_pool(self, llm: Any) -> KvContexts:
        return KvContexts(
            llm, self.max_contexts, self._snapshots,
            tokens=lambda c: c.input_ids[: c.n_tokens].tolist(), dump=_dump,
            load=_restore, fork=lambda: fork_context(llm), close=lambda c: c.close(),
        )

    def _generate_sync(self, prompt: str, grammar: Any, stop: threading.Event,
                       prefix_text: str | None = None) -> PlannerTurn:
        """One generation; ``stop`` also aborts prompt processing mid-batch (llama.cpp's abort callback)."""
        llm = self._llm
        tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        if len(tokens) + self.sampler.max_tokens > llm.n_ctx():
            raise PlannerBackendError(
                f"prompt of {len(tokens)} tokens plus max_tokens={self.sampler.max_tokens} does not fit"
                f" n_ctx={llm.n_ctx()} (raise n_ctx, e.g. --n-ctx 16384)"
            )
        if not self.reproducible and self._contexts is not None:
            # the context whose sequence this prompt continues (another conversation's stays resident)
            llm = self._contexts.acquire(tokens)
        self._install_abort(llm)
        self._stop_now = stop
        t0 = time.monotonic()
        try:
            return self._generate_inner(llm, tokens, grammar, stop, prefix_text)
        except RuntimeError as exc:
            if not stop.is_set():
                raise PlannerBackendError(f"llama.cpp failed: {exc}") from exc
            # aborted inside llama_decode: the KV cache may hold part of a batch; start clean
            import llama_cpp

            llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llm._ctx.ctx), True)
            llm.n_tokens = 0
            return PlannerTurn(raw="", finish_reason="cancelled", latency_s=time.monotonic() - t0)
        finally:
            self._stop_now = None

    def _install_abort(self, llm: Any) -> None:
        """Let a cancelled step stop prompt processing, not only sampling (checked per graph node)."""
        if getattr(llm, "_pp_abort", None) is not None:
            return
        import llama_cpp

        def aborted(_data: Any) -> bool:
            stop = self._stop_now
            return stop is not None and stop.is_set()

        callback = llama_cpp.ggml_abort_callback(aborted)
        llama_cpp.llama_set_abort_callback(llm._ctx.ctx, callback, None)
        llm._pp_abort = callback  # kept alive as long as the context that calls it

    def _generate_inner(self, llm: Any, tokens: list[int], grammar: Any, stop: threading.Event,
                        prefix_text: str | None) -> PlannerTurn:
        if self.constraint == "llguidance" and self._llg_tokenizer is None and self._llg_building is None:
            self._llg_building = self._build_tokenizer()  # see _build_tokenizer: built while the prompt evaluates
        before = _common(llm._input_ids[: llm.n_tokens], tokens[:-1])
        prefix_n, prefix_how, prefix_s, splits = self._warm_prefix(llm, tokens, prefix_text)
        keep = _common(llm._input_ids[: llm.n_tokens], tokens[:-1])
        if self.reproducible:
            keep = min(keep, prefix_n)
            before = min(before, prefix_n) if prefix_how == "warm" else 0
        cached = max(before, prefix_n) if prefix_how == "restored" else before
        # restoring replaced the cache; a reproducible evaluation of the prefix starts from 0
        reused = 0 if prefix_how == "restored" or (prefix_how == "evaluated" and self.reproducible) else before
        t0 = time.monotonic()
        llm.n_tokens = keep
        splits += _eval_aligned(llm, tokens[:-1], keep)
        t_decode = time.monotonic()
        thought, phases = None, []
        if isinstance(grammar, ph.PhasedDecode):
            result, phases, thought = grammar.decode(
                llm, tokens, stop, self._decode_phase, lambda ids: llm.detokenize(ids).decode("utf-8", errors="replace"))
        elif self.constraint == "gbnf":
            result = self._decode_gbnf(llm, tokens, grammar, stop)
        else:
            result = self._decode_llg(llm, tokens[-1], grammar, stop)
        raw = llm.detokenize(result.ids).decode("utf-8", errors="replace")
        end = time.monotonic()
        return PlannerTurn(
            raw=raw,
            prefix_tokens=prefix_n,
            prefix=prefix_how,
            prefix_s=prefix_s,
            prompt_tokens=len(tokens),
            prompt_tokens_evaluated=len(tokens) - cached,
            kv_reused=reused,
            eval_splits=[*splits, len(tokens) - 1],
            completion_tokens=len(result.ids),
            forced_tokens=result.forced_tokens,
            forced_rejected=result.forced_rejected,
            decode_passes=result.passes,
            decode_s=end - t_decode,
            constraint_s=result.constraint_s,
            token_ids=result.ids,
            token_logprobs=result.logprobs,
            finish_reason=result.finish,
            latency_s=end - t0,
            thought=thought,
            phases=phases,
        )

    def _decode_gbnf(self, llm: Any, tokens: list[int], grammar: Any, stop: threading.Event) -> ff.DecodeResult:
        return decoding.decode_gbnf(llm, tokens, grammar, self.sampler, stop)

    def _decode_llg(self, llm: Any, first: int, grammar: str, stop: threading.Event) -> ff.DecodeResult:
        return decoding.decode_llg(
            llm, first, grammar, self._tokenizer_sync(), self.sampler, stop,
            fast_forward=self.fast_forward, batch_invariant=self.batch_invariant, splits=self._splits,
        )

    def _decode_phase(self, llm: Any, context: list[int], grammar: Any, sampler: SamplerSettings,
                      stop: threading.Event) -> ff.DecodeResult:
        """One decode of a phased turn; the KV cache holds all of ``context`` but its last token."""
        if self.constraint == "gbnf":
            return decoding.decode_gbnf(llm, context, grammar, sampler, stop)
        return decoding.decode_llg(
            llm, context[-1], grammar, self._tokenizer_sync(), sampler, stop,
            fast_forward=self.fast_forward, batch_invariant=self.batch_invariant, splits=self._splits,
        )

    def _tokenizer_sync(self) -> Any:
        """llguidance's tokenizer, waiting here (after the prompt is evaluated) for its build."""
        if self._llg_tokenizer is None:
            building = self._llg_building
            try:
                self._llg_tokenizer = (building or self._build_tokenizer()).result()
            finally:
                self._llg_building = None
        return self._llg_tokenizer

    def _build_tokenizer(self) -> concurrent.futures.Future[Any]:
        """llguidance's tokenizer for the loaded model, built in a thread of its own (the
        vocabulary's pieces come from the prefix cache's directory when it has them).

        It is started by the first generation, just before the prompt is restored and
        evaluated, not by the load: the build holds the GIL throughout (llguidance's Rust
        constructor does not release it, nor does reading the pieces in Python), so started
        with the load it stalled whatever the caller did in Python before the first step,
        while llama.cpp's prompt evaluation runs in C without the GIL and overlaps it.
        """
        return _in_thread(vocabulary.lltokenizer, self._llm, self.prefix_cache, self._sha256)

    async def _tokenizer_built(self) -> None:
        """Wait for a vocabulary read still in flight (freeing the model under it crashes)."""
        building, self._llg_building = self._llg_building, None
        if building is not None:
            await asyncio.wait({asyncio.wrap_future(building)})

    async def forget(self) -> None:
        """Drop every KV state held in memory: resident sequences, forked contexts, snapshots.

        The next request evaluates its prompt as a new process's first would (the disk prefix
        cache, if any, stays). Why: two runs compared on one planner must each pay for their own
        prompt, not reuse what the run before them left in the cache.
        """
        async with self._gen_lock:
            llm = self._llm
            if llm is None:
                return
            contexts = self._contexts

            def clear() -> None:
                import llama_cpp

                if contexts is not None:
                    contexts.close()
                self._snapshots.close()
                llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llm._ctx.ctx), True)
                llm.n_tokens = 0

            await asyncio.to_thread(clear)

    async def aclose(self) -> None:
        """Free the model (waits for any generation or vocabulary read in flight)."""
        async with self._gen_lock:
            await self._tokenizer_built()
            llm, self._llm = self._llm, None
            contexts, self._contexts = self._contexts, None
            if contexts is not None:
                await asyncio.to_thread(contexts.close)
            self._snapshots.close()
            if llm is not None:
                await asyncio.to_thread(llm.close)


def _eval_aligned(llm: Any, tokens: list[int], start: int) -> list[int]:
    """Evaluate ``tokens[start:]`` (``llm.n_tokens == start``) in position-aligned batches; their starts."""
    splits = []
    for a, b in aligned_batches(start, len(tokens), llm.n_batch):
        llm.eval(tokens[a:b])
        splits.append(a)
    return splits


def _compact(grammar: Any) -> Any:
    """The same grammar without optional whitespace between JSON tokens.

    With ``" "?`` after every key and separator nothing past a colon is forced; compact JSON
    is also what the prompt's action examples show.
    """
    from llama_cpp import LlamaGrammar

    text = grammar._grammar.replace('space ::= " "?', 'space ::= ""')
    return LlamaGrammar.from_string(text, verbose=False)


def _in_thread(fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
    """``fn(*args)`` in a thread of its own, awaitable from any event loop (or none)."""
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def run() -> None:
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever awaits it
            future.set_exception(exc)

    threading.Thread(target=run, name="pocketpilot-llg-vocab", daemon=True).start()
    return future


def _dump(llm: Any) -> memoryview:
    """The KV state of sequence 0 (only its used cells), not copied again."""
    import llama_cpp

    ctx = llm._ctx.ctx
    size = llama_cpp.llama_state_seq_get_size(ctx, 0)
    buf = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data(ctx, buf, size, 0)
    return memoryview(buf)[:written]


def _restore(llm: Any, payload: bytes | bytearray, prefix: list[int]) -> bool:
    """Load a saved prefix state into sequence 0 and tell ``Llama`` which tokens it holds.

    A writable ``payload`` (what the caches read) is handed to llama.cpp in place.
    """
    import llama_cpp

    ctx = llm._ctx.ctx
    memory = llama_cpp.llama_get_memory(ctx)
    llama_cpp.llama_memory_clear(memory, True)
    kind = ctypes.c_uint8 * len(payload)
    buf = kind.from_buffer(payload) if isinstance(payload, bytearray) else kind.from_buffer_copy(payload)
    if llama_cpp.llama_state_seq_set_data(ctx, buf, len(payload), 0) != len(payload):
        llama_cpp.llama_memory_clear(memory, True)
        llm.n_tokens = 0
        logger.warning("llama.cpp refused a saved prefix state; evaluating the prefix")
        return False
    llm.input_ids[: len(prefix)] = prefix
    llm.n_tokens = len(prefix)
    llm._requires_eval = True  # logits were not produced by a live decode
    return True
