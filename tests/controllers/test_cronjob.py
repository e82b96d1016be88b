"""The CronJob controller's schedule arithmetic, as upstream tests it.

Tables transcribed from ``pkg/controller/cronjob/utils_test.go`` (TestMostRecentScheduleTime,
TestNextScheduleTimeDuration; every row), with robfig/cron's ParseStandard as
:func:`chaoskube.api.cron.parse_schedule`."""

from __future__ import annotations

import datetime as dt

import pytest

from chaoskube.api.cron import ScheduleError, parse_schedule
from chaoskube.controllers.cronjob import FEW_MISSED, MANY_MISSED, NONE_MISSED, most_recent_schedule_time, next_schedule_time_duration

TOP = dt.datetime(2016, 5, 19, 10, 0, 0, tzinfo=dt.UTC)  # topOfTheHour(): 2016-05-19T10:00:00Z


def after(**delta: float) -> dt.datetime:
    """deltaTimeAfterTopOfTheHour"""
    return TOP + dt.timedelta(**delta)


# (name, creation, lastScheduleTime, schedule, startingDeadlineSeconds, includeSDS, now,
#  expected earliest, expected most recent, expected missed, want error)
MOST_RECENT_SCHEDULE_TIME = [
    ("now before next schedule", TOP, None, "0 * * * *", None, False, after(seconds=30), TOP, None, NONE_MISSED, False),
    ("now just after next schedule", TOP, None, "0 * * * *", None, False, after(minutes=61), TOP, after(minutes=60), NONE_MISSED, False),
    ("missed 5 schedules", after(seconds=10), None, "0 * * * *", None, False, after(minutes=301), after(seconds=10), after(minutes=300), FEW_MISSED, False),
    ("complex schedule", TOP, after(minutes=30), "30 6-16/4 * * 1-5", None, False, after(hours=24, minutes=31), after(minutes=30), after(hours=24, minutes=30), FEW_MISSED, False),
    ("another complex schedule", TOP, after(minutes=30), "30 10,11,12 * * 1-5", None, False, after(hours=30, minutes=30), after(minutes=30), None, FEW_MISSED, False),
    ("complex schedule with longer diff between executions", TOP, after(minutes=30), "30 6-16/4 * * 1-5", None, False, after(hours=96, minutes=31),
     after(minutes=30), after(hours=96, minutes=30), FEW_MISSED, False),
    ("complex schedule with shorter diff between executions", TOP, None, "30 6-16/4 * * 1-5", None, False, after(hours=24, minutes=31), TOP, after(hours=24, minutes=30), FEW_MISSED, False),
    ("@every schedule", after(minutes=-59), after(minutes=1), "@every 1h", 10, False, after(hours=7 * 24), after(minutes=1), after(hours=6 * 24 + 23, minutes=1), MANY_MISSED, False),
    ("rogue cronjob", after(seconds=10), None, "59 23 31 2 *", None, False, after(hours=1), None, None, None, True),
    ("earliestTime being CreationTimestamp and LastScheduleTime", TOP, TOP, "0 * * * *", None, False, after(seconds=30), TOP, None, NONE_MISSED, False),
    ("earliestTime being LastScheduleTime", TOP, after(minutes=30), "*/5 * * * *", None, False, after(minutes=31), after(minutes=30), None, NONE_MISSED, False),
    ("earliestTime being LastScheduleTime (within StartingDeadlineSeconds)", TOP, after(minutes=30), "*/5 * * * *", 60, False, after(minutes=31), after(minutes=30), None, NONE_MISSED, False),
    ("earliestTime being LastScheduleTime (outside StartingDeadlineSeconds)", TOP, after(minutes=30), "*/5 * * * *", 60, True, after(minutes=32), after(minutes=31), None, NONE_MISSED, False),
]


@pytest.mark.parametrize("row", MOST_RECENT_SCHEDULE_TIME, ids=[row[0] for row in MOST_RECENT_SCHEDULE_TIME])
def test_most_recent_schedule_time(row: tuple) -> None:
    _, creation, last, schedule, deadline, include, now, earliest, recent, missed, want_error = row
    got_earliest, got_recent, got_missed, error = most_recent_schedule_time(creation, last, deadline, now, parse_schedule(schedule), include)
    if want_error:
        assert error is not None
        return
    assert error is None
    assert got_earliest == earliest
    assert got_recent == recent
    assert got_missed == missed


# (name, creation, lastScheduleTime, schedule, now, expected duration in seconds incl. nextScheduleDelta 100 ms)
NEXT_SCHEDULE_TIME_DURATION = [
    ("complex schedule skipping weekend", TOP, after(minutes=30), "30 6-16/4 * * 1-5", after(hours=24, minutes=31), 3 * 3600 + 59 * 60 + 0.1),
    ("another complex schedule skipping weekend", TOP, after(minutes=30), "30 10,11,12 * * 1-5", after(hours=30, minutes=30), 66 * 3600 + 0.1),
    ("once a week cronjob, missed two runs", TOP, after(hours=2), "0 12 * * 4", after(hours=19 * 24 + 1, minutes=30), 48 * 3600 + 30 * 60 + 0.1),
    ("no previous run of a cronjob", TOP, None, "0 12 * * 5", after(hours=6), 20 * 3600 + 0.1),
]


@pytest.mark.parametrize("row", NEXT_SCHEDULE_TIME_DURATION, ids=[row[0] for row in NEXT_SCHEDULE_TIME_DURATION])
def test_next_schedule_time_duration(row: tuple) -> None:
    _, creation, last, schedule, now, expected = row
    got = next_schedule_time_duration(creation, last, now, parse_schedule(schedule))
    assert got >= 0
    assert got == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(("text", "after_", "expected"), [
    ("*/2 * * * *", dt.datetime(2026, 1, 1, 0, 0, 30, tzinfo=dt.UTC), dt.datetime(2026, 1, 1, 0, 2, tzinfo=dt.UTC)),
    ("@hourly", dt.datetime(2026, 1, 1, 0, 0, 0, tzinfo=dt.UTC), dt.datetime(2026, 1, 1, 1, 0, tzinfo=dt.UTC)),
    ("0 0 * * SUN", dt.datetime(2026, 1, 1, tzinfo=dt.UTC), dt.datetime(2026, 1, 4, tzinfo=dt.UTC)),  # 2026-01-01 is a Thursday
    ("TZ=Europe/Paris 0 9 * * *", dt.datetime(2026, 1, 1, 9, 0, tzinfo=dt.UTC), dt.datetime(2026, 1, 2, 8, 0, tzinfo=dt.UTC)),
])
def test_schedules_as_robfig_parses_them(text: str, after_: dt.datetime, expected: dt.datetime) -> None:
    assert parse_schedule(text).next(after_) == expected


@pytest.mark.parametrize("text", ["", "* * * *", "60 * * * *", "* * * * * *", "@every", "@yearly-ish", "*/0 * * * *"])
def test_bad_schedules_are_refused(text: str) -> None:
    with pytest.raises(ScheduleError):
        parse_schedule(text)


def test_a_job_at_a_repeated_hour_runs_twice_across_the_fall_back() -> None:
    """America/New_York, 2012-11-04: 01:00 happens at -0400 and again at -0500; robfig's
    ``Next`` fires at both, and ``mostRecentScheduleTime`` must subtract and compare the two
    on the absolute clock (by wall clock they are equal, and the schedule looked broken)."""
    from zoneinfo import ZoneInfo

    new_york = ZoneInfo("America/New_York")
    creation = dt.datetime(2012, 11, 4, 4, 30, tzinfo=dt.UTC).astimezone(new_york)  # 00:30 EDT
    now = dt.datetime(2012, 11, 4, 6, 30, tzinfo=dt.UTC).astimezone(new_york)  # 01:30 EST
    earliest, most_recent, missed, error = most_recent_schedule_time(creation, None, None, now, parse_schedule("0 1 * * *"), False)
    assert error is None
    assert most_recent is not None and most_recent.astimezone(dt.UTC) == dt.datetime(2012, 11, 4, 6, 0, tzinfo=dt.UTC)  # 01:00 EST
    assert missed == FEW_MISSED
    wait = next_schedule_time_duration(creation, most_recent, now, parse_schedule("0 1 * * *"))
    assert wait == pytest.approx(24 * 3600 - 30 * 60 + 0.1)  # 01:00 EST on 11-05
