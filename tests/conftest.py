"""Shared test configuration."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# CI clones the repository with ../shared beside it; so does every developer checkout.
SHARED = ROOT.parent / "shared"
PEERS = SHARED / "peers"
