"""The client side of the API, as ``k8s.io/client-go``: a retrying API client, shared
informers, client-go's rate-limited work queue and leader election over a Lease. Imports
``chaoskube.api`` and ``chaoskube.sim``, never ``chaoskube.apiserver``."""


from chaoskube.client.client import (
    ApiClient,
    ApiError,
    ApiLeaseLock,
    WatchBroken,
    WatchEnded,
    WatchStream,
)
from chaoskube.client.informer import (
    DeletedFinalStateUnknown,
    Indexer,
    Reflector,
    SharedInformer,
    SharedInformerFactory,
)
from chaoskube.client.leaderelection import (
    Decision,
    FakeLeaseLock,
    LeaderElectionConfig,
    LeaderElector,
    LeaseLock,
    LeaseRecord,
    LockError,
    Observation,
    decide,
    lease_server,
)
from chaoskube.client.record import EventRecorder, object_reference
from chaoskube.client.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    Queue,
    QueueEmpty,
    QueueFull,
    QueueShutDown,
    RateLimitingQueue,
    default_controller_rate_limiter,
)

__all__ = [
    "ApiClient",
    "ApiError",
    "ApiLeaseLock",
    "BucketRateLimiter",
    "Decision",
    "DeletedFinalStateUnknown",
    "EventRecorder",
    "FakeLeaseLock",
    "Indexer",
    "ItemExponentialFailureRateLimiter",
    "LeaderElectionConfig",
    "LeaderElector",
    "LeaseLock",
    "LeaseRecord",
    "LockError",
    "MaxOfRateLimiter",
    "Observation",
    "Queue",
    "QueueEmpty",
    "QueueFull",
    "QueueShutDown",
    "RateLimitingQueue",
    "Reflector",
    "SharedInformer",
    "SharedInformerFactory",
    "WatchBroken",
    "WatchEnded",
    "WatchStream",
    "decide",
    "default_controller_rate_limiter",
    "lease_server",
    "object_reference",
]
