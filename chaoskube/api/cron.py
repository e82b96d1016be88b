"""Cron schedules as a CronJob's ``spec.schedule`` means them: ``robfig/cron/v3`` (v3.0.1,
the version kubernetes vendors) ``ParseStandard`` and ``SpecSchedule.Next``, which the API
server (validation) and the CronJob controller both use.

- :class:`Parser` is robfig's configurable ``Parser`` (options :data:`SECOND`,
  :data:`SECOND_OPTIONAL`, :data:`MINUTE`, ... :data:`DESCRIPTOR`); :func:`parse_schedule`
  is ``ParseStandard``: five fields, ``minute hour day-of-month month day-of-week``; each a
  comma-separated list of ``*``, ``?``, ``N``, ``A-B``, with an optional ``/step``
  (``*/5``, ``6-16/4``; ``N/step`` means ``N-max/step``); month and weekday names
  (``jan``, ``MON``) are accepted; weekdays are 0-6 from Sunday.
- Descriptors ``@yearly`` / ``@annually``, ``@monthly``, ``@weekly``, ``@daily`` /
  ``@midnight``, ``@hourly``, and ``@every <duration>`` (a constant delay, Go duration
  syntax, rounded down to whole seconds, at least one second).
- A ``TZ=<zone>`` / ``CRON_TZ=<zone>`` prefix makes the fields read in that zone (the API
  server refuses it in a CronJob and asks for ``spec.timeZone`` instead).
- Day matching as robfig's ``dayMatches``: when day-of-month or day-of-week is ``*`` (or
  ``?``) both must match, otherwise either may.
- :meth:`Schedule.next` is ``SpecSchedule.Next``: the first matching second strictly after
  ``t``, searching at most five years ahead; ``None`` where Go returns the zero time
  (``59 23 31 2 *`` never fires). Its arithmetic is Go's, step for step, so daylight-saving
  transitions come out as upstream's: months and days advance on the wall clock
  (``AddDate``, normalised by ``time.Date``, which puts a time in a spring-forward gap one
  hour early), hours, minutes and seconds advance on the absolute clock (``Add``). A 02:00
  nightly job is skipped on the day 02:00 does not exist; a 01:00 job runs twice on the day
  01:00 happens twice.

Errors are :class:`ScheduleError` with robfig's messages (``expected exactly 5 fields, found
4: [* * * *]``). Times are ``datetime`` values with a time zone; a schedule without
``TZ=`` is evaluated in the zone of the time it is given (the CronJob controller passes its
``timeZone`` or UTC), and the answer comes back in that zone.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

__all__ = [
    "DESCRIPTOR",
    "DOM",
    "DOW",
    "DOW_OPTIONAL",
    "HOUR",
    "MINUTE",
    "MONTH",
    "SECOND",
    "SECOND_OPTIONAL",
    "Parser",
    "Schedule",
    "ScheduleError",
    "parse_schedule",
    "valid_time_zone",
    "zone",
]


class ScheduleError(ValueError):
    """A schedule the parser refuses; the message is robfig's."""


# ParseOption bits, in robfig's order.
SECOND, SECOND_OPTIONAL, MINUTE, HOUR, DOM, MONTH, DOW, DOW_OPTIONAL, DESCRIPTOR = (1 << bit for bit in range(9))
_PLACES = (SECOND, MINUTE, HOUR, DOM, MONTH, DOW)
_DEFAULTS = ("0", "0", "0", "*", "*", "*")


@dataclass(frozen=True, slots=True)
class Bounds:
    """robfig's ``bounds``: the range of one field and its names."""

    low: int
    high: int
    names: dict[str, int] | None = None


_MONTHS = {name: index for index, name in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
_DAYS = {name: index for index, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
SECONDS = Bounds(0, 59)
MINUTES = Bounds(0, 59)
HOURS = Bounds(0, 23)
DAYS_OF_MONTH = Bounds(1, 31)
MONTHS = Bounds(1, 12, _MONTHS)
DAYS_OF_WEEK = Bounds(0, 6, _DAYS)
STAR_BIT = 1 << 63  # robfig's starBit: the field was * or ?
_INT64_MAX = (1 << 63) - 1


def _must_parse_int(text: str) -> int:
    """``mustParseInt``: Go's ``strconv.Atoi`` (optional sign, decimal digits), never negative."""
    if re.fullmatch(r"[+-]?[0-9]+", text) is None:
        raise ScheduleError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    number = int(text)
    if not -_INT64_MAX - 1 <= number <= _INT64_MAX:
        raise ScheduleError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": value out of range')
    if number < 0:
        raise ScheduleError(f"negative number ({number}) not allowed: {text}")
    return number


def _parse_int_or_name(text: str, names: dict[str, int] | None) -> int:
    if names is not None and text.lower() in names:
        return names[text.lower()]
    return _must_parse_int(text)


def get_bits(low: int, high: int, step: int) -> int:
    """``getBits``: the bits low..high every ``step``."""
    bits = 0
    for value in range(low, high + 1, step):
        bits |= 1 << value
    return bits


def all_bits(bounds: Bounds) -> int:
    """``all``: every value of the field, with the star bit."""
    return get_bits(bounds.low, bounds.high, 1) | STAR_BIT


def get_range(expression: str, bounds: Bounds) -> int:
    """``getRange``: the bits of one comma-separated item."""
    range_and_step = expression.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    extra = 0
    if low_and_high[0] in ("*", "?"):
        start, end, extra = bounds.low, bounds.high, STAR_BIT
    else:
        start = _parse_int_or_name(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _parse_int_or_name(low_and_high[1], bounds.names)
        else:
            raise ScheduleError(f"too many hyphens: {expression}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _must_parse_int(range_and_step[1])
        if single:  # "N/step" means N-max/step
            end = bounds.high
        if step > 1:
            extra = 0
    else:
        raise ScheduleError(f"too many slashes: {expression}")
    if start < bounds.low:
        raise ScheduleError(f"beginning of range ({start}) below minimum ({bounds.low}): {expression}")
    if end > bounds.high:
        raise ScheduleError(f"end of range ({end}) above maximum ({bounds.high}): {expression}")
    if start > end:
        raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): {expression}")
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {expression}")
    return get_bits(start, end, step) | extra


def get_field(text: str, bounds: Bounds) -> int:
    """``getField``: the bits of a comma-separated list (empty items skipped, as
    ``strings.FieldsFunc`` does)."""
    bits = 0
    for item in text.split(","):
        if item:
            bits |= get_range(item, bounds)
    return bits


_UNIT_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}


def parse_go_duration(text: str) -> int:
    """Go's ``time.ParseDuration``, in nanoseconds; raises ``ValueError`` with Go's message."""
    invalid = ValueError(f'time: invalid duration "{text}"')
    body, sign = text, 1
    if body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return 0
    if not body:
        raise invalid
    total = 0
    while body:
        number = re.match(r"[0-9]*(?:\.[0-9]*)?", body).group(0)  # type: ignore[union-attr]
        if number in ("", "."):
            raise invalid
        body = body[len(number):]
        unit = re.match(r"[^0-9.]*", body).group(0)  # type: ignore[union-attr]
        if not unit:
            raise ValueError(f'time: missing unit in duration "{text}"')
        if unit not in _UNIT_NS:
            raise ValueError(f'time: unknown unit "{unit}" in duration "{text}"')
        body = body[len(unit):]
        whole, _, fraction = number.partition(".")
        total += int(whole or "0") * _UNIT_NS[unit]
        if fraction:
            total += int(fraction) * _UNIT_NS[unit] // 10 ** len(fraction)
    if total > _INT64_MAX:
        raise invalid
    return sign * total


# --- Go's time arithmetic on (unix seconds, zone) --------------------------------------


def _offset(unix: int, tz: _dt.tzinfo) -> int:
    offset = _dt.datetime.fromtimestamp(unix, tz).utcoffset()
    assert offset is not None
    return int(offset.total_seconds())


def _fields(unix: int, tz: _dt.tzinfo) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(unix, tz)


def _go_date(year: int, month: int, day: int, hour: int, minute: int, second: int, tz: _dt.tzinfo) -> int:
    """Go's ``time.Date``: out-of-range fields normalised (month 13 is January of the next
    year, day 32 the first of the next month), then the zone's offset looked up at the wall
    time taken as UTC and corrected once (``utc < start || utc >= end``): a wall time in a
    spring-forward gap lands one hour early, a repeated one on its first (summer) instance."""
    carry, month0 = divmod(month - 1, 12)
    wall = _dt.datetime(year + carry, month0 + 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(days=day - 1, hours=hour, minutes=minute, seconds=second)
    unix = int((wall - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)).total_seconds())
    return unix - _offset(unix - _offset(unix, tz), tz)


def _add_date(unix: int, tz: _dt.tzinfo, months: int = 0, days: int = 0) -> int:
    """``t.AddDate(0, months, days)``: wall-clock fields plus the deltas, through ``time.Date``."""
    f = _fields(unix, tz)
    return _go_date(f.year, f.month + months, f.day + days, f.hour, f.minute, f.second, tz)


@dataclass(frozen=True, slots=True)
class Schedule:
    """A parsed schedule: the field bitmasks of a ``SpecSchedule`` (``location`` empty for
    ``time.Local``, the zone of the time given), or ``every_s`` for a
    ``ConstantDelaySchedule``."""

    minute: int = 0
    hour: int = 0
    dom: int = 0
    month: int = 0
    dow: int = 0
    every_s: int = 0
    location: str = ""  # TZ=/CRON_TZ= prefix: the zone the fields are read in
    second: int = 1  # bit 0: standard schedules fire at second 0

    def _day_matches(self, f: _dt.datetime) -> bool:
        dom_match = (1 << f.day) & self.dom != 0
        dow_match = (1 << ((f.weekday() + 1) % 7)) & self.dow != 0
        if self.dom & STAR_BIT or self.dow & STAR_BIT:
            return dom_match and dow_match
        return dom_match or dow_match

    def next(self, moment: _dt.datetime) -> _dt.datetime | None:
        """The next activation strictly after ``moment`` (module docstring), in its zone."""
        assert moment.tzinfo is not None, "a schedule runs in a time zone"
        original = moment.tzinfo
        whole = moment.replace(microsecond=0)
        start = int((whole - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)).total_seconds())
        if self.every_s:  # ConstantDelaySchedule.Next: t + delay, nanoseconds dropped
            return _fields(start + self.every_s, original)
        found = self._next(start + 1, zone(self.location) if self.location else original)
        return None if found is None else _fields(found, original)

    def _next(self, t: int, loc: _dt.tzinfo) -> int | None:
        """``SpecSchedule.Next`` from the upcoming second ``t`` (unix seconds) in ``loc``."""
        added = False
        year_limit = _fields(t, loc).year + 5
        while True:  # WRAP
            f = _fields(t, loc)
            if f.year > year_limit:
                return None
            wrapped = False
            while (1 << f.month) & self.month == 0:
                if not added:
                    added = True
                    t = _go_date(f.year, f.month, 1, 0, 0, 0, loc)
                t = _add_date(t, loc, months=1)
                f = _fields(t, loc)
                if f.month == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not self._day_matches(f):
                if not added:
                    added = True
                    t = _go_date(f.year, f.month, f.day, 0, 0, 0, loc)
                t = _add_date(t, loc, days=1)
                f = _fields(t, loc)
                # robfig: notice when midnight did not exist (DST) and step back to it.
                if f.hour != 0:
                    t += (24 - f.hour) * 3600 if f.hour > 12 else -f.hour * 3600
                    f = _fields(t, loc)
                if f.day == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while (1 << f.hour) & self.hour == 0:
                if not added:
                    added = True
                    t = _go_date(f.year, f.month, f.day, f.hour, 0, 0, loc)
                t += 3600
                f = _fields(t, loc)
                if f.hour == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while (1 << f.minute) & self.minute == 0:
                if not added:
                    added = True
                    t -= t % 60  # Truncate(time.Minute), on the absolute clock
                t += 60
                f = _fields(t, loc)
                if f.minute == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while (1 << f.second) & self.second == 0:
                added = True  # Truncate(time.Second) is a no-op on whole seconds
                t += 1
                f = _fields(t, loc)
                if f.second == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            return t


def _descriptor(spec: str, location: str) -> Schedule:
    """``parseDescriptor``."""
    second, minute, hour, dom, month, dow = 1 << SECONDS.low, 1 << MINUTES.low, 1 << HOURS.low, 1 << DAYS_OF_MONTH.low, 1 << MONTHS.low, 1 << DAYS_OF_WEEK.low
    every_dom, every_month, every_dow, every_hour = all_bits(DAYS_OF_MONTH), all_bits(MONTHS), all_bits(DAYS_OF_WEEK), all_bits(HOURS)
    fields = {
        "@yearly": (dom, month, every_dow, hour),
        "@annually": (dom, month, every_dow, hour),
        "@monthly": (dom, every_month, every_dow, hour),
        "@weekly": (every_dom, every_month, dow, hour),
        "@daily": (every_dom, every_month, every_dow, hour),
        "@midnight": (every_dom, every_month, every_dow, hour),
        "@hourly": (every_dom, every_month, every_dow, every_hour),
    }
    if spec in fields:
        d, m, w, h = fields[spec]
        return Schedule(minute=minute, hour=h, dom=d, month=m, dow=w, location=location, second=second)
    if spec.startswith("@every "):
        try:
            duration_ns = parse_go_duration(spec[len("@every "):])
        except ValueError as error:
            raise ScheduleError(f"failed to parse duration {spec}: {error}") from None
        # Every(): at least one second, sub-second parts dropped
        return Schedule(every_s=max(1, duration_ns // 10**9) if duration_ns >= 10**9 else 1)
    raise ScheduleError(f"unrecognized descriptor: {spec}")


def normalize_fields(fields: list[str], options: int) -> list[str]:
    """``normalizeFields``: the six fields (second ... day-of-week) with defaults for those
    the options leave out; raises :class:`ScheduleError` on a wrong count."""
    optionals = 0
    if options & SECOND_OPTIONAL:
        options |= SECOND
        optionals += 1
    if options & DOW_OPTIONAL:
        options |= DOW
        optionals += 1
    if optionals > 1:
        raise ScheduleError("multiple optionals may not be configured")
    most = sum(1 for place in _PLACES if options & place)
    least = most - optionals
    count = len(fields)
    if count < least or count > most:
        if least == most:
            raise ScheduleError(f"expected exactly {least} fields, found {count}: [{' '.join(fields)}]")
        raise ScheduleError(f"expected {least} to {most} fields, found {count}: [{' '.join(fields)}]")
    if least < most and count == least:
        if options & DOW_OPTIONAL:
            fields = [*fields, _DEFAULTS[5]]
        elif options & SECOND_OPTIONAL:
            fields = [_DEFAULTS[0], *fields]
        else:  # pragma: no cover - unreachable with the optionals counted above
            raise ScheduleError("unknown optional field")
    expanded = list(_DEFAULTS)
    given = iter(fields)
    for index, place in enumerate(_PLACES):
        if options & place:
            expanded[index] = next(given)
    return expanded


@dataclass(frozen=True, slots=True)
class Parser:
    """robfig's ``Parser``: which fields a spec has (option bits above)."""

    options: int

    def __post_init__(self) -> None:
        if bool(self.options & DOW_OPTIONAL) and bool(self.options & SECOND_OPTIONAL):
            raise ValueError("multiple optionals may not be configured")  # NewParser panics

    def parse(self, spec: str) -> Schedule:
        """``Parser.Parse``; raises :class:`ScheduleError`."""
        if not spec:
            raise ScheduleError("empty spec string")
        location = ""
        if spec.startswith("TZ=") or spec.startswith("CRON_TZ="):
            space = spec.find(" ")
            if space < 0:  # Go slices spec[eq+1:-1] and panics; refuse instead
                raise ScheduleError(f"provided bad location {spec.partition('=')[2]}: no schedule after the time zone")
            name = spec[spec.index("=") + 1:space]
            if not valid_time_zone(name):
                raise ScheduleError(f"provided bad location {name}: unknown time zone {name}")
            location = "" if name == "Local" else (name or "UTC")  # LoadLocation("") is UTC
            spec = spec[space:].strip()
        if spec.startswith("@"):
            if not self.options & DESCRIPTOR:
                raise ScheduleError(f"parser does not accept descriptors: {spec}")
            return _descriptor(spec, location)
        second, minute, hour, dom, month, dow = normalize_fields(spec.split(), self.options)
        return Schedule(
            minute=get_field(minute, MINUTES), hour=get_field(hour, HOURS), dom=get_field(dom, DAYS_OF_MONTH),
            month=get_field(month, MONTHS), dow=get_field(dow, DAYS_OF_WEEK), location=location, second=get_field(second, SECONDS),
        )


STANDARD_PARSER = Parser(MINUTE | HOUR | DOM | MONTH | DOW | DESCRIPTOR)


def parse_schedule(text: str) -> Schedule:
    """``cron.ParseStandard`` (module docstring); raises :class:`ScheduleError`."""
    return STANDARD_PARSER.parse(text)


def valid_time_zone(name: str) -> bool:
    """Whether ``name`` is an IANA time zone the controller can load (``time.LoadLocation``)."""
    if name in ("", "UTC", "Local", "Etc/UTC"):
        return True
    try:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        ZoneInfo(name)
    except (ImportError, ValueError, OSError):
        return False
    except ZoneInfoNotFoundError:
        return False
    return True


def zone(name: str | None) -> _dt.tzinfo:
    """The zone a CronJob's ``timeZone`` names (UTC when unset: the controller's own zone
    in a cluster run in UTC, as kube-controller-manager's containers are)."""
    if not name or name in ("UTC", "Etc/UTC", "Local"):
        return _dt.UTC
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)
