"""The campaign lifecycle. Every status change of a campaign happens here, and only here.

::

    draft ──activate──▶ active ──pause──▶ paused
                          ▲                 │
                          └─────resume──────┘
    draft / active / paused ──archive──▶ archived

| move     | from                  | to       | made by                                       | stamps        |
|----------|-----------------------|----------|-----------------------------------------------|---------------|
| activate | draft                 | active   | a person (steps checked; email steps need TICKWORK_BASE_URL) | activated_at |
| pause    | active                | paused   | a person (queued attempts are cancelled, kind ``paused``) | paused_at |
| resume   | paused                | active   | a person (held sends get a new attempt)       | paused_at cleared |
| archive  | draft, active, paused | archived | ops (active enrollments exit, ``archived``)   | archived_at   |

Each move is one guarded ``UPDATE drip_campaigns ... WHERE id = :campaign_id AND status =
:seen_status``, written out below and built once, plus its ``drip_campaign_events`` row, in
the caller's transaction. What a move sets off (cancelling attempts, exiting enrollments,
minting) is the operation's, in :mod:`models.drips.operations`.
"""

import enum
from datetime import datetime

from sqlalchemy import bindparam, insert, update
from sqlalchemy.orm import Session

from models.core.events import event_values
from models.core.moves import Actor, Outcome, move_from_seen
from models.core.types import UTCDateTime
from models.drips.tables import Campaign, CampaignEvent, CampaignStatus


class CampaignMove(str, enum.Enum):
    """The four ways a campaign's status may change."""

    ACTIVATE = "activate"
    PAUSE = "pause"
    RESUME = "resume"
    ARCHIVE = "archive"


ALLOWED_CAMPAIGN_MOVES: dict[CampaignMove, tuple[frozenset[CampaignStatus], CampaignStatus]] = {
    CampaignMove.ACTIVATE: (frozenset({CampaignStatus.DRAFT}), CampaignStatus.ACTIVE),
    CampaignMove.PAUSE: (frozenset({CampaignStatus.ACTIVE}), CampaignStatus.PAUSED),
    CampaignMove.RESUME: (frozenset({CampaignStatus.PAUSED}), CampaignStatus.ACTIVE),
    CampaignMove.ARCHIVE: (frozenset({CampaignStatus.DRAFT, CampaignStatus.ACTIVE, CampaignStatus.PAUSED}),
                           CampaignStatus.ARCHIVED),
}

_t = Campaign.__table__
_c = _t.c
NOW = bindparam("now", type_=UTCDateTime())


def _statement(move: CampaignMove, **values):
    """``UPDATE drip_campaigns SET status = <target>, ... WHERE id = :campaign_id AND status = :seen_status``."""
    _, target = ALLOWED_CAMPAIGN_MOVES[move]
    return update(_t).where(_c.id == bindparam("campaign_id"), _c.status == bindparam("seen_status")).values(
        status=target.value, updated_at=NOW, **values).returning(_c.id)


ACTIVATE = _statement(CampaignMove.ACTIVATE, activated_at=NOW)
PAUSE = _statement(CampaignMove.PAUSE, paused_at=NOW)
RESUME = _statement(CampaignMove.RESUME, paused_at=None)
ARCHIVE = _statement(CampaignMove.ARCHIVE, archived_at=NOW)

_STATEMENTS = {CampaignMove.ACTIVATE: ACTIVATE, CampaignMove.PAUSE: PAUSE, CampaignMove.RESUME: RESUME,
               CampaignMove.ARCHIVE: ARCHIVE}
_EVENT = insert(CampaignEvent.__table__)


def _event(campaign_id: int, source: str | None, target: str, *, now: datetime, actor: Actor,
           reason: str | None) -> dict:
    return event_values(source, target, now=now, actor=actor, reason=reason, campaign_id=campaign_id)


def _move(session: Session, move: CampaignMove, campaign: Campaign, *, now: datetime, actor: Actor,
          reason: str | None) -> Outcome:
    """Run ``move`` on ``campaign`` from the status it was seen in; the event, or why it changed nothing."""
    sources, target = ALLOWED_CAMPAIGN_MOVES[move]
    return move_from_seen(session, campaign, _STATEMENTS[move], {"campaign_id": campaign.id, "now": now},
                          sources=sources, events=_EVENT,
                          event=lambda seen: _event(campaign.id, seen, target.value, now=now, actor=actor,
                                                    reason=reason))


def record_creation(session: Session, campaign: Campaign, *, now: datetime, actor: Actor) -> None:
    """Write the first event of a freshly inserted campaign (nothing → draft)."""
    session.execute(_EVENT, _event(campaign.id, None, campaign.status, now=now, actor=actor, reason="created"))


def activate(session: Session, campaign: Campaign, *, now: datetime, actor: Actor) -> Outcome:
    """draft → active: enrollments may be made and their sends are minted."""
    return _move(session, CampaignMove.ACTIVATE, campaign, now=now, actor=actor, reason="activated")


def pause(session: Session, campaign: Campaign, *, now: datetime, actor: Actor) -> Outcome:
    """active → paused: enrollments are held."""
    return _move(session, CampaignMove.PAUSE, campaign, now=now, actor=actor, reason="paused")


def resume(session: Session, campaign: Campaign, *, now: datetime, actor: Actor) -> Outcome:
    """paused → active: held sends go out again, timed from now into their windows."""
    return _move(session, CampaignMove.RESUME, campaign, now=now, actor=actor, reason="resumed")


def archive(session: Session, campaign: Campaign, *, now: datetime, actor: Actor) -> Outcome:
    """draft, active or paused → archived: finished for good."""
    return _move(session, CampaignMove.ARCHIVE, campaign, now=now, actor=actor, reason="archived")
