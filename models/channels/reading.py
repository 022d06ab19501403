"""Finding a workspace's channels."""

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.channels.tables import Channel


def channel_by_name(session: Session, workspace_id: int, name: str) -> Channel | None:
    return session.scalar(select(Channel).where(Channel.workspace_id == workspace_id, Channel.name == name))
