"""Asking before giving up: an unknown outcome settled by asking the provider what became of the send.

A provider that can be asked offers ``settle(delivery, context) -> SendResult | None`` ("did my
earlier attempt land?"): ``SUCCESS`` with the provider id (it did), ``NOT_SENT`` (it provably did
not), or None (it cannot tell, or cannot tell yet). Bluesky answers from the record key Tickwork
chose (``getRecord``); Postmark from the action id in the message's metadata (its outbound
search, which lags behind sending: ``settle_delay``). Every other provider keeps the brief's rule.
The question is asked in two places, and each answer is decided here:

| asked by                                        | answer     | the row                                                        |
|-------------------------------------------------|------------|----------------------------------------------------------------|
| the dispatch, right after a send ends unknown   | found      | ``ask`` event with what was found, then published with its id  |
| (in the sending thread, no transaction open)    | never made | reverted to queued, sent again later under the same key        |
|                                                 | can't tell | a provider honouring a key: retried with it, as before; one whose answers lag (``settle_delay``): ``ask`` event, left submitted for recovery to ask again; else failed outcome unknown |
| dead-worker recovery, a row submitted past the  | found      | ``ask`` event, then published with its id                      |
| recovery timeout (:func:`settle_in_doubt`)      | never made | reverted to queued, due now, under the same key                |
|                                                 | can't tell | within ``settle_delay`` of its claim: left for the next pass; after: failed outcome unknown, for a person |

Why recovery may send a row again when the provider says it was never made: a "worker lost"
row is failed for a person only because its outcome is unknown. Here it is known. The provider
that answers "not made" is one whose key makes a second post impossible (Bluesky: one record per
key in the repository), so even a worker that is not dead after all, whose create lands after
this answer, cannot make the retry a second post: the retry's create is refused and asked about
again, and finds the first. At most once holds by the key, not by hoping the worker is dead.
Postmark never answers "not made" (its search lags and it has no idempotency key), so a Postmark
row is never sent again on its own: found, or failed for a person after the delay.

The questions are HTTP calls: none is made while a database transaction is open. Recovery reads
the rows in doubt, asks each provider outside any transaction, then records each answer in a short
write of its own, guarded by the claim token it read (a row that moved meanwhile is left as it is).
A recovery pass asks at most :data:`ASKS_PER_PASS` rows; the rest wait for the next pass.
"""

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.engine import Engine

from models.actions import lifecycle
from models.actions.tables import FailureCode, ScheduledAction, Status
from models.channels.providers import PROVIDERS, Delivery, SendContext, SendOutcome, SendResult, provider_for
from models.channels.providers.http import channel_client
from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.hooks import Hooks
from models.core.moves import Actor
from models.core.policy import Policy
from models.core.secrets_box import SecretBox, SecretUnreadable

log = logging.getLogger("tickwork.settling")

ASKS_PER_PASS = 50


def can_settle(kind: str) -> bool:
    """Whether ``kind``'s provider can be asked what became of a send."""
    return callable(getattr(PROVIDERS.get(kind), "settle", None))


def settle_delay(kind: str) -> timedelta:
    """How long after a send ``kind``'s provider may still not know of it (zero: its answer is current)."""
    return getattr(PROVIDERS.get(kind), "settle_delay", None) or timedelta(0)


def settling_kinds() -> list[str]:
    return sorted(kind for kind in PROVIDERS if can_settle(kind))


def unknown_outcome_rule(kind: str) -> str:
    """The dashboard's sentence: what happens to a row of ``kind`` whose outcome is unknown."""
    try:
        provider = provider_for(kind)
    except LookupError:
        return "An unknown outcome is failed for a person to decide."
    if getattr(provider, "local", False):
        return "Delivered into Tickwork's own database with the row's status: never in doubt."
    name = getattr(provider, "WHAT", kind.capitalize())
    key = bool(getattr(provider, "honours_idempotency_key", False))
    if can_settle(kind) and key:
        return (f"An unknown outcome is asked of {name}: found, it is published; never made, it is sent again "
                "under the same key, which cannot make a second post.")
    if can_settle(kind):
        return (f"An unknown outcome is asked of {name}: found, it is published; not found "
                f"{_minutes(settle_delay(kind))} after the send, it is failed for a person to decide (never re-sent).")
    if key:
        return f"An unknown outcome is retried with the same Idempotency-Key, which {name} de-duplicates."
    return "An unknown outcome is failed for a person to decide (never re-sent)."


def _minutes(delay: timedelta) -> str:
    minutes = int(delay.total_seconds() // 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}" if minutes else "right"


def leaves_for_later(kind: str) -> bool:
    """Whether an unknown outcome that asking could not settle yet stays submitted for recovery to ask again."""
    return can_settle(kind) and settle_delay(kind) > timedelta(0)


def ask_after_send(provider, delivery: Delivery, context: SendContext, result: SendResult) -> SendResult:
    """In the sending thread, right after ``result`` came back unknown: the provider's answer, or ``result``."""
    settle = getattr(provider, "settle", None)
    if result.outcome is not SendOutcome.UNKNOWN or not callable(settle):
        return result
    try:
        answer = settle(delivery, context)
    except Exception:  # a fault in the question leaves the outcome as unknown as it was
        log.exception("asking %s about action %s failed", delivery.channel_name, delivery.action_id)
        return result
    if answer is None:
        return result
    asked = f"{result.message}; asked: {answer.asked or answer.message}"
    if answer.outcome is SendOutcome.SUCCESS:
        return replace(answer, asked=asked)
    if answer.outcome is SendOutcome.NOT_SENT:
        return SendResult(SendOutcome.NOT_SENT, f"{result.message}; {answer.message}", asked=asked)
    return result


def record_asked_in(session, action, result: SendResult, *, now: datetime, actor: Actor) -> None:
    """The ``ask`` event of a send settled as found, before its publish (whose event only says "accepted")."""
    if result.asked and result.outcome is SendOutcome.SUCCESS:
        lifecycle.ask(session, action.id, claim_token=action.claim_token, message=result.asked, now=now, actor=actor)


def leave_for_later_in(session, action, kind: str, result: SendResult, *, now: datetime, actor: Actor):
    """An unknown outcome its provider cannot settle yet: the row stays submitted for recovery to ask again."""
    message = (f"{result.message}; outcome unknown for now: {getattr(provider_for(kind), 'WHAT', kind)} is asked "
               f"again once the send is {_minutes(settle_delay(kind))} old")
    return lifecycle.ask(session, action.id, claim_token=action.claim_token, message=message, now=now, actor=actor)


_IN_DOUBT = (
    select(ScheduledAction, Channel)
    .join(Channel, Channel.id == ScheduledAction.channel_id)
    .order_by(ScheduledAction.submitted_at, ScheduledAction.id)
)


def settle_in_doubt(*, now: datetime, cutoff: datetime, policy: Policy, actor: Actor, secret_box: SecretBox,
                    delivery_of: Callable[..., Delivery], engine: Engine | None = None,
                    hooks: Hooks | None = None) -> dict[str, int]:
    """Recovery's question for rows left submitted past ``cutoff`` on channels that can be asked (see the module
    docstring); returns how many were published, sent again, failed and left for the next pass.

    ``delivery_of(action, channel, secret)`` is the dispatch's own builder of a Delivery, so the question
    is asked about exactly what was sent. A row found published tells the wings (``hooks``) in the
    transaction that records it, as the dispatch does.
    """
    counts = {"published": 0, "requeued": 0, "failed": 0, "left": 0}
    kinds = settling_kinds()
    if not kinds:
        return counts
    with read_session(engine) as session:
        stuck = session.execute(_IN_DOUBT.where(ScheduledAction.status == Status.SUBMITTED.value,
                                                ScheduledAction.submitted_at <= cutoff,
                                                Channel.kind.in_(kinds)).limit(ASKS_PER_PASS)).all()
        session.expunge_all()
    for action, channel in stuck:
        answer = _ask(action, channel, now=now, policy=policy, secret_box=secret_box, delivery_of=delivery_of)
        with write_session(engine) as session:
            counts[_decide_in(session, action, channel, answer, now=now, cutoff=cutoff, actor=actor,
                              hooks=hooks)] += 1
    return counts


def _ask(action: ScheduledAction, channel: Channel, *, now: datetime, policy: Policy, secret_box: SecretBox,
         delivery_of: Callable[..., Delivery]) -> SendResult | None:
    """The provider's answer for a row in doubt, with no transaction open; None when it cannot tell."""
    try:
        delivery = delivery_of(action, channel, channel.secret(secret_box))
    except SecretUnreadable:
        return None
    context = SendContext(now=now, timeout=policy.provider_timeout.total_seconds(),
                          http=channel_client(channel.id, policy.sends_in_flight))
    try:
        return provider_for(channel.kind).settle(delivery, context)
    except Exception:
        log.exception("asking %s about action %s failed", channel.kind, action.id)
        return None


def _decide_in(session, action: ScheduledAction, channel: Channel, answer: SendResult | None, *, now: datetime,
               cutoff: datetime, actor: Actor, hooks: Hooks | None = None) -> str:
    name = getattr(provider_for(channel.kind), "WHAT", channel.kind)
    since = f"submitted at {action.submitted_at:%Y-%m-%d %H:%M:%S}Z and no result recorded"
    if answer is not None and answer.outcome is SendOutcome.SUCCESS:
        asked = lifecycle.ask(session, action.id, claim_token=action.claim_token, now=now, actor=actor,
                              message=f"{since}; asked: {answer.asked or 'found'}")
        if not asked.ok:
            return "left"  # it moved meanwhile: the worker was alive after all
        moved = lifecycle.publish(session, action.id, claim_token=action.claim_token, provider_id=answer.provider_id,
                                  now=now, actor=actor)
        if moved.ok and hooks is not None:  # what follows it is minted now, and the tick's drain sends it
            hooks.published(session, [(moved.row, answer.provider_id)], now, actor)
        return "published"
    if answer is not None and answer.outcome is SendOutcome.NOT_SENT:
        moved = lifecycle.revert(session, action.id, claim_token=action.claim_token, next_attempt_at=now, now=now,
                                 actor=actor, message=f"{since}; asked: {answer.asked or answer.message}; "
                                                      "sent again under the same key")
        return "requeued" if moved.ok else "left"
    delay = settle_delay(channel.kind)
    if now - action.submitted_at < delay:
        return "left"
    if delay:  # asked for as long as its answers may lag, and still not found
        moved = lifecycle.fail(session, action.id, code=FailureCode.OUTCOME_UNKNOWN, submitted_before=cutoff, now=now,
                               actor=actor, message=(f"outcome unknown: {since}; {name} was asked and has no record "
                                                     f"of it {_minutes(delay)} after; check {name} before retrying"))
    else:  # the question got no answer: today's rule for a lost worker
        moved = lifecycle.fail(session, action.id, code=FailureCode.WORKER_LOST, submitted_before=cutoff, now=now,
                               actor=actor, message=(f"worker lost; outcome unknown: {since}; asking {name} got no "
                                                     "answer"))
    return "failed" if moved.ok else "left"
