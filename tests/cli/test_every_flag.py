"""Every flag `run --help` and `bench --help` list takes effect (or is refused where it cannot).

``FLAG_TESTS`` names, for each option of each command, the tests that show it changing what
happens; ``test_every_flag_has_a_test`` walks the click commands, so a flag added without a
test (or a test renamed away) fails here. Flags of the in-process model are checked where they
reach the planner's constructor (no model loads): ``LlamaCppPlanner`` and
``OpenAICompatPlanner`` are replaced by recorders that hand back a scripted planner.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from click.testing import CliRunner, Result

import pocketpilot.cli.bench as bench_module
import pocketpilot.cli.run as run_module
import pocketpilot.harness.planners as planners_module
from pocketpilot.adapters.tool_retrieval import MORE_TOOLS
from pocketpilot.cli.main import cli
from pocketpilot.errors import UsageError
from pocketpilot.evaluation.task_episode import RunSettings
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite, load_task, oracle_actions, prepare

TESTS = Path(__file__).resolve().parents[1]
WORLD_DIR = TESTS / "tasks" / "outside_world"
FINISH = {"kind": "finish", "summary": "Done."}
POLICY = "Greenhouse operating policy: list the plants before watering any of them."

W = "tests/cli/test_cli_worlds.py"
E = "tests/cli/test_every_flag.py"
M = "tests/evaluation/test_decode_memo_flags.py"
PLANNER_FLAGS = {
    "model": [f"{E}::test_model_temperature_and_max_tokens_reach_the_planner"],
    "temperature": [f"{E}::test_model_temperature_and_max_tokens_reach_the_planner"],
    "max_new_tokens": [f"{E}::test_model_temperature_and_max_tokens_reach_the_planner"],
    "endpoint": [f"{E}::test_endpoint_flags_reach_the_endpoint_planner"],
    "api_key": [f"{E}::test_endpoint_flags_reach_the_endpoint_planner", f"{E}::test_flags_that_cannot_apply_are_refused"],
    "output_mode": [f"{E}::test_endpoint_flags_reach_the_endpoint_planner",
                    f"{E}::test_flags_that_cannot_apply_are_refused"],
    "pull": [f"{E}::test_pull_installs_a_missing_model_only_when_allowed"],
    "threads": [f"{E}::test_model_flags_reach_the_in_process_planner", f"{E}::test_flags_that_cannot_apply_are_refused"],
    "n_ctx": [f"{E}::test_model_flags_reach_the_in_process_planner",
              f"{E}::test_a_tasks_n_ctx_loads_the_model_unless_the_flag_says"],
    "constraint": [f"{E}::test_model_flags_reach_the_in_process_planner"],
    "fast_forward": [f"{E}::test_model_flags_reach_the_in_process_planner"],
    "reproducible": [f"{E}::test_model_flags_reach_the_in_process_planner"],
    "think_tokens": [f"{E}::test_decoding_flags_reach_the_in_process_planner",
                     "tests/planners/test_phases.py::test_the_cli_refuses_a_budget_beyond_max_tokens_with_exit_2"],
    "choose_then_fill": [f"{E}::test_decoding_flags_reach_the_in_process_planner"],
    "flash_attn": [f"{E}::test_decoding_flags_reach_the_in_process_planner"],
    "kv_type": [f"{E}::test_decoding_flags_reach_the_in_process_planner"],
    "budget": [f"{E}::test_budget_overrides_the_tasks_section", "tests/evaluation/test_task_guidance.py::"
               "test_the_tasks_budget_and_the_callers_override_take_effect"],
}
FLAG_TESTS: dict[str, dict[str, list[str]]] = {
    "run": {
        "task_file": [f"{W}::test_run_task_file_from_a_folder_outside_the_package"],
        "task_id": [f"{E}::test_task_id_runs_a_bundled_task"],
        "yes": [f"{W}::test_run_task_file_from_a_folder_outside_the_package",
                f"{W}::test_run_task_file_reports_a_failed_verdict"],
        "max_steps": [f"{E}::test_max_steps_stops_the_run"],
        "trace_dir": [f"{E}::test_task_id_runs_a_bundled_task"],
        "device": [f"{E}::test_run_refuses_what_a_task_run_would_ignore",
                   "tests/executor/test_devices_cli.py::test_build_device_executor_errors"],
        "adb_port": [f"{E}::test_run_refuses_what_a_task_run_would_ignore",
                     "tests/executor/test_devices_cli.py::test_simphone_lifecycle_and_devices"],
        "apps": ["tests/cli/test_run_apps.py::test_apps_picks_the_sandbox_apps",
                 f"{E}::test_run_refuses_what_a_task_run_would_ignore"],
        "guidance_files": [f"{E}::test_run_guidance_file_replaces_a_tasks_policy",
                           f"{E}::test_run_guidance_file_joins_a_request_run"],
        "mode": [f"{E}::test_run_mode_bare_runs_the_planner_alone"],
        "exposure": [f"{E}::test_exposure_phone_shows_every_tool_of_the_world",
                     f"{E}::test_bad_exposure_flags_are_one_line_and_exit_2",
                     f"{E}::test_run_refuses_exposure_flags_without_a_task"],
        "tool_k": [f"{E}::test_tool_k_shows_at_most_k_retrieved_tools_and_the_widening_tool",
                   f"{E}::test_bad_exposure_flags_are_one_line_and_exit_2"],
        "mcp_commands": ["tests/cli/test_run_mcp_otel.py::test_stdio_and_http_servers_together"],
        "mcp_urls": ["tests/cli/test_run_mcp_otel.py::test_stdio_and_http_servers_together"],
        "otel": ["tests/cli/test_run_mcp_otel.py::test_otel_console_prints_the_runs_spans"],
        **PLANNER_FLAGS,
    },
    "bench": {
        "tasks_dir": [f"{W}::test_bench_over_a_task_folder_with_a_scripted_planner"],
        "split": [f"{E}::test_bench_selection_flags_pick_the_tasks"],
        "task_ids": [f"{E}::test_bench_selection_flags_pick_the_tasks"],
        "groups": [f"{E}::test_bench_selection_flags_pick_the_tasks"],
        "limit": [f"{E}::test_bench_selection_flags_pick_the_tasks"],
        "per_group": [f"{E}::test_bench_selection_flags_pick_the_tasks"],
        "no_harness": [f"{E}::test_bench_modes_follow_the_flags"],
        "compare": [f"{E}::test_bench_modes_follow_the_flags"],
        "use_embedder": [f"{E}::test_bench_builds_the_embedder_only_when_asked"],
        "out": [f"{E}::test_bench_modes_follow_the_flags"],
        "markdown_out": [f"{E}::test_bench_writes_markdown_and_outcomes"],
        "trace_dir": [f"{E}::test_bench_writes_markdown_and_outcomes"],
        "shard": [f"{E}::test_bench_shard_and_resume"],
        "resume": [f"{E}::test_bench_shard_and_resume"],
        "backend": ["tests/evaluation/test_bench_scale.py::test_bench_ray_backend_without_ray_is_a_typed_error",
                    f"{E}::test_ray_flags_reach_the_pool_or_are_refused"],
        "workers": [f"{E}::test_ray_flags_reach_the_pool_or_are_refused"],
        "ray_address": [f"{E}::test_ray_flags_reach_the_pool_or_are_refused"],
        "guidance_files": [f"{E}::test_bench_guidance_file_replaces_every_tasks_policy"],
        "exposure": [f"{E}::test_exposure_phone_shows_every_tool_of_the_world",
                     f"{E}::test_bad_exposure_flags_are_one_line_and_exit_2"],
        "tool_k": [f"{E}::test_tool_k_shows_at_most_k_retrieved_tools_and_the_widening_tool",
                   f"{E}::test_bad_exposure_flags_are_one_line_and_exit_2"],
        "decode_memo": [f"{M}::test_bench_serves_a_second_run_from_the_memo_only_when_asked",
                        f"{M}::test_bench_refuses_a_corrupt_memo_with_one_line"],
        **PLANNER_FLAGS,
    },
}


def _command(name: str) -> click.Command:
    return cli.commands[name] if isinstance(cli, click.Group) and name in cli.commands else cli.get_command(None, name)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(FLAG_TESTS))
def test_every_flag_has_a_test(name: str) -> None:
    command = _command(name)
    options = {p.name for p in command.params if isinstance(p, click.Option)}
    assert options - set(FLAG_TESTS[name]) == set(), f"`{name}` flags without a test in FLAG_TESTS"
    assert set(FLAG_TESTS[name]) - options == set(), f"FLAG_TESTS lists flags `{name}` does not have"
    for flag, tests in FLAG_TESTS[name].items():
        assert tests, flag
        for ref in tests:
            path, _, func = ref.partition("::")
            module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
            assert callable(getattr(module, func, None)), f"{name} --{flag}: no test {ref}"


# ---------------------------------------------------------------- the seam: planner constructors


class Seam:
    """Records what reached a planner constructor and hands back a scripted planner."""

    def __init__(self, actions: list[Any]) -> None:
        self.actions = actions
        self.built: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.planner: ScriptedPlanner | None = None

    def make(self, kind: str) -> Any:
        def build(*args: Any, **kwargs: Any) -> ScriptedPlanner:
            self.built.append((kind, args, kwargs))
            self.planner = ScriptedPlanner(list(self.actions))
            return self.planner
        return build

    @property
    def kwargs(self) -> dict[str, Any]:
        return self.built[-1][2]


@pytest.fixture
def seam(monkeypatch: pytest.MonkeyPatch) -> Seam:
    s = Seam([FINISH] * 8)
    monkeypatch.setattr(planners_module, "LlamaCppPlanner", s.make("llama"))
    monkeypatch.setattr(planners_module, "OpenAICompatPlanner", s.make("endpoint"))
    monkeypatch.setattr(run_module, "default_embedder", lambda: None)
    return s


def _invoke(args: list[str]) -> Result:
    return CliRunner().invoke(cli, args)


def _model(test_gguf: Path) -> list[str]:
    return ["--model", str(test_gguf), "--no-pull"]


def _cmd(command: str, tmp_path: Path) -> list[str]:
    """A short run of each command on the outside world (one task for run, the folder for bench)."""
    if command == "run":
        return ["run", "--task", str(WORLD_DIR / "water-fern.yaml"), "--trace-dir", str(tmp_path / "t")]
    return ["bench", "--tasks", str(WORLD_DIR), "--no-embedder", "--limit", "1"]


# ---------------------------------------------------------------- planner flags, both commands


@pytest.mark.parametrize("command", ["run", "bench"])
def test_model_temperature_and_max_tokens_reach_the_planner(command: str, seam: Seam, test_gguf: Path,
                                                            tmp_path: Path) -> None:
    out = _invoke([*_cmd(command, tmp_path), *_model(test_gguf), "--temperature", "0.7", "--max-tokens", "99"])
    assert out.exit_code == 0, out.output
    kind, args, kwargs = seam.built[-1]
    assert kind == "llama" and Path(args[0]) == test_gguf
    assert kwargs["sampler"].temperature == 0.7 and kwargs["sampler"].max_tokens == 99


@pytest.mark.parametrize("command", ["run", "bench"])
def test_model_flags_reach_the_in_process_planner(command: str, seam: Seam, test_gguf: Path, tmp_path: Path) -> None:
    out = _invoke([*_cmd(command, tmp_path), *_model(test_gguf)])
    assert out.exit_code == 0, out.output
    default = dict(seam.kwargs)
    out = _invoke([*_cmd(command, tmp_path), *_model(test_gguf), "--threads", "3", "--n-ctx", "16384",
                   "--constraint", "gbnf", "--fast-forward", "--reproducible"])
    assert out.exit_code == 0, out.output
    given = seam.kwargs
    assert (default["n_threads"], default["n_ctx"], default["constraint"], default["fast_forward"],
            default["reproducible"]) == (None, 8192, None, None, False)
    assert (given["n_threads"], given["n_ctx"], given["constraint"], given["fast_forward"],
            given["reproducible"]) == (3, 16384, "gbnf", True, True)


@pytest.mark.parametrize("command", ["run", "bench"])
def test_decoding_flags_reach_the_in_process_planner(command: str, seam: Seam, test_gguf: Path, tmp_path: Path) -> None:
    out = _invoke([*_cmd(command, tmp_path), *_model(test_gguf)])
    assert out.exit_code == 0, out.output
    default = dict(seam.kwargs)
    out = _invoke([*_cmd(command, tmp_path), *_model(test_gguf), "--think-tokens", "32", "--choose-then-fill",
                   "--flash-attn", "--kv-type", "q8_0"])
    assert out.exit_code == 0, out.output
    given = seam.kwargs
    keys = ("think_tokens", "choose_then_fill", "flash_attn", "kv_type")
    assert tuple(default[k] for k in keys) == (0, False, False, "f16")  # off unless asked: today's decoding
    assert tuple(given[k] for k in keys) == (32, True, True, "q8_0")
    out = _invoke([*_cmd(command, tmp_path), "--endpoint", "http://127.0.0.1:9/v1", "--think-tokens", "32"])
    assert out.exit_code == 2 and "--think-tokens applies to the in-process model" in out.output, out.output


@pytest.mark.parametrize("command", ["run", "bench"])
def test_endpoint_flags_reach_the_endpoint_planner(command: str, seam: Seam, tmp_path: Path) -> None:
    out = _invoke([*_cmd(command, tmp_path), "--endpoint", "http://127.0.0.1:9/v1", "--model", "served",
                   "--api-key", "sk-test", "--output-mode", "json_schema", "--temperature", "0.3"])
    assert out.exit_code == 0, out.output
    kind, args, kwargs = seam.built[-1]
    assert kind == "endpoint" and args == ("http://127.0.0.1:9/v1", "served")
    assert kwargs["api_key"] == "sk-test" and kwargs["output_mode"] == "json_schema"
    assert kwargs["sampler"].temperature == 0.3


@pytest.mark.parametrize("command", ["run", "bench"])
@pytest.mark.parametrize(("flags", "message"), [
    (["--endpoint", "http://127.0.0.1:9/v1", "--n-ctx", "16384"], "--n-ctx applies to the in-process model"),
    (["--endpoint", "http://127.0.0.1:9/v1", "--threads", "2"], "--threads applies to the in-process model"),
    (["--output-mode", "json_schema"], "--output-mode applies to an --endpoint"),
    (["--api-key", "sk-x"], "--api-key applies to an --endpoint"),
])
def test_flags_that_cannot_apply_are_refused(command: str, flags: list[str], message: str, seam: Seam,
                                             tmp_path: Path) -> None:
    out = _invoke([*_cmd(command, tmp_path), *flags])
    assert out.exit_code == 2 and message in out.output, out.output
    assert seam.built == []


@pytest.mark.parametrize("command", ["run", "bench"])
def test_pull_installs_a_missing_model_only_when_allowed(command: str, seam: Seam, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch, test_gguf: Path) -> None:
    import pocketpilot.cli._planner as planner_module

    pulled: list[str] = []

    class Store:
        def lookup(self, name: str) -> Any:
            return type("Entry", (), {"name": name, "packages": [1], "sha256": None, "quant_type": None})()

        def is_installed(self, entry: Any) -> bool:
            return bool(pulled)

        def pull(self, name: str, progress: Any = None) -> Path:
            pulled.append(name)
            return test_gguf

        def resolve(self, model: str) -> tuple[Path, Any]:
            return test_gguf, None

    monkeypatch.setattr(planner_module, "ModelStore", Store)
    assert _invoke([*_cmd(command, tmp_path), "--model", "some-model", "--no-pull"]).exit_code == 0
    assert pulled == []
    out = _invoke([*_cmd(command, tmp_path), "--model", "some-model", "--pull"])
    assert out.exit_code == 0, out.output
    assert pulled == ["some-model"]


def _policy_folder(tmp_path: Path, n_ctx: int | None = None, budget: dict | None = None) -> Path:
    """The outside world's folder with a ``_defaults.yaml`` giving every task a policy."""
    import shutil

    folder = tmp_path / "world"
    if not folder.exists():
        shutil.copytree(WORLD_DIR, folder)
    defaults: dict[str, Any] = {"guidance": POLICY}
    if n_ctx:
        defaults["n_ctx"] = n_ctx
    if budget:
        defaults["budget"] = budget
    (folder / "_defaults.yaml").write_text(yaml.safe_dump(defaults))
    return folder


def _system(planner: ScriptedPlanner | None) -> str:
    assert planner is not None and planner.requests
    return planner.requests[0].messages[0].content


@pytest.mark.parametrize("command", ["run", "bench"])
def test_a_tasks_n_ctx_loads_the_model_unless_the_flag_says(command: str, seam: Seam, test_gguf: Path,
                                                             tmp_path: Path) -> None:
    folder = _policy_folder(tmp_path, n_ctx=12288)
    head = (["run", "--task", str(folder / "water-fern.yaml"), "--trace-dir", str(tmp_path / "t")] if command == "run"
            else ["bench", "--tasks", str(folder), "--no-embedder", "--limit", "1"])
    assert _invoke([*head, *_model(test_gguf)]).exit_code == 0
    assert seam.kwargs["n_ctx"] == 12288  # the task's folder asked for it
    assert _invoke([*head, *_model(test_gguf), "--n-ctx", "20480"]).exit_code == 0
    assert seam.kwargs["n_ctx"] == 20480  # the flag wins


@pytest.mark.parametrize("command", ["run", "bench"])
def test_budget_overrides_the_tasks_section(command: str, seam: Seam, test_gguf: Path, tmp_path: Path) -> None:
    folder = _policy_folder(tmp_path, budget={"guidance": 5})  # too small for the policy: left out
    head = (["run", "--task", str(folder / "water-fern.yaml"), "--trace-dir", str(tmp_path / "t")] if command == "run"
            else ["bench", "--tasks", str(folder), "--no-embedder", "--limit", "1"])
    assert _invoke([*head, *_model(test_gguf)]).exit_code == 0
    assert POLICY not in _system(seam.planner)
    out = _invoke([*head, *_model(test_gguf), "--budget", "guidance=3000"])
    assert out.exit_code == 0, out.output
    assert POLICY in _system(seam.planner)
    out = _invoke([*head, *_model(test_gguf), "--budget", "memory=3"])
    assert out.exit_code == 2 and "SECTION=TOKENS" in out.output


# ---------------------------------------------------------------- run


def test_task_id_runs_a_bundled_task(seam: Seam, test_gguf: Path, tmp_path: Path) -> None:
    task_id = load_suite("dev")[0].id
    out = _invoke(["run", "--task-id", task_id, "--trace-dir", str(tmp_path), *_model(test_gguf)])
    assert out.exit_code == 0, out.output
    assert f"task {task_id} " in out.output
    (trace,) = tmp_path.glob("*.jsonl")  # --trace-dir: the trace went there
    assert json.loads(trace.read_text().splitlines()[0])["header"]["task_id"] == task_id


def test_max_steps_stops_the_run(seam: Seam, test_gguf: Path, tmp_path: Path) -> None:
    seam.actions = [{"kind": "tool_call", "calls": [{"name": "list_plants", "arguments": {}}]}] * 5 + [FINISH]
    out = _invoke([*_cmd("run", tmp_path), *_model(test_gguf), "--max-steps", "2"])
    assert out.exit_code == 0, out.output
    assert "stopped: max_steps" in out.output and "2 steps" in out.output


@pytest.mark.parametrize(("flags", "message"), [
    (["--device", "emulator-5554"], "--device runs a REQUEST"),
    (["--apps", "settings"], "--apps picks a REQUEST's sandbox apps"),
    (["--adb-port", "5037"], "--adb-port needs --device"),
    (["--task-id", "x"], "not both"),
])
def test_run_refuses_what_a_task_run_would_ignore(flags: list[str], message: str, seam: Seam, tmp_path: Path) -> None:
    out = _invoke([*_cmd("run", tmp_path), *flags])
    assert out.exit_code == 2 and message in out.output, out.output
    assert seam.built == []


def test_run_guidance_file_replaces_a_tasks_policy(seam: Seam, test_gguf: Path, tmp_path: Path) -> None:
    folder = _policy_folder(tmp_path)
    task = ["run", "--task", str(folder / "water-fern.yaml"), "--trace-dir", str(tmp_path / "t"), *_model(test_gguf)]
    assert _invoke(task).exit_code == 0
    assert POLICY in _system(seam.planner)  # the task's own (its folder's) policy
    other = tmp_path / "other-policy.md"
    other.write_text("Another policy: never water a fern twice a day.")
    out = _invoke([*task, "--guidance-file", str(other)])
    assert out.exit_code == 0, out.output
    system = _system(seam.planner)
    assert "never water a fern twice a day" in system and POLICY not in system


def test_run_guidance_file_joins_a_request_run(seam: Seam, test_gguf: Path, tmp_path: Path) -> None:
    doc = tmp_path / "policy.md"
    doc.write_text("House policy: never change the ring mode after 22:00.")
    out = _invoke(["run", "Turn off wifi", "--trace-dir", str(tmp_path), *_model(test_gguf), "--guidance-file", str(doc)])
    assert out.exit_code == 0, out.output
    system = _system(seam.planner)
    assert "Operating policy:\nHouse policy: never change the ring mode" in system
    assert system.index("House policy") < system.index("Tools:")


def test_run_mode_bare_runs_the_planner_alone(seam: Seam, test_gguf: Path, tmp_path: Path) -> None:
    request = ["run", "Turn off wifi", "--trace-dir", str(tmp_path), *_model(test_gguf)]
    assert _invoke(request).exit_code == 0
    harness = seam.planner.requests[0]  # type: ignore[union-attr]
    out = _invoke([*request, "--mode", "bare"])
    assert out.exit_code == 0 and "(bare)" in out.output, out.output
    bare = seam.planner.requests[0]  # type: ignore[union-attr]
    assert "Guidance:" in harness.messages[0].content and "Guidance:" not in bare.messages[0].content
    assert [m.section for m in harness.messages] == ["prefix", "evidence", "request"]
    assert [m.section for m in bare.messages] == ["prefix", "request"]  # no clock, no routed skills
    # a task in bare mode: its memories as earlier conversation, as `bench --no-harness` does
    memory_task = next(t for t in load_suite("dev") if t.memory)
    out = _invoke(["run", "--task-id", memory_task.id, "--mode", "bare", "--trace-dir", str(tmp_path),
                   *_model(test_gguf)])
    assert out.exit_code == 0, out.output
    assert "prior" in [m.section for m in seam.planner.requests[0].messages]  # type: ignore[union-attr]


# ---------------------------------------------------------------- bench


def _report(tmp_path: Path, args: list[str], seam: Seam) -> dict[str, Any]:
    out_file = tmp_path / "report.json"
    out = _invoke(["bench", "--no-embedder", "--out", str(out_file), *args])
    assert out.exit_code == 0, out.output
    return json.loads(out_file.read_text())


@pytest.mark.parametrize(("flags", "expect"), [
    (["--split", "evolve"], lambda ts: {t.split for t in ts} == {"evolve"}),
    (["--group", "memory"], lambda ts: {t.group for t in ts} == {"memory"}),
    (["--limit", "3"], lambda ts: len(ts) == 3),
    (["--per-group", "1"], lambda ts: len(ts) == 4 and len({t.group for t in ts}) == 4),
])
def test_bench_selection_flags_pick_the_tasks(flags: list[str], expect: Any, seam: Seam, test_gguf: Path,
                                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[Any] = []

    async def fake_comparison(tasks: list[Any], planner: Any, **kwargs: Any) -> Any:
        ran.extend(tasks)
        raise SystemExit(0)

    monkeypatch.setattr(bench_module, "run_comparison", fake_comparison)
    out = _invoke(["bench", "--no-embedder", *_model(test_gguf), *flags])
    assert out.exit_code == 0, out.output
    assert ran and expect(ran)
    ran.clear()
    ids = [t.id for t in load_suite("dev")[:2]]
    out = _invoke(["bench", "--no-embedder", *_model(test_gguf), "--task-id", ids[0], "--task-id", ids[1]])
    assert [t.id for t in ran] == ids


def test_bench_modes_follow_the_flags(seam: Seam, test_gguf: Path, tmp_path: Path) -> None:
    args = ["--tasks", str(WORLD_DIR), "--limit", "1", *_model(test_gguf)]
    assert set(_report(tmp_path, args, seam)["runs"]) == {"harness"}
    assert set(_report(tmp_path, [*args, "--no-harness"], seam)["runs"]) == {"bare"}
    assert set(_report(tmp_path, [*args, "--compare"], seam)["runs"]) == {"bare", "harness"}


def test_bench_builds_the_embedder_only_when_asked(seam: Seam, test_gguf: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import pocketpilot.cli._embedder as embedder_module

    built: list[int] = []
    monkeypatch.setattr(embedder_module, "default_embedder", lambda: built.append(1))
    base = ["bench", "--tasks", str(WORLD_DIR), "--limit", "1", *_model(test_gguf)]
    assert _invoke([*base, "--no-embedder"]).exit_code == 0 and built == []
    assert _invoke([*base, "--embedder"]).exit_code == 0 and built == [1]


def test_bench_writes_markdown_and_outcomes(seam: Seam, test_gguf: Path, tmp_path: Path) -> None:
    md, traces = tmp_path / "table.md", tmp_path / "traces"
    out = _invoke(["bench", "--tasks", str(WORLD_DIR), "--no-embedder", "--limit", "1", *_model(test_gguf),
                   "--markdown", str(md), "--trace-dir", str(traces)])
    assert out.exit_code == 0, out.output
    assert md.read_text().startswith("| group |")
    assert len((traces / "outcomes.jsonl").read_text().splitlines()) == 1
    assert list((traces / "harness").glob("*.jsonl"))


def test_bench_shard_and_resume(seam: Seam, test_gguf: Path, tmp_path: Path) -> None:
    base = ["--tasks", str(WORLD_DIR), *_model(test_gguf)]
    whole = {o["task_id"] for o in _report(tmp_path, base, seam)["runs"]["harness"]["outcomes"]}
    shard0 = _report(tmp_path, [*base, "--shard", "0/2"], seam)["task_ids"]
    shard1 = _report(tmp_path, [*base, "--shard", "1/2"], seam)["task_ids"]
    assert set(shard0) | set(shard1) == whole and not set(shard0) & set(shard1)
    traces = tmp_path / "resumable"
    _report(tmp_path, [*base, "--limit", "1", "--trace-dir", str(traces)], seam)
    out = _invoke(["bench", "--no-embedder", *base, "--trace-dir", str(traces), "--resume"])
    assert out.exit_code == 0 and f"resume: 1 of {len(whole)} run(s) already finished" in out.output
    assert len((traces / "outcomes.jsonl").read_text().splitlines()) == len(whole)  # only the rest ran


def test_ray_flags_reach_the_pool_or_are_refused(seam: Seam, test_gguf: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from pocketpilot.evaluation.compare import TaskOutcome
    from pocketpilot.trainer_bridge.rollouts import ray_pool

    assert "--workers applies to --backend ray" in _invoke(["bench", "--workers", "3", "--limit", "1"]).output
    assert "--ray-address applies to --backend ray" in _invoke(["bench", "--ray-address", "x:1", "--limit", "1"]).output
    seen: dict[str, Any] = {}

    def fake_pool(tasks: list[Any], factory: Any, *, workers: int, trace_dir: Any, address: Any) -> list[TaskOutcome]:
        seen.update(workers=workers, address=address, n_ctx=factory.n_ctx)
        return [TaskOutcome(task_id=t.id, capability=t.capability, group=t.group, success=True, progress=1.0,
                            stop_reason="finish", steps=1, prompt_tokens_evaluated=1, completion_tokens=1, wall_s=0.1)
                for t in tasks]

    monkeypatch.setattr(ray_pool, "ray_available", lambda: True)
    monkeypatch.setattr(bench_module, "run_ray_outcomes", fake_pool)
    ray = ["bench", "--backend", "ray", "--tasks", str(WORLD_DIR), "--limit", "1", *_model(test_gguf)]
    out = _invoke([*ray, "--workers", "3", "--ray-address", "10.0.0.1:6379"])
    assert out.exit_code == 0, out.output
    assert seen == {"workers": 3, "address": "10.0.0.1:6379", "n_ctx": 8192}
    out = _invoke([*ray, "--budget", "guidance=9000", "--n-ctx", "16384"])
    assert out.exit_code == 2 and "cannot be passed to --backend ray" in out.output
    folder = _policy_folder(tmp_path)
    out = _invoke(["bench", "--backend", "ray", "--tasks", str(folder), "--limit", "1", *_model(test_gguf)])
    assert out.exit_code == 2 and "without their guidance" in out.output


def test_bench_guidance_file_replaces_every_tasks_policy(seam: Seam, test_gguf: Path, tmp_path: Path) -> None:
    folder = _policy_folder(tmp_path)
    base = ["bench", "--tasks", str(folder), "--no-embedder", "--limit", "1", *_model(test_gguf)]
    assert _invoke(base).exit_code == 0
    assert POLICY in _system(seam.planner)
    doc = tmp_path / "policy.md"
    doc.write_text("Bench-wide policy: report the moisture after watering.")
    out = _invoke([*base, "--guidance-file", str(doc)])
    assert out.exit_code == 0, out.output
    system = _system(seam.planner)
    assert "Bench-wide policy" in system and POLICY not in system


def test_the_outside_world_oracles_still_pass_with_a_policy(seam: Seam, test_gguf: Path, tmp_path: Path) -> None:
    """A policy changes what the planner reads, not how a task is judged."""
    folder = _policy_folder(tmp_path)
    tasks = load_suite(directory=folder)
    seam.actions = [a for t in tasks for a in oracle_actions(load_task(folder / f"{_file_of(t.id)}"))]
    data = _report(tmp_path, ["--tasks", str(folder), *_model(test_gguf)], seam)
    assert all(o["success"] for o in data["runs"]["harness"]["outcomes"])


def _file_of(task_id: str) -> str:
    for path in WORLD_DIR.glob("*.yaml"):
        if yaml.safe_load(path.read_text())["id"] == task_id:
            return path.name
    raise AssertionError(task_id)


def test_the_report_records_what_the_flags_set_over_the_tasks(seam: Seam, test_gguf: Path, tmp_path: Path) -> None:
    doc = tmp_path / "policy.md"
    doc.write_text("Bench-wide policy.")
    base = ["--tasks", str(WORLD_DIR), "--limit", "1", *_model(test_gguf)]
    plain = _report(tmp_path, base, seam)["kit"]
    assert "guidance_override" not in plain and "budget_override" not in plain
    kit = _report(tmp_path, [*base, "--guidance-file", str(doc), "--budget", "guidance=3000"], seam)["kit"]
    assert kit["guidance_override"]["entries"] == 1 and len(kit["guidance_override"]["sha256"]) == 64
    assert kit["budget_override"] == {"guidance": 3000}


# ---------------------------------------------------------------- --exposure and --tool-k (issue 35)

FERN = WORLD_DIR / "water-fern.yaml"


def _first_tools(seam: Seam) -> list[str]:
    assert seam.planner is not None and seam.planner.requests
    return [t.name for t in seam.planner.requests[0].tools]


@pytest.mark.parametrize("command", ["run", "bench"])
def test_exposure_phone_shows_every_tool_of_the_world(command: str, seam: Seam, test_gguf: Path,
                                                      tmp_path: Path) -> None:
    out = _invoke([*_cmd(command, tmp_path), *_model(test_gguf), "--mode" if command == "run" else "--no-harness",
                   *(["bare"] if command == "run" else [])])
    assert out.exit_code == 0, out.output
    task_tools = _first_tools(seam)
    out = _invoke([*_cmd(command, tmp_path), *_model(test_gguf), "--exposure", "phone",
                   "--mode" if command == "run" else "--no-harness", *(["bare"] if command == "run" else [])])
    assert out.exit_code == 0, out.output
    phone_tools = _first_tools(seam)
    assert set(task_tools) < set(phone_tools)
    if command == "run":  # the one task run: every tool of its world
        assert set(phone_tools) == set(prepare(load_task(FERN), exposure="phone").world.tool_names())


@pytest.mark.parametrize("command", ["run", "bench"])
def test_tool_k_shows_at_most_k_retrieved_tools_and_the_widening_tool(command: str, seam: Seam, test_gguf: Path,
                                                                    tmp_path: Path) -> None:
    out = _invoke([*_cmd(command, tmp_path), *_model(test_gguf), "--exposure", "phone", "--tool-k", "1"])
    assert out.exit_code == 0, out.output
    shown = _first_tools(seam)
    assert len(shown) == 2 and MORE_TOOLS in shown


@pytest.mark.parametrize("command", ["run", "bench"])
@pytest.mark.parametrize(("flags", "message"), [
    (["--exposure", "desk"], "unknown exposure 'desk'"),
    (["--tool-k", "0"], "--tool-k must be at least 1"),
])
def test_bad_exposure_flags_are_one_line_and_exit_2(command: str, flags: list[str], message: str, seam: Seam,
                                                    test_gguf: Path, tmp_path: Path) -> None:
    out = _invoke([*_cmd(command, tmp_path), *_model(test_gguf), *flags])
    assert out.exit_code == 2
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and message in lines[0], out.output
    assert not seam.built  # refused before any planner was built


def test_run_refuses_exposure_flags_without_a_task(seam: Seam, test_gguf: Path) -> None:
    out = _invoke(["run", "turn the wifi off", *_model(test_gguf), "--exposure", "phone"])
    assert out.exit_code == 2 and "apply to a task run" in out.output


def test_the_library_refuses_the_same_bad_input() -> None:
    with pytest.raises(UsageError, match="unknown exposure"):
        RunSettings(exposure="desk")
    with pytest.raises(UsageError, match="at least 1"):
        RunSettings(tool_k=0)
    with pytest.raises(UsageError, match="unknown exposure"):
        prepare(load_task(FERN), exposure="desk")  # type: ignore[arg-type]
