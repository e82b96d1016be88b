"""Systems under test, by the name experiment files use in their ``system`` field."""

from experiments.systems.base import System
from experiments.systems.etcd import EtcdSystem
from experiments.systems.hypothesis import HypothesisSystem
from experiments.systems.kubernetes import KubernetesSystem
from experiments.systems.mesh import MeshSystem
from experiments.systems.real_etcd import RealEtcdSystem

SYSTEMS: dict[str, type[System]] = {
    EtcdSystem.name: EtcdSystem,
    HypothesisSystem.name: HypothesisSystem,
    KubernetesSystem.name: KubernetesSystem,
    MeshSystem.name: MeshSystem,
    RealEtcdSystem.name: RealEtcdSystem,
}

__all__ = ["SYSTEMS", "EtcdSystem", "HypothesisSystem", "KubernetesSystem", "MeshSystem", "RealEtcdSystem", "System"]
