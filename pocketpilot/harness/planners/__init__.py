"""Planners behind one protocol: in-process llama.cpp, any OpenAI-compatible endpoint, scripted replay."""

from .llama_cpp import LlamaCppPlanner
from .openai_compat import OpenAICompatPlanner
from .scripted import ScriptedPlanner

__all__ = ["LlamaCppPlanner", "OpenAICompatPlanner", "ScriptedPlanner"]
