"""Workspaces: creating one, finding one by name, and the zone its wall times are read in."""

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.accounts.tables import Workspace
from models.core.errors import Conflict, NotFound


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
