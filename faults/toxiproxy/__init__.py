"""A Toxiproxy-compatible server on Trio: the Toxiproxy 2.x HTTP API, TCP proxies,
the standard toxics, and the ``chaoskube_block_from`` extension (docs/toxiproxy.md)."""

from chaoskube.faults.toxiproxy.server import VERSION, ToxiproxyApi, ToxiproxyServer, run_forever, serve
from chaoskube.faults.toxiproxy.toxics import BLOCK_FROM, TOXIC_TYPES

__all__ = [
    "BLOCK_FROM",
    "TOXIC_TYPES",
    "VERSION",
    "ToxiproxyApi",
    "ToxiproxyServer",
    "run_forever",
    "serve",
]
