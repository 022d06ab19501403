"""Claim due rows and send them: the dispatch worker's whole job, minus the queue.

A queue task carries a chunk of row ids (``policy.dispatch_chunk``); one look reads them
all with their channels, and each row then goes one of two ways::

    a provider that calls out (webhook, smtp, postmark, twilio, mastodon), one row at a time:
      1. skip it if the look found it no longer queued. Then one short write transaction:
         ask the pre-send checks the wings registered for its origin (models.core.hooks; a
         check that says stop cancels the row instead of claiming it, so nothing ever moves
         submitted → cancelled); fail it as missed_window if it is later than its action
         type allows (re-read under the write lock; unless its wing's check decides
         lateness itself, as a recurring rule's misfire policy does); else claim it
         (queued → submitted, attempt + 1, a fresh claim token). A claim refused for attempts → failed
         attempts_exhausted; a claim the publish guard refuses (a legacy duplicate) →
         failed duplicate_of_published.
      2. no transaction: decrypt the channel secret and call the provider.
      3. one short write transaction: record the outcome with the claim token.

    a local provider (log), the chunk's rows together, in one write transaction:
      the same pre-send checks, misses and claims (every on-time row in one guarded UPDATE), the
      deliveries (one INSERT), and the outcomes: the outbox entry and the published
      status commit together or not at all.

A queue task sends at most one row that calls out and hands the chunk's others back to
the queue as tasks of their own (``defer``): they go out in parallel across the
consumer's workers, a task lasts at most one provider call, and a dead worker leaves only
the row it was sending in doubt.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import bindparam, select
from sqlalchemy.engine import Engine

from models.actions import lifecycle
from models.actions.tables import CancelKind, FailureCode, ScheduledAction, Status
from models.timing.backoff import backoff_delay
from models.timing.clock import Clock
from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.actions.guard import PublishGuardViolation
from models.core.moves import Actor, Refusal
from models.core.hooks import Hooks
from models.core.policy import Policy
from models.core.runtime import Runtime
from models.channels.providers.http import http_client
from models.channels.providers import Delivery, SendContext, SendOutcome, SendResult, is_local, provider_for
from models.core.secrets_box import SecretBox, SecretUnreadable

log = logging.getLogger("tickwork.dispatch")


class DispatchOutcome:
    """What one dispatch did to its row (the keys of a tick's per-outcome counts)."""

    PUBLISHED = "published"
    REVERTED = "reverted"  # back to queued, to be tried again
    FAILED = "failed"  # reason: the failure code
    MISSED = "missed"  # failed before any claim: reason missed_window / duplicate_of_published / attempts_exhausted
    SKIPPED = "skipped"  # nothing done: reason not_found / cancelled / submitted / published / failed / not_due
    DEFERRED = "deferred"  # not touched: handed back to the queue to run as a task of its own
    STOPPED = "stopped"  # cancelled instead of claimed: a wing's pre-send check said no (reason: the cancel kind)
    ERROR = "error"  # not touched: the database refused its delivery; still queued for the next tick


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

    clock: Clock
    policy: Policy
    secret_box: SecretBox
    engine: Engine | None = None
    hooks: Hooks = field(default_factory=Hooks)  # the wings' pre-send checks

    @classmethod
    def of(cls, runtime: Runtime, engine: Engine | None = None) -> "DispatchContext":
        """The context of the app whose runtime this is."""
        return cls(clock=runtime.clock, policy=runtime.policy, secret_box=runtime.secret_box, engine=engine,
                   hooks=runtime.hooks)


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


def chunks(items: list, size: int) -> list[list]:
    """``items`` in lists of at most ``size``, in order: one dispatch task's worth each."""
    return [items[start:start + size] for start in range(0, len(items), size)]


def dispatch_actions(
    action_ids: list[int],
    context: DispatchContext,
    *,
    clock_run_id: int | None = None,
    defer: Callable[[list[int]], None] | None = None,
) -> list[DispatchResult]:
    """Dispatch a chunk of rows (one queue task's worth); one result per id, in order.

    One look at all of them first. Rows whose channel delivers into our own database go
    through :func:`deliver_locally` together; every other row goes through
    :func:`dispatch_action` alone, with its own claim, send and outcome.

    ``defer`` (a queue task) keeps a chunk to one row that calls out: the others are
    passed to it, untouched, before anything is sent, and come back ``deferred``. The
    queue runs each as a task of its own, so rows behind a slow provider are sent in
    parallel by the consumer's workers, and a task lasts at most one provider call.
    """
    actor = Actor.job("dispatch", clock_run_id)
    ids = list(dict.fromkeys(action_ids))
    with read_session(context.engine) as session:
        found = {row.id: (row, channel) for row, channel in session.execute(_LOOK, {"action_ids": ids})}
        session.expunge_all()
    results: dict[int, DispatchResult] = {}
    local: list[tuple[ScheduledAction, Channel]] = []
    remote: list[int] = []
    for action_id in ids:
        if action_id not in found:
            results[action_id] = DispatchResult(action_id, DispatchOutcome.SKIPPED, "not_found")
        elif found[action_id][0].status != Status.QUEUED.value:
            results[action_id] = DispatchResult(action_id, DispatchOutcome.SKIPPED, found[action_id][0].status)
        elif is_local(found[action_id][1].kind):
            local.append(found[action_id])
        else:
            remote.append(action_id)
    if defer is not None and len(remote) > 1:
        remote, deferred = remote[:1], remote[1:]
        defer(deferred)
        results.update((action_id, DispatchResult(action_id, DispatchOutcome.DEFERRED)) for action_id in deferred)
    if local:
        results.update(_deliver_locally_or_row_by_row(local, context, actor))
    for action_id in remote:
        results[action_id] = _dispatch_one(*found[action_id], context, actor)
    return [results[action_id] for action_id in ids]


def dispatch_action(action_id: int, context: DispatchContext, *, clock_run_id: int | None = None) -> DispatchResult:
    """Claim ``action_id`` and send it through its channel's provider; see the module docstring."""
    return dispatch_actions([action_id], context, clock_run_id=clock_run_id)[0]


def _dispatch_one(row: ScheduledAction, channel: Channel, context: DispatchContext, actor: Actor) -> DispatchResult:
    """Claim, send and record one row that calls out, from the chunk's look at it."""
    with write_session(context.engine) as session:
        now = context.clock.now()
        stopped = _stop_in(session, [row], context, now, actor)
        claimed = stopped[row.id] if stopped else _claim_in(session, row, now, context.policy, actor, context.hooks)
    if isinstance(claimed, DispatchResult):
        return claimed
    result = send(claimed, channel, context)
    return record_outcome(claimed, channel.kind, result, context, actor)


# The rows of a chunk and their channels in one query, built once. The look is taken
# outside the write lock (on SQLite every writer waits its turn for it): a row another
# worker already took is skipped there, and the claims re-check every row under the lock.
_LOOK = (
    select(ScheduledAction, Channel)
    .join(Channel, Channel.id == ScheduledAction.channel_id)
    .where(ScheduledAction.id.in_(bindparam("action_ids", expanding=True)))
)


def _stop_in(session, rows: list[ScheduledAction], context: DispatchContext, now: datetime,
             actor: Actor) -> dict[int, DispatchResult]:
    """In the claim's write transaction: cancel (or fail as missed) the rows a wing's pre-send check stops.

    Asked before the rows themselves are locked or claimed, so a check that reads (and
    locks) its wing's rows takes its locks in the same order as the wing's own writes.
    """
    results = {}
    workspaces = {row.id: row.workspace_id for row in rows}
    for action_id, stop in context.hooks.stops(session, rows, now).items():
        if stop.failure_code is not None:
            results[action_id] = _miss(session, action_id, FailureCode(stop.failure_code), stop.reason, now, actor)
            continue
        outcome = lifecycle.cancel(session, action_id, kind=CancelKind(stop.cancel_kind), now=now, actor=actor,
                                   workspace_id=workspaces[action_id], reason=stop.reason)
        results[action_id] = DispatchResult(action_id, DispatchOutcome.STOPPED if outcome.ok else DispatchOutcome.SKIPPED,
                                            stop.cancel_kind if outcome.ok else (outcome.status or outcome.reason.value))
    return results


def _claim_in(session, row: ScheduledAction, now: datetime, policy: Policy, actor: Actor,
              hooks: Hooks | None = None) -> ScheduledAction | DispatchResult:
    """In the caller's write transaction: miss ``row`` if it is late, else claim it; the claimed row, or why not.

    A row whose wing decides lateness itself (``hooks.lateness_decided``) was judged by its pre-send check.
    """
    action_id = row.id
    if (hooks is None or hooks.lateness_applies(row.origin)) and is_late(row, now, policy):
        # The look may be stale (another worker may have claimed and reverted the row,
        # or an admin retried it, moving its due time): decide on the row as it is now.
        row = session.get(ScheduledAction, action_id, populate_existing=True)
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
            last = f"; last error: {outcome.row.last_error}" if outcome.row.last_error else ""
            return _miss(session, action_id, FailureCode.ATTEMPTS_EXHAUSTED,
                         f"not sent: all {policy.max_attempts} attempts used{last}", now, actor)
        return DispatchResult(action_id, DispatchOutcome.SKIPPED,
                              outcome.status if outcome.reason is Refusal.WRONG_STATE else outcome.reason.value)
    return outcome.row


def _deliver_locally_or_row_by_row(
    rows: list[tuple[ScheduledAction, Channel]], context: DispatchContext, actor: Actor
) -> dict[int, DispatchResult]:
    """:func:`deliver_locally` for the chunk; if its transaction fails, once more for each row alone.

    The failed transaction changed nothing, so the retry is safe, and a row the database
    keeps refusing holds up only itself: it stays queued (``error``) for the next tick.
    """
    try:
        return deliver_locally(rows, context, actor)
    except Exception:
        if len(rows) == 1:
            log.exception("action %s: the local delivery failed; the row stays queued", rows[0][0].id)
            return {rows[0][0].id: DispatchResult(rows[0][0].id, DispatchOutcome.ERROR, "database")}
        log.exception("a chunk of %d local deliveries failed; delivering its rows one by one", len(rows))
    results: dict[int, DispatchResult] = {}
    for pair in rows:
        results.update(_deliver_locally_or_row_by_row([pair], context, actor))
    return results


_LOCK_QUEUED = (
    select(ScheduledAction.id)
    .where(ScheduledAction.id.in_(bindparam("action_ids", expanding=True)))
    .order_by(ScheduledAction.id)
    .with_for_update(skip_locked=True)
)


def deliver_locally(
    rows: list[tuple[ScheduledAction, Channel]], context: DispatchContext, actor: Actor
) -> dict[int, DispatchResult]:
    """Rows whose provider delivers into this database (``log``): all three steps in one transaction.

    The claim of every due row in one statement, the deliveries in one write, and the
    outcomes (``publish_many`` for the successes): the delivery and the row's published
    status commit together or not at all, so no crash can leave one without the other.
    Late rows, rows the bulk claim left alone and, when the publish guard refuses the
    bulk claim, every row are claimed one by one in the same transaction.

    On PostgreSQL the transaction first locks the chunk's rows in id order, skipping any
    another transaction holds (that one decides them; a row still queued afterwards is
    the next tick's), so two overlapping chunks never wait on each other in a cycle.
    SQLite needs no such step: ``BEGIN IMMEDIATE`` admits one writer at a time.
    """
    policy = context.policy
    channels = {row.id: channel for row, channel in rows}
    results: dict[int, DispatchResult] = {}
    with write_session(context.engine) as session:
        now = context.clock.now()
        results.update(_stop_in(session, [row for row, _ in rows], context, now, actor))
        rows = [(row, channel) for row, channel in rows if row.id not in results]
        if session.connection().dialect.name == "postgresql":
            mine = set(session.scalars(_LOCK_QUEUED, {"action_ids": [row.id for row, _ in rows]}))
            results.update((row.id, DispatchResult(row.id, DispatchOutcome.SKIPPED, "busy"))
                           for row, _ in rows if row.id not in mine)
            rows = [(row, channel) for row, channel in rows if row.id in mine]
        on_time = [row.id for row, _ in rows
                   if not (context.hooks.lateness_applies(row.origin) and is_late(row, now, policy))]
        try:
            claimed = lifecycle.claim_many(session, on_time, now=now, actor=actor, max_attempts=policy.max_attempts)
        except PublishGuardViolation:
            claimed = []  # a legacy duplicate among them: the one-by-one claims below find it
        flipped = {action.id for action in claimed}
        for row, _ in rows:
            if row.id not in flipped:
                one = _claim_in(session, row, now, policy, actor, context.hooks)
                if isinstance(one, DispatchResult):
                    results[row.id] = one
                else:
                    claimed.append(one)
        order = {row.id: position for position, (row, _) in enumerate(rows)}
        claimed.sort(key=lambda action: order[action.id])  # delivered in the order the rows fell due
        published = []
        for action, result in zip(claimed, _deliver_in(session, claimed, channels, context, now)):
            if result.outcome is SendOutcome.SUCCESS:
                published.append((action.id, action.claim_token, result.provider_id))
                results[action.id] = DispatchResult(action.id, DispatchOutcome.PUBLISHED)
            else:
                results[action.id] = _record_in(session, action, channels[action.id].kind, result, policy, actor, now)
        lifecycle.publish_many(session, published, now=now, actor=actor)
    return results


def _deliver_in(session, claimed: list[ScheduledAction], channels: dict, context: DispatchContext,
                now: datetime) -> list[SendResult]:
    """The local providers' results for ``claimed``, in order; they write in ``session``."""
    results: dict[int, SendResult] = {}
    by_kind: dict[str, list[Delivery]] = {}
    for action in claimed:
        channel = channels[action.id]
        try:
            by_kind.setdefault(channel.kind, []).append(_delivery(action, channel, context))
        except SecretUnreadable as exc:
            results[action.id] = SendResult(SendOutcome.NOT_SENT, str(exc))
    send_context = SendContext(now=now, timeout=context.policy.provider_timeout.total_seconds(), session=session)
    for kind, deliveries in by_kind.items():
        for delivery, result in zip(deliveries, provider_for(kind).deliver(deliveries, send_context), strict=True):
            results[delivery.action_id] = result
    return [results[action.id] for action in claimed]


def _miss(session, action_id, code: FailureCode, message: str, now, actor) -> DispatchResult:
    outcome = lifecycle.miss(session, action_id, code=code, message=message, now=now, actor=actor)
    if outcome.ok:
        return DispatchResult(action_id, DispatchOutcome.MISSED, code.value)
    return DispatchResult(action_id, DispatchOutcome.SKIPPED, outcome.status or outcome.reason.value)


def _delivery(action: ScheduledAction, channel: Channel, context: DispatchContext) -> Delivery:
    """What the provider needs for ``action``, with the channel's secret decrypted (it may raise SecretUnreadable)."""
    return Delivery(
        action_id=action.id, workspace_id=action.workspace_id, channel_id=channel.id, channel_name=channel.name,
        action_type=action.action_type, target_key=action.target_key, payload=action.payload,
        publish_at=action.publish_at, attempt=action.attempt_count, config=dict(channel.config or {}),
        secret=channel.secret(context.secret_box),
    )


def send(action: ScheduledAction, channel: Channel, context: DispatchContext) -> SendResult:
    """Step 2, outside any transaction: decrypt the secret and call the provider."""
    try:
        provider = provider_for(channel.kind)
    except LookupError as exc:
        return SendResult(SendOutcome.NOT_SENT, str(exc))
    try:
        delivery = _delivery(action, channel, context)
    except SecretUnreadable as exc:
        return SendResult(SendOutcome.NOT_SENT, str(exc))
    send_context = SendContext(now=context.clock.now(), timeout=context.policy.provider_timeout.total_seconds(),
                               http=http_client())
    try:
        return provider.send(delivery, send_context)
    except Exception as exc:  # a fault in a provider module: we cannot tell whether it sent
        log.exception("provider %s raised on action %s", channel.kind, action.id)
        return SendResult(SendOutcome.UNKNOWN, f"the {channel.kind} provider failed unexpectedly: {type(exc).__name__}: {exc}")


def record_outcome(
    action: ScheduledAction, channel_kind: str, result: SendResult, context: DispatchContext, actor: Actor
) -> DispatchResult:
    """Step 3: one short write transaction turning the provider's outcome into a move."""
    with write_session(context.engine) as session:
        return _record_in(session, action, channel_kind, result, context.policy, actor, context.clock.now())


def _record_in(session, action: ScheduledAction, channel_kind: str, result: SendResult, policy: Policy,
               actor: Actor, now: datetime) -> DispatchResult:
    """In the caller's write transaction: the move the provider's outcome calls for, with the claim token."""
    token = action.claim_token
    retry_with_key = result.outcome is SendOutcome.UNKNOWN and _honours_idempotency_key(channel_kind)
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
