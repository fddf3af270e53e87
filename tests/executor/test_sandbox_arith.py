"""The calculator's evaluator: arithmetic only, bounded, never eval."""

from __future__ import annotations

import pytest

from pocketpilot.executor.sandbox.arith import ArithmeticExpressionError, evaluate


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("-4 + +2", -2),
        ("7 // 2 + 7 % 2", 4),
        ("2 ** 10", 1024),
        ("2^3", 8),
        ("400 / 0.9144", 400 / 0.9144),
        ("sqrt(16) + abs(-2)", 6),
        ("round(2.567, 1)", 2.6),
        ("1,000 * 2", 2000),
        ("3 × 4 ÷ 2", 6),
        ("pi * 2", 6.283185307179586),
    ],
)
def test_evaluates(expr: str, value: float) -> None:
    assert evaluate(expr) == pytest.approx(value)


@pytest.mark.parametrize(
    ("expr", "code"),
    [
        ("__import__('os').system('true')", "invalid_expression"),
        ("open('/etc/passwd')", "invalid_expression"),
        ("x + 1", "invalid_expression"),
        ("1 +", "invalid_expression"),
        ("'a' * 3", "invalid_expression"),
        ("[1, 2]", "invalid_expression"),
        ("(1).real", "invalid_expression"),
        ("sqrt(x=4)", "invalid_expression"),
        ("1 / 0", "math_error"),
        ("9 ** 9 ** 9", "math_error"),
        ("10 ** 20", "math_error"),
        ("sqrt(-1)", "math_error"),
        ("(-8) ** 0.5", "math_error"),
        ("1" * 201, "invalid_expression"),
    ],
)
def test_rejects(expr: str, code: str) -> None:
    with pytest.raises(ArithmeticExpressionError) as info:
        evaluate(expr)
    assert info.value.code == code
