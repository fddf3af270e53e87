"""Sessions of the service: one conversation on one device, driven by one client.

Every session runs on the service's one event loop. A session runs one request at a time;
sessions on different devices run at once, and sessions that share a device queue on it
(one phone, one run). A session is held by whoever created it: the creation answers with a
key only that client has, and every later call about the session (a request, an answer, a
cancel, its events) must carry it. Its memory is the owner's: the store is reached through
the owner's :class:`~pocketpilot.memory.Caller`, so one owner's client never reads another's
memories.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..contracts import Episode, Step, ToolSpec
from ..errors import ModelStoreError, PocketPilotError
from ..harness import HarnessConfig, Planner, Session, safety_policies
from ..harness.observer import RunEvent
from .devices import DeviceFactory, DeviceOpener, DeviceSpec, OpenedDevice, SandboxDevice
from .errors import Conflict, DeviceUnavailable, NotFound, NotHolder
from .events import EventLog, TraceTail
from .questions import Answer, Question, QuestionBoard, ServeConfirmation

__all__ = [
    "MemoryBinding",
    "PlannerFactory",
    "RequestBody",
    "ServeConfig",
    "ServeSession",
    "SessionCreate",
    "SessionRegistry",
    "SessionState",
    "SessionStatus",
]

logger = logging.getLogger(__name__)

PlannerFactory = Callable[[str], Planner]
"""A planner for a model name; it may hand every session the same one (one model in memory,
each session keeping its own KV)."""

SessionState = Literal["idle", "queued", "running", "waiting", "device_lost", "closed"]


@dataclass(frozen=True)
class ServeConfig:
    """What the service is allowed and how long it waits."""

    trace_dir: Path
    """Each session's traces go to ``trace_dir/<session id>/``; nothing outside is ever served."""
    confirm_timeout_s: float = 120.0
    """A confirmation nobody answers within this is denied (a session may ask for less)."""
    max_body_bytes: int = 64 * 1024
    cors_origins: tuple[str, ...] = ()
    """Browser origins allowed to call the API (none: CORS off)."""
    max_sessions: int = 64
    default_model: str = "default"
    events_in_memory: int | None = 1000
    """The newest events a session keeps whole in memory (None: all); older trace lines are read
    back from the trace when a client reconnects from before them."""
    idle_timeout_s: float | None = 3600.0
    """A session nobody has called, streamed or run anything in for this long is closed (its run
    cancelled, its trace ended as such); None: sessions live until deleted."""


@dataclass
class MemoryBinding:
    """The memory store sessions use, and the service credential its access policy knows."""

    store: Any
    """A :class:`~pocketpilot.memory.SqliteMemory`."""
    service_token: str = field(repr=False)


class SessionCreate(BaseModel):
    """``POST /v1/sessions``."""

    model_config = ConfigDict(extra="forbid")

    owner: str = Field(min_length=1, max_length=200, pattern=r"^[^*\x00-\x1f]+$")
    """Whose session (and memories) this is."""
    device: DeviceSpec = Field(default_factory=SandboxDevice)
    model: str | None = Field(default=None, max_length=200)
    """A model-store name (None: the service's default)."""
    eta: Literal["default", "none"] = "default"
    """``default``: the harness's skills, gates, guidance and policies under the service's η (the
    built-in one, or the file the operator gave ``serve --eta``); ``none``: the bare planner with
    the safety policies (gates, confirmation) only."""
    max_steps: int = Field(default=15, ge=1, le=100)
    confirm_timeout_s: float | None = Field(default=None, gt=0, le=3600)
    """Shorter than the service's timeout only (a client cannot make a question wait longer)."""


class RequestBody(BaseModel):
    """``POST /v1/sessions/{id}/requests``."""

    model_config = ConfigDict(extra="forbid")

    request: str = Field(min_length=1, max_length=8000)


class SessionStatus(BaseModel):
    """``GET /v1/sessions/{id}``."""

    id: str
    owner: str
    model: str
    device: dict[str, Any]
    state: SessionState
    turns: int
    """Requests run so far."""
    pending: list[Question]
    last_event_id: int
    traces: list[str]
    """Episode ids of the session's runs (``GET .../traces/{episode id}``), oldest first."""
    last_stop: str | None = None
    error: dict[str, str] | None = None


class ServeSession:
    """One client's conversation with one device."""

    def __init__(self, *, id: str, key: str, spec: SessionCreate, model: str, device: OpenedDevice,
                 harness: Session, confirm: ServeConfirmation, log: EventLog, board: QuestionBoard,
                 lock: asyncio.Lock) -> None:
        self.id, self.key, self.spec, self.model = id, key, spec, model
        self.device, self.harness, self.confirm, self.log, self.board = device, harness, confirm, log, board
        self._lock = lock
        self.state: SessionState = "idle"
        self.turns = 0
        self.traces: list[str] = []
        self.last_stop: str | None = None
        self.error: dict[str, str] | None = None
        self._task: asyncio.Task[None] | None = None
        self._tail: TraceTail | None = None
        self.last_call = time.monotonic()
        """When its holder last called about it (the registry stamps it)."""

    def idle_for(self, now: float) -> float:
        """Seconds since anything happened in this session: a call, an event, a stream open (0)."""
        if self.log.readers > 0:
            return 0.0
        return now - max(self.last_call, self.log.last_append)

    # ------------------------------------------------------------------ observer of its runs

    def observe(self, event: RunEvent) -> None:
        """The harness's run events: the trace may have grown.

        Every event after the top-level run's ``run_started`` comes after its header line was
        written, and a step's line is written before the next event: the pokes follow the
        file closely without reading it on a timer.
        """
        tail = self._tail
        if tail is None:
            return
        if event.kind == "run_started" and event.depth == 0 and tail.path is None:
            tail.path = self.harness.trace_path
            if tail.path is not None:  # listed from the start: a client may read a run's trace while it grows
                self.traces.append(tail.path.stem)
        tail.poke()

    def on_step(self, step: Step) -> None:
        """A step was written to the trace."""
        if self._tail is not None:
            self._tail.poke()

    async def catch_up(self) -> None:
        """Put the run's trace lines written so far into the stream (before a question)."""
        if self._tail is not None:
            await self._tail.catch_up()

    # ------------------------------------------------------------------ driving it

    def holds(self, key: str | None) -> bool:
        """Whether ``key`` is this session's key (constant time)."""
        return key is not None and hmac.compare_digest(key.encode(), self.key.encode())

    def _set_state(self, state: SessionState) -> None:
        if state != self.state:
            self.state = state
            self.log.append("state", {"state": state})

    def submit(self, request: str) -> int:
        """Start a run of ``request``; returns its turn number.

        A pending ``ask_user`` question is answered by this request (it is the next turn of the
        conversation either way).

        Raises:
            Conflict: a run of this session is in progress.
            DeviceUnavailable: the device dropped in an earlier run.
        """
        if self._task is not None and not self._task.done():
            raise Conflict("a request of this session is in progress (cancel it or wait for its end event)", "busy")
        if self.state == "device_lost":
            raise DeviceUnavailable(f"the device dropped: {self.error['message'] if self.error else ''}; "
                                    "its traces are kept, open a new session to reach it again")
        if self.state == "closed":
            raise NotFound(f"session {self.id} is closed", "unknown_session")
        self.board.drop_questions("request")
        turn = self.turns
        self.turns += 1
        self._task = asyncio.create_task(self._run(request, turn), name=f"serve-{self.id}-{turn}")
        return turn

    def answer(self, answer: Answer) -> Question:
        """Answer a pending question; an ``ask_user`` answer is the conversation's next request.

        Raises:
            Conflict: the question is not pending (or a run is busy when an ask_user is answered).
        """
        pending = {q.id: q for q in self.board.pending()}
        question = pending.get(answer.question_id)
        if question is not None and question.kind == "ask_user":
            if self._task is not None and not self._task.done():
                raise Conflict("a request of this session is in progress", "busy")
            self.board.answer(answer)
            self.submit(answer.answer)
            return question
        return self.board.answer(answer)

    async def _run(self, request: str, turn: int) -> None:
        tail = TraceTail(self.log, turn)
        self._tail = tail
        self.confirm.turn = turn
        tail.start()
        self.error = None
        self.log.append("request", {"turn": turn, "request": request})
        episode: Episode | None = None
        try:
            self._set_state("queued")
            async with self._lock:  # one run at a time on this device
                self._set_state("running")
                episode = await self.harness.run(request)
        except asyncio.CancelledError:
            await self._ended(tail, None)
            raise
        except PocketPilotError as exc:  # the model would not load, say: the session stays usable
            self._fail("model_error" if isinstance(exc, ModelStoreError) else "run_failed",
                       f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # a bug or a backend's untyped failure: the client is told, the log has the rest
            logger.exception("session %s: run %d failed", self.id, turn)
            self._fail("internal_error", f"{type(exc).__name__}: {exc}")
        await self._ended(tail, episode)

    def _fail(self, code: str, message: str) -> None:
        self.error = {"code": code, "message": " ".join(message.split())}
        self.log.append("error", self.error)

    async def _ended(self, tail: TraceTail, episode: Episode | None) -> None:
        await tail.drain()
        self._tail = None
        if self.state == "closed":
            return
        if episode is None:
            self.last_stop = "cancelled" if self.error is None else "error"
            self._set_state("idle")
            return
        self.last_stop = episode.stop_reason
        if episode.stop_reason == "device_lost":
            self._fail("device_lost", episode.stop_detail)
            self._set_state("device_lost")
        elif episode.stop_reason == "ask_user":
            self.board.ask_user(episode.stop_detail, tail.turn)
            self._set_state("waiting")
        else:
            self._set_state("idle")

    async def cancel(self) -> bool:
        """Cancel the run in progress (its trace ends as cancelled); False when none runs."""
        task = self._task
        if task is None or task.done():
            return False
        task.cancel()
        await asyncio.wait({task})
        return True

    async def aclose(self) -> None:
        """Cancel any run, end the event stream, let the device go."""
        await self.cancel()
        self._set_state("closed")
        self.log.close()
        try:
            await self.device.aclose()
        except Exception:  # a device that fails to close must not keep the others open
            logger.exception("session %s: closing its device failed", self.id)

    def status(self) -> SessionStatus:
        """What ``GET /v1/sessions/{id}`` answers."""
        return SessionStatus(id=self.id, owner=self.spec.owner, model=self.model,
                             device=self.spec.device.model_dump(mode="json"), state=self.state, turns=self.turns,
                             pending=self.board.pending(), last_event_id=self.log.last_id, traces=list(self.traces),
                             last_stop=self.last_stop, error=self.error)

    @property
    def trace_dir(self) -> Path:
        """Where this session's traces are."""
        assert self.harness.trace_dir is not None
        return Path(self.harness.trace_dir)


class SessionRegistry:
    """The service's sessions, their devices' run queues, and the planners they share."""

    def __init__(self, config: ServeConfig, planners: PlannerFactory, devices: DeviceFactory | None = None,
                 memory: MemoryBinding | None = None, kit: Any = None) -> None:
        self.config = config
        self._planners = planners
        self._devices = devices or DeviceOpener()
        self._memory = memory
        self._kit: Any = kit
        """The harness kit (skills, gates, η) of ``eta: default`` sessions; None: the built-in one, loaded
        at the first such session. The operator picks η (``serve --eta FILE``); a client only opts out."""
        self._sessions: dict[str, ServeSession] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._opened_planners: dict[int, Planner] = {}
        self._reaper: asyncio.Task[None] | None = None
        self.expired = 0
        """Sessions closed for being idle."""

    def __len__(self) -> int:
        return len(self._sessions)

    async def _harness_kwargs(self, spec: SessionCreate, tools: list[ToolSpec], memory: bool) -> dict[str, Any]:
        if spec.eta == "none":
            return {"policies": safety_policies()}
        if self._kit is None:
            from ..evaluation.task_episode import load_harness_kit

            self._kit = await asyncio.to_thread(load_harness_kit)
        return dict(self._kit.session_kwargs(tools, memory=memory, memory_search=memory))

    async def create(self, spec: SessionCreate) -> ServeSession:
        """Open the device and set the session up (the planner loads at its first request).

        Raises:
            Conflict: the service holds its maximum of sessions.
            UsageError: a device or model that cannot be opened (bad serial, unknown app).
        """
        if len(self._sessions) >= self.config.max_sessions:
            raise Conflict(f"the service holds {self.config.max_sessions} sessions; close one first", "too_many_sessions")
        model = spec.model or self.config.default_model
        planner = self._planners(model)
        self._opened_planners.setdefault(id(planner), planner)
        device = await self._devices(spec.device)
        try:
            sid = uuid.uuid4().hex
            log = EventLog(self.config.events_in_memory)
            board = QuestionBoard(log)
            timeout = min(spec.confirm_timeout_s or self.config.confirm_timeout_s, self.config.confirm_timeout_s)
            tools = device.executor.tools()  # specs: skills and notes attach by each tool's declared world
            memory = None
            if self._memory is not None:
                from ..memory import BoundMemory, Caller

                caller = Caller.service(self._memory.service_token, acting_for=spec.owner)
                memory = BoundMemory(self._memory.store, caller, sid)
            kwargs = await self._harness_kwargs(spec, tools, memory is not None)
            if device.state is not None and hasattr(device.state, "state"):
                # read at each request: the date shown, and today's date over the recalled memories
                phone = device.state
                kwargs["clock"] = lambda: phone.state.now
            config = HarnessConfig(max_steps=spec.max_steps)
            if self._kit is not None and spec.eta != "none":
                config = self._kit.configure(config)  # η's memory section: recall, placement, answers
            confirm = ServeConfirmation(board, timeout)
            harness = Session(planner, device.executor, config=config,
                              memory=memory, confirm=confirm, trace_dir=self.config.trace_dir / sid,
                              observer=None, **kwargs)
            session = ServeSession(id=sid, key=secrets.token_urlsafe(24), spec=spec, model=model, device=device,
                                   harness=harness, confirm=confirm, log=log, board=board,
                                   lock=self._locks.setdefault(device.key, asyncio.Lock()))
            harness.observer = session
            harness.on_step = session.on_step
            confirm.catch_up = session.catch_up
        except BaseException:
            await device.aclose()
            raise
        self._sessions[sid] = session
        if self.config.idle_timeout_s is not None and self._reaper is None:
            self._reaper = asyncio.create_task(self._reap(self.config.idle_timeout_s), name="serve-idle-sessions")
        log.append("state", {"state": "idle"})
        logger.info("session %s: owner %s, device %s, model %s", sid, spec.owner, spec.device.kind, model)
        return session

    def get(self, sid: str, key: str | None) -> ServeSession:
        """The session ``sid``, for its holder only.

        Raises:
            NotFound: no such session.
            NotHolder: ``key`` is not the session's key.
        """
        session = self._sessions.get(sid)
        if session is None:
            raise NotFound(f"no session {sid!r}", "unknown_session")
        if not session.holds(key):
            raise NotHolder(f"session {sid} is held by another client (X-Session-Key)")
        session.last_call = time.monotonic()
        return session

    async def close(self, sid: str, key: str | None) -> None:
        """End the session: cancel its run, close its device (its traces stay)."""
        await self._drop(self.get(sid, key))

    async def _drop(self, session: ServeSession) -> None:
        if self._sessions.get(session.id) is not session:
            return
        del self._sessions[session.id]
        await session.aclose()
        if all(s.device.key != session.device.key for s in self._sessions.values()):
            self._locks.pop(session.device.key, None)  # the device's queue goes with its last session

    async def expire_idle(self, timeout_s: float) -> list[str]:
        """Close the sessions idle for ``timeout_s`` or more; their ids.

        A run still in one is cancelled (its trace ends as cancelled); its event log ends with an
        ``expired`` event and the closed state. A session with a stream open is never idle.
        """
        now = time.monotonic()
        idle = [s for s in self._sessions.values() if s.idle_for(now) >= timeout_s]
        for session in idle:
            logger.info("session %s: idle for %.0f s, closed", session.id, session.idle_for(now))
            session.log.append("expired", {"idle_timeout_s": timeout_s})
            self.expired += 1
            await self._drop(session)
        return [s.id for s in idle]

    async def _reap(self, timeout_s: float) -> None:
        while True:
            await asyncio.sleep(min(max(timeout_s / 4, 0.05), 30.0))
            try:
                await self.expire_idle(timeout_s)
            except Exception:  # one session failing to close must not stop the others expiring
                logger.exception("expiring idle sessions failed")

    async def aclose(self) -> None:
        """Close every session and the planners (the service is stopping)."""
        reaper, self._reaper = self._reaper, None
        if reaper is not None:
            reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reaper
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            await session.aclose()
        planners, self._opened_planners = list(self._opened_planners.values()), {}
        for planner in planners:
            try:
                await planner.aclose()
            except Exception:
                logger.exception("closing planner %s failed", planner.info.model)

