"""The harness's context as OpenAI chat messages, with tool calls and their results paired by id.

OpenAI-style servers validate the history: every ``tool`` message must answer a
``tool_call_id`` of the assistant message before it, and llama-cpp-python's server refuses a
``tool`` message without one (HTTP 500). The harness keeps each step's record on its two
history messages (``ChatMessage.step``), and this module rebuilds the turn from it:

==========================================  =================================================
harness message                             OpenAI messages
==========================================  =================================================
system / user                               the same role and content
assistant, ``tool_call`` action             ``assistant`` with ``tool_calls``: one
                                            ``{id, type: "function", function: {name,
                                            arguments}}`` per call, ``arguments`` a JSON string
assistant, any other action kind            ``assistant`` with one call of the reserved
(memory_search, memory_write, load_skill,   function ``pp_<kind>`` whose arguments are the
delegate, ask_user, refuse, finish)         action's fields (the convention of
                                            :func:`pocketpilot.tracing.trace.episode_to_openai`, so
                                            exported traces and live prompts agree)
tool (the step's feedback)                  one ``tool`` message per call, with its
                                            ``tool_call_id``: a single call gets the harness's
                                            feedback verbatim; a batch gets each call's own
                                            result, the step's notices on the last one (when
                                            the harness answered the batch as a whole, e.g.
                                            "not allowed", every call gets that answer)
assistant whose output did not parse        ``assistant`` with the raw text as content
tool after such an assistant, or any        ``user`` with the content (there is no call for a
message not tied to a step                  ``tool`` message to answer)
==========================================  =================================================

Call ids are ``call_<step index>_<position in the batch>``: stable across steps, so step k's
messages are the same bytes at step k+1 and a server's prompt cache keeps hitting. An
assistant message with ``tool_calls`` carries no ``content`` key at all: llama-cpp-python
rejects ``null`` there, and OpenAI accepts the key's absence.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...contracts import Action, Step, ToolCallAction
from ...tracing.trace import RESERVED_PREFIX
from ..base import ChatMessage

__all__ = ["call_id", "openai_messages"]


def call_id(step_index: int, position: int) -> str:
    """The id of the ``position``-th call of step ``step_index`` (stable across requests)."""
    return f"call_{step_index}_{position}"


def _calls(action: Action) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(action, ToolCallAction):
        return [(c.name, c.arguments) for c in action.calls]
    return [(RESERVED_PREFIX + action.kind, action.model_dump(mode="json", exclude={"kind"}))]


def _assistant(step: Step, action: Action) -> dict[str, Any]:
    return {
        "role": "assistant",
        "tool_calls": [
            {
                "id": call_id(step.index, i),
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
            }
            for i, (name, arguments) in enumerate(_calls(action))
        ],
    }


def _results(step: Step, action: Action, feedback: str) -> list[dict[str, Any]]:
    count = len(_calls(action))
    if count == 1 or len(step.results) != count:
        contents = [feedback] * count
    else:
        contents = []
        for i, result in enumerate(step.results):
            body = result.model_dump(mode="json", exclude_defaults=True) | {"ok": result.ok}
            if i == count - 1 and step.notices:
                body["notices"] = step.notices
            contents.append(json.dumps(body, ensure_ascii=False, default=str))
    return [
        {"role": "tool", "tool_call_id": call_id(step.index, i), "content": content}
        for i, content in enumerate(contents)
    ]


def _answers(step: Step | None, asked: Step) -> bool:
    """Whether a feedback message's step is the one whose calls are open."""
    return step is not None and step.index == asked.index


def openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """The OpenAI ``messages`` list for an assembled context (mapping in the module docstring).

    A step's calls left unanswered (a hand-built context with an action and no feedback) get
    the empty feedback ``{}``, which is what the harness itself sends for a step with nothing
    to report: a server would otherwise reject the whole request.
    """
    out: list[dict[str, Any]] = []
    pending: tuple[Step, Action] | None = None  # the step whose tool_calls the next tool message answers

    def close() -> None:
        nonlocal pending
        if pending is not None:
            out.extend(_results(*pending, "{}"))
        pending = None

    for message in messages:
        step = message.step
        if message.role == "assistant" and step is not None and step.action is not None:
            close()
            out.append(_assistant(step, step.action))
            pending = (step, step.action)
        elif message.role == "tool" and pending is not None and _answers(step, pending[0]):
            out.extend(_results(*pending, message.content))
            pending = None
        else:
            close()
            role = "user" if message.role == "tool" else message.role
            out.append({"role": role, "content": message.content})
    close()
    return out
