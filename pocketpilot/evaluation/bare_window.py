"""The bare planner's earlier conversation: the newest of its user's history that fits its context window.

The report's protocol for long histories: the plain model gets the most recent history that
fits its context, the oldest truncated first; the harness gets the store. A fixed token budget
(:data:`PRIOR_BUDGET`) gives a small model a few dozen messages of a 500-message history whatever
its window, and says nothing about whether the prompt fits; here the budget is what the window
leaves once everything else the run can need is counted:

- the system message as the bare session builds it (rules, offered actions, tools, the task's
  policy), counted with the planner's own tokenizer;
- the request;
- the history section's whole budget (the steps the run will add) and the tokens one answer
  may take (the sampler's ``max_tokens``);
- the chat template's tokens around every message, and a margin.

A planner that declares no window (a remote server, a scripted planner) gets the fixed budget.
When messages are left out, the first message of the earlier conversation says how many, and
the trace's preamble records it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..contracts import ToolSpec
from ..harness import HarnessConfig, Planner
from ..harness.context import ContextAssembler
from ..tasks import TaskSpec
from ..tasks.memory_seed import PriorConversation, fit_prior

__all__ = ["MARGIN", "MESSAGE_OVERHEAD", "PRIOR_BUDGET", "BareWindow", "bare_window", "fit_bare_prior"]

PRIOR_BUDGET = 1500
"""Tokens of earlier conversation a bare planner gets when it declares no context window."""
MESSAGE_OVERHEAD = 8
"""Tokens a chat template adds around one message (role markers, separators), counted high."""
MARGIN = 256
"""Tokens kept free besides everything counted (a note the context adds, tokenizer seams)."""


@dataclass(frozen=True)
class BareWindow:
    """How a bare run's context window is shared out (all in tokens)."""

    n_ctx: int
    system: int
    """The system message: rules, actions, tools, the task's policy."""
    request: int
    history: int
    """The history section's budget: the steps the run adds."""
    answer: int
    """One answer's ``max_tokens``."""

    @property
    def prior(self) -> int:
        """What is left for earlier conversation (never negative)."""
        fixed = self.system + self.request + self.history + self.answer + 2 * MESSAGE_OVERHEAD + MARGIN
        return max(0, self.n_ctx - fixed)


def bare_window(planner: Planner, config: HarnessConfig, tools: Sequence[ToolSpec], kinds: Sequence[str],
                request: str, policy: Sequence[str] = ()) -> BareWindow | None:
    """The bare run's window shared out, or None when the planner declares no context window.

    Raises:
        ContractError: the tools or rules do not fit their budgets (the run itself would refuse them).
    """
    evals = planner.info.eval
    if evals is None:
        return None
    prefix, _ = ContextAssembler(config.budget, planner.count_tokens).prefix(list(tools), list(kinds), policy=policy)
    return BareWindow(n_ctx=evals.n_ctx, system=planner.count_tokens(prefix.content),
                      request=planner.count_tokens(request), history=config.budget.history,
                      answer=planner.info.sampler.max_tokens)


def fit_bare_prior(task: TaskSpec, planner: Planner, config: HarnessConfig, tools: Sequence[ToolSpec],
                   kinds: Sequence[str], policy: Sequence[str] = (), budget: int | None = None) -> PriorConversation:
    """The task user's memories as the bare planner's earlier conversation, fitted to its window.

    ``budget``: a fixed token budget instead of the window's (None: the window's, or
    :data:`PRIOR_BUDGET` when the planner declares none). Load the planner first: before it
    loads, an in-process planner's token count is an estimate.
    """
    if budget is None:
        window = bare_window(planner, config, tools, kinds, task.goal, policy)
        budget = window.prior if window is not None else PRIOR_BUDGET
    return fit_prior(task, planner.count_tokens, budget, overhead=MESSAGE_OVERHEAD)
