"""The run-level check that no test leaves a process behind finds exactly this run's processes."""

from __future__ import annotations

import os
import subprocess
import sys

from leftovers import MARK, leftovers, wait_for_leftovers


def test_finds_a_daemon_this_run_started_and_nothing_else():
    token = os.environ[MARK]
    ours = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    foreign = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                               env={k: v for k, v in os.environ.items() if k != MARK})
    try:
        pids = {pid for pid, _ in leftovers(token)}
        assert ours.pid in pids
        assert foreign.pid not in pids and os.getpid() not in pids
    finally:
        for proc in (ours, foreign):
            proc.kill()
            proc.wait()
    assert ours.pid not in {pid for pid, _ in wait_for_leftovers(token, grace_s=2)}


def test_a_double_forked_daemon_is_still_found():
    """adb's server re-parents itself to init: the marker, not the process tree, finds it."""
    token = os.environ[MARK]
    script = ("import os, sys, time\n"
              "if os.fork(): sys.exit(0)\n"
              "os.setsid()\n"
              "print(os.getpid(), flush=True)\n"
              "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    daemon = int(proc.stdout.readline())
    proc.wait()
    try:
        assert daemon in {pid for pid, _ in leftovers(token)}
    finally:
        os.kill(daemon, 9)
    assert daemon not in {pid for pid, _ in wait_for_leftovers(token, grace_s=2)}
