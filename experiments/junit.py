"""``junit.xml``: a run's verdicts for CI test reporters (Jenkins, GitLab, GitHub actions).

The format is the JUnit XML that Jenkins' xunit plugin describes in ``junit-10.xsd``, the
schema pytest's ``--junitxml`` output conforms to (``src/_pytest/junitxml.py``): a
``<testsuites>`` root; **one** ``<testsuite>`` per run, named ``<experiment> seed <N>``;
**one** ``<testcase>`` per checker, ``classname="chaoskube.<experiment>"``,
``name="<checker>"``. A campaign (``chaoskube explore``) writes the same file with one
testsuite per run.

Verdicts, the JUnit-conventional way, judged against what the experiment expects of each
checker (so that a suite has no failure and no error exactly when the run met its expected
outcome: ``as_expected``, the exit code of ``chaoskube run`` and the campaign's totals all
agree with this file):

- a checker expected to pass that answers true, a checker expected to fail (a documented
  failure mode, ``expected.failing``) that answers false, and a checker that may fail
  (``expected.may_fail``) whatever it answers -> a testcase with no child: passed. An
  expected false verdict keeps its reason in ``<system-out>`` and the testcase property
  ``verdict`` (``false``), so the report still shows what the checker found;
- a checker expected to pass that answers false -> ``<failure
  type="chaoskube.verdict.false" message="<reason>">`` whose text is the shortest history
  slice the checker returned, one JSON object per line;
- a checker expected to fail that answers true -> ``<failure
  type="chaoskube.verdict.unexpected-pass">``: the documented failure mode did not show;
- with gallery variants patched in (``broken``), every false verdict is a failure (a
  *finding*: the checkers caught the broken component), whatever the experiment expects;
- unknown -> ``<error type="chaoskube.verdict.unknown" message="<reason>">``. The Ant JUnit
  schema calls an error "an unanticipated problem" (the check could not be carried out),
  as opposed to a failure (the test asserted and found the code wrong). ``<skipped>`` would
  be wrong: it is for tests deliberately not run, and every reporter counts it as not
  failing, while chaoskube never lets unknown pass (a crashing checker answers unknown,
  and the run is then not as expected);
- an inconclusive run (a fault skipped when it fell due: nothing was tested) gets one
  ``<testcase name="faults">`` with ``<error type="chaoskube.run.inconclusive">`` listing
  the skipped faults;
- an interrupted run, or one with no verdicts, gets one ``<testcase name="run">`` with an
  ``<error>``: a suite with no testcase would read as passed.

Testsuite properties: ``seed``, ``fingerprint`` (the journal sha256), ``experiment``,
``expected_outcome``, ``as_expected``, ``replay``, ``chaoskube_version``, ``mode``
(simulated or real-time). Attributes: ``tests``, ``failures``, ``errors``, ``skipped``
(always 0), ``time`` (wall seconds of the run). There is no ``timestamp`` or ``hostname``:
with them two runs of one seed would differ. A testcase's ``time`` is the checker's own
``check_seconds`` when it reports one, else 0. Characters XML 1.0 forbids are replaced by
U+FFFD, as pytest's ``bin_xml_escape`` does.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from chaoskube.experiments.result import write_atomic

MAX_EVIDENCE_LINES = 200

_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(value: Any) -> str:
    return _XML_FORBIDDEN.sub("\ufffd", str(value))


def _expected(name: str, expected: Mapping[str, Any]) -> str:
    if name in expected.get("failing", ()):
        return "fail"
    if name in expected.get("may_fail", ()):
        return "pass or fail"
    return "pass"


def _evidence_text(items: Sequence[Any]) -> str:
    lines = [item if isinstance(item, str) else orjson.dumps(item, default=repr, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode() for item in items[:MAX_EVIDENCE_LINES]]
    if len(items) > MAX_EVIDENCE_LINES:
        lines.append(f"... {len(items) - MAX_EVIDENCE_LINES} more items in result.json")
    return _clean("\n".join(lines))


def _properties(parent: ET.Element, values: Sequence[tuple[str, Any]]) -> None:
    properties = ET.SubElement(parent, "properties")
    for name, value in values:
        ET.SubElement(properties, "property", name=name, value=_clean(value))


def junit_testsuite(payload: Mapping[str, Any]) -> ET.Element:
    """One run's ``result.json`` payload as a ``<testsuite>``."""
    experiment = str(payload["experiment"])
    expected = payload.get("expected") or {}
    suite = ET.Element("testsuite", name=_clean(f"{experiment} seed {payload['seed']}"))
    _properties(
        suite,
        [
            ("seed", payload["seed"]),
            ("fingerprint", payload.get("journal_sha256", "")),
            ("experiment", experiment),
            ("expected_outcome", expected.get("outcome", "pass")),
            ("as_expected", str(bool(payload.get("as_expected"))).lower()),
            ("replay", payload.get("replay", "")),
            ("chaoskube_version", payload.get("chaoskube_version", "")),
            ("mode", payload.get("mode", "simulated")),
        ],
    )
    failures = errors = 0
    verdicts: Mapping[str, Mapping[str, Any]] = payload.get("verdicts") or {}
    broken = bool(payload.get("broken"))
    for name, verdict in verdicts.items():
        seconds = (verdict.get("details") or {}).get("check_seconds", 0.0)
        case = ET.SubElement(suite, "testcase", classname=_clean(f"chaoskube.{experiment}"), name=_clean(name), time=f"{float(seconds):.6f}")
        wanted = "pass" if broken else _expected(name, expected)
        _properties(case, [("expected", wanted), ("verdict", verdict["valid"])])
        if verdict["valid"] == "false" and wanted == "pass":
            failures += 1
            failure = ET.SubElement(case, "failure", type="chaoskube.verdict.false", message=_clean(verdict.get("reason", "")))
            failure.text = _evidence_text(verdict.get("evidence") or [])
        elif verdict["valid"] == "true" and wanted == "fail":
            failures += 1
            ET.SubElement(case, "failure", type="chaoskube.verdict.unexpected-pass", message=_clean(f"expected to fail ({expected.get('failure_mode') or 'the documented failure mode'}), but passed: {verdict.get('reason', '')}"))
        elif verdict["valid"] == "false":
            out = ET.SubElement(case, "system-out")
            out.text = _clean(f"false, as the experiment allows ({wanted}): {verdict.get('reason', '')}")
        elif verdict["valid"] != "true":
            errors += 1
            ET.SubElement(case, "error", type="chaoskube.verdict.unknown", message=_clean(verdict.get("reason", "")))
    skipped = payload.get("skipped_faults") or []
    if skipped and not payload.get("interrupted"):
        errors += 1
        case = ET.SubElement(suite, "testcase", classname=_clean(f"chaoskube.{experiment}"), name="faults", time="0.000000")
        error = ET.SubElement(case, "error", type="chaoskube.run.inconclusive", message=_clean(f"inconclusive: {len(skipped)} fault(s) of the schedule were not applied, so the run did not test what the experiment says"))
        error.text = _clean("\n".join(str(item) for item in skipped))
    if payload.get("interrupted") or not verdicts:
        errors += 1
        case = ET.SubElement(suite, "testcase", classname=_clean(f"chaoskube.{experiment}"), name="run", time="0.000000")
        why = "the run was interrupted before the checks" if payload.get("interrupted") else (payload.get("error") or "no checker ran")
        ET.SubElement(case, "error", type="chaoskube.run.incomplete", message=_clean(why))
    suite.set("tests", str(len(suite.findall("testcase"))))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", "0")
    suite.set("time", f"{float(payload.get('wall_seconds', 0.0)):.3f}")
    return suite


def render_junit(payloads: Sequence[Mapping[str, Any]]) -> bytes:
    """A ``<testsuites>`` document with one testsuite per payload, in the given order."""
    root = ET.Element("testsuites", name="chaoskube")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    wall = 0.0
    for payload in payloads:
        suite = junit_testsuite(payload)
        root.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
        wall += float(suite.get("time", "0"))
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("skipped", "0")
    root.set("time", f"{wall:.3f}")
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def write_junit(path: str | Path, payloads: Sequence[Mapping[str, Any]]) -> Path:
    path = Path(path)
    write_atomic(path, render_junit(payloads))
    return path
