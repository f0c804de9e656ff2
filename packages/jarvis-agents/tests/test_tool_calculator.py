"""The calculator: exact integers, exact decimals, errors for what it refuses, and bounds checked before
computing (``9**9**9`` and ``1e999999999`` answer at once instead of freezing the process)."""

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
    ("17 \u00d7 23 =", "391"),
    ("1_000 * 3", "3000"),
    ("2.5e-3", "0.0025"),
    ("1e-400 * 1e400", "1"),
    ("1e308 * 1e308", "1" + "0" * 616),
    ("0e999999999", "0"),
    ("1/3**6000", "1.8727149695066043e-2863"),  # a float would print 0.0
    ("3**6000/7", "7.6283441518482002e+2861"),  # a float would overflow
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


def _balanced(term: str, count: int) -> str:
    """``count`` copies of ``term`` summed as a balanced tree (a flat chain hits the nesting limit first)."""
    items = [term] * count
    while len(items) > 1:
        items = [f"({a}+{b})" for a, b in zip(items[::2], items[1::2], strict=False)] + (items[-1:] if len(items) % 2 else [])
    return items[0]


#: Short inputs whose naive evaluation runs for seconds to hours in one C call holding the GIL.
HOSTILE = [
    ("1e10000000", "too large"),  # 12.4 s before the literal's size was read from its exponent
    ("1e999999999", "too large"),  # did not finish in 30 s
    ("9.9e99999999", "too large"),
    ("-1e-10000000", "too large"),
    ("1e1000000", "too large"),
    ("1e" + "9" * 1900, "too large"),
    ("1" + "0" * 1900 + "e-1900" + "0" * 50, "too large"),
    ("9**9**9**9", "too large"),
    ("10**10**10", "too large"),
    ("2**2**2**2**2**2", "too large"),
    ("(10**1000)**(10**1000)", "too large"),
    ("2**-10**9", "too large"),
    ("0.5**10**9", "too large"),
    ("(1+1e-15)**1e300", "too large"),
    ("1e308**1e308", "too large"),
    ("sqrt(10**10**10)", "too large"),
    ("factorial(10**6)", "unknown function"),
    ("'a' * 10**9", "only numbers"),
    ("1 << 10**9", "not allowed"),
    ("10**9999 * 10**9999", "too large"),
    (_balanced("sqrt(3**6300)", 100), "too much work"),
]


@pytest.mark.parametrize(("expression", "message"), HOSTILE, ids=[e[:24] for e, _ in HOSTILE])
def test_hostile_expressions_are_refused_at_once(expression, message):
    started = time.monotonic()
    with pytest.raises(CalculatorError, match=message):
        calc(expression)
    assert time.monotonic() - started < 1.0  # liveness: unchecked, several of these never return


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
