"""Measuring a planner on tasks.

One task's episode as ``pocketpilot run --task`` and the bench run it (:mod:`.task_episode`), a
suite run with and without the harness and its report (:mod:`.compare`), and the bench at suite
size: shards, resumable outcome logs, ray workers (:mod:`.bench_runs`); every golden path of a
task folder replayed through the harness and bare, the standing check (:mod:`.oracle_replay`).
"""
