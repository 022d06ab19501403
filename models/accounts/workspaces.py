"""Workspaces: the zone every wall time of a workspace is read in."""

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.accounts.tables import Workspace


def workspace_zone(session: Session, workspace_id: int) -> str | None:
    """The IANA zone name stored on the workspace (validated on write, but read as stored)."""
    return session.scalar(select(Workspace.timezone).where(Workspace.id == workspace_id))
