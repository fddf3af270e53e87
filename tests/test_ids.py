"""Id sources: random by default; seeded ones repeat, keep today's format, and give each component its stream."""

from __future__ import annotations

import threading
import uuid

from pocketpilot.ids import IdSource, RandomIds, SeededIds, random_ids


def _uuid4_hex(value: str) -> bool:
    parsed = uuid.UUID(hex=value)
    return parsed.hex == value and parsed.version == 4 and len(value) == 32


def test_the_default_is_random_unique_and_uuid4_shaped() -> None:
    drawn = [random_ids().new_id() for _ in range(2000)]
    assert len(set(drawn)) == len(drawn) and all(_uuid4_hex(d) for d in drawn)
    assert isinstance(random_ids(), IdSource) and isinstance(random_ids(), RandomIds)


def test_a_seed_repeats_its_ids_in_order_in_the_same_format() -> None:
    a, b = SeededIds("task-1/harness"), SeededIds("task-1/harness")
    first = [a.new_id() for _ in range(50)]
    assert first == [b.new_id() for _ in range(50)]
    assert len(set(first)) == 50 and all(_uuid4_hex(d) for d in first)
    assert isinstance(a, IdSource)


def test_another_seed_or_part_draws_other_ids() -> None:
    base = SeededIds("task-1/harness")
    streams = [SeededIds("task-1/bare"), SeededIds("task-2/harness"), base.derive("memory"), base.derive("subagents")]
    drawn = [[s.new_id() for _ in range(20)] for s in [base, *streams]]
    assert len({i for d in drawn for i in d}) == 20 * len(drawn)
    # a derived stream starts afresh whatever its parent drew, and repeats
    assert base.derive("memory").new_id() == SeededIds("task-1/harness").derive("memory").new_id()


def test_threads_drawing_from_one_source_get_each_id_once() -> None:
    source, got = SeededIds("shared"), []
    lock = threading.Lock()

    def draw() -> None:
        mine = [source.new_id() for _ in range(500)]
        with lock:
            got.extend(mine)

    threads = [threading.Thread(target=draw) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    again = SeededIds("shared")
    assert sorted(got) == sorted(again.new_id() for _ in range(2000))
