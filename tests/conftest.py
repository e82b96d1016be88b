"""Shared test configuration."""

from pathlib import Path

from loguru import logger

# The test session is an application: drop loguru's default stderr handler, so runs log
# only to their run.log (tests that need log records add their own sink).
logger.remove()

ROOT = Path(__file__).resolve().parents[1]
# CI clones the repository with ../shared beside it; so does every developer checkout.
SHARED = ROOT.parent / "shared"
PEERS = SHARED / "peers"
