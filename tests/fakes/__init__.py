"""Loopback fakes of the networks Tickwork posts to: each speaks its network's documented API on a pytest-httpserver
and records what it received, so a test (or a benchmark) can assert on the exact requests."""
