"""chaoskube: chaos and fault-injection testing of the Kubernetes control plane, on a
deterministic simulation."""

from loguru import logger

__version__ = "0.1.0"

# A library stays quiet unless the application asks (loguru's advice for libraries);
# the experiment runner enables it into the run directory's run.log.
logger.disable("chaoskube")
