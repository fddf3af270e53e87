"""The executor: the only part that changes device or app state."""

from .tools import Tool, ToolRegistry, tool

__all__ = ["Tool", "ToolRegistry", "tool"]
