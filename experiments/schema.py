"""A JSON Schema for experiment files, generated from the model.

:func:`experiment_schema` builds it from the msgspec types the loader validates with
(model.py, probes.py, faults/nemesis.py, each system's ``Cluster`` and ``Workload``), so it
cannot drift from them: the experiment's own fields; per system (``if system is X then
cluster and workload are X's``), the cluster and workload options; the known systems,
fault kinds, selectors, nemesis kinds and gallery variants as enumerations; checker
names per system. It is shipped as ``experiments/schema/experiment.schema.json``
(``chaoskube schema`` prints it; ``tests/experiments/test_schema.py`` checks the shipped
file is the generated one and that every catalogue experiment validates against it), for
editors: a YAML file that starts with

    # yaml-language-server: $schema=<path or URL of experiment.schema.json>

gets completion and checks in editors that use the YAML language server (VS Code's YAML
extension, Neovim, Helix...).

The schema checks the shape; ``chaoskube validate`` checks everything else a run needs
(targets resolved against the processes the experiment builds, parameters against their
kinds, durations against the phases, manifests loaded): a file the schema accepts may
still be refused by ``validate``, never the other way round.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import orjson

from chaoskube import __version__, gallery
from chaoskube.experiments.model import Experiment
from chaoskube.faults.kinds import KINDS
from chaoskube.faults.grudge import PARTITION_SPECS
from chaoskube.faults.nemesis import NEMESIS_KINDS, NODE_SPECS, PACKAGES, PACKET_BEHAVIORS
from chaoskube.faults.targets import SELECTORS
from chaoskube.sim.buggify import POINTS as BUGGIFY_POINTS
from chaoskube.faults.triggers import EVENTS

SHIPPED = Path(__file__).with_name("schema") / "experiment.schema.json"
SCHEMA_ID = "https://chaoskube.invalid/schema/experiment.schema.json"  # a name, not a place: the file is shipped


def experiment_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of an experiment file (module docstring)."""
    from chaoskube.experiments.registry import SYSTEMS

    systems = [SYSTEMS[name] for name in sorted(SYSTEMS)]
    types: list[Any] = [Experiment]
    names: list[tuple[str, Any, Any]] = []
    for system in systems:
        cluster = system.Cluster if isinstance(system.Cluster, type) and issubclass(system.Cluster, msgspec.Struct) else None
        if system.name == "hypothesis":  # a ClusterSpec, or empty for the machine's own
            from chaoskube.cluster import ClusterSpec

            cluster = ClusterSpec
        workload = system.Workload if issubclass(system.Workload, msgspec.Struct) else None
        names.append((system.name, cluster, workload))
        types += [item for item in (cluster, workload) if item is not None]
    refs, definitions = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
    definitions = {name: _clean(value) for name, value in definitions.items()}
    experiment = definitions["Experiment"]
    experiment["properties"].pop("path", None)  # set by the loader, not written by users
    properties = experiment["properties"]
    properties["system"] = {"enum": [system.name for system in systems], "description": "The system under test: it builds the processes and owns the checkers."}
    properties["broken"]["items"] = {"enum": sorted(gallery.VARIANTS), "description": "A gallery variant (chaoskube/gallery.py): `chaoskube list --broken`."}
    properties["seed"] = {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 2**64 - 1}, {"type": "null"}], "default": None}
    properties["boot_seed"] = {"type": "integer", "minimum": 0, "maximum": 2**64 - 1, "default": 0, "description": "The seed of the boot (start-up to the steady state); the run seed drives the rest (docs/campaigns.md)."}
    properties["name"] = {"type": "string", "pattern": r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$", "description": "Names the run directory (runs/NAME-seedN)."}
    entry = definitions["FaultEntry"]["properties"]
    entry["kind"] = {"enum": sorted(KINDS), "description": "A fault kind of faults/kinds.py."}
    entry["target"] = {"type": "string", "pattern": "^(" + "|".join(SELECTORS) + "|event):.+$", "description": "SELECTOR:ARGUMENT (name:, role:, random:, leader:, follower:, zone:, workload:, Jepsen's node specs minority:, majority:, minority-third:, subset:, primaries:; event:process or event:FIELD with `when`)."}
    definitions["When"]["properties"]["type"] = {"enum": sorted(EVENTS), "description": "A journal event type (faults/triggers.py EVENTS)."}
    definitions["NemesisSpec"]["properties"]["kinds"]["items"] = {"enum": sorted(NEMESIS_KINDS)}
    nemesis = definitions["NemesisSpec"]["properties"]  # issue 16: Jepsen's packages
    nemesis["faults"]["items"] = {"enum": list(PACKAGES)}
    nemesis["partition_targets"]["items"] = {"enum": list(PARTITION_SPECS)}
    for field in ("kill_targets", "pause_targets", "clock_targets", "packet_targets"):
        nemesis[field]["items"] = {"enum": list(NODE_SPECS)}
    nemesis["packet_behaviors"]["items"] = {"enum": list(PACKET_BEHAVIORS)}
    buggify = definitions["BuggifySpec"]["properties"]
    buggify["points"]["anyOf"][0]["items"] = {"enum": sorted(BUGGIFY_POINTS), "description": "A buggify point (chaoskube/sim/buggify.py)."}
    buggify["points"]["anyOf"][0]["minItems"] = 1
    for name in ("live_probability", "fire_probability"):
        buggify[name].update({"minimum": 0, "maximum": 1})
    conditions = []
    for system, (name, cluster, workload) in zip(systems, names, strict=True):
        then: dict[str, Any] = {"properties": {"checkers": {"items": {"anyOf": [{"enum": sorted(system.checkers())}, {"type": "string", "pattern": "^probe:"}]}}}}
        if cluster is not None:
            then["properties"]["cluster"] = {"$ref": f"#/$defs/{cluster.__name__}"}
        if workload is not None:
            then["properties"]["workload"] = {"$ref": f"#/$defs/{workload.__name__}"}
        if not system.PROBES:
            then["properties"]["probes"] = {"maxItems": 0}
            then["properties"]["steady_state"] = {"type": "null"}
        conditions.append({"if": {"properties": {"system": {"const": name}}, "required": ["system"]}, "then": then})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "chaoskube experiment file",
        "description": f"An experiment for `chaoskube run FILE` (chaoskube {_minor(__version__)}). Generated from the model by experiments/schema.py; `chaoskube validate FILE` checks the rest.",
        "$ref": "#/$defs/Experiment",
        "allOf": conditions,
        "$defs": dict(sorted(definitions.items())),
    }


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _clean(value: Any, names: bool = False) -> Any:
    """Drop msgspec's ``title`` keywords (they repeat the definition names); ``names``:
    ``value`` maps property names to schemas (a property may be called ``title``)."""
    if isinstance(value, dict):
        if names:
            return {key: _clean(item) for key, item in value.items()}
        return {key: _clean(item, names=key in ("properties", "$defs")) for key, item in value.items() if not (key == "title" and isinstance(item, str))}
    if isinstance(value, list):
        return [_clean(item) for item in value]
    return value


def schema_bytes() -> bytes:
    """The schema as the shipped file holds it: sorted keys, two-space indent."""
    return orjson.dumps(experiment_schema(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
