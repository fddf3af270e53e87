"""llguidance's view of a model's vocabulary, its token pieces read once per model file.

llguidance needs the bytes of every token. llama.cpp gives them one Python call per token
(151k for Qwen), over a second of a core held under the GIL, and the build runs beside the
first step's prompt evaluation, so that evaluation gets one core instead of two. The pieces
depend only on the model file and llama.cpp's build, so they are read once and kept with the
prefix states: same cache, same key and checksum checks, same ``pocketpilot cache clear``. A
file that fails any check is ignored and the pieces are read again; a few pieces are also
compared with the live model before a saved file is trusted.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import numerics
from .prefix_cache import PrefixCache

__all__ = ["VocabKey", "Vocabulary", "lltokenizer", "read_vocabulary"]

logger = logging.getLogger(__name__)

_SPOT_CHECKS = 64


@dataclass(frozen=True)
class VocabKey:
    """What a model's token pieces depend on."""

    model_sha256: str
    build: str
    n_vocab: int

    @property
    def name(self) -> str:
        """The vocabulary's file name: a digest of every field of the key."""
        blob = json.dumps(self.__dict__, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:32] + ".vocab"


@dataclass(frozen=True)
class Vocabulary:
    """Every token's bytes (special tokens prefixed with 0xff, llguidance's convention) and the end tokens."""

    pieces: list[bytes]
    eog: list[int]

    def to_bytes(self) -> bytes:
        """A JSON head, the pieces' lengths, then the pieces: what :meth:`from_bytes` reads back."""
        lengths = np.fromiter((len(p) for p in self.pieces), dtype="<u4", count=len(self.pieces))
        head = json.dumps({"n": len(self.pieces), "eog": self.eog}).encode() + b"\n"
        return head + lengths.tobytes() + b"".join(self.pieces)

    @classmethod
    def from_bytes(cls, payload: bytes | bytearray) -> Vocabulary:
        """Raises ValueError for anything that is not a whole vocabulary."""
        line, _, rest = bytes(payload).partition(b"\n")
        head = json.loads(line)
        n, eog = int(head["n"]), [int(t) for t in head["eog"]]
        lengths = np.frombuffer(rest, dtype="<u4", count=n)
        ends = np.cumsum(lengths, dtype=np.int64) + 4 * n
        if n and int(ends[-1]) != len(rest):
            raise ValueError("pieces do not add up to the file")
        starts = np.concatenate(([4 * n], ends[:-1])).tolist()
        return cls([rest[s:e] for s, e in zip(starts, ends.tolist(), strict=True)], eog)


def read_vocabulary(vocab: Any, n_vocab: int) -> Vocabulary:
    """The pieces as llguidance's own llama.cpp reader makes them, and every end-of-generation token."""
    import llama_cpp

    ntok = llama_cpp.llama_vocab_n_tokens(vocab)
    buffer = _buffer()
    pieces = [_piece(vocab, t, buffer) for t in range(ntok)] + [b""] * max(0, n_vocab - ntok)
    eog = [t for t in range(ntok) if llama_cpp.llama_vocab_is_eog(vocab, t)]
    return Vocabulary(pieces, eog)


def _buffer() -> Any:
    return ctypes.create_string_buffer(16 * 1024 + 1)


def _piece(vocab: Any, token: int, buffer: Any) -> bytes:
    import llama_cpp

    n = llama_cpp.llama_token_to_piece(vocab, token, buffer, 16 * 1024, 0, True)
    if n < 0:
        raise ValueError(f"token {token} does not fit a 16 KB piece ({n})")
    piece = bytes(buffer[:n])
    attr = llama_cpp.llama_vocab_get_attr(vocab, token)
    special = attr & llama_cpp.LLAMA_TOKEN_ATTR_CONTROL or (
        attr & llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED and piece.startswith(b"<") and piece.endswith(b">")
    )
    return b"\xff" + piece if special else piece


def _agrees(vocab: Any, saved: Vocabulary, n_vocab: int) -> bool:
    """A saved vocabulary spot-checked against the live model (its size, some pieces, its end tokens)."""
    import llama_cpp

    ntok = llama_cpp.llama_vocab_n_tokens(vocab)
    # a model may have no end token at all (then none is saved); where it has one, it is saved
    ends = {t for t in (llama_cpp.llama_vocab_eos(vocab), llama_cpp.llama_vocab_eot(vocab)) if t >= 0}
    if len(saved.pieces) != max(ntok, n_vocab) or not ends <= set(saved.eog):
        return False
    probes = {int(t) for t in np.linspace(0, ntok - 1, _SPOT_CHECKS)} | set(saved.eog[:8])
    buffer = _buffer()
    return all(saved.pieces[t] == _piece(vocab, t, buffer) for t in probes) and all(
        llama_cpp.llama_vocab_is_eog(vocab, t) for t in saved.eog
    )


def _cached(llm: Any, cache: PrefixCache | None, model_sha256: str | None) -> Vocabulary:
    vocab, n_vocab = llm._model.vocab, llm.n_vocab()
    key = VocabKey(model_sha256, numerics.build_id(repack=False), n_vocab) if cache and model_sha256 else None
    if key is not None and (payload := cache.load(key)) is not None:  # type: ignore[union-attr]
        try:
            saved = Vocabulary.from_bytes(payload)
            if _agrees(vocab, saved, n_vocab):
                return saved
            reason = "it does not match the loaded model"
        except (ValueError, KeyError, TypeError) as exc:
            reason = f"unreadable ({exc})"
        logger.warning("ignoring saved vocabulary %s: %s; reading it again", key.name, reason)
    fresh = read_vocabulary(vocab, n_vocab)
    if key is not None:
        try:
            cache.save(key, fresh.to_bytes())  # type: ignore[union-attr]
        except OSError as exc:
            logger.warning("cannot keep the vocabulary in %s: %s", cache.root, exc)  # type: ignore[union-attr]
    return fresh


def lltokenizer(llm: Any, cache: PrefixCache | None = None, model_sha256: str | None = None) -> Any:
    """llguidance's tokenizer for a loaded ``Llama``, every end-of-generation token included.

    llama.cpp's grammar sampler lets any EOG token end a complete action; llguidance knows
    only the one it is given unless told the whole set.
    """
    import llama_cpp
    from llguidance import LLTokenizer

    vocabulary = _cached(llm, cache, model_sha256)
    tokenize = ctypes.cast(llama_cpp.llama_cpp._lib.llama_tokenize, ctypes.c_void_p).value
    return LLTokenizer.from_llamacpp(  # type: ignore[attr-defined]
        tokens=vocabulary.pieces,
        vocab_ptr=llm._model.vocab,
        tokenize_fptr=tokenize,
        eos_token=vocabulary.eog or llama_cpp.llama_vocab_eos(llm._model.vocab),
        slices=None,
    )
