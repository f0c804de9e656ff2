"""``calculator``: arithmetic on an AST allow-list, exact where it can be, bounded before it computes.

Integers and decimal literals are exact (``2**64`` is ``18446744073709551616``, ``0.1 + 0.2`` is ``0.3``,
``2 + 2`` is ``4``); functions such as ``sqrt`` and ``log`` give floats unless the result is exact
(``sqrt(16)`` is ``4``). ``^`` means power, as models write it.

The cost of an expression is bounded before anything is built, because big-integer arithmetic runs in
one C call that holds the GIL: no timeout can stop it and every other thread (a server's event loop
included) waits for it. So a literal's size is read from its digits and exponent (``1e999999999`` is
refused without making ``10**999999999``), every operation checks the size of its result *before*
computing it (``9**9**9`` is an error at once), and the work of one expression is capped
(:data:`MAX_COST`). No operation exists that could outgrow these checks: there are no factorials,
strings, shifts or bitwise operators.
"""

from __future__ import annotations

import ast
import math
import re
import sys
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any, Callable, Dict, List, Union

from jarvis_core.tools import ToolPolicy
from jarvis_core.types import ToolSpec

__all__ = ["MAX_BITS", "Calculator", "CalculatorError", "evaluate"]

Number = Union[int, Fraction, float]

#: Largest exact value (numerator plus denominator bits) the calculator will build: about 3,000 digits.
MAX_BITS = 10_000
#: Longest expression accepted, and deepest nesting.
MAX_CHARS = 2_000
MAX_DEPTH = 60
#: The work one expression may do, as the sum of the operand sizes (bits) of all its operations: about a
#: hundred operations on numbers of the largest size, some tens of milliseconds at most.
MAX_COST = 100 * MAX_BITS

_DECIMAL = re.compile(r"(?P<whole>[0-9]*)(?:\.(?P<frac>[0-9]*))?(?:[eE](?P<exp>[+-]?[0-9]+))?")
_LOG2_10 = math.log2(10)


class CalculatorError(ValueError):
    """The expression is not allowed or cannot be computed; the message says why, for the model to act on."""


def _size(x: Number) -> int:
    if isinstance(x, int):
        return x.bit_length()
    if isinstance(x, Fraction):
        return x.numerator.bit_length() + x.denominator.bit_length()
    return 64


def _log2_size(x: Number) -> float:
    """About how many bits ``x`` takes (numerator and denominator), without building anything."""
    parts = (x,) if isinstance(x, int) else (x.numerator, x.denominator) if isinstance(x, Fraction) else ()
    return sum(math.log2(abs(p)) for p in parts if abs(p) > 1) if parts else 64.0


def _check(bits: float, what: str) -> None:
    if bits > MAX_BITS:
        raise CalculatorError(f"{what} would be too large (over {MAX_BITS} bits); the calculator refuses it")


def _decimal(text: str) -> Number | None:
    """The exact value of a decimal literal such as ``2.5e-3``, its size checked from the digits and the
    exponent before it is built (``Fraction("1e999999999")`` would compute ``10**999999999`` first);
    ``None`` when ``text`` is not a plain decimal literal."""
    match = _DECIMAL.fullmatch(text.replace("_", ""))
    if match is None:
        return None
    frac = match["frac"] or ""
    digits = (match["whole"] + frac).lstrip("0")
    if not digits:
        return 0
    significant = digits.rstrip("0")
    exponent = int(match["exp"] or 0) - len(frac) + len(digits) - len(significant)
    mantissa = int(significant)
    if abs(exponent) > MAX_BITS:  # before the float product below, which a huge exponent would overflow
        _check(MAX_BITS + 1, "the number")
    _check(mantissa.bit_length() + abs(exponent) * _LOG2_10, "the number")
    if exponent >= 0:
        whole: int = mantissa * 10**exponent
        return whole
    return _exact(Fraction(mantissa, 10**-exponent))


def _float(x: Number) -> float:
    try:
        return float(x)
    except OverflowError:
        raise CalculatorError("the number is too large for a floating-point function") from None


def _exact(x: Number) -> Number:
    if isinstance(x, Fraction) and x.denominator == 1:
        return x.numerator
    return x


def _pow(base: Number, exp: Number) -> Number:
    exp = _exact(exp)
    if isinstance(exp, int) and not isinstance(base, float):
        _check(_log2_size(base) * abs(exp), "the power")
        if base == 0 and exp < 0:
            raise CalculatorError("division by zero (0 to a negative power)")
        return _exact(Fraction(base) ** exp)
    b, e = _float(base), _float(exp)
    if b < 0 and not e.is_integer():
        raise CalculatorError("a negative number to a fractional power has no real value")
    try:
        power: float = b**e  # a real number: a negative base has an integer exponent here
        return power
    except OverflowError:
        raise CalculatorError("the power overflows a floating-point number") from None
    except ZeroDivisionError:
        raise CalculatorError("division by zero (0 to a negative power)") from None


def _div(a: Number, b: Number, kind: str) -> Number:
    if b == 0:
        raise CalculatorError("division by zero")
    if isinstance(a, float) or isinstance(b, float):
        return {"/": a / b, "//": a // b, "%": a % b}[kind]
    _check(_size(a) + _size(b), "the quotient")
    fa, fb = Fraction(a), Fraction(b)
    if kind == "/":
        return _exact(fa / fb)
    if kind == "//":
        return fa // fb
    return _exact(fa % fb)


def _mul(a: Number, b: Number) -> Number:
    _check(_size(a) + _size(b), "the product")
    return _exact(a * b)


def _sum_bits(a: Number, b: Number) -> int:
    if isinstance(a, int) and isinstance(b, int):
        return max(_size(a), _size(b)) + 1
    return _size(a) + _size(b)


def _add(a: Number, b: Number) -> Number:
    _check(_sum_bits(a, b), "the sum")
    return _exact(a + b)


def _sub(a: Number, b: Number) -> Number:
    _check(_sum_bits(a, b), "the difference")
    return _exact(a - b)


_BINARY: Dict[type, Callable[[Number, Number], Number]] = {
    ast.Add: _add,
    ast.Sub: _sub,
    ast.Mult: _mul,
    ast.Div: lambda a, b: _div(a, b, "/"),
    ast.FloorDiv: lambda a, b: _div(a, b, "//"),
    ast.Mod: lambda a, b: _div(a, b, "%"),
    ast.Pow: _pow,
    ast.BitXor: _pow,  # "^" as models write it
}


def _sqrt(x: Number) -> Number:
    if x < 0:
        raise CalculatorError("sqrt of a negative number")
    x = _exact(x)
    if isinstance(x, int):
        root = math.isqrt(x)
        if root * root == x:
            return root
    return math.sqrt(_float(x))


def _log(x: Number, base: Number | None = None) -> Number:
    if x <= 0 or (base is not None and (base <= 0 or base == 1)):
        raise CalculatorError("log needs a positive number (and a positive base other than 1)")
    exact = {2: math.log2, 10: math.log10}.get(base) if isinstance(base, int) else None
    if exact is not None:
        return exact(x)  # exact for powers of the base: log10(1000) is 3, not 2.9999999999999996
    return math.log(x) if base is None else math.log(x, base)


def _round(x: Number, ndigits: Number | None = None) -> Number:
    if ndigits is None:
        return round(x)
    if not isinstance(_exact(ndigits), int) or abs(int(ndigits)) > 100:
        raise CalculatorError("round's second argument must be an integer between -100 and 100")
    digits = int(ndigits)
    if isinstance(x, Fraction):
        return _exact(round(x, digits))
    return round(x, digits)


def _float_fn(fn: Callable[[float], float]) -> Callable[[Number], Number]:
    def call(x: Number) -> Number:
        try:
            return fn(_float(x))
        except (ValueError, OverflowError) as exc:
            raise CalculatorError(f"{fn.__name__}: {exc}") from None

    return call


def _min(*args: Number) -> Number:
    if not args:
        raise CalculatorError("min needs at least one argument")
    return min(args)


def _max(*args: Number) -> Number:
    if not args:
        raise CalculatorError("max needs at least one argument")
    return max(args)


_FUNCTIONS: Dict[str, Callable[..., Number]] = {
    "abs": abs,
    "round": _round,
    "min": _min,
    "max": _max,
    "sqrt": _sqrt,
    "log": _log,
    "ln": _log,
    "log10": lambda x: _log(x, 10),
    "log2": lambda x: _log(x, 2),
    "exp": _float_fn(math.exp),
    "sin": _float_fn(math.sin),
    "cos": _float_fn(math.cos),
    "tan": _float_fn(math.tan),
    "ceil": math.ceil,
    "floor": math.floor,
}
_CONSTANTS: Dict[str, Number] = {"pi": math.pi, "e": math.e, "tau": math.tau}


class _Evaluator:
    def __init__(self, source: str) -> None:
        self.source = source
        self.cost = 0

    def _charge(self, operands: List[Any]) -> None:
        self.cost += sum(_size(x) for x in operands)
        if self.cost > MAX_COST:
            raise CalculatorError("the expression does too much work for the calculator; split it into smaller steps")

    def eval(self, node: ast.AST, depth: int = 0) -> Number:
        if depth > MAX_DEPTH:
            raise CalculatorError(f"the expression is nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, ast.Expression):
            return self.eval(node.body, depth + 1)
        if isinstance(node, ast.Constant):
            return self._constant(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = self.eval(node.operand, depth + 1)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left = self.eval(node.left, depth + 1)
            right = self.eval(node.right, depth + 1)
            self._charge([left, right])
            return _BINARY[type(node.op)](left, right)
        if isinstance(node, ast.Name):
            if node.id in _CONSTANTS:
                return _CONSTANTS[node.id]
            raise CalculatorError(f"unknown name {node.id!r}; known constants: {', '.join(_CONSTANTS)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            fn = _FUNCTIONS.get(node.func.id)
            if fn is None:
                raise CalculatorError(f"unknown function {node.func.id!r}; known: {', '.join(_FUNCTIONS)}")
            args = [self.eval(a, depth + 1) for a in node.args]
            self._charge(args)
            try:
                return fn(*args)
            except TypeError:
                raise CalculatorError(f"wrong number of arguments for {node.func.id}()") from None
        raise CalculatorError(f"not allowed in an expression: {ast.unparse(node) if node else '?'}")

    def _constant(self, node: ast.Constant) -> Number:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CalculatorError(f"only numbers are allowed, got {value!r}")
        if isinstance(value, int):
            return value
        # A decimal literal is exact: 0.1 is one tenth, not the binary float nearest to it.
        text = ast.get_source_segment(self.source, node) or repr(value)
        exact = _decimal(text)
        return value if exact is None else exact


def _prepare(expression: str) -> str:
    text = expression.strip()
    if text.endswith("="):
        text = text[:-1].strip()
    # The multiplication, division and minus signs models copy from prose.
    return text.replace("\u00d7", "*").replace("\u00f7", "/").replace("\u2212", "-")


def evaluate(expression: str) -> Number:
    """The value of ``expression``; :class:`CalculatorError` when it is not allowed or cannot be computed."""
    if not isinstance(expression, str) or not expression.strip():
        raise CalculatorError("the expression is empty")
    if len(expression) > MAX_CHARS:
        raise CalculatorError(f"the expression is longer than {MAX_CHARS} characters")
    source = _prepare(expression)
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise CalculatorError(f"not a valid arithmetic expression: {getattr(exc, 'msg', exc)}") from None
    try:
        value = _Evaluator(source).eval(tree)
    except CalculatorError:
        raise
    except (ArithmeticError, ValueError) as exc:  # overflow in a float function, inf to int, ...
        raise CalculatorError(f"cannot compute this: {type(exc).__name__}: {exc}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculatorError("the result is not a finite number")
    if isinstance(value, complex):
        raise CalculatorError("the result is not a real number")
    return value


def format_number(value: Number) -> str:
    """The text the model sees: integers exactly, terminating fractions as exact decimals, others as floats."""
    value = _exact(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Fraction):
        den = value.denominator
        twos = fives = 0
        while den % 2 == 0:
            den //= 2
            twos += 1
        while den % 5 == 0:
            den //= 5
            fives += 1
        if den == 1:
            with localcontext() as ctx:
                ctx.prec = max(28, value.numerator.bit_length() // 3 + max(twos, fives) + 2)
                return format(Decimal(value.numerator) / Decimal(value.denominator), "f")
        return _approximate(value)
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


def _approximate(value: Fraction) -> str:
    """A float's 17 digits of a fraction that has no finite decimal form; beyond the float range
    (``1/3**6000``, which a float would print as ``0.0``) in decimal scientific notation."""
    try:
        approx = float(value)
    except OverflowError:
        approx = math.inf
    if math.isfinite(approx) and abs(approx) >= sys.float_info.min:
        return repr(approx)
    with localcontext() as ctx:
        ctx.prec = 17
        return format(Decimal(value.numerator) / Decimal(value.denominator), "g")


class Calculator:
    """The ``calculator`` tool: ``calculator(expression)`` → the value as text."""

    spec = ToolSpec(
        name="calculator",
        description=(
            "Evaluate an arithmetic expression and return the exact result. Supports + - * / // % ** "
            "(or ^), parentheses, abs round min max sqrt log ln log10 log2 exp sin cos tan ceil floor, pi, e."
        ),
        parameters={
            "type": "object",
            "properties": {
                "expression": {"type": "string", "description": "the expression, e.g. (3 + 4) * 12", "maxLength": 200},
            },
            "required": ["expression"],
            "additionalProperties": False,
        },
    )
    # Inline: the bounds above (MAX_BITS per number, MAX_COST per expression) keep one evaluation to some
    # tens of milliseconds by construction. A thread would not help a bigger cost: one big-integer C call holds the
    # GIL, so no timeout could stop it and the caller's other threads would wait all the same.
    policy = ToolPolicy(side_effects="none", isolation="inline", timeout=None)

    def run(self, expression: str) -> str:
        """Evaluate ``expression``; raises :class:`CalculatorError` with a message the model can act on."""
        return format_number(evaluate(expression))
