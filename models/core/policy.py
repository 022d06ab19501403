"""Every gate, timeout, window and budget the engine obeys, as one settings object.

Defaults are production values; tests shrink them so nothing waits in real time.
The ordering rule for timeouts holds by construction: provider call < Huey task < recovery.
"""

from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timedelta

DEFAULT_MAX_LATENESS = {
    "send_sms": timedelta(hours=1),
    "reminder": timedelta(hours=1),
    "send_email": timedelta(hours=12),
    "publish_post": timedelta(hours=6),
}


@dataclass(frozen=True)
class Policy:
    max_attempts: int = 5
    # A publish_at further in the past than this is refused at creation.
    past_tolerance: timedelta = timedelta(minutes=5)
    max_payload_bytes: int = 64 * 1024
    # The reconciler never removes a row younger than this.
    age_gate: timedelta = timedelta(minutes=2)
    # The tick's cadence, in whole minutes (the consumers enqueue it when the minutes since
    # the epoch are a multiple of it; never faster than once a minute, the playbook's
    # pitfall), rows per batch, and how long one tick may keep draining. Rows falling due
    # before the next tick are handed over ahead with an eta, so a longer interval makes
    # ticks rarer, not sends later.
    tick_interval: timedelta = timedelta(minutes=1)
    tick_batch_size: int = 200
    tick_budget: timedelta = timedelta(seconds=50)
    # Rows per dispatch task. A chunk shares one look, and its log-provider rows share one
    # transaction; of its rows that call out, the task sends one and queues the others as
    # tasks of their own, so they run in parallel and a dead worker leaves one row in doubt.
    dispatch_chunk: int = 50
    # Timeouts, in the order they must fire. A dispatch task makes at most one provider
    # call (models.dispatch), so it ends within provider_timeout and two short writes;
    # task_timeout is the bound that must hold between that and recovery.
    provider_timeout: timedelta = timedelta(seconds=30)
    task_timeout: timedelta = timedelta(minutes=2)
    recovery_timeout: timedelta = timedelta(minutes=10)
    # Backoff after a send that never reached the provider.
    backoff_base: timedelta = timedelta(seconds=30)
    backoff_cap: timedelta = timedelta(minutes=30)
    # Misfire: how late each action type may still go out; others use the default.
    max_lateness: dict = field(default_factory=lambda: dict(DEFAULT_MAX_LATENESS))
    default_max_lateness: timedelta = timedelta(hours=6)

    def __post_init__(self):
        if not (self.provider_timeout < self.task_timeout < self.recovery_timeout):
            raise ValueError("timeouts must be ordered: provider call < Huey task < dead-worker recovery")
        if self.max_attempts < 1 or self.tick_batch_size < 1:
            raise ValueError("max_attempts and tick_batch_size are at least 1")
        if not 1 <= self.dispatch_chunk <= 1000:
            raise ValueError("dispatch_chunk is from 1 to 1000 rows")
        if self.tick_interval < timedelta(minutes=1) or self.tick_interval % timedelta(minutes=1):
            raise ValueError("tick_interval is whole minutes, at least 60 seconds: the tick never runs faster "
                             "than once a minute")

    def due_soon_horizon(self, now: datetime) -> datetime:
        """Rows due by this instant are handed to the queue at once, with an eta; the next tick takes later ones."""
        return now + self.tick_interval

    @property
    def tick_minutes(self) -> int:
        """The tick's cadence in minutes."""
        return int(self.tick_interval // timedelta(minutes=1))

    def lateness_allowed(self, action_type: str) -> timedelta:
        return self.max_lateness.get(action_type, self.default_max_lateness)

    def with_overrides(self, overrides: dict) -> "Policy":
        """A copy with ``overrides`` applied; seconds are accepted for every timedelta field."""
        known = {f.name: f for f in fields(self)}
        cleaned = {}
        for key, value in overrides.items():
            if key not in known:
                raise ValueError(f"unknown policy setting {key!r}; known: {', '.join(sorted(known))}")
            cleaned[key] = _setting(key, getattr(self, key), value)
        return replace(self, **cleaned)


# The production settings; what callers that are not handed a policy fall back to.
DEFAULT_POLICY = Policy()


def _seconds(key: str, value) -> timedelta:
    if isinstance(value, timedelta):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return timedelta(seconds=value)
    raise ValueError(f"{key} is a number of seconds, not {value!r}")


def _setting(key: str, current, value):
    """``value`` for setting ``key`` in the type its default has, or ValueError naming the setting."""
    if isinstance(current, timedelta):
        return _seconds(key, value)
    if isinstance(current, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ValueError(f"{key} is a whole number, not {value!r}")
    if isinstance(current, dict):
        if not isinstance(value, dict):
            raise ValueError(f"{key} maps action types to seconds, not {value!r}")
        return {kind: _seconds(f"{key}[{kind!r}]", seconds) for kind, seconds in value.items()}
    return value
