"""--n-ctx, --budget and the decoding flags reach the in-process planner (no model is loaded)."""

from __future__ import annotations

import click
from click.testing import CliRunner

from pocketpilot.cli._planner import build_planner, context_budget, planner_options


def test_flags_reach_the_planner_and_the_budget(test_gguf) -> None:
    seen = {}

    @click.command()
    @planner_options
    def probe(model, endpoint, temperature, max_new_tokens, pull):  # noqa: ANN001, ANN202
        planner = build_planner(model, endpoint, temperature, max_new_tokens, pull)
        seen["planner"], seen["budget"] = planner, context_budget()

    result = CliRunner().invoke(probe, ["--model", str(test_gguf), "--no-pull", "--n-ctx", "16384",
                                        "--budget", "guidance=7000", "--constraint", "gbnf", "--reproducible",
                                        "--threads", "1"])
    assert result.exit_code == 0, result.output
    planner = seen["planner"]
    assert planner.eval_settings.n_ctx == 16384 and planner.eval_settings.n_threads == 1
    assert planner.constraint == "gbnf" and not planner.fast_forward and planner.reproducible
    assert seen["budget"].guidance == 7000


def test_a_bad_budget_flag_is_a_usage_error(test_gguf) -> None:
    @click.command()
    @planner_options
    def probe(model, endpoint, temperature, max_new_tokens, pull):  # noqa: ANN001, ANN202
        context_budget()

    result = CliRunner().invoke(probe, ["--budget", "memory=10"])
    assert result.exit_code != 0 and "SECTION=TOKENS" in str(result.exception)
