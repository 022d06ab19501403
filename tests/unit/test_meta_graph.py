"""The Graph API half the Meta providers share, without a network: the send's time budget, the usage headers, the
rate a network reports, and Threads' way of counting text."""

import json
import time
from datetime import timedelta

import httpx
import pytest

from models.channels.limits import limits_for, parse_network_rate, validate_limits
from models.channels.providers.meta_graph import Budget, regain_access_after
from models.channels.providers.text_length import emoji_as_utf8
from models.core.errors import InvalidInput


def test_a_real_sleep_counts_once_against_the_budget_and_a_fake_one_counts_what_it_was_asked():
    real = Budget(10.0)
    real.sleep(type("Context", (), {"sleep": staticmethod(time.sleep)})(), 0.05)
    assert 9.9 < real.left() <= 9.95
    fake = Budget(10.0)
    fake.sleep(type("Context", (), {"sleep": staticmethod(lambda seconds: None)})(), 4.0)
    assert 5.9 < fake.left() <= 6.0


def test_the_longest_estimated_time_to_regain_access_in_either_usage_header_is_the_wait():
    business = {"1": [{"type": "pages", "estimated_time_to_regain_access": 2}],
                "2": [{"type": "instagram", "estimated_time_to_regain_access": 9}]}
    answer = httpx.Response(400, headers={"X-Business-Use-Case-Usage": json.dumps(business),
                                          "X-App-Usage": json.dumps({"call_count": 100})})
    assert regain_access_after(answer) == 9 * 60
    assert regain_access_after(httpx.Response(400, headers={"X-App-Usage": "not json"})) is None
    zero = {"1": [{"estimated_time_to_regain_access": 0}]}
    assert regain_access_after(httpx.Response(400, headers={"X-Business-Use-Case-Usage": json.dumps(zero)})) is None


def test_a_network_reported_rate_is_n_per_seconds_and_a_channel_rate_still_wins():
    assert parse_network_rate("100/86400s").per == timedelta(days=1)
    assert str(limits_for("instagram", {"network_rate": "25/86400s"}).rate) == "25/24h"
    assert str(limits_for("instagram", {"network_rate": "25/86400s", "rate": "1/min"}).rate) == "1/min"
    assert str(limits_for("instagram", {"network_rate": "garbled"}).rate) == "100/24h"
    assert str(limits_for("threads", {}).rate) == "250/24h"
    for bad in ("100/day", "0/86400s", "5/99999999s"):
        with pytest.raises(InvalidInput):
            validate_limits("instagram", {"network_rate": bad})


def test_threads_counts_code_points_and_each_emoji_as_its_utf8_bytes():
    assert emoji_as_utf8("Bread") == 5
    assert emoji_as_utf8("👍") == 4 and emoji_as_utf8("👍🏽") == 8  # a skin tone's modifier adds its 4 bytes
    assert emoji_as_utf8("café 🥐") == 5 + 4
