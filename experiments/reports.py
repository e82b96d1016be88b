"""A run directory's records and reports, written from a :class:`~result.RunResult`.

A run directory holds ``journal.jsonl`` (written as the run goes: an interrupted run keeps
it), ``run.log`` (human-readable, stamped with virtual time; result.py), ``result.json``,
``report.md``, ``report.html`` (self-contained, with a timeline: report_html.py) and
``junit.xml`` (one testcase per checker: junit.py). :func:`write_result` writes the last
four for every kind of run (real mode adds its comparison to ``report.md``:
real/runner.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from chaoskube import gallery
from chaoskube.experiments.junit import write_junit
from chaoskube.experiments.report_html import write_html
from chaoskube.experiments.result import RunResult, write_atomic


def write_result(result: RunResult, events: Sequence[dict[str, Any]] | None = None) -> None:
    """result.json and report.md first (the record), then report.html and junit.xml.
    ``events``: the journal's events if still in memory; else the journal file is read."""
    from chaoskube.experiments.answers import answer
    from chaoskube.experiments.report_html import read_timeline_events

    if events is None:
        events = read_timeline_events(result.out_dir / "journal.jsonl")
    answers = answer(events, result.simulated_seconds, skipped=result.skipped_unsupported)
    payload = result.to_json()
    payload["answers"] = None if answers.empty else answers.to_json()
    write_atomic(result.out_dir / "result.json", orjson.dumps(payload, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    write_atomic(result.out_dir / "report.md", render_markdown(result, answers))
    write_reports(result, events, answers)


def write_reports(result: RunResult, events: Sequence[dict[str, Any]] | None = None, answers: Any = None) -> None:
    """report.html and junit.xml of a run whose result is known (``answers``: the run's,
    if computed already)."""
    write_html(result, events, answers)
    write_junit(result.out_dir / "junit.xml", [result.to_json()])


def outcome_words(result: RunResult) -> str:
    """The outcome as the terminal and report.md say it."""
    return {"as-expected": "as expected", "not-as-expected": "NOT as expected", "inconclusive": "INCONCLUSIVE", "interrupted": "interrupted"}[result.outcome]


def render_markdown(result: RunResult, answers: Any = None) -> str:
    """report.md: the run's facts, then (for a cluster run) what its workloads and
    Services saw (:mod:`chaoskube.experiments.answers`), then the verdicts and the rest."""
    from chaoskube.experiments.answers import markdown_lines

    experiment = result.experiment
    lines = [
        f"# {experiment.name} — seed {result.seed}",
        "",
        f"**{experiment.title}**",
        "",
        experiment.description.strip(),
        "",
        f"Source: {experiment.source}",
        "",
        f"- Outcome: **{outcome_words(result)}** "
        f"(expected: {experiment.expected.outcome}{' — ' + experiment.expected.failure_mode if experiment.expected.failure_mode else ''})",
        *([f"- **Inconclusive**: {len(result.skipped_faults)} fault(s) were not applied when they fell due, so the run did not test what the experiment says (see Faults)"] if result.inconclusive else []),
        *([f"- Left out (the changed faults left them nothing to judge): " + "; ".join(f"`{name}` ({reason})" for name, reason in result.dropped_checkers.items())] if result.dropped_checkers else []),
        *([f"- Broken on purpose (gallery variants patched in, chaoskube/gallery.py): {', '.join(f'`{name}`' for name in experiment.broken)}"
           + (f"; {reach}" if (reach := gallery.reach(result.metrics.get("broken_calls"))) else "")] if experiment.broken else []),
        f"- Journal sha256: `{result.journal_sha256}`",
        f"- Simulated {round(result.simulated_seconds, 6):.1f} s in {round(result.wall_seconds, 3):.2f} s of wall time",  # as result.json rounds them
        f"- Replay: `{result.replay}`" if result.replay else "- Replay: none (a plain `chaoskube serve` has no experiment to run again; see Live run)",
        *[f"- Note: {note}" for note in experiment.notes],
        "",
        *(markdown_lines(answers) if answers is not None else []),
        "## Verdicts",
        "",
        "| checker | verdict | reason |",
        "|---|---|---|",
    ]
    for name, verdict in result.verdicts.items():
        lines.append(f"| {name} | {verdict.label} | {verdict.reason.replace('|', '/')} |")
    for name, verdict in result.verdicts.items():
        if verdict.valid is False and verdict.evidence:
            lines += ["", f"### {name}: the shortest history that shows it", "", "```"]
            lines += [orjson.dumps(item, default=repr, option=orjson.OPT_SORT_KEYS).decode() if not isinstance(item, str) else item for item in verdict.to_json()["evidence"]]
            lines.append("```")
    lines += ["", "## Faults", ""]
    if not result.faults:
        lines.append("None.")
    for fault in result.faults:
        healed = f"{fault['healed_at']:.3f}" if fault["healed_at"] is not None else "never"
        lines.append(f"- #{fault['id']} `{fault['kind']}` on {', '.join(fault['targets'])} ({fault['target']}): applied at {fault['applied_at']:.3f} s, healed at {healed} s")
    for skipped in result.skipped_faults:
        lines.append(f"- skipped (not applied): {skipped}")
    for clipped in result.clipped_faults():
        lines.append(f"- clipped: {clipped}")
    lines += ["", "## Phases", ""]
    lines += [f"- {name}: {when:.3f} s" for name, when in result.phases.items()]
    if result.metrics:
        lines += ["", "## Metrics", ""]
        lines += [f"- {name}: {value}" for name, value in sorted(result.metrics.items())]
    return "\n".join(lines) + "\n"
