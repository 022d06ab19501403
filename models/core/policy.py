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


# The playbook bounds retries at 5: no override may raise a row's attempt budget above it.
MAX_ATTEMPTS_BOUND = 5


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
    tick_batch_size: int = 1000
    tick_budget: timedelta = timedelta(seconds=50)
    # Rows per dispatch task. A chunk shares one look, and its log-provider rows share one
    # transaction; its rows that call out are claimed in batches of the consumer's free
    # sending slots (at most sends_in_flight), each batch just before its requests start.
    dispatch_chunk: int = 500
    # Sends in flight at once per consumer process (its pool of sending threads): the
    # waits on the network overlap up to this many.
    sends_in_flight: int = 32
    # Timeouts, in the order they must fire. A row spends at most one provider call (and,
    # under a rate limit, a wait of at most a second for its slot) in submitted, so its
    # worker records it within provider_timeout and two short writes; task_timeout is the
    # bound that must hold between that and recovery.
    provider_timeout: timedelta = timedelta(seconds=30)
    task_timeout: timedelta = timedelta(minutes=2)
    recovery_timeout: timedelta = timedelta(minutes=10)
    # Backoff after a send that never reached the provider.
    backoff_base: timedelta = timedelta(seconds=30)
    backoff_cap: timedelta = timedelta(minutes=30)
    # Idempotency-Key records: how long a key is remembered, and after how long a request
    # still "in flight" under it is taken for one whose process died.
    idempotency_ttl: timedelta = timedelta(hours=24)
    idempotency_in_flight: timedelta = timedelta(minutes=5)
    # Misfire: how late each action type may still go out; others use the default.
    max_lateness: dict = field(default_factory=lambda: dict(DEFAULT_MAX_LATENESS))
    default_max_lateness: timedelta = timedelta(hours=6)
    # Recurring rules: how far ahead the expander materializes occurrences, how late an
    # occurrence may be claimed before the rule's misfire policy (skip / fire once) decides
    # instead, and the most occurrences a rule may have in any 24 hours.
    recurring_window: timedelta = timedelta(days=14)
    recurring_grace: timedelta = timedelta(minutes=5)
    recurring_max_per_day: int = 24
    # Work schedules (models/works): the dispatcher runs every work_dispatch_interval (whole
    # minutes dividing the hour) and takes at most work_max_batch due schedules a pass. A
    # generation's timeouts are ordered like a send's: the pipeline's own wait < the Huey
    # task < work_stuck_timeout, after which a generating work is a zombie and recovered.
    work_dispatch_interval: timedelta = timedelta(minutes=1)
    work_max_batch: int = 100
    work_pipeline_timeout: timedelta = timedelta(minutes=30)
    work_task_timeout: timedelta = timedelta(minutes=45)
    work_stuck_timeout: timedelta = timedelta(minutes=60)
    # A due schedule whose work is still generating is tried again this much later (no failure counted).
    work_busy_retry: timedelta = timedelta(minutes=15)
    # A CSV import's dry run is kept this long for its commit (the brief's "CSV imports").
    import_keep: timedelta = timedelta(hours=1)
    # How far ahead "queue" and "next" look for a free posting slot before answering that there is none.
    queue_horizon: timedelta = timedelta(days=366)

    def __post_init__(self):
        if not (self.provider_timeout < self.task_timeout < self.recovery_timeout):
            raise ValueError("timeouts must be ordered: provider call < Huey task < dead-worker recovery")
        if not 1 <= self.max_attempts <= MAX_ATTEMPTS_BOUND:
            raise ValueError(f"max_attempts is from 1 to {MAX_ATTEMPTS_BOUND} (the playbook bounds a row's attempts, "
                             f"automatic or admin, at {MAX_ATTEMPTS_BOUND})")
        if self.tick_batch_size < 1:
            raise ValueError("tick_batch_size is at least 1")
        if not 1 <= self.dispatch_chunk <= 1000:
            raise ValueError("dispatch_chunk is from 1 to 1000 rows")
        if self.recurring_window <= timedelta(0) or self.recurring_max_per_day < 1:
            raise ValueError("recurring_window is positive and recurring_max_per_day at least 1")
        if not (self.work_pipeline_timeout < self.work_task_timeout < self.work_stuck_timeout):
            raise ValueError("work timeouts must be ordered: work_pipeline_timeout < work_task_timeout "
                             "< work_stuck_timeout")
        minutes, rest = divmod(self.work_dispatch_interval.total_seconds(), 60)
        if rest or not 1 <= minutes <= 60 or 60 % minutes:
            raise ValueError("work_dispatch_interval is whole minutes dividing the hour (60, 120, 180, 300, ... "
                             "3600 seconds)")
        if not 1 <= self.work_max_batch <= 10_000:
            raise ValueError("work_max_batch is from 1 to 10000 schedules")
        if not 1 <= self.sends_in_flight <= 1000:
            raise ValueError("sends_in_flight is from 1 to 1000")
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
