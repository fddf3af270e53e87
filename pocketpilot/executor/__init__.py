"""The executor: the only part that changes device or app state."""

from .effects import ClassifiesEffects
from .tools import Tool, ToolRegistry, tool

__all__ = ["ClassifiesEffects", "Tool", "ToolRegistry", "tool"]
