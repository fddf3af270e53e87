"""Safe arithmetic evaluation for the calculator: an AST walk, never ``eval``.

Only numbers, ``+ - * / // % **``, unary signs, parentheses and a few named functions are
accepted; exponents and results are bounded so a planner cannot hang the sandbox with
``9**9**9``.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable

__all__ = ["ArithmeticExpressionError", "evaluate"]

MAX_EXPRESSION = 200
MAX_EXPONENT = 100
MAX_MAGNITUDE = 1e15

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": round,
}
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_CONSTANTS = {"pi": math.pi, "e": math.e}


class ArithmeticExpressionError(ValueError):
    """The expression is not plain arithmetic, or cannot be evaluated."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value  # type: ignore[no-any-return]
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _eval(node.operand)
        return value if isinstance(node.op, ast.UAdd) else -value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ArithmeticExpressionError("math_error", f"exponent {right:g} is too large")
        try:
            result = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError as exc:
            raise ArithmeticExpressionError("math_error", "division by zero") from exc
        if isinstance(result, complex):
            raise ArithmeticExpressionError("math_error", "result is not a real number")
        if abs(result) > MAX_MAGNITUDE:
            raise ArithmeticExpressionError("math_error", "result is too large")
        return result
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        args = [_eval(a) for a in node.args]
        try:
            return float(_FUNCTIONS[node.func.id](*args))
        except (TypeError, ValueError) as exc:
            raise ArithmeticExpressionError("math_error", f"{node.func.id}: {exc}") from exc
    raise ArithmeticExpressionError(
        "invalid_expression",
        f"unsupported element {ast.dump(node)[:40]!r}; use numbers, + - * / // % **, parentheses, "
        f"{', '.join(_FUNCTIONS)}",
    )


def evaluate(expression: str) -> float:
    """Evaluate a plain arithmetic expression.

    Raises:
        ArithmeticExpressionError: with code ``invalid_expression`` (not arithmetic) or
            ``math_error`` (division by zero, overflow, a negative square root).
    """
    if len(expression) > MAX_EXPRESSION:
        raise ArithmeticExpressionError(
            "invalid_expression", f"expression longer than {MAX_EXPRESSION} chars"
        )
    cleaned = expression.replace("×", "*").replace("÷", "/").replace("^", "**")
    cleaned = _THOUSANDS.sub("", cleaned)  # 1,000 -> 1000, but round(2.5, 1) keeps its comma
    try:
        tree = ast.parse(cleaned.strip(), mode="eval")
    except SyntaxError as exc:
        raise ArithmeticExpressionError("invalid_expression", f"cannot parse {expression!r}") from exc
    return _eval(tree.body)
