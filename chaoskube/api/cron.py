"""Cron schedules as a CronJob's ``spec.schedule`` means them: ``robfig/cron/v3``'s
``ParseStandard`` and ``Schedule.Next``, which the API server (validation) and the CronJob
controller both use.

- Five fields, ``minute hour day-of-month month day-of-week``; each a comma-separated list
  of ``*``, ``?`` (day fields), ``N``, ``A-B``, with an optional ``/step`` (``*/5``,
  ``6-16/4``; ``N/step`` means ``N-max/step``); month and weekday names (``jan``, ``MON``)
  are accepted; weekdays are 0-6 from Sunday.
- Descriptors ``@yearly`` / ``@annually``, ``@monthly``, ``@weekly``, ``@daily`` /
  ``@midnight``, ``@hourly``, and ``@every <duration>`` (a constant delay, Go duration
  syntax, rounded down to whole seconds, at least one second).
- Day matching as robfig's ``dayMatches``: when day-of-month or day-of-week is ``*`` (or
  ``?``) both must match, otherwise either may.
- :meth:`Schedule.next` is ``SpecSchedule.Next``: the first matching second strictly after
  ``t`` (seconds are always 0 for a standard schedule), searching at most five years ahead;
  ``None`` where Go returns the zero time (``59 23 31 2 *`` never fires).

Errors are :class:`ScheduleError` with robfig's messages (``expected exactly 5 fields, found
4: [* * * *]``). Times are ``datetime`` values with a time zone; a schedule is evaluated in
the zone of the time it is given (the CronJob controller passes its ``timeZone`` or UTC).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

__all__ = ["Schedule", "ScheduleError", "parse_schedule", "valid_time_zone"]


class ScheduleError(ValueError):
    """A schedule ``ParseStandard`` refuses; the message is robfig's."""


@dataclass(frozen=True, slots=True)
class _Bounds:
    low: int
    high: int
    names: dict[str, int]


_MONTHS = {name: index for index, name in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
_DAYS = {name: index for index, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_MINUTE = _Bounds(0, 59, {})
_HOUR = _Bounds(0, 23, {})
_DOM = _Bounds(1, 31, {})
_MONTH = _Bounds(1, 12, _MONTHS)
_DOW = _Bounds(0, 6, _DAYS)
_STAR = 1 << 63  # robfig's starBit: the field was * or ?

_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _number(text: str, names: dict[str, int]) -> int:
    lowered = text.lower()
    if lowered in names:
        return names[lowered]
    if not text.isdigit():
        raise ScheduleError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    return int(text)


def _range(expression: str, bounds: _Bounds) -> int:
    """``getRange``: the bits of one comma-separated item."""
    range_and_step = expression.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    extra = 0
    if low_and_high[0] in ("*", "?"):
        start, end, extra = bounds.low, bounds.high, _STAR
    else:
        start = _number(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _number(low_and_high[1], bounds.names)
        else:
            raise ScheduleError(f"too many hyphens: {expression}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _number(range_and_step[1], {})
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
    bits = 0
    for value in range(start, end + 1, step):
        bits |= 1 << value
    return bits | extra


def _field(text: str, bounds: _Bounds) -> int:
    bits = 0
    for item in text.split(","):
        bits |= _range(item, bounds)
    return bits


def _parse_duration(text: str) -> float:
    """Go's ``time.ParseDuration`` for the non-negative durations ``@every`` takes."""
    if text in ("0", ""):
        return 0.0
    position, total = 0, 0.0
    while position < len(text):
        match = _DURATION_PART.match(text, position)
        if match is None:
            raise ScheduleError(f'failed to parse duration {text}: time: invalid duration "{text}"')
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    return total


@dataclass(frozen=True, slots=True)
class Schedule:
    """A parsed schedule: the field bitmasks of a ``SpecSchedule``, or ``every_s`` for a
    ``ConstantDelaySchedule``."""

    minute: int = 0
    hour: int = 0
    dom: int = 0
    month: int = 0
    dow: int = 0
    every_s: int = 0
    location: str = ""  # TZ=/CRON_TZ= prefix: the zone the fields are read in

    def _day_matches(self, moment: _dt.datetime) -> bool:
        dom_match = (1 << moment.day) & self.dom != 0
        dow_match = (1 << ((moment.weekday() + 1) % 7)) & self.dow != 0
        if self.dom & _STAR or self.dow & _STAR:
            return dom_match and dow_match
        return dom_match or dow_match

    def next(self, moment: _dt.datetime) -> _dt.datetime | None:
        """The next activation strictly after ``moment`` (module docstring), in its zone."""
        assert moment.tzinfo is not None, "a schedule runs in a time zone"
        if self.every_s:
            return moment.replace(microsecond=0) + _dt.timedelta(seconds=self.every_s)
        if self.location:  # robfig: t.In(s.Location), the answer back in t's location
            original = moment.tzinfo
            found = Schedule(self.minute, self.hour, self.dom, self.month, self.dow).next(moment.astimezone(zone(self.location)))
            return found.astimezone(original) if found is not None else None
        zone_ = moment.tzinfo
        t = moment.replace(microsecond=0) + _dt.timedelta(seconds=1)
        added = False
        year_limit = t.year + 5
        while True:  # WRAP
            if t.year > year_limit:
                return None
            wrapped = False
            while (1 << t.month) & self.month == 0:
                if not added:
                    added = True
                    t = t.replace(day=1, hour=0, minute=0, second=0)
                t = (t.replace(day=1) + _dt.timedelta(days=32)).replace(day=1)
                t = t.replace(tzinfo=zone_)
                if t.month == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not self._day_matches(t):
                if not added:
                    added = True
                    t = t.replace(hour=0, minute=0, second=0)
                t = _local_add(t, days=1)
                if t.day == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while (1 << t.hour) & self.hour == 0:
                if not added:
                    added = True
                    t = t.replace(minute=0, second=0)
                t = _local_add(t, hours=1)
                if t.hour == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while (1 << t.minute) & self.minute == 0:
                if not added:
                    added = True
                    t = t.replace(second=0)
                t = _local_add(t, minutes=1)
                if t.minute == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while t.second != 0:  # standard schedules fire at second 0
                if not added:
                    added = True
                t = _local_add(t, seconds=1)
                if t.second == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            return t


def _local_add(moment: _dt.datetime, **delta: int) -> _dt.datetime:
    """Wall-clock arithmetic in the moment's zone (Go's ``AddDate``/``Add`` near enough:
    through UTC for fixed offsets, local fields otherwise)."""
    return (moment.replace(tzinfo=None) + _dt.timedelta(**delta)).replace(tzinfo=moment.tzinfo)


def parse_schedule(text: str) -> Schedule:
    """``cron.ParseStandard`` (module docstring); raises :class:`ScheduleError`."""
    spec = text.strip()
    if not spec:
        raise ScheduleError("empty spec string")
    if spec.startswith("TZ=") or spec.startswith("CRON_TZ="):
        zone, _, rest = spec.partition(" ")
        location = zone.partition("=")[2]
        if not valid_time_zone(location):
            raise ScheduleError(f"provided bad location {location}: unknown time zone {location}")
        parsed = parse_schedule(rest)
        return parsed if parsed.every_s else Schedule(parsed.minute, parsed.hour, parsed.dom, parsed.month, parsed.dow, 0, location)
    if spec.startswith("@"):
        if spec.startswith("@every "):
            seconds = int(_parse_duration(spec[len("@every "):].strip()))
            return Schedule(every_s=max(1, seconds))
        if spec not in _DESCRIPTORS:
            raise ScheduleError(f"unrecognized descriptor: {spec}")
        spec = _DESCRIPTORS[spec]
    fields = spec.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    return Schedule(
        minute=_field(fields[0], _MINUTE), hour=_field(fields[1], _HOUR), dom=_field(fields[2], _DOM),
        month=_field(fields[3], _MONTH), dow=_field(fields[4], _DOW),
    )


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
        return _dt.timezone.utc
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


__all__ += ["zone"]
