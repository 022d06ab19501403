"""The policy: defaults, overrides in seconds, and settings it refuses."""

from datetime import timedelta

import pytest

from models.core.policy import Policy


def test_overrides_take_seconds_for_durations_and_whole_numbers_for_counts():
    policy = Policy().with_overrides({"recovery_timeout": 900, "dispatch_chunk": 20,
                                      "max_lateness": {"send_sms": 120}})
    assert policy.recovery_timeout == timedelta(minutes=15) and policy.dispatch_chunk == 20
    assert policy.lateness_allowed("send_sms") == timedelta(minutes=2)
    assert policy.lateness_allowed("publish_post") == policy.default_max_lateness


@pytest.mark.parametrize("overrides, fragment", [
    ({"provider_timeout": 300}, "timeouts must be ordered"),
    ({"dispatch_chunk": 0}, "dispatch_chunk is from 1 to 1000"),
    ({"dispatch_chunk": 5000}, "dispatch_chunk is from 1 to 1000"),
    ({"dispatch_chunk": 2.5}, "dispatch_chunk is a whole number"),
    ({"max_attempts": True}, "max_attempts is a whole number"),
    ({"max_attempts": 6}, "max_attempts is from 1 to 5"),
    ({"max_attempts": 50}, "max_attempts is from 1 to 5"),
    ({"max_attempts": 0}, "max_attempts is from 1 to 5"),
    ({"tick_budget": -1}, "tick_budget is a number of seconds"),
    ({"tick_interval": 30}, "never runs faster than once a minute"),
    ({"tick_interval": 90}, "tick_interval is whole minutes"),
    ({"max_lateness": 60}, "max_lateness maps action types to seconds"),
    ({"max_lateness": {"send_sms": "1h"}}, "max_lateness['send_sms'] is a number of seconds"),
    ({"speed": "fast"}, "unknown policy setting 'speed'"),
])
def test_a_setting_out_of_range_or_of_the_wrong_type_is_refused_by_name(overrides, fragment):
    with pytest.raises(ValueError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        Policy().with_overrides(overrides)


def test_the_tick_interval_is_whole_minutes_and_sets_how_far_ahead_rows_are_handed_over():
    policy = Policy().with_overrides({"tick_interval": 300})
    assert policy.tick_minutes == 5 and policy.tick_interval == timedelta(minutes=5)
