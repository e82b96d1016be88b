"""The findings line says which checker caught a variant: its own, or others (issue 16's
swarm hunts caught variants by checkers other than the one the gallery names)."""

from chaoskube.experiments.campaign import _findings_lines
from chaoskube.experiments.cli import _own_checker_line


def _item(own_seeds, failed_on):
    return {"experiment": "swarm", "broken": ["v"], "runs": 5, "runs_with_findings": len({s for seeds in failed_on.values() for s in seeds}),
            "caught_by": ["api-watch"], "caught_by_failed_on": own_seeds, "failed_on": failed_on, "first": None}


def test_the_variants_own_checker_failing_is_named_with_its_seeds():
    item = _item([2, 4], {"api-watch": [2, 4]})
    assert _own_checker_line(item) == "the variant's checker (api-watch) failed on seeds: 2, 4"
    assert "the variant's checker (api-watch) failed on seeds: 2, 4" in _findings_lines({"findings": [item]})[0]


def test_a_variant_caught_only_by_other_checkers_says_so_and_lists_them():
    item = _item([], {"garbage-collection": [15]})
    assert _own_checker_line(item) == "the variant's checker (api-watch) failed on no seed; other checkers caught it:"
    lines = _findings_lines({"findings": [item]})
    assert lines[0].endswith("failed on no seed; other checkers caught it:") and lines[1] == "  - garbage-collection failed on seeds 15"


def test_a_variant_no_checker_noticed_says_only_that():
    item = _item([], {})
    assert _own_checker_line(item) == "the variant's checker (api-watch) failed on no seed"
    assert _findings_lines({"findings": [item]}) == [_findings_lines({"findings": [item]})[0]]
