"""The calculator: exact integers, exact decimals, errors for what it refuses, and bounds checked before
computing (``9**9**9`` answers at once instead of freezing the process)."""

from __future__ import annotations

import json
import time

import pytest

from jarvis_agents.tools.calculator import Calculator, CalculatorError, evaluate, format_number
from jarvis_core.tools import ToolExecutor
from jarvis_core.types import ToolCall


def calc(expression: str) -> str:
    return Calculator().run(expression=expression)


@pytest.mark.parametrize(("expression", "expected"), [
    ("17 * 23", "391"),
    ("2 + 2", "4"),
    ("2**64", "18446744073709551616"),
    ("0.1 + 0.2", "0.3"),
    ("7 / 2", "3.5"),
    ("6 / 3", "2"),
    ("1 / 3", "0.3333333333333333"),
    ("2 ^ 10", "1024"),
    ("2 ** -2", "0.25"),
    ("-(3 - 5) * 4", "8"),
    ("17 // 5", "3"),
    ("17 % 5", "2"),
    ("sqrt(16)", "4"),
    ("sqrt(2)", "1.4142135623730951"),
    ("abs(-7) + min(3, 1, 2) + max(4, 9)", "17"),
    ("round(2.567, 2)", "2.57"),
    ("ceil(2.1) + floor(2.9)", "5"),
    ("log10(1000)", "3"),
    ("17 × 23 =", "391"),
    ("1_000 * 3", "3000"),
])
def test_values(expression, expected):
    assert calc(expression) == expected


@pytest.mark.parametrize(("expression", "message"), [
    ("9**9**9", "too large"),
    ("10**100000", "too large"),
    ("2**(2**40)", "too large"),
    ("1 / 0", "division by zero"),
    ("5 % 0", "division by zero"),
    ("0 ** -1", "division by zero"),
    ("(-8) ** 0.5", "no real value"),
    ("sqrt(-1)", "negative"),
    ("log(0)", "positive"),
    ("__import__('os').system('true')", "not allowed"),
    ("__import__('os')", "unknown function"),
    ("x + 1", "unknown name"),
    ("(1).__class__", "not allowed"),
    ("[1, 2]", "not allowed"),
    ("'a' * 3", "only numbers"),
    ("True + 1", "only numbers"),
    ("", "empty"),
    ("1 +", "not a valid"),
    ("exp(1000)", "exp"),
    ("sqrt(2) * 1e308 * 10", "not a finite"),
    ("round(2.5, 1000)", "between -100 and 100"),
    ("sin(1, 2)", "wrong number of arguments"),
    ("1" * 3000, "longer than"),
])
def test_refusals(expression, message):
    with pytest.raises(CalculatorError, match=message):
        calc(expression)


def test_huge_power_is_refused_before_it_is_computed():
    started = time.monotonic()
    for expression in ("9**9**9", "99999999**99999999", "(2**5000) * (2**5000) * (2**5000)"):
        with pytest.raises(CalculatorError):
            evaluate(expression)
    assert time.monotonic() - started < 1.0  # a computed 9**9**9 would take minutes and gigabytes


def test_results_stay_exact_up_to_the_bound():
    value = evaluate("2**9000 + 1")
    assert isinstance(value, int) and value == 2**9000 + 1
    assert format_number(evaluate("10**-20")) == "0.00000000000000000001"


def test_through_the_core_executor_a_refusal_is_a_failed_result_the_model_can_read():
    executor = ToolExecutor([Calculator()])
    ok = executor.execute(ToolCall("c1", "calculator", json.dumps({"expression": "17*23"})))
    bad = executor.execute(ToolCall("c2", "calculator", json.dumps({"expression": "9**9**9"})))
    wrong = executor.execute(ToolCall("c3", "calculator", json.dumps({"expr": "1"})))
    assert (ok.ok, ok.content) == (True, "391")
    assert not bad.ok and "CalculatorError" in bad.content and "too large" in bad.content
    assert not wrong.ok and "expression" in wrong.content
