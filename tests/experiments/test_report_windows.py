"""Issue 32: a Service's outage windows in report.md and report.html -- the first five, the
longest always (the row names its length), and "… and N more" for the rest."""

from __future__ import annotations

import re

from chaoskube.experiments.answers import Answers, ServiceAnswer, WorkloadAnswer, markdown_lines, shown_windows
from chaoskube.experiments.report_html import _answers


def many_windows():
    # 23 one-second outages, the 18th (from t=57.9) lasting 4 s: the longest, not among the first five.
    windows = [(10.0 + 3 * index, 11.0 + 3 * index, 2) for index in range(23)]
    windows[17] = (57.9, 61.9, 9)
    return windows


def test_shown_windows_keeps_the_longest_and_counts_the_rest():
    windows = many_windows()
    shown, more = shown_windows(windows)
    assert shown == [*windows[:4], windows[17]] and more == 18
    assert shown_windows(windows[:5]) == (windows[:5], 0)
    # The longest among the first five: the first five, nothing added.
    assert shown_windows([(0.0, 9.0, 1), *windows]) == ([(0.0, 9.0, 1), *windows[:4]], 19)
    # A window still open at the end (None) counts as zero long, as longest_s measures it.
    open_ended = [*windows[:6], (100.0, None, 3)]
    assert shown_windows(open_ended) == (open_ended[:5], 2)


def test_report_md_and_html_name_the_longest_outage_and_how_many_more():
    service = ServiceAnswer("shop/web", requests=1000, ok=900, windows=many_windows())
    assert service.longest_s == 4.0
    answers = Answers(services=[service], end_s=120.0)
    row = next(line for line in markdown_lines(answers) if line.startswith("| shop/web "))
    assert "| 4.0 s |" in row and "57.9 s – 61.9 s (9 failed)" in row and row.endswith("; … and 18 more |")
    assert row.count(" failed)") == 5
    html = _answers(None, [], answers)
    cell = re.search(r'<tr data-service="shop/web">(.*?)</tr>', html).group(1)
    assert "57.9 s – 61.9 s (9 failed)" in cell and "… and 18 more" in cell and cell.count(" failed)") == 5


def test_a_workloads_windows_are_bounded_the_same_way():
    workload = WorkloadAnswer("Deployment", "shop/web", desired=3, converged_at=5.0, windows=[(float(i), float(i) + 0.5, 1) for i in range(8)])
    row = next(line for line in markdown_lines(Answers(workloads=[workload], end_s=60.0)) if line.startswith("| Deployment shop/web "))
    assert row.count("(lowest 1)") == 5 and "… and 3 more" in row
