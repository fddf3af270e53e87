"""What every stand-in for a greedy model shares in the decode-memo tests.

The memo only serves a planner that vouches for its decodes (``decode_identity``) and names its
weights; a stand-in that says so, and whose action is a function of its prompt, lets a test count
what a rerun decodes again without loading a model. Subclasses write ``plan``.
"""

from __future__ import annotations

from typing import Any

from pocketpilot.contracts import PlannerInfo, SamplerSettings, digest
from pocketpilot.harness.base import PlanRequest


class GreedyStandIn:
    """A planner that vouches for greedy decoding, keyed by its prompt (and ``extra_identity``).

    Args:
        sha: the weights' sha256 it claims (a different one must miss the memo).
        temperature: its sampler's (above 0 the memo must be bypassed).
        vouch: whether it vouches at all (a planner that does not is never memoized).
    """

    def __init__(self, *, sha: str = "f" * 64, temperature: float = 0.0, vouch: bool = True) -> None:
        self.vouch = vouch
        self.info = PlannerInfo(backend="fake", model="fake.gguf", model_sha256=sha,
                                sampler=SamplerSettings(temperature=temperature))

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)

    async def load(self) -> None:
        pass

    async def aclose(self) -> None:
        pass

    def extra_identity(self) -> dict[str, Any]:
        """What else decides this stand-in's output besides the prompt (a grammar, say)."""
        return {}

    def decode_identity(self, request: PlanRequest) -> dict[str, Any] | None:
        if not self.vouch:
            return None
        return {"prompt": digest([m.model_dump(mode="json") for m in request.messages]), **self.extra_identity()}
