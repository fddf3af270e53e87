"""The calculator: safe arithmetic on an expression string."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ..arith import ArithmeticExpressionError, evaluate
from ._base import App

__all__ = ["CalculatorApp"]


class CalculatorApp(App):
    """Evaluate arithmetic."""

    name = "calculator"
    domain = "utilities"

    @tool(effect="read", idempotent=True)
    async def calculate(
        self,
        expression: str = Field(
            min_length=1,
            max_length=200,
            description="Numbers with + - * / ** and parentheses; sqrt, abs, round allowed.",
        ),
    ) -> dict[str, Any]:
        """Evaluate an arithmetic expression, e.g. (12.5 * 3) / 0.9144.

        Args:
            expression: Numbers with + - * / ** and parentheses; sqrt, abs, round allowed.
        """
        self.state  # noqa: B018 - the power gate applies to pure tools too
        try:
            result = evaluate(expression)
        except ArithmeticExpressionError as exc:
            raise ToolFailure(exc.code, str(exc)) from exc
        if isinstance(result, float) and result.is_integer():
            result = int(result)
        return {"expression": expression, "result": round(result, 6) if isinstance(result, float) else result}
