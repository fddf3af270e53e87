"""`pocketpilot serve` under load (a benchmark, not a test): event delay, and idle clients with polling.

1. Event delay: from a step recorded in the trace to its SSE event at a client on loopback. The
   step's record time is its own ``started_at + duration_s`` (the moment the harness built it,
   before the trace line is written and fsynced), so the figure includes the trace write, the
   read of the file and the stream. The service runs in this process with a scripted planner
   that waits ``--step-ms`` per step (a model's pace; without it steps arrive in one burst);
   the client is an httpx stream on the same loop. Target: p95 <= 20 ms.
2. Idle clients: ``--clients`` SSE streams held open on one session of a ``pocketpilot serve``
   process while ``--rps`` status polls a second hit it for ``--seconds``; then one request runs
   and every client must get every one of its events, each once. Reported: the server process's
   RSS growth over the period (target <= 50 MB) and polls that failed (target 0).
3. Phones at once (``--phones N``, a real model): N sandbox phones driven through one service and
   one planner, first one after the other, then all at once. Reported: whether each run's actions
   are identical to the same request run alone (greedy), and the total wall time at once against
   the sum of the runs alone (target <= 1.1x). The planner keeps ``--contexts`` llama.cpp contexts
   over one copy of the weights (default: one per phone), so interleaved steps do not swap KV
   states; ``--contexts 1`` measures the snapshot scheme instead. Also reported: how many
   sequences were copied between contexts, spilled to snapshots and restored, and the load average.

    python bench/bench_serve.py [--steps 60] [--step-ms 25] [--clients 200] [--rps 20] [--seconds 60]
                                [--phones 4 --model qwen2.5-coder-1.5b --threads N --contexts N]
                                [--only delay|idle|phones]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-token-0123456789abcdef"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def _listening(server: Any, serving: asyncio.Task[None]) -> None:
    """Wait until the in-process uvicorn server listens.

    uvicorn raises a flag, not an event, once it listens, so the flag is polled; a server that
    stopped before listening (its startup failed) raises here instead of leaving the wait endless.
    """
    while not server.started:
        if serving.done():
            serving.result()
            raise RuntimeError("uvicorn stopped before it listened")
        await asyncio.sleep(0.01)


async def _events(client: httpx.AsyncClient, path: str, headers: dict[str, str], stop: str, after: int = 0,
                  on_event: Any = None) -> list[tuple[int, str, str]]:
    got: list[tuple[int, str, str]] = []
    fields: dict[str, str] = {}
    async with client.stream("GET", path, headers={**headers, "Last-Event-ID": str(after)}) as response:
        async for line in response.aiter_lines():
            if line == "":
                if "data" in fields:
                    item = (int(fields["id"]), fields["event"], fields["data"])
                    got.append(item)
                    if on_event is not None:
                        on_event(item)
                    if item[1] == stop:
                        return got
                fields = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = value[1:] if value.startswith(" ") else value
    return got


async def event_delay(steps: int, step_ms: float) -> dict[str, Any]:
    """Figure 1, in this process."""
    import uvicorn

    from pocketpilot.harness.planners import ScriptedPlanner
    from pocketpilot.serve import ServeConfig, create_app

    class Paced(ScriptedPlanner):
        async def plan(self, request: Any) -> Any:
            await asyncio.sleep(step_ms / 1000)
            return await super().plan(request)

    script = [{"kind": "tool_call", "calls": [{"name": "get_device_info", "arguments": {}}]}] * steps
    script.append({"kind": "finish", "summary": "done"})
    with tempfile.TemporaryDirectory(prefix="pp-bench-serve-") as tmp:
        app = create_app(ServeConfig(trace_dir=Path(tmp)), lambda model: Paced(script), token=TOKEN)
        port = _free_port()
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        task = asyncio.create_task(server.serve())
        await _listening(server, task)
        delays: list[float] = []
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                auth = {"Authorization": f"Bearer {TOKEN}"}
                made = (await client.post("/v1/sessions", json={"owner": "bench", "eta": "none",
                                                                "max_steps": steps + 2}, headers=auth)).json()
                key = {**auth, "X-Session-Key": made["key"]}

                def seen(item: tuple[int, str, str]) -> None:
                    if item[1] == "step":
                        now = time.time()
                        step = json.loads(item[2])["step"]
                        recorded = datetime.fromisoformat(step["started_at"]).timestamp() + step["duration_s"]
                        delays.append((now - recorded) * 1000)

                reader = asyncio.create_task(_events(client, f"/v1/sessions/{made['id']}/events", key, "end",
                                                     on_event=seen))
                await client.post(f"/v1/sessions/{made['id']}/requests", json={"request": "read the device"},
                                  headers=key)
                await reader
        finally:
            server.should_exit = True
            await task
    return {"steps": len(delays), "p50_ms": round(statistics.median(delays), 2), "p95_ms": round(_p(delays, 0.95), 2),
            "max_ms": round(max(delays), 2), "target_p95_ms": 20}


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def idle_clients(clients: int, rps: float, seconds: float) -> dict[str, Any]:
    """Figure 2, against a `pocketpilot serve` process."""
    with tempfile.TemporaryDirectory(prefix="pp-bench-serve-") as tmp:
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps([{"kind": "tool_call", "calls": [{"name": "get_device_info", "arguments": {}}]},
                                      {"kind": "finish", "summary": "done"}]))
        token_file = Path(tmp) / "token"
        token_file.write_text(TOKEN + "\n")
        token_file.chmod(0o600)
        port = _free_port()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "pocketpilot", "serve", "--port", str(port), "--token-file", str(token_file),
            "--trace-dir", str(Path(tmp) / "traces"), "--script", str(script),
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            limits = httpx.Limits(max_connections=clients + 20, max_keepalive_connections=clients + 20)
            async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
                for _ in range(300):
                    try:
                        await client.get("/openapi.json")
                        break
                    except httpx.TransportError:
                        await asyncio.sleep(0.1)
                auth = {"Authorization": f"Bearer {TOKEN}"}
                watched = (await client.post("/v1/sessions", json={"owner": "bench", "eta": "none"}, headers=auth)).json()
                polled = (await client.post("/v1/sessions", json={"owner": "bench", "eta": "none"}, headers=auth)).json()
                wkey = {**auth, "X-Session-Key": watched["key"]}
                readers = [asyncio.create_task(_events(client, f"/v1/sessions/{watched['id']}/events", wkey, "end"))
                           for _ in range(clients)]
                await asyncio.sleep(2)
                before = _rss_mb(proc.pid)
                failed = polls = 0
                start = time.monotonic()
                while time.monotonic() - start < seconds:
                    r = await client.get(f"/v1/sessions/{polled['id']}", headers={**auth, "X-Session-Key": polled["key"]})
                    polls += 1
                    failed += r.status_code != 200
                    await asyncio.sleep(max(0.0, start + polls / rps - time.monotonic()))
                after = _rss_mb(proc.pid)
                await client.post(f"/v1/sessions/{watched['id']}/requests", json={"request": "read it"}, headers=wkey)
                got = await asyncio.gather(*readers)
            complete = sum(1 for events in got if [e[0] for e in events] == list(range(1, len(events) + 1))
                           and events[-1][1] == "end")
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(proc.wait(), timeout=20)
            except TimeoutError:
                proc.kill()
                await proc.wait()
    return {"clients": clients, "clients_with_every_event_once": complete, "polls": polls, "polls_failed": failed,
            "rps": round(polls / seconds, 1), "rss_before_mb": round(before, 1), "rss_after_mb": round(after, 1),
            "rss_growth_mb": round(after - before, 1), "target_rss_growth_mb": 50}


REQUEST = "Turn on do not disturb and set the brightness to 40."


async def phones(n: int, model: str, threads: int | None, max_steps: int, contexts: int | None = None) -> dict[str, Any]:
    """Figure 3: N phones through one service and one (greedy) planner, alone and at once."""
    import uvicorn

    from pocketpilot.contracts import SamplerSettings
    from pocketpilot.harness.planners import LlamaCppPlanner
    from pocketpilot.models.store import ModelStore
    from pocketpilot.serve import ServeConfig, create_app

    path, _ = ModelStore().resolve(model)
    planner = LlamaCppPlanner(path, sampler=SamplerSettings(temperature=0.0, max_tokens=128), n_threads=threads,
                              contexts=contexts or n)
    with tempfile.TemporaryDirectory(prefix="pp-bench-serve-") as tmp:
        app = create_app(ServeConfig(trace_dir=Path(tmp)), lambda _model: planner, token=TOKEN)
        port = _free_port()
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        task = asyncio.create_task(server.serve())
        await _listening(server, task)
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=600) as client:
                auth = {"Authorization": f"Bearer {TOKEN}"}

                async def one() -> tuple[list[str], float]:
                    made = (await client.post("/v1/sessions", json={"owner": "bench", "max_steps": max_steps},
                                              headers=auth)).json()
                    key = {**auth, "X-Session-Key": made["key"]}
                    t0 = time.perf_counter()
                    reader = asyncio.create_task(_events(client, f"/v1/sessions/{made['id']}/events", key, "end"))
                    await client.post(f"/v1/sessions/{made['id']}/requests", json={"request": REQUEST}, headers=key)
                    events = await reader
                    wall = time.perf_counter() - t0
                    actions = [json.dumps(json.loads(e[2])["step"]["action"], sort_keys=True)
                               for e in events if e[1] == "step"]
                    await client.delete(f"/v1/sessions/{made['id']}", headers=key)
                    return actions, wall

                await one()  # load the model and warm the prefix once, outside both measurements
                alone = [await one() for _ in range(n)]
                pool = planner._contexts
                before = (pool.copies, pool.spills, pool.restores) if pool is not None else (0, 0, 0)
                t0 = time.perf_counter()
                together = await asyncio.gather(*(one() for _ in range(n)))
                at_once = time.perf_counter() - t0
                after = (pool.copies, pool.spills, pool.restores) if pool is not None else (0, 0, 0)
        finally:
            server.should_exit = True
            await task
            await planner.aclose()
    sum_alone = sum(w for _, w in alone)
    return {"phones": n, "model": model, "identical_actions": [a == b for (a, _), (b, _) in zip(alone, together, strict=True)],
            "walls_alone_s": [round(w, 2) for _, w in alone], "sum_alone_s": round(sum_alone, 2),
            "at_once_s": round(at_once, 2), "ratio": round(at_once / sum_alone, 3), "target_ratio": 1.1,
            "contexts": contexts or n, "at_once_kv": dict(zip(("copies", "spills", "restores"),
                                                              (b - a for a, b in zip(before, after, strict=True)),
                                                              strict=True)),
            "loadavg": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    """Run the figures ``--only`` names (all of them by default) and print them as one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--step-ms", type=float, default=25.0)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--rps", type=float, default=20.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--phones", type=int, default=4)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--max-steps", type=int, default=6)
    parser.add_argument("--contexts", type=int, default=None, help="llama.cpp contexts of the planner (default: --phones)")
    parser.add_argument("--only", choices=["delay", "idle", "phones"], default=None)
    args = parser.parse_args()
    result: dict[str, Any] = {}
    if args.only in (None, "delay"):
        result["event_delay"] = asyncio.run(event_delay(args.steps, args.step_ms))
    if args.only in (None, "idle"):
        result["idle_clients"] = asyncio.run(idle_clients(args.clients, args.rps, args.seconds))
    if args.only in (None, "phones"):
        result["phones"] = asyncio.run(phones(args.phones, args.model, args.threads, args.max_steps, args.contexts))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
