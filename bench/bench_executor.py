"""Executor overhead and observation latency on simulated phones over the real adb server.

Run from the repo root::

    PYTHONPATH=. .venv/bin/python bench/bench_executor.py [--n 200] [--phones 4]

Everything runs in isolation: an adb server (the adbutils wheel's binary) on a free port with
its own HOME, and simulated phones in background processes (so the phones do not share the
benchmark's GIL). All are stopped at the end.

Figures:
- overhead: AdbExecutor.shell(cmd) and the get_settings tool vs a raw adbutils ``shell2`` of
  the same command in the same run, interleaved; median ratio (target <= 1.10). The adb CLI
  (``adb shell``, a process per call) is shown for reference.
- observation: UI tree -> element list, end to end (uiautomator2 dump over adb + parse) and
  parse only, p50/p95.
- concurrency: shell round trips per second with 1 phone vs N phones driven from one loop
  (target: four phones >= 3x one phone). Each phone is its own process, but the adb server,
  the executors' worker threads and the phones share the machine's cores: on 2 cores the
  ratio is bounded by CPU, not by the event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import adbutils

from pocketpilot.contracts import ToolCall
from pocketpilot.executor.adb import AdbExecutor, parse_screen
from pocketpilot.executor.simphone import start_simphone, stop_simphone

ADB = Path(adbutils.__file__).parent / "binaries" / "adb"
CMD = "settings get global wifi_on"
BATCH = (
    "settings get global wifi_on; settings get global bluetooth_on; settings get global zen_mode; "
    "settings get system screen_brightness; settings get global mode_ringer"
)


def _free_port() -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not 5555 <= port <= 5585:
            return port


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _ms(values: list[float]) -> str:
    return f"p50 {statistics.median(values) * 1000:.2f} ms, p95 {_pct(values, 0.95) * 1000:.2f} ms"


async def bench(n: int, phones: int, tmp: Path) -> None:  # noqa: ASYNC220, ASYNC221, ASYNC251 - timing harness
    """Start the adb server and the simulated phones, print the three figures, and stop them all.

    The phones and the server are stopped in ``finally``, so an interrupted run leaves none behind.
    """
    port = _free_port()
    env = dict(os.environ, HOME=str(tmp), ADB_LIBUSB="0", ADB_MDNS="0", ANDROID_ADB_SERVER_PORT=str(port))
    server = subprocess.Popen(  # noqa: ASYNC220
        [str(ADB), "-P", str(port), "server", "nodaemon"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    infos = []
    try:
        client = adbutils.AdbClient("127.0.0.1", port)
        for _ in range(100):
            try:
                client.server_version()
                break
            except (adbutils.AdbError, OSError):
                time.sleep(0.05)  # noqa: ASYNC251
        for i in range(phones):
            infos.append(start_simphone(tmp / f"phone{i}", backend="auto"))
        executors = [await AdbExecutor(info.serial, client=client).connect() for info in infos]
        ex, raw = executors[0], client.device(infos[0].serial)

        # --- overhead, interleaved so drift hits both sides alike
        for _ in range(20):
            raw.shell2(CMD, v2=True)
            await ex.shell(CMD)
        raw_t, ex_t, raw_b, tool_b = [], [], [], []
        for _ in range(n):
            t = time.perf_counter()
            await asyncio.to_thread(raw.shell2, CMD, v2=True)
            raw_t.append(time.perf_counter() - t)
            t = time.perf_counter()
            await ex.shell(CMD)
            ex_t.append(time.perf_counter() - t)
            t = time.perf_counter()
            await asyncio.to_thread(raw.shell2, BATCH, v2=True)
            raw_b.append(time.perf_counter() - t)
            t = time.perf_counter()
            result = await ex.call(ToolCall(name="get_settings"))
            tool_b.append(time.perf_counter() - t)
            assert result.ok, result
        sync_raw = []
        for _ in range(n):
            t = time.perf_counter()
            raw.shell2(CMD, v2=True)
            sync_raw.append(time.perf_counter() - t)
        cli = []
        for _ in range(min(n, 50)):
            t = time.perf_counter()
            subprocess.run(  # noqa: ASYNC221
                [str(ADB), "-P", str(port), "-s", infos[0].serial, "shell", CMD],
                env=env,
                capture_output=True,
                check=True,
            )
            cli.append(time.perf_counter() - t)
        ratios = [e / r for e, r in zip(ex_t, raw_t, strict=True)]
        tool_ratios = [e / r for e, r in zip(tool_b, raw_b, strict=True)]
        print(f"== overhead ({n} interleaved samples, command: {CMD!r})")
        print(f"raw adbutils shell2 (to_thread)  {_ms(raw_t)}")
        print(f"raw adbutils shell2 (same thread) {_ms(sync_raw)}")
        print(f"AdbExecutor.shell                {_ms(ex_t)}")
        print(
            f"median ratio executor/raw(to_thread): {statistics.median(ratios):.3f}; "
            f"vs same-thread raw: {statistics.median(ex_t) / statistics.median(sync_raw):.3f}"
        )
        print(
            f"get_settings tool vs raw shell of its batch: {_ms(tool_b)} vs {_ms(raw_b)}; "
            f"median ratio {statistics.median(tool_ratios):.3f}"
        )
        print(f"adb CLI `adb shell` (process per call, reference) {_ms(cli)}")

        # --- observation
        for _ in range(5):
            await ex.observe()
        obs, parse = [], []
        xml = await asyncio.to_thread(lambda: ex._u2().dump_hierarchy())
        for _ in range(n):
            t = time.perf_counter()
            screen = await ex.observe()
            obs.append(time.perf_counter() - t)
            t = time.perf_counter()
            parse_screen(xml)
            parse.append(time.perf_counter() - t)
        print(
            f"== observation (UI tree -> element list, {len(screen.elements)} elements, {len(xml)} bytes XML)"
        )
        print(f"end to end (u2 dump over adb + parse) {_ms(obs)}")
        print(f"parse only                            {_ms(parse)}")

        # --- concurrency
        async def drive(e: AdbExecutor, k: int) -> None:
            for j in range(k):
                await e.shell(f"echo {j}")

        k = max(20, n // 2)
        t = time.perf_counter()
        await drive(executors[0], k)
        one = k / (time.perf_counter() - t)
        t = time.perf_counter()
        await asyncio.gather(*(drive(e, k) for e in executors))
        many = k * len(executors) / (time.perf_counter() - t)
        ratio = many / one
        print(
            f"== concurrency: 1 phone {one:.0f} cmds/s; {len(executors)} phones {many:.0f} cmds/s "
            f"({ratio:.2f}x; {os.cpu_count()} CPUs)"
        )
        print(
            f"{len(executors)} phones concurrently: throughput >= 3x one phone: "
            f"{'met' if ratio >= 3 else 'MISSED'} ({ratio:.2f}x)"
        )
        for e in executors:
            await e.aclose()
    finally:
        for i in range(len(infos)):
            stop_simphone(tmp / f"phone{i}")
        server.kill()
        server.wait()


def main() -> None:
    """Parse the arguments and run the bench with a temporary HOME, so adb's keys and state stay out of the user's."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--phones", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(bench(args.n, args.phones, Path(tmp)))


if __name__ == "__main__":
    main()
