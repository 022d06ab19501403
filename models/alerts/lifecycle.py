"""An alert's lifecycle: every move one guarded UPDATE, so two evaluators racing get one winner.

| move          | from                      | to             | who                     | what the winner sends                         |
|---------------|---------------------------|----------------|-------------------------|-----------------------------------------------|
| ``fire``      | (none open for its key)   | ``firing``     | a pass                  | message 0 (``alert:<id>:fired:0``)            |
| ``remind``    | ``firing``, not silenced, its cooldown passed | ``firing`` (``notified_n`` + 1) | a pass | message n (``alert:<id>:fired:<n>``) |
| ``acknowledge`` | ``firing``              | ``acknowledged`` | a person (ops)        | nothing: nothing more until it resolves       |
| ``silence``   | ``firing``, ``acknowledged`` | (same), ``silenced_until`` set | a person (ops) | nothing: no reminder before that time |
| ``resolve``   | ``firing``, ``acknowledged`` | ``resolved`` | a pass                  | the resolved message (``alert:<id>:resolved``)|

``fire`` is an INSERT that the partial unique index (one open alert per scope, rule and
subject) lets only one transaction make; the others find the winner's row. The other
moves are ``UPDATE ... WHERE id = :id AND <from> RETURNING``: zero rows is a typed
:class:`Refused`, and the caller sends nothing. The direct send (around the engine) takes
its own compare-and-set: :func:`take_direct_send`, :func:`take_direct_resolved`.
"""

from datetime import datetime, timedelta

from sqlalchemy import and_, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from models.alerts.tables import OPEN_STATES, Alert, AlertState
from models.core.moves import Moved, Refusal, Refused

MAX_SILENCE = timedelta(days=7)


def open_alert(session: Session, scope: str, rule: str, subject: str, *, lock: bool = False) -> Alert | None:
    query = select(Alert).where(Alert.scope == scope, Alert.rule == rule, Alert.subject == subject,
                                Alert.state.in_(OPEN_STATES))
    return session.scalar(query.with_for_update() if lock else query)


def fire(session: Session, *, scope: str, workspace_id: int | None, rule: str, subject: str, figures: dict,
         now: datetime) -> Moved | Refused:
    """Raise the alert unless one is open for its key; the unique index decides between racing passes."""
    alert = Alert(scope=scope, workspace_id=workspace_id, rule=rule, subject=subject[:128],
                  state=AlertState.FIRING.value, figures=figures, fired_at=now, last_seen_at=now, notified_n=0,
                  notified_at=now)
    try:
        with session.begin_nested():
            session.add(alert)
            session.flush()
    except IntegrityError:  # raised by a concurrent pass between our look and this insert
        return Refused(Refusal.WRONG_STATE, row=open_alert(session, scope, rule, subject[:128]))
    return Moved(alert)


def _guarded(session: Session, alert_id: int, where, values: dict) -> Moved | Refused:
    row = session.execute(
        update(Alert).where(Alert.id == alert_id, where).values(**values).returning(Alert)
        .execution_options(synchronize_session=False)
    ).scalar_one_or_none()
    if row is None:
        current = session.get(Alert, alert_id)
        return Refused(Refusal.NOT_FOUND if current is None else Refusal.WRONG_STATE,
                       status=current.state if current else None, row=current)
    session.refresh(row)
    return Moved(row)


def remind(session: Session, alert: Alert, *, cooldown: timedelta, now: datetime) -> Moved | Refused:
    """Count one more message for a firing alert whose cooldown has passed since its last one."""
    return _guarded(session, alert.id, and_(
        Alert.state == AlertState.FIRING.value, Alert.notified_n == alert.notified_n,
        Alert.notified_at <= now - cooldown,
        or_(Alert.silenced_until.is_(None), Alert.silenced_until <= now),
    ), {"notified_n": alert.notified_n + 1, "notified_at": now})


def acknowledge(session: Session, alert_id: int, *, user_id: int, now: datetime) -> Moved | Refused:
    """A person is on it: nothing more is sent until it resolves."""
    return _guarded(session, alert_id, Alert.state == AlertState.FIRING.value,
                    {"state": AlertState.ACKNOWLEDGED.value, "acknowledged_at": now, "acknowledged_by_id": user_id})


def silence(session: Session, alert_id: int, *, until: datetime, user_id: int, now: datetime) -> Moved | Refused:
    """No reminder before ``until`` (at most a week away)."""
    return _guarded(session, alert_id, Alert.state.in_(OPEN_STATES),
                    {"silenced_until": min(until, now + MAX_SILENCE), "silenced_by_id": user_id})


def resolve(session: Session, alert_id: int, *, now: datetime) -> Moved | Refused:
    """Its rule stopped holding."""
    return _guarded(session, alert_id, Alert.state.in_(OPEN_STATES),
                    {"state": AlertState.RESOLVED.value, "resolved_at": now})


def take_direct_send(session: Session, alert: Alert, *, now: datetime) -> Moved | Refused:
    """Claim the direct send of the alert's latest message: one sender among every process wins it."""
    sent_before = Alert.direct_sent_n.is_(None) if alert.direct_sent_n is None else Alert.direct_sent_n == alert.direct_sent_n
    return _guarded(session, alert.id, and_(sent_before, Alert.notified_n == alert.notified_n),
                    {"direct_sent_n": alert.notified_n, "direct_sent_at": now})


def take_direct_resolved(session: Session, alert: Alert, *, now: datetime) -> Moved | Refused:
    """Claim the direct send of a resolved alert's message (only once its firing was sent directly)."""
    return _guarded(session, alert.id, and_(Alert.state == AlertState.RESOLVED.value,
                                            Alert.direct_sent_n.is_not(None), Alert.direct_resolved_at.is_(None)),
                    {"direct_resolved_at": now})


def record_direct_error(session: Session, alert_id: int, error: str | None) -> None:
    """What the direct send's far end answered when it was not a success (shown on the alert's page)."""
    session.execute(update(Alert).where(Alert.id == alert_id).values(direct_error=error and error[:2000])
                    .execution_options(synchronize_session=False))
