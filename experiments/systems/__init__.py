"""Systems under test, by the name experiment files use in their ``system`` field."""

from experiments.systems.base import System
from experiments.systems.etcd import EtcdSystem
from experiments.systems.mesh import MeshSystem

SYSTEMS: dict[str, type[System]] = {
    EtcdSystem.name: EtcdSystem,
    MeshSystem.name: MeshSystem,
}

__all__ = ["SYSTEMS", "EtcdSystem", "MeshSystem", "System"]
