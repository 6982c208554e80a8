"""Fuzz harness of the CLI (see harness.py); run by tests/fuzz/test_fuzz.py and benchmarks/fuzz.py."""
