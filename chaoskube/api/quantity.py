"""``k8s.io/apimachinery/pkg/api/resource.Quantity``, ported step for step.

The rest of the model reads quantities as integer milli-units (:func:`chaoskube.api.objects.
parse_quantity`); this module is the full type, for the places where Kubernetes' own
arithmetic shows: the canonical form an API server writes back ("1024Mi" is "1Gi", ".001Ki"
is "1024m"), the limits (a binary quantity above 2^63-1 saturates there, precision stops at
the nano and rounds up, away from zero), and the integer views, whose rounding of negative
values is upstream's and not symmetric:

- :meth:`ResourceQuantity.value` / :meth:`milli_value` / :meth:`scaled_value` of an
  ``int64Amount`` round away from zero ("-0.5m" has MilliValue -1), but of an ``inf.Dec``
  (a quantity parsed through the slow path, or one :meth:`as_dec` converted) they add one
  to Go's truncated quotient (``scaledValue``): ``Value()`` of a Dec -1.5 is 0.
- :meth:`round_up` rounds away from zero ("-9.01" at scale 0 is -10).

Two representations, as upstream: ``int64Amount`` (``value * 10**scale``, int64 arithmetic
that reports overflow) and ``inf.Dec`` (``unscaled * 10**-scale``, unbounded). Operations
that overflow the first fall back to the second, exactly where upstream's do. The tests are
upstream's own ``quantity_test.go`` (``tests/api/test_quantity_upstream.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "MAX_ALLOWED",
    "Dec",
    "QuantityError",
    "ResourceQuantity",
    "must_parse",
    "parse_quantity_string",
    "parse_resource_quantity",
]

DECIMAL_EXPONENT = "DecimalExponent"
BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
MOST_POSITIVE = (1 << 63) - 1
MOST_NEGATIVE = -(1 << 63)
MAX_INT64_FACTORS = 18
NANO, MICRO, MILLI = -9, -6, -3
SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


class QuantityError(ValueError):
    """``ErrFormatWrong`` / ``ErrNumeric`` / ``ErrSuffix``, with upstream's messages."""


FORMAT_WRONG = f"quantities must match the regular expression '{SPLIT_RE}'"
NUMERIC = "unable to parse numeric part of quantity"
SUFFIX = "unable to parse quantity's suffix"


# --- Go's int64 arithmetic --------------------------------------------------------------


def _fits(value: int) -> bool:
    return MOST_NEGATIVE <= value <= MOST_POSITIVE


def _wrap(value: int) -> int:
    """Two's-complement int64 wrap-around (Go's overflowing ``*`` and ``+``)."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def _quo(a: int, b: int) -> int:
    """Go's ``/`` on integers: truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _rem(a: int, b: int) -> int:
    """Go's ``%``: the sign of the dividend."""
    return a - _quo(a, b) * b


def int64_add(a: int, b: int) -> tuple[int, bool]:
    c = _wrap(a + b)
    if a > 0 and b > 0 and c < 0:
        return 0, False
    if a < 0 and b < 0 and (c > 0 or (a == MOST_NEGATIVE and b == MOST_NEGATIVE)):
        return 0, False
    return c, True


def int64_multiply(a: int, b: int) -> tuple[int, bool]:
    if a in (0, 1) or b in (0, 1):
        return a * b, True
    if a == MOST_NEGATIVE or b == MOST_NEGATIVE:
        return 0, False
    c = _wrap(a * b)
    return c, _quo(c, b) == a


def _multiply_scale(a: int, b: int) -> tuple[int, bool]:
    """``int64MultiplyScale`` (and its 10/100/1000 variants)."""
    if a in (0, 1):
        return a * b, True
    if a == MOST_NEGATIVE and b != 1:
        return 0, False
    c = _wrap(a * b)
    return c, _quo(c, b) == a


def positive_scale_int64(base: int, scale: int) -> tuple[int, bool]:
    if scale == 0:
        return base, True
    if scale in (1, 2, 3, 6, 9):
        return _multiply_scale(base, 10**scale)
    value = base
    for _ in range(scale):
        value, ok = _multiply_scale(value, 10)
        if not ok:
            return 0, False
    return value, True


def negative_scale_int64(base: int, scale: int) -> tuple[int, bool]:
    """Divide by ``10**scale``, rounding away from zero; (result, exact)."""
    if scale == 0:
        return base, True
    value, fraction = base, False
    for _ in range(scale):
        if not fraction and _rem(value, 10) != 0:
            fraction = True
        value = _quo(value, 10)
        if value == 0:
            if fraction:
                return (1 if base > 0 else -1), False
            return 0, True
    if fraction:
        value = value + 1 if base > 0 else value - 1
    return value, not fraction


def divide_by_scale_int64(base: int, scale: int) -> tuple[int, int, bool]:
    if scale == 0:
        return base, 0, True
    if scale >= 18:
        return 0, base, False
    divisor = 10**scale
    return _quo(base, divisor), _rem(base, divisor), True


def remove_int64_factors(value: int, base: int) -> tuple[int, int]:
    times, result = 0, abs(value)
    while result >= base and result % base == 0:
        times += 1
        result //= base
    return (-result if value < 0 else result), times


# --- inf.Dec ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Dec:
    """``inf.Dec``: ``unscaled * 10**-scale``, exact."""

    unscaled: int = 0
    scale: int = 0

    def sign(self) -> int:
        return (self.unscaled > 0) - (self.unscaled < 0)

    def cmp(self, other: Dec) -> int:
        scale = max(self.scale, other.scale)
        a = self.unscaled * 10 ** (scale - self.scale)
        b = other.unscaled * 10 ** (scale - other.scale)
        return (a > b) - (a < b)

    def neg(self) -> Dec:
        return Dec(-self.unscaled, self.scale)

    def add(self, other: Dec) -> Dec:
        scale = max(self.scale, other.scale)
        return Dec(self.unscaled * 10 ** (scale - self.scale) + other.unscaled * 10 ** (scale - other.scale), scale)

    def sub(self, other: Dec) -> Dec:
        return self.add(other.neg())

    def mul(self, other: Dec) -> Dec:
        return Dec(self.unscaled * other.unscaled, self.scale + other.scale)

    def round_up(self, scale: int) -> Dec:
        """``Round(x, scale, inf.RoundUp)``: away from zero."""
        if scale >= self.scale:
            return Dec(self.unscaled * 10 ** (scale - self.scale), scale)
        divisor = 10 ** (self.scale - scale)
        quotient, remainder = divmod(abs(self.unscaled), divisor)
        if remainder:
            quotient += 1
        return Dec(quotient if self.unscaled >= 0 else -quotient, scale)

    def __str__(self) -> str:
        """``inf.Dec.String``."""
        if self.scale <= 0:
            return str(self.unscaled * 10 ** (-self.scale))
        digits = str(abs(self.unscaled)).rjust(self.scale + 1, "0")
        text = digits[: -self.scale] + "." + digits[-self.scale:]
        return ("-" if self.unscaled < 0 else "") + text

    @staticmethod
    def parse(text: str) -> Dec | None:
        """``inf.Dec.SetString`` for plain decimals ("-1.50", ".5", "1.")."""
        match = re.fullmatch(r"([+-]?)([0-9]*)(?:\.([0-9]*))?", text)
        if match is None or not (match.group(2) or match.group(3)):
            return None
        fraction = match.group(3) or ""
        unscaled = int((match.group(2) or "0") + fraction)
        return Dec(-unscaled if match.group(1) == "-" else unscaled, len(fraction))


MAX_ALLOWED = Dec(MOST_POSITIVE, 0)
_DEC_ONE = Dec(1, 0)


def scaled_value_of(unscaled: int, scale: int, new_scale: int) -> int:
    """``scaledValue`` (``scale_int.go``), with its Go integer arithmetic: for a quotient
    that fits int64, the truncated quotient plus one if there is a remainder (so a negative
    value is rounded toward zero, then up); otherwise big.Int's Euclidean quotient plus one."""
    difference = scale - new_scale
    if difference == 0:
        return _wrap(unscaled)
    if difference < 0:
        return _wrap(_wrap(unscaled) * _go_pow10_int(-difference))
    if unscaled < MOST_POSITIVE and difference < 19:
        divide = 10**difference
        small = _wrap(unscaled)
        result = _quo(small, divide)
        return result + 1 if _rem(small, divide) != 0 else result
    quotient, remainder = divmod(unscaled, 10**difference)  # big.Int DivMod: Euclidean (divisor > 0)
    return _wrap(quotient + 1 if remainder else quotient)


def _go_pow10_int(n: int) -> int:
    """``int64(math.Pow10(n))``."""
    value = _go_pow10(n)
    return _wrap(int(value)) if value < 2**63 else MOST_NEGATIVE


_POW10_TAB = [float(f"1e{i}") for i in range(32)]
_POW10_POS_32 = [float(f"1e{32 * i}") for i in range(10)]
_POW10_NEG_32 = [float(f"1e-{32 * i}") for i in range(11)]


def _go_pow10(n: int) -> float:
    """Go's ``math.Pow10`` (its tables, so that its rounding is reproduced)."""
    if 0 <= n <= 308:
        return _POW10_POS_32[n // 32] * _POW10_TAB[n % 32]
    if -323 <= n <= 0:
        return _POW10_NEG_32[-n // 32] / _POW10_TAB[-n % 32]
    return float("inf") if n > 0 else 0.0


# --- suffixes -----------------------------------------------------------------------------

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {exponent: text for text, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT = {exponent: text for text, exponent in _BINARY_SUFFIXES.items()}


def _interpret(suffix: str) -> tuple[int, int, str] | None:
    """``suffixHandler.interpret``: (base, exponent, format)."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        if re.fullmatch(r"[+-]?[0-9]+", suffix[1:]) is None or not _fits(int(suffix[1:])):
            return None
        return 10, _wrap32(int(suffix[1:])), DECIMAL_EXPONENT
    return None


def _wrap32(value: int) -> int:
    return (value + (1 << 31)) % (1 << 32) - (1 << 31)


def _construct(base: int, exponent: int, format_: str) -> str:
    """``constructBytes``: the suffix, or "" where upstream has none."""
    if format_ == DECIMAL_SI:
        return _DECIMAL_BY_EXPONENT.get(exponent, "") if base == 10 else ""
    if format_ == BINARY_SI:
        return _BINARY_BY_EXPONENT.get(exponent, "") if base == 2 else ""
    if base != 10 or exponent == 0:
        return ""
    return f"e{exponent}"


def parse_quantity_string(text: str) -> tuple[bool, str, str, str, str]:
    """``parseQuantityString``: (positive, value, num, denom, suffix); raises
    :class:`QuantityError`."""
    positive, pos, end = True, 0, len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos].isdigit() and text[pos].isascii():
        pos += 1
    num = text[start:pos] or "0"
    if pos >= end:
        return positive, text, text[start:end] or "0", "", ""
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in "0123456789":
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in "eEinumkKMGTP":
        pos += 1
    if pos >= end:
        return positive, value, num, denom, text[suffix_start:]
    if text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in "0123456789":
        pos += 1
    if pos >= end:
        return positive, value, num, denom, text[suffix_start:]
    raise QuantityError(FORMAT_WRONG)


# --- Quantity -----------------------------------------------------------------------------


@dataclass(slots=True)
class ResourceQuantity:
    """``resource.Quantity``: ``i`` (an int64Amount, ``(value, scale)``) unless ``d`` (an
    inf.Dec) is set; ``format``; ``s``, the cached canonical string."""

    i_value: int = 0
    i_scale: int = 0
    d: Dec | None = None
    format: str = ""
    s: str = field(default="", repr=False)

    @classmethod
    def of_dec(cls, unscaled: int, exponent: int, format_: str) -> ResourceQuantity:
        """The tests' ``decQuantity``: ``unscaled * 10**exponent`` as an inf.Dec."""
        return cls(d=Dec(unscaled, -exponent), format=format_)

    @classmethod
    def of_int(cls, value: int, scale: int, format_: str) -> ResourceQuantity:
        """The tests' ``intQuantity``: an int64Amount."""
        assert _fits(value)
        return cls(i_value=value, i_scale=scale, format=format_)

    def copy(self) -> ResourceQuantity:
        """``DeepCopy``."""
        return ResourceQuantity(self.i_value, self.i_scale, self.d, self.format, self.s)

    # conversions
    def _i_as_dec(self) -> Dec:
        return Dec(self.i_value, -self.i_scale)

    def as_dec(self) -> Dec:
        """``AsDec``: converts to the inf.Dec representation for good."""
        if self.d is None:
            self.d = self._i_as_dec()
            self.i_value, self.i_scale = 0, 0
        return self.d

    def to_dec(self) -> ResourceQuantity:
        self.as_dec()
        return self

    def as_int64(self) -> tuple[int, bool]:
        if self.d is not None:
            return 0, False
        if self.i_scale == 0:
            return self.i_value, True
        if self.i_scale < 0:
            return 0, False
        return positive_scale_int64(self.i_value, self.i_scale)

    def is_zero(self) -> bool:
        return self.d.sign() == 0 if self.d is not None else self.i_value == 0

    def sign(self) -> int:
        return self.d.sign() if self.d is not None else (self.i_value > 0) - (self.i_value < 0)

    # comparisons
    def _i_cmp(self, b_value: int, b_scale: int) -> int:
        a_value, a_scale = self.i_value, self.i_scale
        if a_scale > b_scale:
            result, remainder, exact = divide_by_scale_int64(b_value, a_scale - b_scale)
            if not exact:
                return self._i_as_dec().cmp(Dec(b_value, -b_scale))
            if result == a_value:
                return 0 if remainder == 0 else (-1 if remainder > 0 else 1)
            b_value = result
        elif a_scale < b_scale:
            result, remainder, exact = divide_by_scale_int64(a_value, b_scale - a_scale)
            if not exact:
                return self._i_as_dec().cmp(Dec(b_value, -b_scale))
            if result == b_value:
                return 0 if remainder == 0 else (1 if remainder > 0 else -1)
            a_value = result
        return (a_value > b_value) - (a_value < b_value)

    def cmp(self, other: ResourceQuantity) -> int:
        if self.d is None and other.d is None:
            return self._i_cmp(other.i_value, other.i_scale)
        return self.as_dec().cmp(other.copy().as_dec())  # Go: y is a copy, q converts

    def cmp_int64(self, value: int) -> int:
        if self.d is not None:
            return self.d.cmp(Dec(value, 0))
        return self._i_cmp(value, 0)

    # arithmetic
    def _i_add(self, b_value: int, b_scale: int) -> bool:
        if b_value == 0:
            return True
        if self.i_value == 0:
            self.i_value, self.i_scale = b_value, b_scale
            return True
        if self.i_scale == b_scale:
            c, ok = int64_add(self.i_value, b_value)
            if not ok:
                return False
            self.i_value = c
        elif self.i_scale > b_scale:
            c, ok = positive_scale_int64(self.i_value, self.i_scale - b_scale)
            if not ok:
                return False
            c, ok = int64_add(c, b_value)
            if not ok:
                return False
            self.i_value, self.i_scale = c, b_scale
        else:
            c, ok = positive_scale_int64(b_value, b_scale - self.i_scale)
            if not ok:
                return False
            c, ok = int64_add(self.i_value, c)
            if not ok:
                return False
            self.i_value = c
        return True

    def add(self, other: ResourceQuantity) -> None:
        self.s = ""
        if self.d is None and other.d is None:
            if self.i_value == 0:
                self.format = other.format
            if self._i_add(other.i_value, other.i_scale):
                return
        elif self.is_zero():
            self.format = other.format
        self.d = self.as_dec().add(other.copy().as_dec())

    def sub(self, other: ResourceQuantity) -> None:
        self.s = ""
        if self.is_zero():
            self.format = other.format
        # int64Amount.Sub adds -value (Go's negation wraps MostNegative to itself)
        if self.d is None and other.d is None and self._i_add(_wrap(-other.i_value), other.i_scale):
            return
        self.d = self.as_dec().sub(other.copy().as_dec())

    def mul(self, factor: int) -> bool:
        self.s = ""
        if self.d is None and self._i_mul(factor):
            return True
        self.d = self.as_dec().mul(Dec(factor, 0))
        return _fits(self.d.unscaled)

    def _i_mul(self, factor: int) -> bool:
        if self.i_value == 0:
            return True
        if factor == 0:
            self.i_value, self.i_scale = 0, 0
            return True
        c, ok = int64_multiply(self.i_value, factor)
        if not ok:
            return False
        if self.i_scale > 0 and not positive_scale_int64(c, self.i_scale)[1]:
            return False
        if self.i_scale < 0 and not negative_scale_int64(c, -self.i_scale)[1]:
            return False  # upstream's "ok" here is negativeScaleInt64's "exact"
        self.i_value = c
        return True

    def neg(self) -> None:
        self.s = ""
        if self.d is None:
            self.i_value = _wrap(-self.i_value)
            return
        self.d = self.d.neg()

    def round_up(self, scale: int) -> bool:
        """``RoundUp``: to ``10**scale``, away from zero; whether exact."""
        if self.d is not None:
            self.s = ""
            rounded = self.d.round_up(-scale)
            exact = rounded.cmp(self.d) == 0
            self.d = rounded
            return exact
        if self.i_scale >= scale:
            return True
        self.s = ""
        value, exact = negative_scale_int64(self.i_value, scale - self.i_scale)
        self.i_value, self.i_scale = value, scale
        return exact

    # integer views
    def scaled_value(self, scale: int) -> int:
        if self.d is None:
            if self.i_scale < scale:
                return negative_scale_int64(self.i_value, scale - self.i_scale)[0]
            return positive_scale_int64(self.i_value, self.i_scale - scale)[0]
        return scaled_value_of(self.d.unscaled, self.d.scale, -scale)

    def value(self) -> int:
        return self.scaled_value(0)

    def milli_value(self) -> int:
        return self.scaled_value(MILLI)

    def set_scaled(self, value: int, scale: int) -> None:
        self.s, self.d, self.i_value, self.i_scale = "", None, value, scale

    def set(self, value: int) -> None:
        self.set_scaled(value, 0)

    def set_milli(self, value: int) -> None:
        self.set_scaled(value, MILLI)

    def as_approximate_float64(self) -> float:
        if self.d is not None:
            base, exponent = _big_to_float(self.d.unscaled), -self.d.scale
        else:
            base, exponent = float(self.i_value), self.i_scale
        if exponent == 0:
            return base
        return base * _go_pow10(exponent)

    # canonical form
    def _canonical_decimal(self) -> tuple[str, int]:
        """``AsCanonicalBytes``: digits and an exponent that is a multiple of 3."""
        if self.d is None:
            amount, times = remove_int64_factors(self.i_value, 10)
            exponent = self.i_scale + times
            remainder = _rem(exponent, 3)
            if remainder in (1, -2):
                scaled, ok = _multiply_scale(amount, 10)
                if ok:
                    return str(scaled), exponent - 1
            elif remainder in (2, -1):
                scaled, ok = _multiply_scale(amount, 100)
                if ok:
                    return str(scaled), exponent - 2
            else:
                return str(amount), exponent
        dec = self.d if self.d is not None else self._i_as_dec()
        amount, exponent = dec.unscaled, -dec.scale
        while amount != 0 and amount % 10 == 0:
            amount //= 10
            exponent += 1
        while _rem(exponent, 3) != 0:
            amount *= 10
            exponent -= 1
        return str(amount), exponent

    def canonicalize(self) -> tuple[str, str]:
        """``CanonicalizeBytes``: (number, suffix)."""
        if self.is_zero():
            return "0", ""
        format_ = self.format
        rounded: ResourceQuantity | None = None
        if format_ == BINARY_SI:
            if self.cmp_int64(-1024) > 0 and self.cmp_int64(1024) < 0:
                format_ = DECIMAL_SI
            else:
                rounded = self.copy()
                if not rounded.round_up(0):
                    format_ = DECIMAL_SI
        elif format_ not in (DECIMAL_EXPONENT, DECIMAL_SI):
            format_ = DECIMAL_EXPONENT
        if format_ in (DECIMAL_EXPONENT, DECIMAL_SI):
            number, exponent = self._canonical_decimal()
            return number, _construct(10, exponent, format_)
        assert rounded is not None
        if rounded.d is None:
            value = rounded.scaled_value(0)
            if rounded.i_scale >= 0 and positive_scale_int64(rounded.i_value, rounded.i_scale)[1]:
                amount, exponent = remove_int64_factors(value, 1024)
                return str(amount), _construct(2, exponent * 10, BINARY_SI)
        whole = (rounded.d if rounded.d is not None else rounded._i_as_dec()).round_up(0).unscaled
        exponent = 0
        while whole != 0 and whole % 1024 == 0:
            whole //= 1024
            exponent += 1
        return str(whole), _construct(2, exponent * 10, BINARY_SI)

    def __str__(self) -> str:
        if not self.s:
            number, suffix = self.canonicalize()
            self.s = number + suffix
        return self.s

    def marshal_json(self) -> str:
        return '"' + (self.s or "".join(self.canonicalize())) + '"'

    @classmethod
    def unmarshal_json(cls, text: str) -> ResourceQuantity:
        if text == "null":
            return cls()
        if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
            text = text[1:-1]
        return parse_resource_quantity(text.strip(" \t\n\r\v\f"))


def _big_to_float(value: int) -> float:
    """``big.Float.SetInt(x).Float64()``: nearest, ties to even (Python's ``float(int)``)."""
    try:
        return float(value)
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def new_quantity(value: int, format_: str) -> ResourceQuantity:
    return ResourceQuantity(i_value=value, format=format_)


def new_milli_quantity(value: int, format_: str) -> ResourceQuantity:
    return ResourceQuantity(i_value=value, i_scale=MILLI, format=format_)


def new_scaled_quantity(value: int, scale: int) -> ResourceQuantity:
    return ResourceQuantity(i_value=value, i_scale=scale, format=DECIMAL_SI)


def new_decimal_quantity(dec: Dec, format_: str) -> ResourceQuantity:
    return ResourceQuantity(d=dec, format=format_)


__all__ += ["new_decimal_quantity", "new_milli_quantity", "new_quantity", "new_scaled_quantity"]


def parse_resource_quantity(text: str) -> ResourceQuantity:
    """``ParseQuantity``; raises :class:`QuantityError` with upstream's messages."""
    if not text:
        raise QuantityError(FORMAT_WRONG)
    if text == "0":
        return ResourceQuantity(format=DECIMAL_SI, s=text)
    positive, value, num, denom, suffix = parse_quantity_string(text)
    interpreted = _interpret(suffix)
    if interpreted is None:
        raise QuantityError(SUFFIX)
    base, exponent, format_ = interpreted
    precision, scale, mantissa = 0, 0, 1
    if format_ in (DECIMAL_EXPONENT, DECIMAL_SI):
        scale = exponent
        precision = MAX_INT64_FACTORS - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        mantissa = _wrap(mantissa << exponent)
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    else:
        precision = -1
    if precision >= 0:
        scale -= len(denom)
        if scale >= NANO:
            shifted = num + denom
            if re.fullmatch(r"[+-]?[0-9]+", shifted) is None or not _fits(int(shifted)):
                raise QuantityError(NUMERIC)
            number = int(shifted)
            result, ok = int64_multiply(number, mantissa)
            if ok:
                if not positive:
                    result = -result
                keep = (exponent % 10 == 0 and (number & 0x07) != 0) if format_ == BINARY_SI else (scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0")
                return ResourceQuantity(i_value=result, i_scale=scale, format=format_, s=text if keep else "")
    amount = Dec.parse(value)
    if amount is None:
        raise QuantityError(NUMERIC)
    if base == 10:
        amount = Dec(amount.unscaled, amount.scale - exponent)
    else:
        amount = Dec(amount.unscaled << exponent, amount.scale)
    sign = amount.sign()
    if sign == -1:
        amount = amount.neg()
    if amount.unscaled != 0 or not _fits(amount.unscaled):
        amount = amount.round_up(-NANO)
    if format_ == BINARY_SI and amount.cmp(MAX_ALLOWED) > 0:
        amount = MAX_ALLOWED
    if format_ == BINARY_SI and amount.cmp(_DEC_ONE) < 0 and amount.sign() > 0:
        format_ = DECIMAL_SI
    if sign == -1:
        amount = amount.neg()
    return ResourceQuantity(d=amount, format=format_)


def must_parse(text: str) -> ResourceQuantity:
    """``MustParse``: raises ``ValueError`` (Go panics) on a bad quantity."""
    try:
        return parse_resource_quantity(text)
    except QuantityError as error:
        raise ValueError(f"cannot parse '{text}': {error}") from None
