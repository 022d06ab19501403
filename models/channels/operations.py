"""Defining a channel: the checks its name, kind and settings must pass."""

import re

from models.channels.tables import CHANNEL_NAME, ChannelKind


def validate_channel(name: str, kind: str, config: dict) -> None:
    """Raise ValueError naming what is wrong with a channel definition."""
    if not isinstance(name, str) or not CHANNEL_NAME.match(name):
        raise ValueError("a channel name is 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit")
    try:
        kind = ChannelKind(kind)
    except ValueError:
        raise ValueError(f"unknown channel kind {kind!r}; one of {', '.join(k.value for k in ChannelKind)}") from None
    if kind is ChannelKind.WEBHOOK:
        url = config.get("url")
        if not isinstance(url, str) or not re.match(r"^https?://[^\s/]+", url):
            raise ValueError("a webhook channel needs an http(s) url")
