"""A channel's sending limits: a rate and a concurrency cap, read from its settings, with defaults per kind.

Settings (one ``key = value`` per line in the channel form, keys of ``Channel.config``):

| key           | value                                         | meaning |
|---------------|-----------------------------------------------|---------|
| ``rate``      | ``N/s``, ``N/min`` (``second``, ``minute``), or ``none`` | at most N sends per second or per minute, spaced evenly, across every consumer; ``none`` lifts the kind's default |
| ``concurrency`` | a whole number, or ``none``                 | at most this many sends in flight at once, across every consumer |
| ``network_rate`` | ``N/Ss`` (N sends per S seconds), written by Tickwork | the rate the network states for this account, read when the channel is saved (Instagram's ``content_publishing_limit``); used while ``rate`` is not set |

Defaults follow what each provider documents (docs/operations.md cites the sources):
``twilio`` 1 message per second (a long code's rate; set ``rate`` for a toll-free number,
a short code or a messaging service), ``mastodon`` 60 per minute (300 requests per 5 minutes
per account), ``x`` 6 per minute (100 posts per 15 minutes per user). LinkedIn's 150 posts a day
per member is no per-minute rate: its ``429`` pauses the channel instead. ``webhook``, ``smtp``
and ``postmark`` publish no fixed rate, so none is assumed; a ``429`` or ``503`` with
``Retry-After`` pauses any channel for everyone. ``log`` writes to our own database and takes no limits.
``threads`` 250 posts per 24 hours and ``instagram`` 100 per 24 hours (each profile's API
publishing limit; an Instagram channel's ``network_rate`` holds the figure the account itself
reports), ``bluesky`` 8 per minute (35,000 points a day, a post costing 3), ``discord`` 30 per
minute (per webhook), ``slack`` 1 per second (per channel), ``telegram`` 20 per minute (a group's
limit; a private chat takes 1 per second).
"""

import re
from dataclasses import dataclass
from datetime import timedelta

from models.core.errors import InvalidInput

RATE_KEY, CONCURRENCY_KEY, NETWORK_RATE_KEY = "rate", "concurrency", "network_rate"
MAX_RATE = 10_000
MAX_CONCURRENCY = 1_000
_RATE = re.compile(r"^\s*(\d{1,5})\s*/\s*(s|sec|second|m|min|minute)\s*$", re.IGNORECASE)
_WINDOWS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60}
_NONE = ("none", "off", "")
_NETWORK_RATE = re.compile(r"^\s*(\d{1,6})\s*/\s*(\d{1,7})\s*s\s*$")
MAX_NETWORK_WINDOW = timedelta(days=31)


@dataclass(frozen=True)
class Rate:
    """``count`` sends per ``per``; they go out evenly spaced, one every :attr:`interval`."""

    count: int
    per: timedelta

    @property
    def interval(self) -> timedelta:
        return self.per / self.count

    def __str__(self) -> str:
        seconds = int(self.per.total_seconds())
        if seconds in (1, 60):
            return f"{self.count}/{'s' if seconds == 1 else 'min'}"
        return f"{self.count}/{seconds // 3600}h" if seconds % 3600 == 0 else f"{self.count}/{seconds}s"


@dataclass(frozen=True)
class ChannelLimits:
    rate: Rate | None = None
    concurrency: int | None = None

    @property
    def limited(self) -> bool:
        return self.rate is not None or self.concurrency is not None

    def describe(self) -> str:
        parts = [f"{self.rate}" if self.rate else None,
                 f"{self.concurrency} at once" if self.concurrency else None]
        return ", ".join(p for p in parts if p) or "no limit"


NO_LIMITS = ChannelLimits()

# What each kind assumes when its channel sets nothing; sources in docs/operations.md.
DEFAULT_LIMITS: dict[str, ChannelLimits] = {
    "twilio": ChannelLimits(rate=Rate(1, timedelta(seconds=1))),
    "mastodon": ChannelLimits(rate=Rate(60, timedelta(minutes=1))),
    "x": ChannelLimits(rate=Rate(6, timedelta(minutes=1))),
    "threads": ChannelLimits(rate=Rate(250, timedelta(hours=24))),
    "instagram": ChannelLimits(rate=Rate(100, timedelta(hours=24))),
    "bluesky": ChannelLimits(rate=Rate(8, timedelta(minutes=1))),
    "discord": ChannelLimits(rate=Rate(30, timedelta(minutes=1))),  # 30 requests a minute per webhook
    "slack": ChannelLimits(rate=Rate(1, timedelta(seconds=1))),  # chat.postMessage: about one a second per channel
    "telegram": ChannelLimits(rate=Rate(20, timedelta(minutes=1))),  # 1/s to a chat, 20 a minute to a group
}


def parse_rate(value) -> Rate | None:
    """``"20/s"`` → 20 per second; ``"none"`` → None; anything else is an :class:`InvalidInput`."""
    if value is None or (isinstance(value, str) and value.strip().lower() in _NONE):
        return None
    match = _RATE.match(value) if isinstance(value, str) else None
    if not match or not 1 <= int(match.group(1)) <= MAX_RATE:
        raise InvalidInput(f"rate is a number of sends per second or per minute, like 20/s or 600/min (1 to "
                           f"{MAX_RATE:,}), or none; not {value!r}.", field="settings")
    return Rate(int(match.group(1)), timedelta(seconds=_WINDOWS[match.group(2).lower()]))


def parse_network_rate(value) -> Rate:
    """``"100/86400s"`` (what a network reported: N sends per S seconds) → that rate; anything else is an
    :class:`InvalidInput`."""
    match = _NETWORK_RATE.match(value) if isinstance(value, str) else None
    if match and int(match.group(1)) >= 1 and 1 <= int(match.group(2)) <= MAX_NETWORK_WINDOW.total_seconds():
        return Rate(int(match.group(1)), timedelta(seconds=int(match.group(2))))
    raise InvalidInput(f"network_rate is the network's own limit as N/Ss (sends per seconds, like 100/86400s), "
                       f"written when the channel is saved; not {value!r}.", field="settings")


def network_rate_text(count: int, seconds: int) -> str:
    """How a network's reported limit is kept in ``network_rate``."""
    return f"{count}/{seconds}s"


def parse_concurrency(value) -> int | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in _NONE):
        return None
    if isinstance(value, str) and value.strip().isdecimal():
        value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_CONCURRENCY:
        raise InvalidInput(f"concurrency is a whole number of sends at once, 1 to {MAX_CONCURRENCY:,}, or none; "
                           f"not {value!r}.", field="settings")
    return value


def validate_limits(kind: str, config: dict) -> None:
    """Refuse limits a channel cannot have, naming the setting."""
    if kind == "log" and (RATE_KEY in config or CONCURRENCY_KEY in config):
        raise InvalidInput("A log channel writes to Tickwork's own outbox and takes no rate or concurrency.",
                           field="settings")
    parse_rate(config.get(RATE_KEY))
    parse_concurrency(config.get(CONCURRENCY_KEY))
    if NETWORK_RATE_KEY in config:
        parse_network_rate(config[NETWORK_RATE_KEY])


def limits_for(kind: str, config: dict | None) -> ChannelLimits:
    """The limits a channel sends under: its own settings, else the rate its network reported, else its kind's default."""
    config = config or {}
    default = DEFAULT_LIMITS.get(kind, NO_LIMITS)
    if kind == "log":
        return NO_LIMITS
    if NETWORK_RATE_KEY in config:
        try:
            default = ChannelLimits(rate=parse_network_rate(config[NETWORK_RATE_KEY]), concurrency=default.concurrency)
        except InvalidInput:
            pass  # written behind the app's back: the kind's default stands, and saving the channel shows the error
    try:
        rate = parse_rate(config[RATE_KEY]) if RATE_KEY in config else default.rate
        concurrency = parse_concurrency(config[CONCURRENCY_KEY]) if CONCURRENCY_KEY in config else default.concurrency
    except InvalidInput:
        # Saved before these checks existed, or written behind the app's back: the kind's
        # default is the safe reading, and saving the channel again shows the error.
        return default
    return ChannelLimits(rate=rate, concurrency=concurrency)
