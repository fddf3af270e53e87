"""Measuring a planner on tasks.

One task's session as ``pocketpilot run --task`` and the bench run it (:mod:`.task_session`), a
suite run with and without the harness and its report (:mod:`.compare`), and the bench at suite
size: shards, resumable outcome logs, ray workers (:mod:`.bench_runs`).
"""
