"""What a run leaves behind.

Its JSONL trace (:mod:`.trace`), the HTML replay of one (:mod:`.replay`), and OpenTelemetry spans
of a run as it happens (:mod:`.otel`, with the ``otel`` extra).
"""
