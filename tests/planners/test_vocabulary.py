"""llguidance's vocabulary is read from the model once, then kept: a bad or foreign file is never used."""

from __future__ import annotations

from pathlib import Path

import pytest

from pocketpilot.harness.planners import vocabulary
from pocketpilot.harness.planners.prefix_cache import PrefixCache
from pocketpilot.harness.planners.vocabulary import Vocabulary


def test_pieces_round_trip_whatever_bytes_they_hold() -> None:
    pieces = [b"", b"\x00", b"a\nb", b"\xff<|im_end|>", bytes(range(256)), b"\n" * 3]
    back = Vocabulary.from_bytes(bytearray(Vocabulary(pieces, [3]).to_bytes()))  # what the cache reads
    assert back.pieces == pieces and back.eog == [3]
    assert all(type(p) is bytes for p in back.pieces)  # llguidance takes bytes


@pytest.mark.parametrize("cut", [1, 7, 300])
def test_a_cut_vocabulary_is_an_error_not_fewer_pieces(cut: int) -> None:
    raw = Vocabulary([b"ab", b"cde", bytes(range(256))], [1]).to_bytes()
    with pytest.raises(ValueError):
        Vocabulary.from_bytes(raw[:-cut])


@pytest.fixture(scope="module")
def llm(test_gguf: Path):
    import llama_cpp

    model = llama_cpp.Llama(str(test_gguf), n_ctx=256, vocab_only=True, verbose=False)
    yield model
    model.close()


def _tokens(tokenizer, text: str) -> list[int]:
    return tokenizer.tokenize_str(text)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # llguidance's own reader calls a deprecated alias
def test_the_second_build_reads_no_piece_from_the_model_and_tokenizes_the_same(
    llm, tmp_path: Path, monkeypatch
) -> None:
    from llguidance.llamacpp import lltokenizer_from_vocab

    cache = PrefixCache(tmp_path)
    first = vocabulary.lltokenizer(llm, cache, "f" * 64)
    assert [p.suffix for p, _ in cache.entries()] == [".vocab"]  # kept, and cleared with the prefix states

    def no_reading(*_a, **_k):
        raise AssertionError("read the vocabulary from the model again")

    monkeypatch.setattr(vocabulary, "read_vocabulary", no_reading)
    second = vocabulary.lltokenizer(llm, cache, "f" * 64)
    reference = lltokenizer_from_vocab(llm._model.vocab, n_vocab=llm.n_vocab())  # llguidance's own reader
    text = '{"kind":"tool_call","calls":[{"name":"create_note","arguments":{"title":"Ünïcode 42 ✓"}}]}<|im_end|>'
    assert _tokens(first, text) == _tokens(second, text) == _tokens(reference, text)
    assert second.vocab_size == reference.vocab_size and set(second.eos_tokens) >= {reference.eos_token}
    assert all(second.decode_bytes([t]) == reference.decode_bytes([t]) for t in range(0, llm.n_vocab(), 97))


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["flip", "truncate", "foreign", "no_ends"])
def test_a_bad_or_foreign_vocabulary_file_is_read_again_with_a_warning(
    llm, tmp_path: Path, damage: str, caplog
) -> None:
    cache = PrefixCache(tmp_path)
    key_sha = "e" * 64
    vocabulary.lltokenizer(llm, cache, key_sha)
    [(path, _)] = cache.entries()
    raw = path.read_bytes()
    if damage == "flip":
        path.write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))
    elif damage == "truncate":
        path.write_bytes(raw[: len(raw) // 2])
    else:  # a whole, well-formed file with the right key: another model's pieces, or no end tokens
        good = Vocabulary.from_bytes(cache.load(vocabulary.VocabKey(key_sha, _build(), llm.n_vocab())))
        bad = (Vocabulary([b"?" + p for p in good.pieces], good.eog) if damage == "foreign"
               else Vocabulary(good.pieces, []))
        cache.save(vocabulary.VocabKey(key_sha, _build(), llm.n_vocab()), bad.to_bytes())
    rebuilt = vocabulary.lltokenizer(llm, cache, key_sha)
    assert "computed again" in caplog.text or "reading it again" in caplog.text
    assert rebuilt.decode_bytes(rebuilt.tokenize_str("hello world")) == b"hello world"
    kept = Vocabulary.from_bytes(cache.load(vocabulary.VocabKey(key_sha, _build(), llm.n_vocab())))
    fresh = vocabulary.read_vocabulary(llm._model.vocab, llm.n_vocab())
    assert kept.pieces == fresh.pieces and kept.eog == fresh.eog and kept.eog  # rewritten right


def _build() -> str:
    from pocketpilot.harness.planners import numerics

    return numerics.build_id(repack=False)
