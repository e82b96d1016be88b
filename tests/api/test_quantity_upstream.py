"""apimachinery's ``resource.Quantity`` tests, transcribed as data.

Upstream: kubernetes/apimachinery tag v0.30.9, ``pkg/api/resource/quantity_test.go``: every
test function and table (TestDec, TestBigDec, TestQuantityParseZero,
TestQuantityParseNonNumericPanic, TestQuantity{Add,Sub}ZeroPreservesSuffix,
TestQuantityCanocicalizeZero, TestQuantityCmp, TestParseQuantityString, TestQuantityParse
(its table run plain, as Dec, negated, with "+", decomposed, round-tripped through
NewDecimalQuantity; and its invalid inputs), TestQuantityRoundUp, TestQuantityCmpInt64AndDec,
TestQuantityNeg, TestQuantityString, TestQuantityParseEmit, TestQuantityDeepCopy, TestJSON
(500 fuzzed quantities, drawn from a seeded generator with the fuzzer's distribution),
TestJSONWhitespace, TestMilliNewSet, TestNewSet, TestNewScaledSet, TestScaledValue,
TestUninitializedNoCrash, TestDeepCopy, TestSub, TestNeg, TestAdd, TestMul,
TestAddSubRoundTrip, TestAddSubRoundTripAcrossScales, TestNegateRoundTrip (seeded),
TestQuantityAsApproximateFloat64, TestStringQuantityAsApproximateFloat64,
TestQuantityValueSet). Not transcribed: the Benchmark* functions and ExampleQuantityValue
(pflag's help text), which are not tests of the type's behaviour.

Against :mod:`chaoskube.api.quantity`, a step-for-step port of ``quantity.go``, ``amount.go``,
``math.go``, ``scale_int.go`` and ``suffix.go``. 596 test items (every row; the rows of the
tables upstream runs twice, as int64Amount and as inf.Dec, twice): all pass, none left. Before, the
model had no Quantity type at all (integer milli-units only): none of these rows could run;
the one behaviour the model did use, a negative value's milli-units, rounded toward +inf
("-0.5m" read as 0, so validation's "must be greater than or equal to 0" let it through) and
now rounds away from zero as MilliValue does (the last test here).
"""

from __future__ import annotations

import random
import re

import pytest

from chaoskube.api.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    MAX_ALLOWED,
    Dec,
    QuantityError,
    ResourceQuantity,
    must_parse,
    new_decimal_quantity,
    new_milli_quantity,
    new_quantity,
    new_scaled_quantity,
    parse_quantity_string,
    parse_resource_quantity,
)

MOST_POSITIVE = (1 << 63) - 1
MOST_NEGATIVE = -(1 << 63)
NANO, MICRO, MILLI = -9, -6, -3
SI, BIN, EXP = DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT


def dec(unscaled: int, exponent: int) -> Dec:
    """``dec(i, exponent)``: scale is the negative of the exponent."""
    return Dec(unscaled, -exponent)


def dq(unscaled: int, exponent: int, format_: str) -> ResourceQuantity:
    return ResourceQuantity.of_dec(unscaled, exponent, format_)


def iq(value: int, scale: int, format_: str) -> ResourceQuantity:
    return ResourceQuantity.of_int(value, scale, format_)


def ids(rows: list[tuple], index: int = 0) -> list[str]:
    return [f"{n}:{row[index]}" for n, row in enumerate(rows)]


# --- TestDec / TestBigDec -------------------------------------------------------------------

DEC = [(dec(1, 0), "1"), (dec(1, 1), "10"), (dec(5, 2), "500"), (dec(8, 3), "8000"), (dec(2, 0), "2"), (dec(1, -1), "0.1"), (dec(3, -2), "0.03"), (dec(4, -3), "0.004")]
P1, N1 = MOST_POSITIVE + 1, MOST_NEGATIVE - 1
BIG_DEC = [
    *DEC,
    (dec(P1, 0), "9223372036854775808"), (dec(P1, 1), "92233720368547758080"), (dec(P1, 2), "922337203685477580800"),
    (dec(P1, -1), "922337203685477580.8"), (dec(P1, -2), "92233720368547758.08"),
    (dec(N1, 0), "-9223372036854775809"), (dec(N1, 1), "-92233720368547758090"), (dec(N1, 2), "-922337203685477580900"),
    (dec(N1, -1), "-922337203685477580.9"), (dec(N1, -2), "-92233720368547758.09"),
]


@pytest.mark.parametrize(("value", "expect"), DEC + BIG_DEC, ids=[f"{i}:{row[1]}" for i, row in enumerate(DEC + BIG_DEC)])
def test_dec_and_big_dec(value: Dec, expect: str) -> None:
    assert str(value) == expect


def test_quantity_parse_zero() -> None:
    assert str(must_parse("0")) == "0"


def test_quantity_parse_non_numeric_panic() -> None:
    with pytest.raises(ValueError, match="cannot parse"):
        must_parse("Non-Numeric")


@pytest.mark.parametrize("text", ["100m", "1Gi"])
def test_quantity_add_zero_preserves_suffix(text: str) -> None:
    zero, value = must_parse("0"), must_parse(text)
    v1 = value.copy()
    v1.add(zero)
    v2 = zero.copy()
    v2.add(value)
    assert str(v1) == text
    assert str(v2) == text


@pytest.mark.parametrize("text", ["100m", "1Gi"])
def test_quantity_sub_zero_preserves_suffix(text: str) -> None:
    zero, value = must_parse("0"), must_parse(text)
    v1 = value.copy()
    v1.sub(zero)
    assert str(v1) == text
    v2 = zero.copy()
    v2.sub(value)
    negative = value.copy()
    negative.neg()
    assert str(v2) == str(negative)


def test_quantity_canonicalize_zero() -> None:
    value = must_parse("1000m")
    value._i_add(-1, 0)  # val.i.Sub(int64Amount{value: 1})
    zero = ResourceQuantity(i_value=value.i_value, i_scale=value.i_scale, format=SI)
    assert str(zero) == "0"


QUANTITY_CMP = [("0", "0", 0), ("100m", "50m", 1), ("50m", "100m", -1), ("10000T", "100Gi", 1)]
QUANTITY_CMP_DEC = [
    (dec(0, 0), dec(0, 0), 0), (None, dec(0, 0), 0), (dec(0, 0), None, 0), (None, None, 0),
    (None, dec(10, 0), -1), (None, dec(-10, 0), 1), (dec(10, 0), None, 1), (dec(-10, 0), None, -1),
]


@pytest.mark.parametrize(("x", "y", "expect"), QUANTITY_CMP, ids=ids(QUANTITY_CMP))
def test_quantity_cmp(x: str, y: str, expect: int) -> None:
    assert must_parse(x).cmp(must_parse(y)) == expect


@pytest.mark.parametrize(("x", "y", "expect"), QUANTITY_CMP_DEC, ids=[str(i) for i in range(len(QUANTITY_CMP_DEC))])
def test_quantity_cmp_with_nil_dec(x: Dec | None, y: Dec | None, expect: int) -> None:
    assert ResourceQuantity(d=x, format=SI).cmp(ResourceQuantity(d=y, format=SI)) == expect


PARSE_QUANTITY_STRING = [
    ("0.025Ti", True, "0.025", "0", "025", "Ti"), ("1.025Ti", True, "1.025", "1", "025", "Ti"), ("-1.025Ti", False, "-1.025", "1", "025", "Ti"),
    (".", True, ".", "0", "", ""), ("-.", False, "-.", "0", "", ""), ("1E-3", True, "1", "1", "", "E-3"),
]


@pytest.mark.parametrize(("text", "positive", "value", "num", "denom", "suffix"), PARSE_QUANTITY_STRING, ids=ids(PARSE_QUANTITY_STRING))
def test_parse_quantity_string(text: str, positive: bool, value: str, num: str, denom: str, suffix: str) -> None:
    assert parse_quantity_string(text) == (positive, value, num, denom, suffix)


# --- TestQuantityParse ------------------------------------------------------------------------

KI, MI, GI, TI, PI, EI = (1024**n for n in range(1, 7))
QUANTITY_PARSE = [
    ("0", dq(0, 0, SI)), ("0n", dq(0, 0, SI)), ("0u", dq(0, 0, SI)), ("0m", dq(0, 0, SI)), ("0Ki", dq(0, 0, BIN)), ("0k", dq(0, 0, SI)),
    ("0Mi", dq(0, 0, BIN)), ("0M", dq(0, 0, SI)), ("0Gi", dq(0, 0, BIN)), ("0G", dq(0, 0, SI)), ("0Ti", dq(0, 0, BIN)), ("0T", dq(0, 0, SI)),
    ("1", dq(1, 0, SI)),
    ("1Ki", dq(KI, 0, BIN)), ("8Ki", dq(8 * KI, 0, BIN)), ("7Mi", dq(7 * MI, 0, BIN)), ("6Gi", dq(6 * GI, 0, BIN)), ("5Ti", dq(5 * TI, 0, BIN)),
    ("4Pi", dq(4 * PI, 0, BIN)), ("3Ei", dq(3 * EI, 0, BIN)), ("10Ti", dq(10 * TI, 0, BIN)), ("100Ti", dq(100 * TI, 0, BIN)),
    ("5n", dq(5, -9, SI)), ("4u", dq(4, -6, SI)), ("3m", dq(3, -3, SI)), ("9", dq(9, 0, SI)), ("8k", dq(8, 3, SI)), ("50k", dq(5, 4, SI)),
    ("7M", dq(7, 6, SI)), ("6G", dq(6, 9, SI)), ("5T", dq(5, 12, SI)), ("40T", dq(4, 13, SI)), ("300T", dq(3, 14, SI)), ("2P", dq(2, 15, SI)),
    ("1E", dq(1, 18, SI)),
    ("1E-3", dq(1, -3, EXP)), ("1e3", dq(1, 3, EXP)), ("1E6", dq(1, 6, EXP)), ("1e9", dq(1, 9, EXP)), ("1E12", dq(1, 12, EXP)),
    ("1e15", dq(1, 15, EXP)), ("1E18", dq(1, 18, EXP)),
    ("1e14", dq(1, 14, EXP)), ("1e13", dq(1, 13, EXP)), ("1e3", dq(1, 3, EXP)), ("100.035k", dq(100035, 0, SI)),
    ("0.001", dq(1, -3, SI)), ("0.0005k", dq(5, -1, SI)), ("0.005", dq(5, -3, SI)), ("0.05", dq(5, -2, SI)), ("0.5", dq(5, -1, SI)),
    ("0.00050k", dq(5, -1, SI)), ("0.00500", dq(5, -3, SI)), ("0.05000", dq(5, -2, SI)), ("0.50000", dq(5, -1, SI)),
    ("0.5e0", dq(5, -1, EXP)), ("0.5e-1", dq(5, -2, EXP)), ("0.5e-2", dq(5, -3, EXP)), ("0.5e0", dq(5, -1, EXP)), ("10.035M", dq(10035, 3, SI)),
    ("1.2e3", dq(12, 2, EXP)), ("1.3E+6", dq(13, 5, EXP)), ("1.40e9", dq(14, 8, EXP)), ("1.53E12", dq(153, 10, EXP)), ("1.6e15", dq(16, 14, EXP)),
    ("1.7E18", dq(17, 17, EXP)),
    ("9.01", dq(901, -2, SI)), ("8.1k", dq(81, 2, SI)), ("7.123456M", dq(7123456, 0, SI)), ("6.987654321G", dq(6987654321, 0, SI)),
    ("5.444T", dq(5444, 9, SI)), ("40.1T", dq(401, 11, SI)), ("300.2T", dq(3002, 11, SI)), ("2.5P", dq(25, 14, SI)), ("1.01E", dq(101, 16, SI)),
    ("3.001n", dq(4, -9, SI)), ("1.1E-9", dq(2, -9, EXP)), ("0.0000000001", dq(1, -9, SI)), ("0.0000000005", dq(1, -9, SI)),
    ("0.00000000050", dq(1, -9, SI)), ("0.5e-9", dq(1, -9, EXP)), ("0.9n", dq(1, -9, SI)), ("0.00000012345", dq(124, -9, SI)),
    ("0.00000012354", dq(124, -9, SI)), ("9Ei", ResourceQuantity(d=MAX_ALLOWED, format=BIN)),
    ("9223372036854775807Ki", ResourceQuantity(d=MAX_ALLOWED, format=BIN)), ("12E", dq(12, 18, SI)),
    ("100.035Ki", dq(10243584, -2, BIN)), ("0.5Mi", dq(int(0.5 * MI), 0, BIN)), ("0.05Gi", dq(536870912, -1, BIN)), ("0.025Ti", dq(274877906944, -1, BIN)),
    ("0.000000000001Ki", dq(2, -9, SI)), (".001", dq(1, -3, SI)), (".0001k", dq(100, -3, SI)), ("1.", dq(1, 0, SI)), ("1.G", dq(1, 9, SI)),
]


def test_quantity_parse_empty() -> None:
    with pytest.raises(QuantityError):
        parse_resource_quantity("")


@pytest.mark.parametrize("as_dec", [False, True], ids=["int64", "dec"])
@pytest.mark.parametrize(("text", "expect"), QUANTITY_PARSE, ids=ids(QUANTITY_PARSE))
def test_quantity_parse(text: str, expect: ResourceQuantity, as_dec: bool) -> None:
    got = parse_resource_quantity(text)
    if as_dec:
        got.as_dec()
    assert expect.copy().cmp(got) == 0, (str(expect.copy()), str(got.copy()))
    assert got.format == expect.format
    if as_dec:
        assert got.as_int64() == (0, False)
    else:
        wanted, ok = expect.copy().as_int64()
        if ok:
            value, got_ok = got.copy().as_int64()
            if not got_ok:
                assert not (got.d is None and got.i_scale >= 0), "an int64Amount that cannot say AsInt64"
            else:
                assert value == wanted
    # round trip through NewDecimalQuantity, in every format
    for format_ in (SI, BIN, EXP):
        copied = Dec(0, 0).add(got.copy().as_dec())
        assert new_decimal_quantity(copied, format_).cmp(got.copy()) == 0
    # decompose and rebuild
    positive, _, num, denom, suffix = parse_quantity_string(text)
    assert not (got.sign() >= 0 and not positive or got.sign() < 0 and positive)
    rebuilt = ("" if positive else "-") + num + ("." + denom if denom else "") + suffix
    assert parse_resource_quantity(rebuilt).cmp(got.copy()) == 0
    # the negative version
    negative = parse_resource_quantity("-" + text.lstrip())
    if as_dec:
        negative.as_dec()
    assert ResourceQuantity(d=expect.copy().as_dec().neg()).cmp(negative) == 0
    assert negative.format == expect.format
    # with an explicit +
    plus = parse_resource_quantity("+" + text.lstrip())
    if as_dec:
        plus.as_dec()
    assert expect.copy().cmp(plus) == 0
    assert plus.format == expect.format


QUANTITY_PARSE_INVALID = ["1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 "]


@pytest.mark.parametrize("text", QUANTITY_PARSE_INVALID)
def test_quantity_parse_invalid(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_resource_quantity(text)


QUANTITY_ROUND_UP = [
    ("9.01", -3, dq(901, -2, SI), True), ("9.01", -2, dq(901, -2, SI), True), ("9.01", -1, dq(91, -1, SI), False),
    ("9.01", 0, dq(10, 0, SI), False), ("9.01", 1, dq(10, 0, SI), False), ("9.01", 2, dq(100, 0, SI), False),
    ("-9.01", -3, dq(-901, -2, SI), True), ("-9.01", -2, dq(-901, -2, SI), True), ("-9.01", -1, dq(-91, -1, SI), False),
    ("-9.01", 0, dq(-10, 0, SI), False), ("-9.01", 1, dq(-10, 0, SI), False), ("-9.01", 2, dq(-100, 0, SI), False),
]


@pytest.mark.parametrize("as_dec", [False, True], ids=["int64", "dec"])
@pytest.mark.parametrize(("text", "scale", "expect", "ok"), QUANTITY_ROUND_UP, ids=[f"{i}:{r[0]}@{r[1]}" for i, r in enumerate(QUANTITY_ROUND_UP)])
def test_quantity_round_up(text: str, scale: int, expect: ResourceQuantity, ok: bool, as_dec: bool) -> None:
    got = parse_resource_quantity(text)
    if as_dec:
        got.as_dec()
    assert got.round_up(scale) is ok
    assert got.cmp(expect.copy()) == 0, str(got)


E18 = 1000000 * 1000000 * 1000000
CMP_INT64_AND_DEC = [
    (iq(901, -2, SI), iq(901, -2, SI), 0), (iq(90, -1, SI), iq(901, -2, SI), -1), (iq(901, -2, SI), iq(900, -2, SI), 1), (iq(0, 0, SI), iq(0, 0, SI), 0),
    (iq(0, 1, SI), iq(0, -1, SI), 0), (iq(0, -1, SI), iq(0, 1, SI), 0), (iq(800, -3, SI), iq(1, 0, SI), -1), (iq(800, -3, SI), iq(79, -2, SI), 1),
    (iq(MOST_POSITIVE, 0, SI), iq(1, -1, SI), 1), (iq(MOST_POSITIVE, 1, SI), iq(1, 0, SI), 1), (iq(MOST_POSITIVE, 1, SI), iq(1, 1, SI), 1),
    (iq(MOST_POSITIVE, 1, SI), iq(0, 1, SI), 1), (iq(MOST_POSITIVE, -16, SI), iq(1, 3, SI), -1),
    (iq(MOST_NEGATIVE, 0, SI), iq(0, 0, SI), -1), (iq(MOST_NEGATIVE, -18, SI), iq(-1, 0, SI), -1), (iq(MOST_NEGATIVE, -19, SI), iq(-1, 0, SI), 1),
    (iq(E18, -17, SI), iq(1, 1, SI), 0), (iq(E18, -17, SI), iq(-10, 0, SI), 1), (iq(-E18, -17, SI), iq(-10, 0, SI), 0), (iq(E18, -17, SI), iq(1, 0, SI), 1),
    (iq(E18 + 1, -17, SI), iq(1, 1, SI), 1), (iq(E18 - 1, -17, SI), iq(1, 1, SI), -1),
]


@pytest.mark.parametrize("convert", ["none", "a", "b", "both"])
@pytest.mark.parametrize(("a", "b", "expect"), CMP_INT64_AND_DEC, ids=[str(i) for i in range(len(CMP_INT64_AND_DEC))])
def test_quantity_cmp_int64_and_dec(a: ResourceQuantity, b: ResourceQuantity, expect: int, convert: str) -> None:
    a, b = a.copy(), b.copy()
    if convert in ("a", "both"):
        a.as_dec()
    if convert in ("b", "both"):
        b.as_dec()
    assert a.cmp(b) == expect
    assert b.cmp(a) == -expect


@pytest.mark.parametrize("a", [iq(901, -2, SI), dq(901, -2, SI)], ids=["int", "dec"])
def test_quantity_neg(a: ResourceQuantity) -> None:
    out = a.copy()
    out.neg()
    assert out.cmp(a.copy()) != 0
    assert str(out) == "-9010m"


QUANTITY_STRING = [
    (dq(GI, 0, BIN), "1Gi", "1024Mi"), (dq(300 * MI, 0, BIN), "300Mi", "307200Ki"), (dq(6 * KI, 0, BIN), "6Ki", ""),
    (dq(1001 * GI, 0, BIN), "1001Gi", "1025024Mi"), (dq(TI, 0, BIN), "1Ti", "1024Gi"), (dq(5, 0, BIN), "5", "5000m"), (dq(500, -3, BIN), "500m", "0.5"),
    (dq(1, 9, SI), "1G", "1000M"), (dq(1000, 6, SI), "1G", "0.001T"), (dq(1000000, 3, SI), "1G", ""), (dq(1000000000, 0, SI), "1G", ""),
    (dq(1, -3, SI), "1m", "1000u"), (dq(80, -3, SI), "80m", ""), (dq(1080, -3, SI), "1080m", "1.08"), (dq(108, -2, SI), "1080m", "1080000000n"),
    (dq(10800, -4, SI), "1080m", ""), (dq(300, 6, SI), "300M", ""), (dq(1, 12, SI), "1T", ""), (dq(1234567, 6, SI), "1234567M", ""),
    (dq(1234567, -3, BIN), "1234567m", ""), (dq(3, 3, SI), "3k", ""), (dq(1025, 0, BIN), "1025", ""), (dq(0, 0, SI), "0", ""), (dq(0, 0, BIN), "0", ""),
    (dq(1, 9, EXP), "1e9", ".001e12"), (dq(1, -3, EXP), "1e-3", "0.001e0"), (dq(1, -9, EXP), "1e-9", "1000e-12"), (dq(80, -3, EXP), "80e-3", ""),
    (dq(300, 6, EXP), "300e6", ""), (dq(1, 12, EXP), "1e12", ""), (dq(1, 3, EXP), "1e3", ""), (dq(3, 3, EXP), "3e3", ""), (dq(3, 3, SI), "3k", ""),
    (dq(0, 0, EXP), "0", "00"), (dq(1, -9, SI), "1n", ""), (dq(80, -9, SI), "80n", ""), (dq(1080, -9, SI), "1080n", ""), (dq(108, -8, SI), "1080n", ""),
    (dq(10800, -10, SI), "1080n", ""), (dq(1, -6, SI), "1u", ""), (dq(80, -6, SI), "80u", ""), (dq(1080, -6, SI), "1080u", ""),
]


@pytest.mark.parametrize(("value", "expect", "alternate"), QUANTITY_STRING, ids=ids(QUANTITY_STRING, 1))
def test_quantity_string(value: ResourceQuantity, expect: str, alternate: str) -> None:
    assert str(value.copy()) == expect
    parsed = parse_resource_quantity(expect)
    assert parsed.s == expect, "did not copy canonical string on parse"
    if alternate:
        other = parse_resource_quantity(alternate)
        assert other.s == "", "unexpected nested string"
        assert str(other) == expect
        assert other.s == expect
    if value.copy().cmp(ResourceQuantity()) != 0:
        negative = value.copy()
        negative.d = negative.as_dec().neg()
        negative.s = ""
        assert str(negative) == "-" + expect


PARSE_EMIT = [("1Ki", "1Ki"), ("1Mi", "1Mi"), ("1Gi", "1Gi"), ("1024Mi", "1Gi"), ("1000M", "1G"), (".001Ki", "1024m"), (".000001Ki", "1024u"),
              (".000000001Ki", "1024n"), (".000000000001Ki", "2n")]


@pytest.mark.parametrize(("text", "expect"), PARSE_EMIT, ids=ids(PARSE_EMIT))
def test_quantity_parse_emit(text: str, expect: str) -> None:
    assert str(parse_resource_quantity(text)) == expect
    negative = parse_resource_quantity("-" + text)
    if negative.copy().cmp(ResourceQuantity()) != 0:
        assert str(negative) == "-" + expect


@pytest.mark.parametrize("text", ["0", "100m", "50m", "10000T"])
def test_quantity_deep_copy_parsed(text: str) -> None:
    q = must_parse(text)
    assert q.copy() == q


@pytest.mark.parametrize("value", [dec(0, 0), dec(10, 0), dec(-10, 0)], ids=["0", "10", "-10"])
def test_quantity_deep_copy_dec(value: Dec) -> None:
    q = ResourceQuantity(d=value, format=SI)
    result = q.copy()
    assert q.d is not None and q.d.cmp(result.as_dec()) == 0
    result = ResourceQuantity(d=dec(2, 0), format=SI)
    assert q.d.cmp(result.as_dec()) != 0


def _fuzzed(rng: random.Random) -> ResourceQuantity:
    """The test's fuzzer: BinarySI half the time (an int63, or n<1024 << 10k), else DecimalSI
    or DecimalExponent (an int63 at scale 0..3, or n<1000 at scale 3-0..14)."""
    if rng.random() < 0.5:
        if rng.random() < 0.5:
            return ResourceQuantity(d=Dec(rng.getrandbits(63), 0), format=BIN)
        return ResourceQuantity(d=Dec(rng.randrange(1024) << (10 * rng.randrange(5)), 0), format=BIN)
    format_ = SI if rng.random() < 0.5 else EXP
    if rng.random() < 0.5:
        return ResourceQuantity(d=Dec(rng.getrandbits(63), rng.randrange(4)), format=format_)
    return ResourceQuantity(d=Dec(rng.randrange(1000), 3 - rng.randrange(15)), format=format_)


def test_json() -> None:
    rng = random.Random(20240530)
    for _ in range(500):
        q = _fuzzed(rng)
        encoded = q.copy().marshal_json()
        decoded = ResourceQuantity.unmarshal_json(encoded)
        assert decoded.cmp(q.copy()) == 0, (q, encoded)


JSON_WHITESPACE = [('" 1"', "1"), ('"1 "', "1"), ("1", "1"), (" 1", "1"), ("1 ", "1"), ("10", "10"), ("-1", "-1"), (" -1", "-1")]


@pytest.mark.parametrize(("text", "expect"), JSON_WHITESPACE, ids=ids(JSON_WHITESPACE))
def test_json_whitespace(text: str, expect: str) -> None:
    # json.Unmarshal hands UnmarshalJSON the value without the surrounding JSON whitespace
    assert str(ResourceQuantity.unmarshal_json(text.strip())) == expect


MILLI_NEW_SET = [(1, SI, "1m", True), (1000, SI, "1", True), (1234000, SI, "1234", True), (1024, BIN, "1024m", False),
                 (1000000, "invalidFormatDefaultsToExponent", "1e3", True), (1024 * 1024, BIN, "1048576m", False)]


@pytest.mark.parametrize(("value", "format_", "expect", "exact"), MILLI_NEW_SET, ids=ids(MILLI_NEW_SET, 2))
def test_milli_new_set(value: int, format_: str, expect: str, exact: bool) -> None:
    q = new_milli_quantity(value, format_)
    assert str(q) == expect
    if exact:
        assert parse_resource_quantity(str(q)).milli_value() == value
    q = new_quantity(0, format_)
    q.set_milli(value)
    assert str(q) == expect


NEW_SET = [(1, SI, "1"), (1000, SI, "1k"), (1234000, SI, "1234k"), (1024, BIN, "1Ki"), (1000000, "invalidFormatDefaultsToExponent", "1e6"), (1024 * 1024, BIN, "1Mi")]


@pytest.mark.parametrize("as_dec", [False, True], ids=["int64", "dec"])
@pytest.mark.parametrize(("value", "format_", "expect"), NEW_SET, ids=ids(NEW_SET, 2))
def test_new_set(value: int, format_: str, expect: str, as_dec: bool) -> None:
    q = new_quantity(value, format_)
    if as_dec:
        q.to_dec()
    assert str(q) == expect
    assert parse_resource_quantity(str(q)).value() == value
    q = new_quantity(0, format_)
    q.set(value)
    if as_dec:
        q.to_dec()
    assert str(q) == expect


NEW_SCALED_SET = [(1, NANO, "1n"), (1000, NANO, "1u"), (1, MICRO, "1u"), (1000, MICRO, "1m"), (1, MILLI, "1m"), (1000, MILLI, "1"), (1, 0, "1"),
                  (0, NANO, "0"), (0, MICRO, "0"), (0, MILLI, "0"), (0, 0, "0")]


@pytest.mark.parametrize(("value", "scale", "expect"), NEW_SCALED_SET, ids=[f"{i}:{r[2]}" for i, r in enumerate(NEW_SCALED_SET)])
def test_new_scaled_set(value: int, scale: int, expect: str) -> None:
    q = new_scaled_quantity(value, scale)
    assert str(q) == expect
    assert parse_resource_quantity(str(q)).scaled_value(scale) == value
    q3 = new_quantity(0, SI)
    q3.set_scaled(value, scale)
    assert q.cmp(q3) == 0


SCALED_VALUE = [(NANO, NANO, 1), (NANO, MICRO, 1), (NANO, MILLI, 1), (NANO, 0, 1), (MICRO, NANO, 1000), (MICRO, MICRO, 1), (MICRO, MILLI, 1), (MICRO, 0, 1),
                (MILLI, NANO, 1000 * 1000), (MILLI, MICRO, 1000), (MILLI, MILLI, 1), (MILLI, 0, 1), (0, NANO, 1000 * 1000 * 1000), (0, MICRO, 1000 * 1000),
                (0, MILLI, 1000), (0, 0, 1), (2, -2, 100 * 100)]


@pytest.mark.parametrize(("from_scale", "to_scale", "expected"), SCALED_VALUE, ids=[f"{r[0]}->{r[1]}" for r in SCALED_VALUE])
def test_scaled_value(from_scale: int, to_scale: int, expected: int) -> None:
    assert new_scaled_quantity(1, from_scale).scaled_value(to_scale) == expected


def test_uninitialized_no_crash() -> None:
    q = ResourceQuantity()
    q.value()
    q.milli_value()
    q.copy()
    assert str(q) == "0"
    q.marshal_json()


def test_deep_copy() -> None:
    q = new_quantity(5, SI)
    c = q.copy()
    c.set(6)
    assert q.value() != 6


SUB = [(dq(10, 0, SI), dq(1, 1, SI), dq(0, 0, SI)), (dq(10, 0, SI), dq(1, 0, BIN), dq(9, 0, SI)), (dq(10, 0, BIN), dq(1, 0, SI), dq(9, 0, BIN)),
       (ResourceQuantity(format=SI), dq(50, 0, SI), dq(-50, 0, SI)), (dq(50, 0, SI), ResourceQuantity(format=SI), dq(50, 0, SI)),
       (ResourceQuantity(format=SI), ResourceQuantity(format=SI), dq(0, 0, SI))]


@pytest.mark.parametrize(("a", "b", "expected"), SUB, ids=[str(i) for i in range(len(SUB))])
def test_sub(a: ResourceQuantity, b: ResourceQuantity, expected: ResourceQuantity) -> None:
    a = a.copy()
    a.sub(b.copy())
    assert a.cmp(expected.copy()) == 0


NEG = [(iq(0, 0, SI), iq(0, 0, SI)), (ResourceQuantity(), ResourceQuantity()), (iq(10, 0, BIN), iq(-10, 0, BIN)), (iq(-10, 0, BIN), iq(10, 0, BIN)),
       (dq(0, 0, SI), iq(0, 0, SI)), (dq(10, 0, BIN), iq(-10, 0, BIN)), (dq(-10, 0, BIN), iq(10, 0, BIN))]


@pytest.mark.parametrize(("a", "expected"), NEG, ids=[str(i) for i in range(len(NEG))])
def test_neg(a: ResourceQuantity, expected: ResourceQuantity) -> None:
    a = a.copy()
    a.neg()
    assert a.cmp(expected.copy()) == 0


ADD = [(dq(10, 0, SI), dq(1, 1, SI), dq(20, 0, SI)), (dq(10, 0, SI), dq(1, 0, BIN), dq(11, 0, SI)), (dq(10, 0, BIN), dq(1, 0, SI), dq(11, 0, BIN)),
       (ResourceQuantity(format=SI), dq(50, 0, SI), dq(50, 0, SI)), (dq(50, 0, SI), ResourceQuantity(format=SI), dq(50, 0, SI)),
       (ResourceQuantity(format=SI), ResourceQuantity(format=SI), dq(0, 0, SI))]


@pytest.mark.parametrize(("a", "b", "expected"), ADD, ids=[str(i) for i in range(len(ADD))])
def test_add(a: ResourceQuantity, b: ResourceQuantity, expected: ResourceQuantity) -> None:
    a = a.copy()
    a.add(b.copy())
    assert a.cmp(expected.copy()) == 0


MUL = [
    (dq(10, 0, SI), 10, dq(100, 0, SI), True), (dq(10, 0, SI), 1, dq(10, 0, SI), True), (dq(10, 0, BIN), 1, dq(10, 0, BIN), True),
    (ResourceQuantity(format=SI), 50, dq(0, 0, SI), True), (dq(50, 0, SI), 0, dq(0, 0, SI), True), (ResourceQuantity(format=SI), 0, dq(0, 0, SI), True),
    (dq(10, 0, SI), -10, dq(-100, 0, SI), True), (dq(-10, 0, SI), 1, dq(-10, 0, SI), True), (dq(10, 0, BIN), -1, dq(-10, 0, BIN), True),
    (dq(-50, 0, SI), 0, dq(0, 0, SI), True), (dq(-50, 0, SI), -50, dq(2500, 0, SI), True), (ResourceQuantity(format=SI), -50, dq(0, 0, SI), True),
    (dq(MOST_POSITIVE, 0, SI), 0, dq(0, 1, SI), True), (dq(MOST_POSITIVE, 0, SI), 1, dq(MOST_POSITIVE, 0, SI), True),
    (dq(MOST_POSITIVE, 0, SI), -1, dq(-MOST_POSITIVE, 0, SI), True), (dq(MOST_POSITIVE // 2, 0, SI), 2, dq((MOST_POSITIVE // 2) * 2, 0, SI), True),
    (dq(-(MOST_POSITIVE // 2), 0, SI), -2, dq((MOST_POSITIVE // 2) * 2, 0, SI), True), (dq(MOST_POSITIVE, 0, SI), 2, dq(MOST_POSITIVE * 2, 0, SI), False),
    (dq(MOST_POSITIVE, 0, SI), 10, dq(MOST_POSITIVE, 1, SI), False), (dq(MOST_POSITIVE, 0, SI), -10, dq(-MOST_POSITIVE, 1, SI), False),
    (dq(MOST_NEGATIVE, 0, SI), 0, dq(0, 1, SI), True), (dq(MOST_NEGATIVE, 0, SI), 1, dq(MOST_NEGATIVE, 0, SI), True),
    (dq(MOST_NEGATIVE, 0, SI), -1, dq(MOST_POSITIVE + 1, 0, SI), False), (dq(MOST_NEGATIVE // 2, 0, SI), 2, dq(MOST_NEGATIVE, 0, SI), True),
    (dq(-(MOST_NEGATIVE // 2), 0, SI), -2, dq(MOST_NEGATIVE, 0, SI), True), (dq(MOST_NEGATIVE, 0, SI), 2, dq(MOST_NEGATIVE * 2, 0, SI), False),
    (dq(MOST_NEGATIVE, 0, SI), 10, dq(MOST_NEGATIVE, 1, SI), False), (dq(MOST_NEGATIVE, 0, SI), -10, dq(MOST_POSITIVE + 1, 1, SI), False),
]


@pytest.mark.parametrize(("a", "factor", "expected", "ok"), MUL, ids=[str(i) for i in range(len(MUL))])
def test_mul(a: ResourceQuantity, factor: int, expected: ResourceQuantity, ok: bool) -> None:
    a = a.copy()
    assert a.mul(factor) is ok
    assert a.cmp(expected.copy()) == 0


@pytest.mark.parametrize("k", range(-10, 11))
def test_add_sub_round_trip(k: int) -> None:
    rng = random.Random(k)
    q = ResourceQuantity(format=SI)
    order = [rng.getrandbits(63) for _ in range(100)]
    for j in order:
        q.add(new_scaled_quantity(j, k))
    for j in order:
        q.sub(new_scaled_quantity(j, k))
    assert q.is_zero()


def test_add_sub_round_trip_across_scales() -> None:
    rng = random.Random(7)
    q = ResourceQuantity(format=SI)
    order = [rng.getrandbits(63) for _ in range(100)]
    for j in order:
        q.add(new_scaled_quantity(j, j % 20 - 10))
    for j in order:
        q.sub(new_scaled_quantity(j, j % 20 - 10))
    assert q.is_zero()


@pytest.mark.parametrize("as_dec", [False, True], ids=["int64", "dec"])
def test_negate_round_trip(as_dec: bool) -> None:
    rng = random.Random(11)
    for k in range(-10, 11):
        for _ in range(100):
            q = new_scaled_quantity(rng.getrandbits(63), k)
            if as_dec:
                q.as_dec()
            b = q.copy()
            b.neg()
            b.neg()
            assert b.cmp(q.copy()) == 0


M7 = 7 * 1024 * 1024
APPROXIMATE_FLOAT64 = [
    (dq(0, 0, SI), 0.0), (dq(0, 0, EXP), 0.0), (dq(0, 0, BIN), 0.0), (dq(1, 0, SI), 1), (dq(1, 0, EXP), 1), (dq(1, 0, BIN), 1),
    (dq(1024, 0, BIN), 1024), (dq(8 * 1024, 0, BIN), 8 * 1024), (dq(M7, 0, BIN), M7), (dq(M7, 1, BIN), M7 * 10), (dq(M7, 4, BIN), M7 * 10000),
    (dq(M7, 8, BIN), M7 * 100000000), (dq(M7, -1, BIN), M7 * 1e-1), (dq(M7, -8, BIN), M7 / float(100000000)),
    (dq(1024, 0, SI), 1024), (dq(8 * 1024, 0, SI), 8 * 1024), (dq(M7, 0, SI), M7), (dq(M7, 1, SI), M7 * 10), (dq(M7, 4, SI), M7 * 10000),
    (dq(M7, 8, SI), M7 * 100000000), (dq(M7, -1, SI), M7 * 1e-1), (dq(M7, -8, SI), M7 / float(100000000)),
    (dq(1024, 0, EXP), 1024), (dq(8 * 1024, 0, EXP), 8 * 1024), (dq(M7, 0, EXP), M7), (dq(M7, 1, EXP), M7 * 10), (dq(M7, 4, EXP), M7 * 10000),
    (dq(M7, 8, EXP), M7 * 100000000), (dq(M7, -1, EXP), M7 * 1e-1), (dq(M7, -8, EXP), M7 / float(100000000)),
    (ResourceQuantity(d=MAX_ALLOWED, format=SI), float(MOST_POSITIVE)), (ResourceQuantity(d=MAX_ALLOWED, format=BIN), float(MOST_POSITIVE)),
    (dq(12, 18, SI), 1.2e19), (dq(12, 500, SI), float("inf")), (dq(-12, 500, SI), float("-inf")),
]


@pytest.mark.parametrize(("value", "out"), APPROXIMATE_FLOAT64, ids=[str(i) for i in range(len(APPROXIMATE_FLOAT64))])
def test_quantity_as_approximate_float64(value: ResourceQuantity, out: float) -> None:
    assert value.copy().as_approximate_float64() == out
    integer, ok = value.copy().as_int64()
    if value.d is not None and ok:
        assert iq(integer, 0, value.format).as_approximate_float64() == out


STRING_APPROXIMATE_FLOAT64 = [("2Ki", 2048), ("1.1Ki", 1126.4e0), ("1Mi", 1.048576e06), ("2Gi", 2.147483648e09)]


@pytest.mark.parametrize(("text", "out"), STRING_APPROXIMATE_FLOAT64, ids=ids(STRING_APPROXIMATE_FLOAT64))
def test_string_quantity_as_approximate_float64(text: str, out: float) -> None:
    assert parse_resource_quantity(text).as_approximate_float64() == out


def test_quantity_value_set() -> None:
    with pytest.raises(QuantityError):
        parse_resource_quantity("invalid")
    q = parse_resource_quantity("1Mi")
    assert q.value() == 1024 * 1024
    assert q.marshal_json() == '"1Mi"'


def test_error_messages_are_upstreams() -> None:
    with pytest.raises(QuantityError, match=re.escape("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")):
        parse_resource_quantity("1.1.M")
    with pytest.raises(QuantityError, match="unable to parse quantity's suffix"):
        parse_resource_quantity("1i")


def test_a_tiny_negative_request_is_refused_as_upstream_refuses_it() -> None:
    """``ValidateNonnegativeQuantity`` compares the exact value with zero: "-0.5m" is negative
    (the model's milli-units rounded it up to 0 and let it through)."""
    from chaoskube.api.manifests import from_dict
    from chaoskube.api.objects import parse_quantity
    from chaoskube.apiserver.validation import validate_create

    assert parse_quantity("-0.5m") == -1
    assert parse_quantity("-3.001n") == -1
    pod = from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                     "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "-0.5m"}}}]}})
    assert any("resources.requests[cpu]: Invalid value" in cause for cause in validate_create(pod))
