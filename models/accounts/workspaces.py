"""Workspaces: creating one, finding one by name, the zone its wall times are read in, and changing that zone."""

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.accounts.tables import Workspace
from models.core.errors import Conflict, InvalidInput, NotFound
from models.core.hooks import Hooks
from models.core.moves import Actor
from models.core.policy import Policy


def create_workspace(session: Session, *, name: str, zone: str, plan: str = "free", now: datetime) -> Workspace:
    """A new workspace; its name must be free and its zone a real IANA zone (else a typed refusal)."""
    workspace = Workspace(name=name, timezone=zone, plan=plan, created_at=now)  # validates name and zone
    if session.scalar(select(Workspace.id).where(Workspace.name == workspace.name)) is not None:
        raise Conflict(f"a workspace named {workspace.name!r} already exists", field="name", code="workspace_exists")
    session.add(workspace)
    session.flush()
    return workspace


def find_workspace(session: Session, name: str) -> Workspace:
    """The workspace called ``name``, or :class:`NotFound`."""
    workspace = session.scalar(select(Workspace).where(Workspace.name == (name or "").strip()))
    if workspace is None:
        raise NotFound(f"no workspace named {name!r}", field="workspace")
    return workspace


def workspace_zone(session: Session, workspace_id: int) -> str | None:
    """The IANA zone name stored on the workspace (validated on write, but read as stored)."""
    return session.scalar(select(Workspace.timezone).where(Workspace.id == workspace_id))


def change_workspace_zone(session: Session, workspace_id: int, zone: str, *, hooks: Hooks, now: datetime,
                          actor: Actor, policy: Policy) -> dict:
    """Give the workspace another IANA zone and, in the same transaction, move what follows it.

    Every wing registered for zone changes (:mod:`models.core.hooks`) moves its part: queued
    rows whose instant changes are cancelled (``rescheduled``) and inserted again with
    lineage; sent rows stay as they are. Returns ``{"from": old, "to": new, <wing>: counts}``.
    """
    workspace = session.scalar(select(Workspace).where(Workspace.id == workspace_id).with_for_update())
    if workspace is None:
        raise NotFound("no such workspace")
    old = workspace.timezone
    workspace.timezone = zone  # validated: a garbage zone is a 422 and nothing moves
    session.flush()
    moved = {"from": old, "to": workspace.timezone}
    for wing, participant in hooks.zone_changes.items():
        moved[wing] = participant(session, workspace_id, now, actor, policy)
    return moved


def preview_zone_change(session: Session, workspace_id: int, zone: str, *, hooks: Hooks, now: datetime,
                        actor: Actor, policy: Policy) -> dict:
    """What :func:`change_workspace_zone` would move, worked out in full and then undone."""
    savepoint = session.begin_nested()
    try:
        return change_workspace_zone(session, workspace_id, zone, hooks=hooks, now=now, actor=actor, policy=policy)
    finally:
        savepoint.rollback()


def set_review_settings(session: Session, workspace_id: int, *, review: str | None = None,
                        outside_approval: bool | None = None) -> Workspace:
    """Whether posts go through review (``off`` or ``required``), and whether authors may make review links."""
    workspace = session.get(Workspace, workspace_id)
    if workspace is None:
        raise NotFound(f"no workspace #{workspace_id}")
    if review is not None:
        if review not in ("off", "required"):
            raise InvalidInput("review is off or required", field="review", code="bad_choice")
        workspace.review = review
    if outside_approval is not None:
        if not isinstance(outside_approval, bool):
            raise InvalidInput("outside_approval is true or false", field="outside_approval", code="bad_choice")
        workspace.outside_approval = outside_approval
    session.flush()
    return workspace
