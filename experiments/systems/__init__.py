"""The simulated systems under test (real mode's ``real-etcd`` is in ``real/``); the
registry (registry.py) maps the names experiment files use to these classes."""

from chaoskube.experiments.systems.base import System
from chaoskube.experiments.systems.etcd import EtcdSystem
from chaoskube.experiments.systems.hypothesis import HypothesisSystem
from chaoskube.experiments.systems.kubernetes import KubernetesSystem
from chaoskube.experiments.systems.mesh import MeshSystem

__all__ = ["EtcdSystem", "HypothesisSystem", "KubernetesSystem", "MeshSystem", "System"]
