"""Fixtures the pure unit tests share."""

import time

import pytest


@pytest.fixture
def host_zone_kolkata(monkeypatch):
    """The host's own zone set to Asia/Kolkata (+05:30) for one test, then put back.

    The boxes the suite runs on are on UTC, where an instant read in the host's zone and one read in UTC look alike;
    a host five and a half hours off tells them apart.
    """
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
