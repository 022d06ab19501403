"""Which action types each kind of channel sends: the rule builder offers exactly these."""

import pytest

from models.channels.action_types import ACTION_TYPES, BY_KIND, OPEN_KINDS, action_types_for
from models.channels.providers import PROVIDERS


@pytest.mark.parametrize("kind", sorted(set(PROVIDERS) - set(OPEN_KINDS)))
def test_every_network_sends_one_action_type_and_never_all_three(kind):
    assert kind in BY_KIND, f"{kind} has a provider but no entry in BY_KIND: a channel of it would offer every type"
    assert len(action_types_for(kind, {})) == 1


@pytest.mark.parametrize("kind, sends", [("discord", "publish_post"), ("slack", "publish_post"),
                                         ("telegram", "publish_post"), ("smtp", "send_email"),
                                         ("twilio", "send_sms"), ("instagram", "publish_post")])
def test_a_network_sends_its_own_type_whatever_its_settings_say(kind, sends):
    assert action_types_for(kind, {"sends": "send_email send_sms publish_post"}) == (sends,)


def test_log_and_webhook_channels_send_what_their_settings_say():
    assert action_types_for("log", {"sends": "publish_post"}) == ("publish_post",)
    assert action_types_for("webhook", {"address": "phone"}) == ("send_sms",)
    assert action_types_for("webhook", {}) == ACTION_TYPES
    assert action_types_for("log", {"sends": "nothing-known"}) == ACTION_TYPES
