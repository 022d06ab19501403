"""The contact lifecycle: a contact's unsubscribe and hard bounce, here and only here.

::

    subscribed ──unsubscribe──▶ unsubscribed
        │                            ▲
        └──bounce──▶ bounced ──unsubscribe──┘

| move        | from                 | to           | made by                                               | stamps          |
|-------------|----------------------|--------------|-------------------------------------------------------|-----------------|
| unsubscribe | subscribed, bounced  | unsubscribed | the contact (link, SMS STOP) or a person (API, dashboard) | unsubscribed_at |
| bounce      | subscribed           | bounced      | the email provider's bounce webhook                   | bounced_at      |

Both end every active enrollment of the contact and cancel its queued attempts at once
(:func:`models.drips.operations.stop_sending_to`); an attempt already being claimed meets
the pre-send check instead. Neither is ever undone by Tickwork: a contact who asks to stop
is not sent to again.

Each move is one guarded ``UPDATE drip_contacts ... WHERE id = :contact_id AND status =
:seen_status``, written out below, plus its ``drip_contact_events`` row, in the caller's
transaction.
"""

import enum
from datetime import datetime

from sqlalchemy import bindparam, insert, update
from sqlalchemy.orm import Session

from models.core.events import event_values
from models.core.moves import Actor, Outcome, move_from_seen
from models.core.types import UTCDateTime
from models.drips.tables import Contact, ContactEvent, ContactStatus


class ContactMove(str, enum.Enum):
    """The two ways a contact's status may change."""

    UNSUBSCRIBE = "unsubscribe"
    BOUNCE = "bounce"


ALLOWED_CONTACT_MOVES: dict[ContactMove, tuple[frozenset[ContactStatus], ContactStatus]] = {
    ContactMove.UNSUBSCRIBE: (frozenset({ContactStatus.SUBSCRIBED, ContactStatus.BOUNCED}), ContactStatus.UNSUBSCRIBED),
    ContactMove.BOUNCE: (frozenset({ContactStatus.SUBSCRIBED}), ContactStatus.BOUNCED),
}

_t = Contact.__table__
_c = _t.c
NOW = bindparam("now", type_=UTCDateTime())


def _statement(move: ContactMove, **values):
    """``UPDATE drip_contacts SET status = <target>, ... WHERE id = :contact_id AND status = :seen_status``."""
    _, target = ALLOWED_CONTACT_MOVES[move]
    return update(_t).where(_c.id == bindparam("contact_id"), _c.status == bindparam("seen_status")).values(
        status=target.value, updated_at=NOW, **values).returning(_c.id)


UNSUBSCRIBE = _statement(ContactMove.UNSUBSCRIBE, unsubscribed_at=NOW)
BOUNCE = _statement(ContactMove.BOUNCE, bounced_at=NOW)

_STATEMENTS = {ContactMove.UNSUBSCRIBE: UNSUBSCRIBE, ContactMove.BOUNCE: BOUNCE}
_EVENT = insert(ContactEvent.__table__)


def _event(contact_id: int, source: str | None, target: str, *, now: datetime, actor: Actor,
           reason: str | None) -> dict:
    return event_values(source, target, now=now, actor=actor, reason=reason, contact_id=contact_id)


def _move(session: Session, move: ContactMove, contact: Contact, *, now: datetime, actor: Actor,
          reason: str) -> Outcome:
    """Run ``move`` on ``contact`` from the status it was seen in; the event, or why it changed nothing."""
    sources, target = ALLOWED_CONTACT_MOVES[move]
    return move_from_seen(session, contact, _STATEMENTS[move], {"contact_id": contact.id, "now": now},
                          sources=sources, events=_EVENT,
                          event=lambda seen: _event(contact.id, seen, target.value, now=now, actor=actor,
                                                    reason=reason))


def record_creation(session: Session, contact: Contact, *, now: datetime, actor: Actor, reason: str = "created") -> None:
    """Write the first event of a freshly inserted contact (nothing → subscribed)."""
    session.execute(_EVENT, _event(contact.id, None, contact.status, now=now, actor=actor, reason=reason))


def unsubscribe(session: Session, contact: Contact, *, now: datetime, actor: Actor, reason: str) -> Outcome:
    """subscribed or bounced → unsubscribed: never sent to again."""
    return _move(session, ContactMove.UNSUBSCRIBE, contact, now=now, actor=actor, reason=reason)


def bounce(session: Session, contact: Contact, *, now: datetime, actor: Actor, reason: str) -> Outcome:
    """subscribed → bounced: their email hard-bounced."""
    return _move(session, ContactMove.BOUNCE, contact, now=now, actor=actor, reason=reason)
