"""Claim one due row and send it: the dispatch worker's whole job, minus the queue.

::

    dispatch_action(id)
      1. a look at the row and its channel (one read); skip it if it is not queued. Then one
         short write transaction: fail it as missed_window if it is later than its action
         type allows (re-read under the write lock); else claim it
         (queued → submitted, attempt + 1, a fresh claim token). A claim refused for
         attempts → failed attempts_exhausted; a claim the publish guard refuses (a
         legacy duplicate) → failed duplicate_of_published.
      2. no transaction: decrypt the channel secret and call the provider.
      3. one short write transaction: record the outcome with the claim token.

| provider outcome        | the row                                                                 |
|-------------------------|-------------------------------------------------------------------------|
| success                 | published, with the provider's id                                       |
| not sent / retry later  | reverted to queued, next attempt backed off (Retry-After honoured); failed attempts_exhausted once the budget is spent |
| permanent               | failed permanent, with the provider's words                             |
| unknown                 | failed outcome_unknown; retried with the same key if the provider honours one |

Only the worker whose claim flipped the row talks to the provider, so a row is handed to
a provider at most once per claim, and a claim happens at most ``max_attempts`` times.
"""

import logging
import os
import threading
from dataclasses import dataclass
from datetime import datetime

import httpx
from sqlalchemy import bindparam, select
from sqlalchemy.engine import Engine

from models import lifecycle
from models.actions import FailureCode, ScheduledAction, Status
from models.backoff import backoff_delay
from models.channels import Channel
from models.database import read_session, write_session
from models.guard import PublishGuardViolation
from models.lifecycle import Actor, Refusal
from models.policy import Policy
from models.providers import Delivery, SendContext, SendOutcome, SendResult, provider_for
from models.secrets_box import SecretBox, SecretUnreadable

log = logging.getLogger("tickwork.dispatch")


class DispatchOutcome:
    """What one dispatch did to its row (the keys of a tick's per-outcome counts)."""

    PUBLISHED = "published"
    REVERTED = "reverted"  # back to queued, to be tried again
    FAILED = "failed"  # reason: the failure code
    MISSED = "missed"  # failed before any claim: reason missed_window / duplicate_of_published / attempts_exhausted
    SKIPPED = "skipped"  # nothing done: reason not_found / cancelled / submitted / published / failed / not_due


@dataclass(frozen=True)
class DispatchResult:
    action_id: int
    outcome: str
    reason: str | None = None
    retry_at: datetime | None = None  # for a reverted row: when it is due again

    @property
    def label(self) -> str:
        return f"{self.outcome}:{self.reason}" if self.reason else self.outcome


@dataclass(frozen=True)
class DispatchContext:
    """The collaborators a dispatch needs; the shells build it from the app's runtime."""

    clock: object
    policy: Policy
    secret_box: SecretBox
    engine: Engine | None = None


@dataclass(frozen=True)
class _Claimed:
    action: ScheduledAction
    channel: Channel


_http_clients: dict[int, httpx.Client] = {}
_http_lock = threading.Lock()


def http_client() -> httpx.Client:
    """One HTTP client per process (connection pooling, TLS set up once); timeouts are per request."""
    with _http_lock:
        client = _http_clients.get(os.getpid())
        if client is None:
            client = _http_clients[os.getpid()] = httpx.Client(
                follow_redirects=False, limits=httpx.Limits(max_connections=32, max_keepalive_connections=16)
            )
        return client


def is_late(action: ScheduledAction, now: datetime, policy: Policy) -> bool:
    """Later than its action type allows, measured from the next attempt when set, else publish_at."""
    return now - action.due_at > policy.lateness_allowed(action.action_type)


def late_message(action: ScheduledAction, now: datetime, policy: Policy) -> str:
    late = now - action.due_at
    allowed = policy.lateness_allowed(action.action_type)
    return (f"missed its window: {_duration(late)} late, {action.action_type} may be at most "
            f"{_duration(allowed)} late")


def _duration(delta) -> str:
    seconds = int(delta.total_seconds())
    if seconds >= 3600:
        return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def dispatch_action(action_id: int, context: DispatchContext, *, clock_run_id: int | None = None) -> DispatchResult:
    """Claim ``action_id`` and send it through its channel's provider; see the module docstring."""
    actor = Actor.job("dispatch", clock_run_id)
    claimed = claim_for_send(action_id, context, actor)
    if isinstance(claimed, DispatchResult):
        return claimed
    action, channel = claimed.action, claimed.channel
    result = send(action, channel, context)
    return record_outcome(action, channel.kind, result, context, actor)


# The row and its channel in one query, built once.
_LOOK = (
    select(ScheduledAction, Channel)
    .join(Channel, Channel.id == ScheduledAction.channel_id)
    .where(ScheduledAction.id == bindparam("action_id"))
)


def claim_for_send(action_id: int, context: DispatchContext, actor: Actor) -> _Claimed | DispatchResult:
    """Step 1: look at the row, then skip it, miss it or claim it in one short write transaction."""
    policy = context.policy
    # Look first, outside the write lock (on SQLite every writer waits its turn for it):
    # a row another worker already took is skipped here, and the write transaction holds
    # the lock only for the guarded moves themselves.
    with read_session(context.engine) as session:
        found = session.execute(_LOOK, {"action_id": action_id}).one_or_none()
        if found is None:
            return DispatchResult(action_id, DispatchOutcome.SKIPPED, "not_found")
        row, channel = found
        if row.status != Status.QUEUED.value:
            return DispatchResult(action_id, DispatchOutcome.SKIPPED, row.status)
        session.expunge_all()
    with write_session(context.engine) as session:
        now = context.clock.now()
        if is_late(row, now, policy):
            # The look may be stale (another worker may have claimed and reverted the row,
            # or an admin retried it, moving its due time): decide on the row as it is now.
            row = session.get(ScheduledAction, action_id)
            if row is None or row.status != Status.QUEUED.value:
                return DispatchResult(action_id, DispatchOutcome.SKIPPED, row.status if row else "not_found")
            if is_late(row, now, policy):
                return _miss(session, row.id, FailureCode.MISSED_WINDOW, late_message(row, now, policy), now, actor)
        try:
            outcome = lifecycle.claim(session, action_id, now=now, actor=actor, max_attempts=policy.max_attempts)
        except PublishGuardViolation:
            return _miss(session, action_id, FailureCode.DUPLICATE_OF_PUBLISHED,
                         "not sent: this thing was already published to this target", now, actor)
        if not outcome.ok:
            if outcome.reason is Refusal.ATTEMPTS_EXHAUSTED:
                last = f"; last error: {outcome.action.last_error}" if outcome.action.last_error else ""
                return _miss(session, action_id, FailureCode.ATTEMPTS_EXHAUSTED,
                             f"not sent: all {policy.max_attempts} attempts used{last}", now, actor)
            return DispatchResult(action_id, DispatchOutcome.SKIPPED,
                                  outcome.status if outcome.reason is Refusal.WRONG_STATE else outcome.reason.value)
        return _Claimed(outcome.action, channel)


def _miss(session, action_id, code: FailureCode, message: str, now, actor) -> DispatchResult:
    outcome = lifecycle.miss(session, action_id, code=code, message=message, now=now, actor=actor)
    if outcome.ok:
        return DispatchResult(action_id, DispatchOutcome.MISSED, code.value)
    return DispatchResult(action_id, DispatchOutcome.SKIPPED, outcome.status or outcome.reason.value)


def send(action: ScheduledAction, channel: Channel, context: DispatchContext) -> SendResult:
    """Step 2, outside any transaction: decrypt the secret and call the provider."""
    try:
        provider = provider_for(channel.kind)
    except LookupError as exc:
        return SendResult(SendOutcome.NOT_SENT, str(exc))
    try:
        secret = channel.secret(context.secret_box)
    except SecretUnreadable as exc:
        return SendResult(SendOutcome.NOT_SENT, str(exc))
    delivery = Delivery(
        action_id=action.id, workspace_id=action.workspace_id, channel_id=channel.id, channel_name=channel.name,
        action_type=action.action_type, target_key=action.target_key, payload=action.payload,
        publish_at=action.publish_at, attempt=action.attempt_count, config=dict(channel.config or {}), secret=secret,
    )
    send_context = SendContext(now=context.clock.now(), timeout=context.policy.provider_timeout.total_seconds(),
                               http=http_client() if channel.kind != "log" else None, engine=context.engine)
    try:
        return provider.send(delivery, send_context)
    except Exception as exc:  # a fault in a provider module: we cannot tell whether it sent
        log.exception("provider %s raised on action %s", channel.kind, action.id)
        return SendResult(SendOutcome.UNKNOWN, f"the {channel.kind} provider failed unexpectedly: {type(exc).__name__}: {exc}")


def record_outcome(
    action: ScheduledAction, channel_kind: str, result: SendResult, context: DispatchContext, actor: Actor
) -> DispatchResult:
    """Step 3: one short write transaction turning the provider's outcome into a move."""
    policy = context.policy
    token = action.claim_token
    retry_with_key = result.outcome is SendOutcome.UNKNOWN and _honours_idempotency_key(channel_kind)
    with write_session(context.engine) as session:
        now = context.clock.now()
        if result.outcome is SendOutcome.SUCCESS:
            moved = lifecycle.publish(session, action.id, claim_token=token, provider_id=result.provider_id,
                                      now=now, actor=actor)
            return _result(action.id, moved, DispatchOutcome.PUBLISHED)
        if result.outcome in (SendOutcome.NOT_SENT, SendOutcome.RETRY_LATER) or retry_with_key:
            if action.attempt_count >= policy.max_attempts:
                code = FailureCode.OUTCOME_UNKNOWN if retry_with_key else FailureCode.ATTEMPTS_EXHAUSTED
                moved = lifecycle.fail(session, action.id, code=code, claim_token=token, now=now, actor=actor,
                                       message=f"all {policy.max_attempts} attempts used; last: {result.message}")
                return _result(action.id, moved, DispatchOutcome.FAILED, code.value)
            delay = backoff_delay(action.attempt_count, base=policy.backoff_base, cap=policy.backoff_cap,
                                  retry_after=result.retry_after)
            retry_at = now + delay
            note = " (retrying with the same Idempotency-Key)" if retry_with_key else ""
            moved = lifecycle.revert(session, action.id, claim_token=token, next_attempt_at=retry_at,
                                     message=f"attempt {action.attempt_count}: {result.message}{note}", now=now,
                                     actor=actor)
            outcome = _result(action.id, moved, DispatchOutcome.REVERTED, result.outcome.value)
            return DispatchResult(action.id, outcome.outcome, outcome.reason, retry_at if moved.ok else None)
        code = FailureCode.PERMANENT if result.outcome is SendOutcome.PERMANENT else FailureCode.OUTCOME_UNKNOWN
        moved = lifecycle.fail(session, action.id, code=code, claim_token=token, now=now, actor=actor,
                               message=result.message)
        return _result(action.id, moved, DispatchOutcome.FAILED, code.value)


def _honours_idempotency_key(kind: str) -> bool:
    try:
        return bool(provider_for(kind).honours_idempotency_key)
    except LookupError:
        return False


def _result(action_id: int, moved, outcome: str, reason: str | None = None) -> DispatchResult:
    if moved.ok:
        return DispatchResult(action_id, outcome, reason)
    # The claim token no longer matches: recovery declared this worker lost, and the row
    # stays as recovery left it (a success would have been accepted; see lifecycle.publish).
    log.warning("action %s: outcome %s not recorded (%s, row is %s)", action_id, outcome, moved.reason.value, moved.status)
    return DispatchResult(action_id, DispatchOutcome.SKIPPED, f"claim_lost:{outcome}")
