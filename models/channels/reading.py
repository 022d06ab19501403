"""Finding a workspace's channels."""

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.channels.tables import Channel, ChannelEvent


def channel_by_name(session: Session, workspace_id: int, name: str) -> Channel | None:
    """The workspace's channel called ``name``, or None."""
    return session.scalar(select(Channel).where(Channel.workspace_id == workspace_id, Channel.name == name))


def channel_names(session: Session, workspace_id: int) -> dict[int, str]:
    """The workspace's channel names by id, for showing rows that carry only the channel's id."""
    return {ident: name for ident, name in session.execute(
        select(Channel.id, Channel.name).where(Channel.workspace_id == workspace_id))}


def channel_events(session: Session, workspace_id: int, channel_id: int, limit: int = 20) -> list[ChannelEvent]:
    """The channel's latest events (created, destination changed, secret replaced or removed), newest first."""
    return list(session.scalars(select(ChannelEvent).where(ChannelEvent.workspace_id == workspace_id,
                                                           ChannelEvent.channel_id == channel_id)
                                .order_by(ChannelEvent.at.desc(), ChannelEvent.id.desc()).limit(limit)))
