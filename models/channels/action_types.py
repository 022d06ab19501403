"""Which action types a channel sends, written once: the rule builder offers these, and a rule
whose action type its channel does not send is refused.

| kind               | sends                                                                 |
|--------------------|-----------------------------------------------------------------------|
| smtp, postmark     | ``send_email``                                                        |
| twilio             | ``send_sms``                                                          |
| the networks (mastodon, bluesky, x, linkedin, threads, facebook, instagram, discord, slack, telegram) | ``publish_post`` |
| log, webhook       | what the ``sends`` setting lists (``sends = publish_post``); else ``send_sms`` when ``address = phone``; else all three |
"""

from models.channels.tables import Channel

ACTION_TYPES = ("publish_post", "send_email", "send_sms")
# Every kind with a provider besides OPEN_KINDS is here, so a channel never offers a type its network cannot
# send (tests/unit/test_action_types.py holds this table to the providers).
BY_KIND = {"smtp": ("send_email",), "postmark": ("send_email",), "twilio": ("send_sms",),
           "mastodon": ("publish_post",), "x": ("publish_post",), "linkedin": ("publish_post",),
           "threads": ("publish_post",), "facebook": ("publish_post",), "instagram": ("publish_post",),
           "bluesky": ("publish_post",), "discord": ("publish_post",), "slack": ("publish_post",),
           "telegram": ("publish_post",)}
# The kinds that send whatever they are given (the payload as it is): their ``sends`` setting says what.
OPEN_KINDS = ("log", "webhook")
SENDS_SETTING = "sends"


def sends_setting(value) -> tuple[str, ...]:
    """The ``sends`` setting read as action types (comma or space separated); unknown ones are dropped."""
    named = str(value or "").replace(",", " ").split()
    return tuple(kind for kind in ACTION_TYPES if kind in named)


def action_types_for(kind: str, config: dict | None) -> tuple[str, ...]:
    """The action types a channel of ``kind`` with ``config`` sends (see the module docstring)."""
    if kind in BY_KIND:
        return BY_KIND[kind]
    config = config or {}
    if config.get(SENDS_SETTING):
        return sends_setting(config[SENDS_SETTING]) or ACTION_TYPES
    if config.get("address") == "phone":
        return ("send_sms",)
    return ACTION_TYPES


def channel_action_types(channel: Channel) -> tuple[str, ...]:
    return action_types_for(channel.kind, channel.config)
