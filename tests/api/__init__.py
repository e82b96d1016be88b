"""Tests of chaoskube.api: object types and manifest loading."""
